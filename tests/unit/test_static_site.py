"""The operator's page is served as fixed static files with a strict policy (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.api.static_site import CONTENT_SECURITY_POLICY, StaticSite

PAGE = Path(__file__).parents[2] / "functions" / "admin_api" / "page"


@pytest.fixture
def site() -> StaticSite:
    return StaticSite(PAGE)


@pytest.mark.parametrize(
    "path", ["/admin", "/admin/", "/admin/queue", "/admin/messages/msg_01jabcdefghjkmnpqrstvwxyz0"]
)
def test_every_view_path_answers_the_shell(site: StaticSite, path: str) -> None:
    answer = site.respond("GET", path, {})
    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"].startswith("text/html")
    assert '<script type="module" src="/admin/static/app.js">' in answer["body"]
    assert answer["headers"]["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert answer["headers"]["Cache-Control"] == "no-cache"


def test_assets_have_their_type_and_are_cached_briefly(site: StaticSite) -> None:
    answer = site.respond("GET", "/admin/static/views/queue.js", {})
    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"].startswith("text/javascript")
    assert "export async function render" in answer["body"]
    assert answer["headers"]["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    [
        "/admin/static/nope.js",
        "/admin/static/../index.html",
        "/admin/static/%2e%2e/app.py",
        "/admin/static/views/../../index.html",
        "/admin/<script>",
        "/admin/static/",
    ],
)
def test_anything_outside_the_fixed_files_is_not_found(site: StaticSite, path: str) -> None:
    answer = site.respond("GET", path, {})
    assert answer["statusCode"] == 404
    assert '"code":"route_not_found"' in answer["body"]


def test_only_get_and_head(site: StaticSite) -> None:
    posted = site.respond("POST", "/admin/queue", {})
    assert posted["statusCode"] == 405
    assert posted["headers"]["Allow"] == "GET, HEAD"
    head = site.respond("HEAD", "/admin/static/app.css", {})
    assert head["statusCode"] == 200
    assert head["body"] == ""


def test_an_unchanged_file_answers_304(site: StaticSite) -> None:
    first = site.respond("GET", "/admin/static/app.js", {})
    again = site.respond("GET", "/admin/static/app.js", {"if-none-match": first["headers"]["ETag"]})
    assert again["statusCode"] == 304
    assert again["body"] == ""


def test_the_page_never_builds_markup_from_strings() -> None:
    """Partner and destination text reaches the page through the API: the scripts put it in as
    text (ui.h / textContent), never as HTML."""
    for script in (PAGE / "static").rglob("*.js"):
        text = script.read_text()
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ):
            assert sink not in text, f"{script.name} uses {sink}"
