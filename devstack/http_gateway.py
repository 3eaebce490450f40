"""HTTP front doors: an API Gateway HTTP API and Lambda Function URLs (payload format 2.0).

Both build the same event shape AWS sends (version "2.0") and map the handler's answer
back to HTTP the way API Gateway does. Servers speak HTTP/1.1 with keep-alive and always
send Content-Length, so load generators can reuse connections.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from devstack.http_server import AppHandler, BackgroundHttpServer
from devstack.lambda_runtime import InvocationResult

logger = logging.getLogger(__name__)

MAX_PAYLOAD_BYTES = 10 * 1024 * 1024  # API Gateway's request payload quota
Invoke = Callable[[str, dict[str, Any]], InvocationResult]

_TEXT_TYPES = ("application/json", "application/xml", "application/x-www-form-urlencoded")


def is_text_content(content_type: str | None) -> bool:
    """Whether API Gateway passes a body with this Content-Type as text (else base64)."""
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return (
        media.startswith("text/") or media in _TEXT_TYPES or media.endswith("+json") or media.endswith("+xml")
    )


@dataclass(frozen=True)
class Route:
    """One ``Method Path`` route of an HTTP API; ``path == "$default"`` is the catch-all.

    ``api_id`` is the id of the API the route belongs to (events carry it as ``apiId``);
    empty means the gateway's own.
    """

    method: str
    path: str
    function: str
    api_id: str = ""
    _regex: re.Pattern[str] | None = field(default=None, compare=False)
    _params: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def create(cls, method: str, path: str, function: str, api_id: str = "") -> Route:
        method = method.upper()
        if method == "X-AMAZON-APIGATEWAY-ANY-METHOD":
            method = "ANY"
        if path == "$default":
            return cls(method, path, function, api_id)
        parts, params = [], []
        for segment in path.strip("/").split("/"):
            if segment.startswith("{") and segment.endswith("+}"):
                params.append(segment[1:-2])
                parts.append("(.+)")
            elif segment.startswith("{") and segment.endswith("}"):
                params.append(segment[1:-1])
                parts.append("([^/]+)")
            else:
                parts.append(re.escape(segment))
        regex = re.compile("^/" + "/".join(parts) + "$")
        return cls(method, path, function, api_id, regex, tuple(params))

    @property
    def route_key(self) -> str:
        return "$default" if self.path == "$default" else f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if self.method not in ("ANY", method):
            return None
        if self._regex is None:
            return {}
        found = self._regex.match(path)
        if found is None:
            return None
        values = found.groups()
        return {name: unquote(value) for name, value in zip(self._params, values, strict=True)}

    def specificity(self) -> tuple[int, int, int, int]:
        """Sort key, lowest first: exact paths beat variables, variables beat greedy paths,
        a named method beats ANY, and $default comes last (API Gateway's priority)."""
        greedy = any(part.endswith("+}") for part in self.path.split("/"))
        return (self.path == "$default", greedy, len(self._params), self.method == "ANY")


class RouteTable:
    """Finds the route API Gateway would choose for a request."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = sorted(routes, key=Route.specificity)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            params = route.match(method, path)
            if params is not None:
                return route, params
        return None


@dataclass(frozen=True)
class HttpRequest:
    """What the HTTP server read off the wire."""

    method: str
    target: str  # path and query as sent
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    protocol: str = "HTTP/1.1"


def build_event(
    request: HttpRequest,
    *,
    route_key: str,
    path_parameters: Mapping[str, str] | None,
    account_id: str,
    api_id: str,
    request_id: str,
    now: float | None = None,
) -> dict[str, Any]:
    """A payload format 2.0 event, as API Gateway HTTP APIs and Function URLs send it."""
    now = time.time() if now is None else now
    split = urlsplit(request.target)
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        key = name.lower()
        if key == "cookie":  # 2.0 moves cookies out of the headers
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
            continue
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    headers.setdefault("x-amzn-trace-id", f"Root=1-{int(now):08x}-{uuid.uuid4().hex[:24]}")
    query: dict[str, str] = {}
    for key, value in parse_qsl(split.query, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    host = headers.get("host", "localhost").split(":", 1)[0]
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": split.path or "/",
        "rawQueryString": split.query,
    }
    if cookies:
        event["cookies"] = cookies
    event["headers"] = headers
    if query:
        event["queryStringParameters"] = query
    event["requestContext"] = {
        "accountId": account_id,
        "apiId": api_id,
        "domainName": host,
        "domainPrefix": host.split(".", 1)[0],
        "http": {
            "method": request.method,
            "path": split.path or "/",
            "protocol": request.protocol,
            "sourceIp": request.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request_id,
        "routeKey": route_key,
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if request.body:
        if is_text_content(headers.get("content-type")):
            try:
                event["body"] = request.body.decode("utf-8")
                event["isBase64Encoded"] = False
                return event
            except UnicodeDecodeError:
                pass  # not really text: pass it as base64 like API Gateway
        event["body"] = base64.b64encode(request.body).decode("ascii")
        event["isBase64Encoded"] = True
    else:
        event["isBase64Encoded"] = False
    return event


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def json_response(status: int, document: Any) -> HttpResponse:
    return HttpResponse(status, [("content-type", "application/json")], json.dumps(document).encode())


def map_response(payload: Any) -> HttpResponse:
    """Turn a handler's return value into HTTP as payload format 2.0 specifies.

    A dict with ``statusCode`` is taken literally; anything else is a 200 whose JSON body
    is the returned value (a returned string is the body itself). Raises ValueError for a
    structured response API Gateway would reject (non-string body).
    """
    if not (isinstance(payload, dict) and "statusCode" in payload):
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return HttpResponse(200, [("content-type", "application/json")], text.encode())
    status = int(payload["statusCode"])
    headers = [(str(k).lower(), str(v)) for k, v in (payload.get("headers") or {}).items()]
    if not any(name == "content-type" for name, _ in headers):
        headers.append(("content-type", "application/json"))
    for cookie in payload.get("cookies") or []:
        headers.append(("set-cookie", str(cookie)))
    raw_body = payload.get("body")
    body: bytes
    if raw_body is None:
        body = b""
    elif not isinstance(raw_body, str):
        raise ValueError("response body must be a string")
    elif payload.get("isBase64Encoded"):
        body = base64.b64decode(raw_body)
    else:
        body = raw_body.encode("utf-8")
    return HttpResponse(status, headers, body)


class _Handler(AppHandler["Gateway"]):
    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_PAYLOAD_BYTES:
            return None
        return self.rfile.read(length) if length else b""

    def serve(self) -> None:
        body = self._read_body()
        if body is None:
            self.close_connection = True
            self._send(json_response(413, {"message": "Request Entity Too Large"}), "")
            return
        request = HttpRequest(
            method=self.command,
            target=self.path,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            protocol=self.request_version,
        )
        request_id = str(uuid.uuid4())
        self._send(self.app.handle(request, request_id), request_id)

    def _send(self, response: HttpResponse, request_id: str) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        if request_id:
            self.send_header(self.app.request_id_header, request_id)
        self.send_header("content-length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)


class Gateway(BackgroundHttpServer):
    """A bound HTTP server that turns requests into 2.0 events for one or more routes.

    ``function_url=True`` behaves like a Function URL: one function, routeKey ``$default``,
    no path parameters, and 502 when the function fails (an HTTP API answers 500).
    """

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        routes: Iterable[Route],
        invoke: Invoke,
        *,
        account_id: str,
        api_id: str,
        function_url: bool = False,
    ) -> None:
        self.table = RouteTable(routes)
        self._invoke = invoke
        self.account_id = account_id
        self.api_id = api_id
        self.function_url = function_url
        self.request_id_header = "x-amzn-requestid" if function_url else "apigw-requestid"
        super().__init__(name, host, port, _Handler)

    @property
    def url(self) -> str:
        return self.base_url

    def set_routes(self, routes: Iterable[Route]) -> None:
        """Replace the route table (the server is bound before functions are known)."""
        self.table = RouteTable(routes)

    def handle(self, request: HttpRequest, request_id: str) -> HttpResponse:
        """Route, invoke and map one request; never raises."""
        path = urlsplit(request.target).path or "/"
        found = self.table.match(request.method, path)
        if found is None:
            return json_response(404, {"message": "Not Found"})
        route, params = found
        event = build_event(
            request,
            route_key="$default" if self.function_url else route.route_key,
            path_parameters=None if self.function_url else params,
            account_id="anonymous" if self.function_url else self.account_id,
            api_id=route.api_id or self.api_id,
            request_id=request_id,
        )
        try:
            result = self._invoke(route.function, event)
        except Exception:  # the gateway answers 5xx rather than dropping the connection
            logger.exception("invoking %s failed", route.function)
            result = InvocationResult(request_id, error={"errorType": "ServiceException"})
        if result.ok:
            try:
                return map_response(result.payload)
            except (ValueError, TypeError) as exc:
                logger.warning("%s returned a malformed response: %s", route.function, exc)
        if self.function_url:
            return HttpResponse(502, [("content-type", "text/plain")], b"Internal Server Error")
        return json_response(500, {"message": "Internal Server Error"})
