"""The headers every call of the OpenAI face starts from: what the official client sends (accept,
content-type, its ``X-Stainless-*`` identification with llmclient's own values under the same
names, the credentials, the organisation and project), then ``default_headers`` (README, "What
goes on the wire")."""

from __future__ import annotations

import functools
import platform
import sys
from collections.abc import Mapping
from typing import Final

from .._version import __version__

__all__ = ["USER_AGENT", "openai_headers", "stainless_headers"]

USER_AGENT: Final = f"llmclient/{__version__} python/{sys.version_info[0]}.{sys.version_info[1]}"

# platform.system() / platform.machine() as the official client names them (openai._base_client)
_STAINLESS_OS = {"darwin": "MacOS", "linux": "Linux", "windows": "Windows", "freebsd": "FreeBSD",
                 "openbsd": "OpenBSD", "android": "Android", "ios": "iOS"}
_STAINLESS_ARCH = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64",
                   "i386": "x32", "i686": "x32", "x86": "x32", "armv7l": "arm", "arm": "arm"}


def stainless_headers(is_async: bool, system: str, machine: str, runtime: str, runtime_version: str) -> dict[str, str]:
    """The official client's ``X-Stainless-*`` identification headers, with llmclient's own
    values under the same names: the package version is llmclient's, the platform the same as
    the official client would report. The per-attempt ``X-Stainless-Retry-Count`` and
    ``-Read-Timeout`` are not sent."""
    return {
        "x-stainless-lang": "python",
        "x-stainless-package-version": __version__,
        "x-stainless-os": _STAINLESS_OS.get(system.lower(), f"Other:{system}" if system else "Unknown"),
        "x-stainless-arch": _STAINLESS_ARCH.get(machine.lower(), f"other:{machine}" if machine else "unknown"),
        "x-stainless-runtime": runtime,
        "x-stainless-runtime-version": runtime_version,
        "x-stainless-async": "async:asyncio" if is_async else "false",
    }


@functools.cache
def platform_headers(is_async: bool) -> dict[str, str]:
    return stainless_headers(is_async, platform.system(), platform.machine(),
                             platform.python_implementation(), platform.python_version())


def merge_custom(headers: dict[str, str], custom: Mapping[str, str | None]) -> dict[str, str]:
    """``headers`` with ``default_headers`` on top (lower-cased; a None value removes one)."""
    for key, value in custom.items():
        if value is None:
            headers.pop(key.lower(), None)
        else:
            headers[key.lower()] = str(value)
    return headers


def openai_headers(api_key: str, organization: str | None, project: str | None, is_async: bool,
                   custom: Mapping[str, str | None]) -> dict[str, str]:
    headers = {
        "accept": "application/json",
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "authorization": f"Bearer {api_key}",
        **platform_headers(is_async),
    }
    if organization:
        headers["openai-organization"] = organization
    if project:
        headers["openai-project"] = project
    return merge_custom(headers, custom)
