"""What a client put on the wire: an httpx request hook that records each POST's JSON body and
headers (``drive.http_client(event_hooks={"request": [sent.hook]})``)."""

from __future__ import annotations

from typing import Any

import httpx
import orjson


class Sent:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._headers: list[httpx.Headers] = []

    def hook(self, request: Any) -> None:
        if request.method == "POST":
            self.bodies.append(orjson.loads(request.content))
            self._headers.append(request.headers.copy())

    def client(self, drive: Any, base_url: str | list[str], **kw: Any) -> Any:
        """A client (``drive``'s kind) for ``base_url`` (one URL or replicas) whose POSTs this records: no retries, no
        request compression; a new client knows nothing of the servers yet."""
        http = drive.http_client(event_hooks={"request": [self.hook]})
        return drive.client(**{"api_key": "k", "base_url": base_url, "http_client": http, "max_retries": 0,
                               "compress": False, **kw})

    def field(self, name: str) -> list[Any]:
        """The body field ``name`` of each POST, in order (None where absent)."""
        return [b.get(name) for b in self.bodies]

    def header(self, name: str) -> list[str | None]:
        """The header ``name`` of each POST, in order (None where absent)."""
        return [h.get(name) for h in self._headers]
