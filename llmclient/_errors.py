"""Every error llmclient raises, with the official ``openai`` and ``anthropic`` names and hierarchy.

    OpenAIError                         (also exported as LLMClientError; anthropic's AnthropicError)
     ├── APIError                       message, request, body, trace_id, timings
     │    ├── APIConnectionError        no usable HTTP response: refused, DNS, TLS, reset
     │    │    ├── APITimeoutError      a connect/read/write/pool phase ran out of time
     │    │    └── IncompleteStreamError  a stream cut (reset), or ended with a choice
     │    │                               that has no finish_reason (``[DONE]`` or not)
     │    ├── APIStatusError            the server answered with a 4xx/5xx status
     │    │    ├── BadRequestError              400
     │    │    ├── AuthenticationError          401
     │    │    ├── PermissionDeniedError        403
     │    │    ├── NotFoundError                404
     │    │    ├── ConflictError                409
     │    │    ├── UnprocessableEntityError     422
     │    │    ├── RateLimitError               429
     │    │    └── InternalServerError          >= 500
     │    └── APIResponseValidationError  a 2xx answer whose body is not what the API promises
     │         └── MalformedResponseError      not JSON / not SSE / wrong shape (names what)
     ├── LengthFinishReasonError        parse() / stream helpers: the answer hit the token limit
     └── ContentFilterFinishReasonError parse() / stream helpers: the content filter stopped it

The OpenAI face raises the classes openai has (a 503 is an InternalServerError there); the
Anthropic face the finer ones anthropic has (``api/anthropic/errors.py``). Each class is both
packages' class of its name once that package is imported (``_official``), so ``except
openai.RateLimitError`` and ``except anthropic.RateLimitError`` both catch it.

Messages never hold a secret: every message passes ``_redact.redact_text`` (URL userinfo,
credential headers and query values masked), whoever built it.

Every APIError carries ``trace_id`` (the W3C trace id we sent), ``request_id`` (the server's
``x-request-id`` when it sent one) and ``timings`` (the call's :class:`CallRecord`), so a failure
in a log can be matched with the server's own logs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import _official
from ._hints import describe_transport, request_url, status_hint, with_hint
from ._redact import redact_text

if TYPE_CHECKING:
    import httpx

    from .pipeline.timings import CallRecord

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ClientClosedRequestError",
    "ConflictError",
    "ContentFilterFinishReasonError",
    "ContentTooLargeError",
    "GatewayTimeoutError",
    "HTTPNotImplementedError",
    "IncompleteStreamError",
    "InternalServerError",
    "LengthFinishReasonError",
    "MalformedResponseError",
    "NotFoundError",
    "OpenAIError",
    "OverloadedError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "RateLimitError",
    "RequestHeaderFieldsTooLargeError",
    "RequestTimeoutError",
    "RequestTooLargeError",
    "ServiceUnavailableError",
    "UnprocessableEntityError",
]


class _Root(Exception):
    """Exception with the layout of a Python subclass (``__weakref__``): the official
    ``openai.OpenAIError``'s, so it can become a base of :class:`OpenAIError` (``_official``)."""


class OpenAIError(_Root):
    """Base of every llmclient error (named as in the official client so ``except`` clauses port)."""


class APIError(OpenAIError):
    message: str
    request: httpx.Request | None
    body: object | None
    code: str | None
    param: str | None
    type: str | None

    def __init__(
        self,
        message: str,
        request: httpx.Request | None = None,
        *,
        body: object | None = None,
        trace_id: str | None = None,
        request_id: str | None = None,
        timings: CallRecord | None = None,
    ) -> None:
        message = redact_text(message)
        self.message = message
        self.request = request
        self.body = body
        self.trace_id = trace_id
        self.request_id = request_id
        self.timings = timings
        err = body.get("error", body) if isinstance(body, dict) else None
        if not isinstance(err, dict):
            err = {}
        self.code = _opt_str(err.get("code"))
        self.param = _opt_str(err.get("param"))
        self.type = _opt_str(err.get("type"))
        # Not super(): once ``openai`` is imported, the official classes follow ours in the MRO
        # (``_official``) and their __init__ takes other arguments; what they set is set above.
        Exception.__init__(self, message)

    def __str__(self) -> str:
        tail = f" (trace_id={self.trace_id}" if self.trace_id else ""
        if tail and self.request_id:
            tail += f", request_id={self.request_id}"
        return f"{self.message}{tail + ')' if tail else ''}"


class APIConnectionError(APIError):
    def __init__(
        self, message: str = "Connection error.", request: httpx.Request | None = None, **kw: Any
    ) -> None:
        super().__init__(message, request, **kw)


class APITimeoutError(APIConnectionError):
    """A call or a stream timed out. A stream's (its read timeout, or the stall watchdog's
    ``stream_idle_timeout``) carries what it delivered so far as ``partial``
    (:class:`llmclient.PartialAnswer`); None otherwise."""

    partial: Any = None

    def __init__(
        self, message: str = "Request timed out.", request: httpx.Request | None = None, **kw: Any
    ) -> None:
        super().__init__(message, request, **kw)


class APIStatusError(APIError):
    status_code: int

    def __init__(
        self, message: str, *, response: httpx.Response, body: object | None, **kw: Any
    ) -> None:
        self.response = response
        self.status_code = response.status_code
        kw.setdefault("request_id", response.headers.get("x-request-id"))
        request = _request_of(response)
        if request is not None:  # the likely fix, where what came back decides one (_hints)
            message = with_hint(message, status_hint(response.status_code, request.method, str(request.url)))
        super().__init__(message, request, body=body, **kw)


class BadRequestError(APIStatusError):
    status_code = 400


class AuthenticationError(APIStatusError):
    status_code = 401


class PermissionDeniedError(APIStatusError):
    status_code = 403


class NotFoundError(APIStatusError):
    status_code = 404


class ConflictError(APIStatusError):
    status_code = 409


class UnprocessableEntityError(APIStatusError):
    status_code = 422


class RateLimitError(APIStatusError):
    status_code = 429


class InternalServerError(APIStatusError):
    pass


# The statuses anthropic names and openai does not (anthropic 2.17 ``_exceptions.py``).
class PaymentRequiredError(APIStatusError):
    status_code = 402


class RequestTimeoutError(APIStatusError):
    status_code = 408


class PreconditionFailedError(APIStatusError):
    status_code = 412


class ContentTooLargeError(APIStatusError):
    status_code = 413


RequestTooLargeError = ContentTooLargeError  # anthropic's older name, kept by it as an alias


class RequestHeaderFieldsTooLargeError(APIStatusError):
    status_code = 431


class ClientClosedRequestError(APIStatusError):
    status_code = 499


class HTTPNotImplementedError(InternalServerError):
    status_code = 501


class ServiceUnavailableError(InternalServerError):
    status_code = 503


class GatewayTimeoutError(InternalServerError):
    status_code = 504


class OverloadedError(InternalServerError):
    """529: Anthropic's API is overloaded (``overloaded_error``); retried with full jitter."""

    status_code = 529


class APIResponseValidationError(APIError):
    pass


class MalformedResponseError(APIResponseValidationError):
    """The server said 2xx but the body is not what the API promises; the message says what."""


class IncompleteStreamError(APIConnectionError):
    """A stream ended (connection closed, body finished, ``[DONE]``) before every choice had a
    finish_reason; the message names the cause.

    An :class:`APIConnectionError`: ``except APIConnectionError``, the official way to handle
    connection problems, catches a stream cut by a reset too. ``partial``
    (:class:`llmclient.PartialAnswer`) is what the stream delivered before it ended: each
    choice's text and tool-call fragments, the events received, the response id."""

    partial: Any = None

    def __init__(self, message: str, request: httpx.Request | None = None, **kw: Any) -> None:
        super().__init__(message, request, **kw)


class LengthFinishReasonError(OpenAIError):
    """``parse()`` / the stream helpers: the answer stopped at the token limit, so its content
    cannot be parsed (the official class, same message and ``completion``)."""

    def __init__(self, *, completion: Any) -> None:
        msg = "Could not parse response content as the length limit was reached"
        if getattr(completion, "usage", None):
            msg += f" - {completion.usage}"
        Exception.__init__(self, msg)  # not super(): see APIError.__init__
        self.completion = completion


class ContentFilterFinishReasonError(OpenAIError):
    """``parse()`` / the stream helpers: the content filter stopped the answer."""

    def __init__(self, *, completion: Any = None) -> None:
        Exception.__init__(self, "Could not parse response content as the request was rejected by the content filter")
        self.completion = completion


# With ``openai`` (or ``anthropic``) imported, each class above derives from the official one of
# its name there too (``except openai.NotFoundError`` and ``except anthropic.NotFoundError`` catch
# llmclient's 404); without them, nothing changes.
_official.register(OpenAIError, APIError, APIConnectionError, APITimeoutError, APIStatusError,
                   BadRequestError, AuthenticationError, PermissionDeniedError, NotFoundError,
                   ConflictError, UnprocessableEntityError, RateLimitError, InternalServerError,
                   PaymentRequiredError, RequestTimeoutError, PreconditionFailedError, ContentTooLargeError,
                   RequestHeaderFieldsTooLargeError, ClientClosedRequestError, HTTPNotImplementedError,
                   ServiceUnavailableError, GatewayTimeoutError, OverloadedError,
                   APIResponseValidationError, LengthFinishReasonError, ContentFilterFinishReasonError,
                   packages=_official.PACKAGES)

_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error_class(status: int) -> type[APIStatusError]:
    """The most specific public class for an HTTP error status."""
    if status >= 500:
        return InternalServerError
    return _STATUS_CLASSES.get(status, APIStatusError)


# The Anthropic face's finer classes (anthropic 2.17 ``_client.py``, ``_make_status_error``).
_ANTHROPIC_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    **_STATUS_CLASSES, 402: PaymentRequiredError, 408: RequestTimeoutError, 412: PreconditionFailedError,
    413: ContentTooLargeError, 431: RequestHeaderFieldsTooLargeError, 499: ClientClosedRequestError,
    501: HTTPNotImplementedError, 503: ServiceUnavailableError, 504: GatewayTimeoutError, 529: OverloadedError,
}


def anthropic_status_error_class(status: int) -> type[APIStatusError]:
    """The class the official anthropic client raises for an HTTP error status."""
    cls = _ANTHROPIC_STATUS_CLASSES.get(status)
    if cls is not None:
        return cls
    return InternalServerError if status >= 500 else APIStatusError


_TITLE_RE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(rb"<[^>]+>")


def describe_error_body(status: int, body: object, raw: bytes, content_type: str) -> str:
    """A readable one-line message for an error response, whatever the server sent.

    JSON error objects use their ``error.message``; HTML pages (typical of proxies and load
    balancers) are reduced to their <title> or first text so the user sees "502 Bad Gateway"
    rather than a page of markup.
    """
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return f"Error code: {status} - {err['message']}"
        if isinstance(err, str):
            return f"Error code: {status} - {err}"
        return f"Error code: {status} - {body}"
    if "html" in content_type or raw.lstrip()[:1] == b"<":
        match = _TITLE_RE.search(raw)
        text = match.group(1) if match else _TAG_RE.sub(b" ", raw)
        summary = b" ".join(text.split())[:200].decode("utf-8", "replace")
        return f"Error code: {status} - HTML error page (likely from a proxy): {summary!r}"
    text = raw[:300].decode("utf-8", "replace").strip()
    return f"Error code: {status} - {text or '(empty body)'}"


def _request_of(response: httpx.Response) -> httpx.Request | None:
    try:
        return response.request
    except RuntimeError:  # a Response built without a request
        return None


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def describe_transport_error(exc: BaseException, url: str | None = None) -> str:
    """A failed send in words a user acts on (a DNS failure, a TLS failure, a refused
    connection), with the transport's own text and, where what came back decides one, the
    likely fix (``_hints``: plain HTTP on an https:// URL, nothing listening on this machine)."""
    return describe_transport(type(exc).__name__, str(exc), url or request_url(exc))
