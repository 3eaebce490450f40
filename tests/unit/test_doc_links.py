"""The documentation's links lead somewhere: every relative link of README.md, CONTRIBUTING.md and
docs/*.md names a file or folder of the repository, and a `#anchor` a heading of its page (as
GitHub makes anchors). And the README stays a front page: at most 300 lines, nothing pointing
outside the repository, no issue numbers."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from devstack.api_docs import Anchors

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [
    README,
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "bench").rglob("*.md")),
]

_FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
_HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text: str) -> str:
    """`text` without its code blocks and code spans (a link shown as code is no link)."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(path: Path) -> list[str]:
    text = prose(path.read_text(encoding="utf-8"))
    return _INLINE_LINK.findall(text) + _REFERENCE_LINK.findall(text)


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown page: its headings' (GitHub's rule) and explicit `<a id>`s."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    numbered = Anchors()
    found = {numbered(heading) for _level, heading in _HEADING.findall(text)}
    return frozenset(found | set(_HTML_ANCHOR.findall(text)))


def relative_links(path: Path) -> list[str]:
    return [link for link in links(path) if not _EXTERNAL.match(link)]


def broken(document: Path, link: str) -> str | None:
    """Why `link` of `document` leads nowhere, or None when it leads somewhere."""
    target, _, anchor = link.partition("#")
    path = (document.parent / target).resolve() if target else document
    if not path.exists():
        return f"{link}: names nothing"
    if path != ROOT and ROOT not in path.parents:
        return f"{link}: points outside the repository"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}"
    return None


def test_the_documents_are_there():
    names = {path.relative_to(ROOT).as_posix() for path in DOCUMENTS}

    assert {
        "README.md",
        "CONTRIBUTING.md",
        "docs/api.md",
        "docs/api-guide.md",
        "docs/development.md",
        "docs/mapping.md",
        "docs/operations.md",
        "docs/security.md",
    } <= names
    assert sum(len(relative_links(path)) for path in DOCUMENTS) > 100


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_names_a_file_and_a_heading_that_exist(document: Path):
    reasons = [broken(document, link) for link in relative_links(document)]

    assert [reason for reason in reasons if reason] == []


def test_a_broken_link_is_told_apart():
    assert broken(README, "docs/pipeline.md#retries") is None
    assert broken(README, "docs/pipeline.md#no-such-heading") is not None
    assert broken(README, "docs/no-such-page.md") is not None
    assert broken(README, "#no-such-heading") is not None


def test_the_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")

    assert len(text.splitlines()) <= 300
    assert not re.search(r"\bissue\s*#?\d+", text, flags=re.IGNORECASE)
    assert "../" not in text
    assert not re.search(r"seeds?/|\b\d{3}_\w+\.txt\b", text)
    assert [link for link in links(README) if _EXTERNAL.match(link)] == []


def test_anchors_follow_githubs_rules():
    page = ROOT / "docs" / "api-guide.md"

    assert {"post-apiedi-hubreceive-message", "admin-api-operators", "idempotency-key"} <= anchors(page)
