"""Content-Type rules of the partner API: which media types a route takes (RFC 9110 §8.3).

receive-message takes `application/json` only; an inbound webhook takes what its adapter's
`body_format` declares (or the integration's own list). The body is always read as UTF-8, so a
declared charset other than UTF-8 (or its subset US-ASCII) is refused too, rather than misread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hub.errors import UnsupportedMediaType

#: RFC 9110 token characters (type, subtype and parameter names).
_TCHARS = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_TYPE = re.compile(rf"\s*({_TCHARS})/({_TCHARS})\s*")
_PARAMETER = re.compile(rf"\s*({_TCHARS})\s*=\s*(?:({_TCHARS})|\"((?:[^\"\\]|\\.)*)\")\s*")
#: A media range a route takes: `type/subtype`, `type/*` or `type/*+suffix`, lowercase.
_RANGE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/(?:\*|\*\+[a-z0-9!#$&^_.-]+|[a-z0-9][a-z0-9!#$&^_.+-]*)")

#: What `charset` may say: the body is decoded as UTF-8, and US-ASCII is a subset of it.
UTF8_CHARSETS = frozenset({"utf-8", "utf8", "us-ascii"})

#: receive-message.
JSON_ONLY: tuple[str, ...] = ("application/json",)
#: An inbound webhook's defaults per adapter `body_format`.
WEBHOOK_DEFAULTS: dict[str, tuple[str, ...]] = {
    "json": ("application/json", "application/*+json"),
    "xml": ("application/xml", "text/xml", "application/*+xml"),
    "text": ("text/*",),
}


@dataclass(frozen=True)
class MediaType:
    """A parsed Content-Type: type and subtype lowercase, parameter names lowercase."""

    type: str
    subtype: str
    parameters: tuple[tuple[str, str], ...] = ()

    @property
    def essence(self) -> str:
        return f"{self.type}/{self.subtype}"

    def parameter(self, name: str) -> str | None:
        return next((value for key, value in self.parameters if key == name), None)


def parse(header: str | None) -> MediaType | None:
    """The media type of a Content-Type header value; None when absent or malformed."""
    if not header:
        return None
    essence, *raw_parameters = header.split(";")
    found = _MEDIA_TYPE.fullmatch(essence)
    if found is None:
        return None
    parameters: list[tuple[str, str]] = []
    for raw in raw_parameters:
        if not raw.strip():
            continue  # "application/json;" is common and harmless
        parameter = _PARAMETER.fullmatch(raw)
        if parameter is None:
            return None
        token, quoted = parameter.group(2), parameter.group(3)
        value = token if token is not None else re.sub(r"\\(.)", r"\1", quoted or "")
        parameters.append((parameter.group(1).lower(), value))
    return MediaType(found.group(1).lower(), found.group(2).lower(), tuple(parameters))


def check_range(value: str) -> str:
    """`value` as a media range a route may take (lowercase); ValueError otherwise."""
    lowered = value.strip().lower()
    if not _RANGE.fullmatch(lowered):
        raise ValueError("a media type is type/subtype, type/* or type/*+suffix (e.g. application/*+json)")
    return lowered


def matches(media: MediaType, media_range: str) -> bool:
    """Whether `media` is in `media_range` (`type/subtype`, `type/*` or `type/*+suffix`)."""
    kind, _, subtype = media_range.partition("/")
    if kind != media.type:
        return False
    if subtype == "*":
        return True
    if subtype.startswith("*+"):
        return media.subtype.endswith(subtype[1:]) and len(media.subtype) > len(subtype) - 1
    return subtype == media.subtype


def require(header: str | None, accepted: Iterable[str]) -> MediaType:
    """The request's media type when the route takes it: one of `accepted`, and a charset (if
    any) that is UTF-8. UnsupportedMediaType (415) naming the accepted types otherwise."""
    ranges = tuple(accepted)
    media = parse(header)
    if media is not None and any(matches(media, r) for r in ranges):
        charset = media.parameter("charset")
        if charset is None or charset.lower() in UTF8_CHARSETS:
            return media
        problem = "the body is read as UTF-8; send charset=utf-8 or no charset"
    elif media is None:
        problem = "Content-Type is missing or malformed" if header else "Content-Type is missing"
    else:
        problem = "this media type is not taken here"
    raise UnsupportedMediaType(f"unsupported Content-Type: {problem}", details={"accepted": list(ranges)})
