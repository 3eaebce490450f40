"""docs/decisions/ holds one record per decision: each has the sections Context, Decision and
Consequences, each is listed in the index (docs/decisions/README.md), and every relative link in
those files names a file that exists."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions"
INDEX = DECISIONS / "README.md"

REQUIRED_SECTIONS = ("Context", "Decision", "Consequences")

#: A Markdown inline link or image: [text](target) / ![alt](target), with an optional title.
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _records() -> list[Path]:
    return sorted(path for path in DECISIONS.glob("*.md") if path.name != INDEX.name)


def _sections(text: str) -> list[str]:
    return [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]


def _links(text: str) -> list[str]:
    prose = _CODE_SPAN.sub("", _FENCE.sub("", text))
    return _LINK.findall(prose)


def _is_relative(target: str) -> bool:
    """Not an anchor on the same page, an absolute path, or a URL with a scheme."""
    return not (target.startswith(("#", "/")) or _SCHEME.match(target))


def test_the_folder_holds_records_and_an_index() -> None:
    assert INDEX.is_file()
    assert len(_records()) >= 10


@pytest.mark.parametrize("record", _records(), ids=lambda path: path.name)
def test_each_record_has_context_decision_and_consequences(record: Path) -> None:
    text = record.read_text(encoding="utf-8")
    assert text.startswith("# "), f"{record.name} starts with its title"
    sections = _sections(text)
    missing = [name for name in REQUIRED_SECTIONS if name not in sections]
    assert not missing, f"{record.name} lacks the section(s) {missing}"
    positions = [sections.index(name) for name in REQUIRED_SECTIONS]
    assert positions == sorted(positions), f"{record.name}: Context, Decision, Consequences in that order"


def test_every_record_is_listed_in_the_index() -> None:
    targets = _links(INDEX.read_text(encoding="utf-8"))
    listed = {Path(unquote(target.split("#", 1)[0])).name for target in targets}
    unlisted = [record.name for record in _records() if record.name not in listed]
    assert not unlisted, f"not in docs/decisions/README.md: {unlisted}"


@pytest.mark.parametrize("page", [INDEX, *_records()], ids=lambda path: path.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _links(page.read_text(encoding="utf-8")):
        if not _is_relative(target):
            continue
        path = unquote(target.split("#", 1)[0])
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.name} links to missing files: {broken}"


def test_the_link_scanner_sees_links_and_skips_code() -> None:
    text = "[a](one.md) ![b](../two.png#x) [c](https://example.com) `[d](code.md)`\n"
    text += "```\n[e](fenced.md)\n```\n"
    assert _links(text) == ["one.md", "../two.png#x", "https://example.com"]
    assert [_is_relative(target) for target in _links(text)] == [True, True, False]
