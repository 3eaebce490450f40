"""Pages of the fakes' listings, by id: what the adapters' listings promise (hub.ports), without
their storage - ids in order (oldest or newest first), at most `limit` a page, and an opaque
cursor that only its own listing takes back (ValidationFailed otherwise, as the adapters'
cursors: hub.adapters.dynamo.cursors)."""

from __future__ import annotations

from collections.abc import Iterable

from hub.adapters.dynamo.cursors import decode_cursor, encode_cursor

_SHAPE = frozenset({"listing", "after"})


def page(
    ids: Iterable[str], limit: int, cursor: str | None, listing: str, *, newest_first: bool = False
) -> tuple[list[str], str | None]:
    """One page of `ids` in `listing` (e.g. the tenant's), after `cursor`; and the next cursor
    (None on the last page)."""
    ordered = sorted(set(ids), reverse=newest_first)
    if cursor is not None:
        after = decode_cursor(cursor, lambda key: key["listing"] == listing, _SHAPE)["after"]
        ordered = [i for i in ordered if (i < after if newest_first else i > after)]
    taken = ordered[:limit]
    more = len(ordered) > limit and bool(taken)
    return taken, encode_cursor({"listing": listing, "after": taken[-1]}) if more else None
