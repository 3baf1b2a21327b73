"""``AzureOpenAI`` / ``AsyncAzureOpenAI``: the official Azure clients' settings on llmclient.

The same arguments and environment variables as ``openai.AzureOpenAI`` (openai/lib/azure.py):
``azure_endpoint`` (``AZURE_OPENAI_ENDPOINT``), ``api_version`` (``OPENAI_API_VERSION``, sent
as the ``api-version`` query parameter), ``azure_deployment`` (the base URL then ends in
``/openai/deployments/{deployment}``; without it, deployment endpoints go to
``/deployments/{model}/...``), and one credential: ``api_key`` (``AZURE_OPENAI_API_KEY``, sent
as ``api-key``), ``azure_ad_token`` (``AZURE_OPENAI_AD_TOKEN``) or ``azure_ad_token_provider``
(called before every request; an async client's provider may return an awaitable), both
sent as ``Authorization: Bearer``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from . import _official
from ._client import BaseClient, OpenAI
from ._client_async import AsyncOpenAI
from ._errors import OpenAIError
from .api.passthrough import (
    API_KEY_SENTINEL,  # the official client's placeholder api_key for a token
)
from .pipeline.call import Call

__all__ = ["AsyncAzureOpenAI", "AzureOpenAI"]

# The paths the official client prefixes with /deployments/{model} (openai/lib/azure.py).
DEPLOYMENT_ENDPOINTS = frozenset({
    "/completions", "/chat/completions", "/embeddings", "/audio/transcriptions",
    "/audio/translations", "/audio/speech", "/images/generations", "/images/edits",
})

AzureADTokenProvider = Callable[[], str]
AsyncAzureADTokenProvider = Callable[[], "str | Awaitable[str]"]


def azure_settings(
    *,
    api_version: str | None,
    azure_endpoint: str | None,
    azure_deployment: str | None,
    api_key: str | None,
    azure_ad_token: str | None,
    azure_ad_token_provider: Any,
    base_url: Any,
    default_query: Mapping[str, object] | None,
) -> tuple[str, str | None, Any, dict[str, object]]:
    """(base URL, api key or None, token provider, default query) from the official
    arguments and environment, with the official errors (pure, but for the environment)."""
    if api_key is None and azure_ad_token is None and azure_ad_token_provider is None:
        azure_ad_token = os.environ.get("AZURE_OPENAI_AD_TOKEN")
        if azure_ad_token is None:
            api_key = os.environ.get("AZURE_OPENAI_API_KEY")
    if api_key is None and azure_ad_token is None and azure_ad_token_provider is None:
        raise OpenAIError(
            "Missing credentials. Please pass one of `api_key`, `azure_ad_token`, "
            "`azure_ad_token_provider`, or the `AZURE_OPENAI_API_KEY` or `AZURE_OPENAI_AD_TOKEN` "
            "environment variables."
        )
    if api_version is None:
        api_version = os.environ.get("OPENAI_API_VERSION")
    if api_version is None:
        raise ValueError(
            "Must provide either the `api_version` argument or the `OPENAI_API_VERSION` environment variable"
        )
    query = {**(default_query or {}), "api-version": api_version}
    if base_url is None:
        if azure_endpoint is None:
            azure_endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT")
        if azure_endpoint is None:
            raise ValueError(
                "Must provide one of the `base_url` or `azure_endpoint` arguments, or the "
                "`AZURE_OPENAI_ENDPOINT` environment variable"
            )
        base_url = f"{azure_endpoint.rstrip('/')}/openai"
        if azure_deployment is not None:
            base_url += f"/deployments/{azure_deployment}"
    elif azure_endpoint is not None:
        raise ValueError("base_url and azure_endpoint are mutually exclusive")
    provider = azure_ad_token_provider
    if azure_ad_token is not None:
        provider = None
    return str(base_url), api_key, (azure_ad_token, provider), query


def _check_token(token: object) -> str:
    if not isinstance(token, str) or not token:
        raise ValueError("Expected `azure_ad_token_provider` argument to return a non-empty string.")
    return token


class _AzureMixin(BaseClient):
    _azure_ad_token: str | None
    _azure_ad_token_provider: Any
    _api_version: str

    def _setup_azure(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        base_url, api_key, (token, provider), query = azure_settings(
            api_version=kwargs.pop("api_version", None),
            azure_endpoint=kwargs.pop("azure_endpoint", None),
            azure_deployment=kwargs.pop("azure_deployment", None),
            api_key=kwargs.pop("api_key", None),
            azure_ad_token=kwargs.pop("azure_ad_token", None),
            azure_ad_token_provider=kwargs.pop("azure_ad_token_provider", None),
            base_url=kwargs.pop("base_url", None),
            default_query=kwargs.pop("default_query", None),
        )
        self._azure_ad_token = token
        self._azure_ad_token_provider = provider
        self._api_version = str(query["api-version"])
        return {**kwargs, "base_url": base_url, "api_key": api_key or API_KEY_SENTINEL,
                "default_query": query}

    def _default_headers(self) -> dict[str, str]:
        headers = super()._default_headers()
        custom = {k.lower() for k in self._custom_headers}
        if "authorization" not in custom:
            headers.pop("authorization", None)
        if self._azure_ad_token is not None and "authorization" not in custom:
            headers["authorization"] = f"Bearer {self._azure_ad_token}"
        elif self.api_key != API_KEY_SENTINEL and "api-key" not in custom:
            headers["api-key"] = self.api_key
        return headers

    @property
    def auth_headers(self) -> dict[str, str]:
        if self._azure_ad_token is not None:
            return {"Authorization": f"Bearer {self._azure_ad_token}"}
        if self.api_key != API_KEY_SENTINEL:
            return {"api-key": self.api_key}
        return {}

    def _build_call(self, method: str, path: str, body: dict[str, Any] | None = None, **kw: Any) -> Call:
        if path in DEPLOYMENT_ENDPOINTS and body is not None and body.get("model") is not None \
                and "/deployments" not in self.base_url.path:
            path = f"/deployments/{body['model']}{path}"
        return super()._build_call(method, path, body, **kw)

    def _copy_kwargs(self, **overrides: Any) -> dict[str, Any]:
        kwargs = super()._copy_kwargs(**overrides)
        kwargs["api_version"] = overrides.get("api_version") or self._api_version
        kwargs["default_query"] = {k: v for k, v in kwargs["default_query"].items() if k != "api-version"}
        if self._azure_ad_token is not None or self._azure_ad_token_provider is not None:
            if kwargs.get("api_key") == API_KEY_SENTINEL:
                kwargs.pop("api_key")
            kwargs.setdefault("azure_ad_token", self._azure_ad_token)
            kwargs.setdefault("azure_ad_token_provider", self._azure_ad_token_provider)
        return kwargs

    def _token_provider(self) -> Any:
        return self._azure_ad_token_provider

    @staticmethod
    def _set_token(call: Call, token: object) -> None:
        token = _check_token(token)
        if "authorization" not in call.headers or call.headers["authorization"].startswith("Bearer "):
            call.headers["authorization"] = f"Bearer {token}"


class AzureOpenAI(_AzureMixin, OpenAI):
    """Drop-in for ``openai.AzureOpenAI``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**self._setup_azure(kwargs))



class AsyncAzureOpenAI(_AzureMixin, AsyncOpenAI):
    """Drop-in for ``openai.AsyncAzureOpenAI``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**self._setup_azure(kwargs))



_official.register(AzureOpenAI, AsyncAzureOpenAI, hide=True)  # openai.AzureOpenAI's kind too
