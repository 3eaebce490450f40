"""docs/api.md, the API reference, is what `make docs` renders from the code now: a route, a
parameter, an answer or a model changed without `make docs` fails here (and so `make test`)."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

from devstack import api_docs

REFERENCE = api_docs.ROOT / "docs" / "api.md"


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    return api_docs.documents()


def test_docs_api_md_is_what_make_docs_renders_now(documents):
    committed = REFERENCE.read_text(encoding="utf-8")
    rendered = api_docs.render(documents)

    if committed != rendered:
        diff = difflib.unified_diff(
            committed.splitlines(), rendered.splitlines(), "docs/api.md", "make docs", lineterm="", n=1
        )
        shown = "\n".join(list(diff)[:60])
        pytest.fail(f"docs/api.md is not what `make docs` renders now: run `make docs`.\n{shown}")


def test_every_route_and_answer_of_both_documents_is_in_the_reference(documents):
    text = api_docs.render(documents)

    for document in documents.values():
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                heading = f"`{method.upper()} {path}`"
                start = text.index(f" {heading}\n")
                section = text[start : text.find("\n#", start + 1)]
                for status in operation["responses"]:
                    assert f"| `{status}` " in section, (heading, status)
                for parameter in operation.get("parameters", ()):
                    assert f"| `{parameter['name']}` |" in section, (heading, parameter["name"])


def test_anchors_are_numbered_as_github_numbers_repeated_headings():
    anchors = api_docs.Anchors()

    assert [anchors("`POST /api/edi-hub/receive-message`"), anchors("Error"), anchors("Error")] == [
        "post-apiedi-hubreceive-message",
        "error",
        "error-1",
    ]
