"""A signal of DynamoDB stream writes in moto, so that an idle stream poller sleeps until one.

Lambda reads each shard about four times a second. Locally, every empty read is a GetRecords
request through moto's HTTP server: two stream mappings polling that way were most of an idle
stack's CPU. moto runs in the stack's own process, so its shards can say when a record is
appended: an idle poller (nothing pending, nothing to retry) waits for the next write, at most
``IDLE_CEILING`` seconds, then reads as before. What a poller reads, and how it batches, retries
and invokes, is unchanged; a new record reaches it as soon as it is written instead of at the
next poll.
"""

from __future__ import annotations

import threading

#: An idle poller reads at least this often, whatever the signal says.
IDLE_CEILING = 1.0

_changed = threading.Condition()
_writes = 0


def install() -> None:
    """Idempotent: moto's stream shards count each record they append."""
    from moto.dynamodb.models.dynamo_type import Item  # noqa: PLC0415 - moto only where it runs
    from moto.dynamodb.models.table import StreamShard  # noqa: PLC0415

    add = StreamShard.add
    if getattr(add, "__hub_signalled__", False):
        return

    def signalled_add(shard: StreamShard, old: Item | None, new: Item | None) -> None:
        add(shard, old, new)
        written()

    signalled_add.__hub_signalled__ = True  # type: ignore[attr-defined]
    StreamShard.add = signalled_add  # type: ignore[method-assign,assignment]


def written() -> None:
    """A record was appended to a stream (wakes every waiting poller)."""
    global _writes  # the one counter of this process's moto
    with _changed:
        _writes += 1
        _changed.notify_all()


def count() -> int:
    """How many records were appended so far: read before a poll, passed to ``wait_after``."""
    with _changed:
        return _writes


def wait_after(seen: int, stop: threading.Event, timeout: float = IDLE_CEILING) -> None:
    """Returns once a record was appended since ``count()`` gave ``seen``, ``stop`` is set and
    ``wake`` called, or ``timeout`` passed."""
    with _changed:
        _changed.wait_for(lambda: _writes != seen or stop.is_set(), timeout)


def wake() -> None:
    """Wakes every waiting poller to look at its stop event."""
    with _changed:
        _changed.notify_all()
