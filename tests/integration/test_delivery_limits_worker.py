"""Per-connection limits (issue 30) through the real admin, ingest and worker handlers on moto,
delivering to a real HTTP destination on 127.0.0.1 that notes when each request arrived.

- the admin API keeps a connection's `limits` and refuses ones out of bounds;
- a connection limited to 0.4 requests a second: what cannot wait a second in the worker is
  held (`retry_pending` / `rate_limited`, no attempt, no retry spent, in the waiting tab), then
  released by the drain oldest first; every message delivered once, never faster than declared.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import Any

import pytest

from hub.adapters.aws import client
from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import Table, Update
from tests.integration.test_connections import path, rest
from tests.integration.test_pause_and_breaker import (
    CONNECTION,
    api,  # noqa: F401 - fixture
    connected,  # noqa: F401 - fixture
    items,
    keys_seen,
    order,
    run_in_real_time,
    settled,  # noqa: F401 - fixture
    statuses,
)

SLOW = {"rate_per_second": 0.4, "burst": 1}  # 2,500 ms apart: more than a worker waits inline
#: How much later than sent a request may reach the local destination (a loaded machine).
JITTER = 0.3


def limit(api, limits: dict[str, Any] | None) -> Any:  # noqa: F811 - the fixture, passed in
    """PUTs the connection with `limits` (same URL)."""
    url = api("GET", path("t1", CONNECTION)).body["url"]
    return api("PUT", path("t1", CONNECTION), body=rest(url, limits=limits))


class TestDeclared:
    def test_limits_are_kept_and_shown(self, connected, api):  # noqa: F811
        answer = limit(api, {"max_concurrency": 2, "rate_per_second": 5, "burst": 3})
        assert answer.status == 200, answer.body
        shown = api("GET", path("t1", CONNECTION)).body
        assert shown["limits"] == {"max_concurrency": 2, "rate_per_second": 5.0, "burst": 3}

    @pytest.mark.parametrize(
        "limits",
        [
            {"max_concurrency": 0},
            {"rate_per_second": 0},
            {"burst": 2},
            {"rate_per_second": 1, "per_minute": 3},
        ],
    )
    def test_limits_out_of_bounds_are_refused(self, connected, api, limits):  # noqa: F811
        answer = limit(api, limits)
        assert answer.status == 400, answer.body
        assert answer.body["error"]["code"] == "validation_error"
        assert answer.body["error"]["details"][0]["field"].startswith("limits")

    def test_a_new_connection_may_declare_them(self, settled, tenancy, api, destination):  # noqa: F811
        created = api(
            "POST",
            path(),
            body=rest(connection_id="sefaz-like", url=destination.url, limits={"max_concurrency": 1}),
        )
        assert created.status == 201, created.body
        assert created.body["limits"] == {"max_concurrency": 1, "rate_per_second": None, "burst": None}


class TestRateLimited:
    def test_held_then_released_oldest_first_never_faster_than_declared(
        self,
        connected,  # noqa: F811
        api,  # noqa: F811
        tenancy,
        ingest_api,
        worker,
        destination,
    ):
        assert limit(api, SLOW).status == 200
        ids = [order(ingest_api, tenancy, n) for n in range(4)]

        worker(include_delayed=False, settle=False, max_batches=1)

        # The first went; the rest wait on the connection, nothing spent
        assert len(destination.requests) == 1
        stored = statuses(connected)
        for message_id in ids[1:]:
            held = stored[message_id]
            assert held["pipeline_status"] == "retry_pending"
            assert (held["held_reason"], held["held_on"]) == ("rate_limited", CONNECTION)
            assert not {"retry_count", "next_retry_at"} & set(held)
        assert len(items(connected, f"HELD#t1#{CONNECTION}")) == 3
        waiting = api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "waiting", "limit": "10"})
        assert {row["message_id"] for row in waiting.body["items"]} == set(ids[1:])

        run_in_real_time(worker, destination, 4, timeout=60)

        assert keys_seen(destination) == Counter(dict.fromkeys(ids, 1))
        arrivals = [r.arrived for r in destination.requests]
        order_seen = [r.headers["idempotency-key"] for r in destination.requests]
        assert order_seen == ids  # oldest first
        gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
        # 2,500 ms apart as sent; at the destination less the jitter of getting a request there
        # (the first one opens its connection).
        assert min(gaps) >= 2.5 - JITTER
        assert arrivals[-1] - arrivals[0] >= 3 * 2.5 - JITTER
        assert {statuses(connected)[m]["pipeline_status"] for m in ids} == {"sent"}
        assert items(connected, f"HELD#t1#{CONNECTION}") == []
        assert "drain_until" not in items(connected, f"CONNLIMIT#t1#{CONNECTION}")[0]

    def test_a_limited_connection_pays_one_write_per_delivery(
        self,
        connected,  # noqa: F811
        api,  # noqa: F811
        tenancy,
        ingest_api,
        worker,
        destination,
    ):
        """Rate and concurrency together: one conditional UpdateItem of the limit item per
        delivery (and one read of it by a new instance); the slot is taken again without a
        give-back and no holder is read."""
        assert limit(api, {"max_concurrency": 2, "rate_per_second": 100, "burst": 100}).status == 200
        ids = [order(ingest_api, tenancy, n) for n in range(5)]
        calls: list[tuple[str, str]] = []

        def note(event_name: str, params: dict[str, Any], **_: Any) -> None:
            operation = event_name.rsplit(".", 1)[-1]
            if operation == "BatchGetItem":
                for request in params["RequestItems"].values():
                    calls.extend((operation, key["PK"]["S"]) for key in request["Keys"])
            elif "Key" in params:
                calls.append((operation, params["Key"]["PK"]["S"]))

        events = client("dynamodb").meta.events
        events.register("provide-client-params.dynamodb.*", note, unique_id="limit-writes")
        try:
            worker()
        finally:
            events.unregister("provide-client-params.dynamodb.*", unique_id="limit-writes")

        assert keys_seen(destination) == Counter(dict.fromkeys(ids, 1))
        on_the_limit = [operation for operation, pk in calls if pk.startswith("CONNLIMIT#")]
        # The instance reads the item once, before its first permit (no write spent on a guess)
        assert on_the_limit == ["GetItem"] + ["UpdateItem"] * len(ids)
        slots = {name for name in items(connected, f"CONNLIMIT#t1#{CONNECTION}")[0] if name.startswith("h")}
        assert len(slots) == 1  # one worker, one delivery at a time: its one slot, taken again
        assert not [pk for operation, pk in calls if operation == "BatchGetItem" and pk.startswith("MSG#")]

    def test_a_full_connection_holds_then_hands_each_freed_slot_on_oldest_first(
        self,
        connected,  # noqa: F811
        api,  # noqa: F811
        tenancy,
        ingest_api,
        worker,
        destination,
    ):
        """One in flight, and another worker's delivery holds the slot: new messages are held
        (`concurrency_limited`). Its run ends (its outcome write gives its message's lease back,
        nothing is written to the slot): the drain finds the slot free by reading that message,
        and each delivery after hands the slot to the next held one."""
        assert limit(api, {"max_concurrency": 1}).status == 200
        table = Table(connected.table)
        table.put(
            {
                **keys.message_key("msg_other"),
                "message_id": "msg_other",
                "lease_owner": "own_other",
                "lease_until": 9_999_999_999,
            }
        )
        table.put(
            {
                **keys.connection_limit_key("t1", CONNECTION),
                "tenant_id": "t1",
                "s0": int(time.time() * 1000) + 600_000,
                "h0": "msg_other/own_other",
            }
        )
        ids = [order(ingest_api, tenancy, n) for n in range(3)]

        worker(include_delayed=False, settle=False, max_batches=1)

        assert destination.requests == []
        stored = statuses(connected)
        assert {stored[m]["held_reason"] for m in ids} == {"concurrency_limited"}

        table.update(keys.message_key("msg_other"), Update().remove("lease_owner", "lease_until"))
        run_in_real_time(worker, destination, 3, timeout=60)

        assert [r.headers["idempotency-key"] for r in destination.requests] == ids  # oldest first, once
        assert {statuses(connected)[m]["pipeline_status"] for m in ids} == {"sent"}
        assert items(connected, f"HELD#t1#{CONNECTION}") == []

    def test_without_limits_nothing_is_written_for_them(
        self,
        connected,  # noqa: F811
        tenancy,
        ingest_api,
        worker,
        destination,
    ):
        started = time.monotonic()
        ids = [order(ingest_api, tenancy, n) for n in range(3)]
        worker()
        assert keys_seen(destination) == Counter(dict.fromkeys(ids, 1))
        assert items(connected, "CONNLIMIT#") == []
        assert time.monotonic() - started < 60  # no waiting either (a bound, not a timing)
