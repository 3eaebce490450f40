"""The message item's write-unit budget (issue 29): what a finishing update sheds from the log
to stay within the write units the item needs, and the update's own projection of the item."""

from __future__ import annotations

from typing import Any

from hub.adapters.dynamo.messages import LOG_TRIMMED, fitted_log
from hub.adapters.dynamo.table import WRITE_UNIT_BYTES, Update, item_size
from hub.domain.message import MAX_LOG_ENTRIES


def entry(name: str, detail: str = "") -> dict[str, Any]:
    shown: dict[str, Any] = {"at": "2026-12-05T03:00:00.000000Z", "step": name, "status": "success"}
    return {**shown, "detail": detail} if detail else shown


def rest_of(size: int) -> dict[str, Any]:
    """An item of exactly `size` bytes besides its log."""
    base = {"PK": "MSG#m1", "SK": "STATUS", "pad": ""}
    return {**base, "pad": "r" * (size - item_size(base))}


class TestFittedLog:
    def test_a_log_that_fits_is_the_stored_entries_and_the_new_ones(self):
        kept, new = [entry("process")], [entry("sent")]

        assert fitted_log(rest_of(500), kept, new) == ([*kept, *new], False)

    def test_the_count_bound_alone_is_no_budget_cut(self):
        kept = [{"n": n} for n in range(MAX_LOG_ENTRIES)]

        log, cut = fitted_log(rest_of(10), kept, [{"n": "sent"}])

        assert (len(log), log[0], log[-1], cut) == (MAX_LOG_ENTRIES, {"n": 1}, {"n": "sent"}, False)

    def test_stored_entries_go_first_oldest_first(self):
        kept = [entry(f"old{n}", "o" * 80) for n in range(3)]
        new = [entry("process"), entry("sent")]
        rest = rest_of(
            WRITE_UNIT_BYTES - item_size({"log": [*kept[1:], *new]}) - item_size({LOG_TRIMMED: True})
        )

        log, cut = fitted_log(rest, kept, new)

        assert ([e["step"] for e in log], cut) == (["old1", "old2", "process", "sent"], True)
        assert item_size({**rest, LOG_TRIMMED: True, "log": log}) <= WRITE_UNIT_BYTES

    def test_then_the_updates_own_entries_but_its_last(self):
        new = [entry("process", "no mapping: passthrough"), entry("sent")]
        rest = rest_of(WRITE_UNIT_BYTES - 100)

        log, cut = fitted_log(rest, [entry("old")], new)

        assert ([e["step"] for e in log], cut) == (["sent"], True)

    def test_the_last_entry_stays_even_above_the_unit(self):
        rest = rest_of(2 * WRITE_UNIT_BYTES - 100)

        log, cut = fitted_log(rest, [entry("old", "o" * 800)], [entry("deliver", "f" * 300)])

        assert ([e["step"] for e in log], cut) == (["deliver"], True)
        assert item_size({**rest, "log": log}) > 2 * WRITE_UNIT_BYTES

    def test_above_one_unit_only_what_lowers_the_bill_goes(self):
        """The item needs two units whatever is shed: history goes only down to two."""
        kept = [entry(f"old{n}", "o" * 300) for n in range(3)]
        new = [entry("deliver", "f" * 300)]
        rest = rest_of(1200)
        assert item_size({**rest, "log": [*kept, *new]}) > 2 * WRITE_UNIT_BYTES

        log, cut = fitted_log(rest, kept, new)

        assert ([e["step"] for e in log], cut) == (["old2", "deliver"], True)
        marked = {**rest, LOG_TRIMMED: True}
        assert item_size({**marked, "log": log}) <= 2 * WRITE_UNIT_BYTES
        assert item_size({**marked, "log": [kept[1], *log]}) > 2 * WRITE_UNIT_BYTES

    def test_an_item_marked_already_is_not_counted_twice(self):
        new = [entry("process"), entry("sent")]
        exact = WRITE_UNIT_BYTES - item_size({"log": new[-1:]}) - item_size({LOG_TRIMMED: True})
        rest = {**rest_of(exact), LOG_TRIMMED: True}

        log, cut = fitted_log(rest, [], new)

        assert item_size({**rest, "log": log}) == WRITE_UNIT_BYTES
        assert (len(log), cut) == (1, True)


class TestUpdateApplied:
    def test_sets_removes_and_adds_as_the_update_leaves_the_item(self):
        update = Update().set(pipeline_status="sent", dest_status_text=None).remove("lease_owner")
        update.add("version").add("bulk_jobs", frozenset({"b2"}))
        update.set_expression("#log = list_append(#log, :v0)")
        item = {
            "pipeline_status": "mapped",
            "dest_status_text": "x" * 300,
            "lease_owner": "run-1",
            "version": 3,
            "bulk_jobs": {"b1"},
            "log": [],
        }

        assert update.applied(item) == {
            "pipeline_status": "sent",
            "version": 4,
            "bulk_jobs": frozenset({"b1", "b2"}),
            "log": [],
        }
