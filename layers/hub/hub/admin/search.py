"""Find a tenant's messages by an exact value (issue 28): message id, external id, Idempotency-Key,
correlation id or business-key value. Never a scan: each lookup reads keys it can compute.

- message id: the message item itself;
- Idempotency-Key: the idempotency claims ingest keeps, one per integration of the tenant
  (`IDEM#<tenant>#<integration>#<sha256(key)>`), for as long as they live (the idempotency
  retention, 24 h);
- business-key value: the business-key items the worker keeps, one per (integration, message type
  with duplicate-key fields) of the tenant; each names the message holding the key now;
- external id and correlation id: GSI3, which holds each message under its external id (else its
  correlation id), and a message whose partner-given correlation id differs from its external id
  also under that (hub.adapters.dynamo.keys.lookup_values): one Query, newest first.

The point lookups (message id, claims, business keys) are one BatchGetItem together; the index
one Query; the rows' current fields one BatchGetItem (eventually consistent, as the queue's `all`
tab reads them). What a lookup names is checked against the message itself (its tenant, and the
value it was found by), so a digest collision or another tenant's item never shows.

Pages, newest received first, are cut by a position cursor (the receipt time of the last row and
the ids shown at that instant): every lookup is run again from there, so `by=any` pages like the
index-backed kinds, and a row never shows twice.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from hub.domain.clock import utcnow
from hub.domain.idempotency import idempotency_key_hash, is_idempotency_key, key_value_text
from hub.domain.ids import is_message_id
from hub.domain.retention import expired
from hub.domain.tenancy import Integration
from hub.errors import CursorMismatch, ValidationFailed
from hub.pipeline.rules import entity_key
from hub.ports import IntegrationPage, StoredIntegration


class SearchKind(StrEnum):
    """What `q` is; `any` runs every lookup."""

    ANY = "any"
    MESSAGE_ID = "message_id"
    EXTERNAL_ID = "external_id"
    IDEMPOTENCY_KEY = "idempotency_key"
    CORRELATION_ID = "correlation_id"
    BUSINESS_KEY = "business_key"


#: The row's `matched_by` when several lookups find one message: the first of these.
MATCH_ORDER = (
    SearchKind.MESSAGE_ID,
    SearchKind.EXTERNAL_ID,
    SearchKind.IDEMPOTENCY_KEY,
    SearchKind.CORRELATION_ID,
    SearchKind.BUSINESS_KEY,
)
#: How a multi-field business key is typed: its values in the fields' order, joined by this.
KEY_VALUE_SEPARATOR = "|"
#: Value forms tried per business key (a value may be a string or a JSON scalar; two fields of
#: three forms each make nine keys): beyond this, the rest are not looked up.
MAX_KEY_FORMS = 16
_INDEXED = frozenset({SearchKind.ANY, SearchKind.EXTERNAL_ID, SearchKind.CORRELATION_ID})
_BY_INTEGRATION = frozenset({SearchKind.ANY, SearchKind.IDEMPOTENCY_KEY, SearchKind.BUSINESS_KEY})
_INTEGRATIONS_PAGE = 100


@dataclass(frozen=True)
class SearchedMessage:
    """A message as the search reads it: its queue row (hub.adapters.dynamo.status_index's shape)
    and the values a match is checked against."""

    message_id: str
    tenant_id: str
    integration_id: str
    received_at: str  # the stored fixed-width UTC form: sorts as the time does
    row: dict[str, Any]
    external_id: str | None = None
    correlation_id: str | None = None
    idempotency_key: str | None = None
    entity_key: str | None = None
    #: The message's TTL (epoch seconds; issue 29): past it the search does not show it.
    expires_at: int | None = None


@dataclass(frozen=True)
class PointKeys:
    """The keys one BatchGetItem reads: the message id itself, the tenant's idempotency claims
    (integration id, sha256 of the key) and its business keys (hub.pipeline.rules.entity_key:
    they name the tenant)."""

    tenant_id: str
    message_id: str | None = None
    claims: tuple[tuple[str, str], ...] = ()
    entities: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.message_id or self.claims or self.entities)


@dataclass(frozen=True)
class Named:
    """What the point lookups found: message ids by the kind of lookup that named them, and the
    messages read on the way (a message id's own item)."""

    ids: dict[str, set[SearchKind]] = field(default_factory=dict)
    messages: dict[str, SearchedMessage] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexSlice:
    """GSI3 rows, newest received first: (message id, received_at); `more` when the Query
    stopped at its limit."""

    rows: list[tuple[str, str]]
    more: bool


class MessageSearchStore(Protocol):
    def named(self, keys: PointKeys, now: datetime) -> Named:
        """One BatchGetItem (one per 100 keys) of `keys`: the message item, the live claims' and
        the business keys' message ids."""
        ...

    def by_value(self, tenant_id: str, value: str, received_at_most: str | None, limit: int) -> IndexSlice:
        """One Query of GSI3: the tenant's messages carrying `value`, newest received first, from
        `received_at_most` (inclusive) down, at most `limit`."""
        ...

    def messages(self, message_ids: Collection[str]) -> dict[str, SearchedMessage]:
        """One BatchGetItem (one per 100) of the messages; those gone are left out."""
        ...


class TenantIntegrations(Protocol):
    """The tenant's integrations as stored (hub.adapters.dynamo.integrations)."""

    def get(self, tenant_id: str, integration_id: str) -> StoredIntegration | None: ...

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage: ...


@dataclass(frozen=True)
class SearchPage:
    """Rows newest received first (queue rows plus `matched_by`); `next_cursor` None on the last."""

    rows: list[dict[str, Any]]
    next_cursor: str | None


@dataclass(frozen=True)
class _Position:
    """Where a page ends: the receipt time of its last row and the ids shown at that instant."""

    at: str
    seen: frozenset[str]


@dataclass(frozen=True)
class _Candidate:
    message: SearchedMessage
    matched_by: SearchKind

    @property
    def order(self) -> tuple[str, str]:
        return (self.message.received_at, self.message.message_id)


class MessageSearch:
    """The search use case: exact lookups, scoped to one tenant, merged newest first."""

    def __init__(
        self,
        store: MessageSearchStore,
        integrations: TenantIntegrations,
        *,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._integrations = integrations
        self._clock = clock

    def search(
        self,
        tenant_id: str,
        q: str,
        by: SearchKind = SearchKind.ANY,
        *,
        limit: int = 50,
        cursor: str | None = None,
        integration_id: str | None = None,
        include_expired: bool = False,
    ) -> SearchPage:
        """The tenant's messages `q` names as `by` says (each found by the first of MATCH_ORDER
        that names it), newest received first, at most `limit`, from `cursor` (given out by the
        same search: another one's is CursorMismatch, a malformed one ValidationFailed). Only
        `integration_id`'s when given. Another tenant's message never shows, nor one past its
        retention (DynamoDB's TTL deletes it later) unless `include_expired` (an erasure)."""
        scope = _scope(tenant_id, q, by, integration_id)
        position = _decode(cursor, scope) if cursor else None
        now = self._clock()
        named = Named()
        keys = point_keys(tenant_id, q, by, self._integrations_of(tenant_id, by, integration_id))
        if keys:
            named = self._store.named(keys, now)
        index = IndexSlice(rows=[], more=False)
        if by in _INDEXED:
            seen = position.seen if position else frozenset()
            index = self._store.by_value(tenant_id, q, position.at if position else None, limit + len(seen))
        wanted = set(named.ids) | {message_id for message_id, _ in index.rows}
        read = dict(named.messages)
        missing = wanted - set(read)
        if missing:
            read.update(self._store.messages(missing))
        search = _Search(tenant_id, q, by, integration_id, frozenset(keys.entities))
        candidates = [
            candidate
            for message_id in wanted
            if (message := read.get(message_id)) is not None
            if include_expired or not expired(message.expires_at, now)
            for candidate in [_matched(message, search, named.ids.get(message_id, set()))]
            if candidate is not None
        ]
        rows, after = _page(candidates, index, position, limit)
        return SearchPage(rows=rows, next_cursor=_encode(after, scope) if after else None)

    def _integrations_of(
        self, tenant_id: str, by: SearchKind, integration_id: str | None
    ) -> list[Integration]:
        """The integrations whose claims and business keys the search reads (none when `by`
        needs neither)."""
        if by not in _BY_INTEGRATION:
            return []
        if integration_id is not None:
            stored = self._integrations.get(tenant_id, integration_id)
            return [stored.integration] if stored is not None else []
        found: list[Integration] = []
        cursor: str | None = None
        while True:
            page = self._integrations.list_integrations(tenant_id, _INTEGRATIONS_PAGE, cursor)
            found += [stored.integration for stored in page.integrations]
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor


# --- which keys `q` names (pure) -----------------------------------------------------------------


def point_keys(tenant_id: str, q: str, by: SearchKind, integrations: Iterable[Integration]) -> PointKeys:
    """The keys of the point lookups `by` runs for `q`: the message item when `q` is a message id;
    an idempotency claim per integration when `q` can be an Idempotency-Key; the business keys
    `q` can be, per integration and message type with duplicate-key fields."""
    integrations = list(integrations)
    message_id = q if by in (SearchKind.ANY, SearchKind.MESSAGE_ID) and is_message_id(q) else None
    claims: tuple[tuple[str, str], ...] = ()
    if by in (SearchKind.ANY, SearchKind.IDEMPOTENCY_KEY) and is_idempotency_key(q):
        digest = idempotency_key_hash(q)
        claims = tuple((integration.integration_id, digest) for integration in integrations)
    entities: tuple[str, ...] = ()
    if by in (SearchKind.ANY, SearchKind.BUSINESS_KEY):
        entities = tuple(
            dict.fromkeys(
                entity_key(tenant_id, integration.integration_id, message_type, values)
                for integration in integrations
                for message_type, config in sorted(integration.message_types.items())
                for values in business_key_values(q, len(config.duplicate_key_fields))
            )
        )
    return PointKeys(tenant_id=tenant_id, message_id=message_id, claims=claims, entities=entities)


def business_key_values(q: str, fields: int) -> list[list[str]]:
    """The normalized key values (hub.domain.idempotency.duplicate_key_values) `q` can stand for,
    for a key of `fields` duplicate-key fields: each value as a string, and as the JSON scalar it
    spells when it spells one (`4711` may be the number); a key of several fields takes `q` as
    its values joined by KEY_VALUE_SEPARATOR (`ACME|PO-1`), `null` for a field the payload lacks.
    None for a type without duplicate-key fields or a `q` of another number of values."""
    if fields == 0:
        return []
    parts = q.split(KEY_VALUE_SEPARATOR) if fields > 1 else [q]
    if len(parts) != fields:
        return []
    combinations = itertools.islice(itertools.product(*(_value_forms(part) for part in parts)), MAX_KEY_FORMS)
    return [list(values) for values in combinations if any(value != "null" for value in values)]


def _value_forms(text: str) -> list[str]:
    forms = [key_value_text(text)]
    try:
        parsed = json.loads(text)
    except ValueError:
        return forms
    if parsed is None or isinstance(parsed, bool | int | float):
        forms.append(key_value_text(parsed))
    return forms


# --- what a lookup named, checked against the message ---------------------------------------------


@dataclass(frozen=True)
class _Search:
    """One search's parameters, as each message it reads is checked against them."""

    tenant_id: str
    q: str
    by: SearchKind
    integration_id: str | None
    entities: frozenset[str]


def _matched(message: SearchedMessage, search: _Search, named_by: set[SearchKind]) -> _Candidate | None:
    """`message` as a row of `search`, with the first kind that really finds it; None when none
    does (another tenant's, another integration's, a digest collision)."""
    if message.tenant_id != search.tenant_id:
        return None
    if search.integration_id is not None and message.integration_id != search.integration_id:
        return None
    q, by = search.q, search.by
    kinds = set()
    if SearchKind.MESSAGE_ID in named_by and message.message_id == q:
        kinds.add(SearchKind.MESSAGE_ID)
    if SearchKind.IDEMPOTENCY_KEY in named_by and message.idempotency_key == q:
        kinds.add(SearchKind.IDEMPOTENCY_KEY)
    # An XML message's key is on its item only once its first step ran (it holds the key then).
    if SearchKind.BUSINESS_KEY in named_by and message.entity_key in {None, "", *search.entities}:
        kinds.add(SearchKind.BUSINESS_KEY)
    if by in (SearchKind.ANY, SearchKind.EXTERNAL_ID) and message.external_id == q:
        kinds.add(SearchKind.EXTERNAL_ID)
    if by in (SearchKind.ANY, SearchKind.CORRELATION_ID) and message.correlation_id == q:
        kinds.add(SearchKind.CORRELATION_ID)
    first = next((kind for kind in MATCH_ORDER if kind in kinds), None)
    return _Candidate(message, first) if first is not None else None


# --- pages --------------------------------------------------------------------------------------


def _page(
    candidates: Sequence[_Candidate], index: IndexSlice, position: _Position | None, limit: int
) -> tuple[list[dict[str, Any]], _Position | None]:
    """The page's rows and where the next one starts (None: this is the last). Rows newer than
    the index's last row read are certain; older ones wait for the next page when the index has
    more (its unread rows are older than the last one read)."""
    if position is not None:
        candidates = [c for c in candidates if _after(c.message.received_at, c.message.message_id, position)]
    frontier = index.rows[-1][1] if index.more and index.rows else None
    ready = sorted(
        (c for c in candidates if frontier is None or c.message.received_at >= frontier),
        key=lambda c: c.order,
        reverse=True,
    )
    shown = ready[:limit]
    rows = [{**c.message.row, "matched_by": c.matched_by.value} for c in shown]
    if len(ready) <= limit and len(ready) == len(candidates) and not index.more:
        return rows, None
    if shown:
        at = shown[-1].message.received_at
        ids = {c.message.message_id for c in shown if c.message.received_at == at}
    else:
        # Nothing the index read so far matched: go on below it, past every row read at its last
        # instant (whatever comes next is older, or one of those).
        assert frontier is not None, "without more in the index every candidate is ready"
        at, ids = frontier, {message_id for message_id, received in index.rows if received == frontier}
    if position is not None and position.at == at:
        ids |= position.seen
    return rows, _Position(at=at, seen=frozenset(ids))


def _after(received_at: str, message_id: str, position: _Position) -> bool:
    """Whether a row comes after `position` (older, or at its instant and not yet shown)."""
    return received_at < position.at or (received_at == position.at and message_id not in position.seen)


def _scope(tenant_id: str, q: str, by: SearchKind, integration_id: str | None) -> str:
    """Names the search a cursor belongs to (the value itself is not in the cursor)."""
    material = "\x1f".join((tenant_id, q, by.value, integration_id or ""))
    return hashlib.sha256(material.encode()).hexdigest()[:16]


_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
_MAX_SEEN = 200


def _encode(position: _Position, scope: str) -> str:
    raw = json.dumps({"at": position.at, "seen": sorted(position.seen), "s": scope}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(cursor: str, scope: str) -> _Position:
    invalid = ValidationFailed(
        "cursor is not valid", details=[{"field": "cursor", "problem": "invalid_cursor"}]
    )
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error) as exc:
        raise invalid from exc
    if not isinstance(data, dict) or set(data) != {"at", "seen", "s"}:
        raise invalid
    at, seen, given = data["at"], data["seen"], data["s"]
    if not (isinstance(at, str) and _TIME.fullmatch(at) and isinstance(given, str)):
        raise invalid
    if not isinstance(seen, list) or len(seen) > _MAX_SEEN:
        raise invalid
    if not all(isinstance(shown, str) and is_message_id(shown) for shown in seen):
        raise invalid
    if given != scope:
        raise CursorMismatch(
            "cursor was given out for another search; start again without it",
            details=[{"field": "cursor", "problem": "other_search"}],
        )
    return _Position(at=at, seen=frozenset(seen))
