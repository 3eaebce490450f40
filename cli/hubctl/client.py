"""The admin API over HTTP (httpx). Every failure becomes an ApiError carrying the API's own
error code and message (the hub's one error shape), or a TransportError."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from hubctl import __version__

TIMEOUT = httpx.Timeout(30.0, connect=10.0)


@dataclass
class ApiError(Exception):
    status: int
    code: str
    message: str
    details: Any = None

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


class TransportError(Exception):
    """The admin API could not be reached (DNS, refused, TLS, timeout)."""


@dataclass
class Answer:
    status: int
    body: Any
    etag: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def version(self) -> int | None:
        """The resource's version, from the ETag (`"3"`) or the body's `version`."""
        if self.etag:
            text = self.etag.removeprefix("W/").strip('"')
            if text.isdigit():
                return int(text)
        if isinstance(self.body, dict) and isinstance(self.body.get("version"), int):
            return int(self.body["version"])
        return None


def _error_of(response: httpx.Response) -> ApiError:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return ApiError(
            response.status_code, error["code"], str(error.get("message", "")), error.get("details")
        )
    # Not the hub's shape: a proxy, a gateway or a wrong URL answered.
    excerpt = response.text[:200].replace("\n", " ")
    return ApiError(response.status_code, "http_error", excerpt or response.reason_phrase)


class AdminClient:
    def __init__(self, url: str, token: str, transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(
            base_url=url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": f"hubctl/{__version__}"},
            timeout=TIMEOUT,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        if_match: int | None = None,
    ) -> Answer:
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else {}
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, path, json=json, params=query, headers=headers)
        except httpx.HTTPError as error:
            raise TransportError(f"{type(error).__name__}: {error}") from error
        if response.status_code >= 400:
            raise _error_of(response)
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError:
                body = response.text
        return Answer(response.status_code, body, response.headers.get("etag"), dict(response.headers))

    def get(self, path: str, **params: Any) -> Answer:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Answer:
        return self.call("POST", path, json=body)
