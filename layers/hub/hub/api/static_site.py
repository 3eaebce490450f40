"""The operator's web page (issue 13): static files served by the admin function itself, under
`/admin` on its Function URL. No build step, no CDN: the files are read from the function's own
code folder the first time a page is asked for and kept for the process.

What the page is allowed to do is fixed by its headers: scripts and styles only from this origin,
no inline script, no framing, no referrer, fetches only to this origin. The page holds the admin
token in memory / sessionStorage and sends it as a header on every API call; no cookie is ever
set, so there is no cross-site request to forge.

Paths: `/admin` and every `/admin/<view>...` path answer the page's shell (the page routes on
the client); `/admin/static/<file>` answers one of the files of the static folder (a fixed set,
read at load: a name outside it is 404, so no path reaches outside the folder). Only GET and
HEAD; anything else is 405 in the one error shape.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

MOUNT = "/admin"
ASSETS = MOUNT + "/static/"

#: The page's content security policy: everything from this origin only, nothing inline.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
_ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*(?:/[a-z0-9][a-z0-9_-]*)?\.(?:js|css|svg|png)$")
#: A client-side view path: letters, digits and the few separators our ids use.
_VIEW_PATH = re.compile(r"^(?:/[A-Za-z0-9_.:-]+)*/?$")


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str

    @cached_property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'


class StaticSite:
    """The page's files under `root` (the shell `index.html` and the `static/` folder)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    @staticmethod
    def serves(path: str) -> bool:
        """Whether a request path is the page's (everything else is the API's)."""
        return path == MOUNT or path.startswith(MOUNT + "/")

    @cached_property
    def _shell(self) -> Asset:
        return Asset((self._root / "index.html").read_bytes(), _TYPES[".html"])

    @cached_property
    def _assets(self) -> dict[str, Asset]:
        """Every servable file of `static/`, by its name under it, read once."""
        folder = self._root / "static"
        found: dict[str, Asset] = {}
        for file in sorted(folder.rglob("*")):
            name = file.relative_to(folder).as_posix()
            if file.is_file() and _ASSET_NAME.fullmatch(name):
                found[name] = Asset(file.read_bytes(), _TYPES[file.suffix])
        return found

    def respond(self, method: str, path: str, headers: Mapping[str, str]) -> dict[str, Any]:
        """The Function URL answer for a page request."""
        if method not in ("GET", "HEAD"):
            return _error(
                405, "method_not_allowed", "the page answers GET and HEAD only", {"Allow": "GET, HEAD"}
            )
        if path.startswith(ASSETS):
            asset = self._assets.get(path.removeprefix(ASSETS))
            if asset is None:
                return _error(404, "route_not_found", "no such file of the page")
            return _answer(asset, method, headers, "public, max-age=300")
        if not _VIEW_PATH.fullmatch(path.removeprefix(MOUNT)):
            return _error(404, "route_not_found", "no such page")
        return _answer(self._shell, method, headers, "no-cache")


def _answer(asset: Asset, method: str, headers: Mapping[str, str], cache: str) -> dict[str, Any]:
    common = {**SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": cache}
    if headers.get("if-none-match") == asset.etag:
        return {"statusCode": 304, "headers": common, "body": "", "isBase64Encoded": False}
    text = asset.content_type.startswith(("text/", "image/svg"))
    body = (
        "" if method == "HEAD" else (asset.body.decode() if text else base64.b64encode(asset.body).decode())
    )
    return {
        "statusCode": 200,
        "headers": {**common, "Content-Type": asset.content_type},
        "body": body,
        "isBase64Encoded": not text and method != "HEAD",
    }


def _error(status: int, code: str, message: str, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {**SECURITY_HEADERS, "Content-Type": "application/json", **(extra or {})},
        "body": json.dumps({"error": {"code": code, "message": message}}, separators=(",", ":")),
        "isBase64Encoded": False,
    }
