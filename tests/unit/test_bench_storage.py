"""`make bench`'s price of DynamoDB storage (issue 29): what a message leaves in the table, read
back as DynamoDB JSON, billed per item and index entry (+100 bytes), kept for its retention."""

from __future__ import annotations

from typing import Any

import pytest

from bench.e2e import (
    INLINE_PAYLOAD,
    Stored,
    load_prices,
    retention_days,
    storage_cost_per_million,
    storage_per_message,
    stored_items,
)
from devstack.request_counter import IndexSpec, item_size

#: The template's default retention (what an item without a TTL is priced for).
KEPT = retention_days()
MESSAGE = "msg_01m923tyts0t1ws33f6y3jvx58"
OTHER = "msg_01m923tyts0t1ws33f6y3jvx59"
READ_AT = 1_800_000_000.0
GSI2 = IndexSpec("GSI2", ("GSI2PK", "received_at"), "INCLUDE", ("message_id", "integration_id"), ("PK", "SK"))


def s(value: str) -> dict[str, str]:
    return {"S": value}


def message_item(message_id: str = MESSAGE, **extra: Any) -> dict[str, Any]:
    return {
        "PK": s(f"MSG#{message_id}"),
        "SK": s("STATUS"),
        "item_type": s("message"),
        "message_id": s(message_id),
        "integration_id": s("int_erp"),
        "pipeline_status": s("sent"),
        "GSI2PK": s("t1"),
        "received_at": s("2026-12-05T03:00:00.000000Z"),
        **extra,
    }


class TestStoredItems:
    def test_each_item_of_the_messages_at_its_size_plus_the_overhead_for_its_retention(self):
        message = message_item()
        payload = {
            "PK": s(f"MSG#{MESSAGE}"),
            "SK": s("PAYLOAD"),
            "item_type": s("payload"),
            "payload_z": {"B": "eHh4"},
        }
        claim = {
            "PK": s("FP#t1#int_erp#abc"),
            "SK": s("CLAIM"),
            "item_type": s("claim"),
            "message_id": s(MESSAGE),
            "expires_at": {"N": str(int(READ_AT) + 86_400)},
        }
        event = {"PK": s(f"EVENT#{MESSAGE}:3"), "SK": s("EVENT"), "item_type": s("event")}
        others = [message_item(OTHER), {"PK": s("TENANT#t1"), "SK": s("PROFILE"), "item_type": s("tenant")}]

        found = stored_items(
            [message, payload, claim, event, *others], {MESSAGE}, [GSI2], read_at=READ_AT, overhead=100
        )

        index_entry = item_size(
            {k: message[k] for k in ("PK", "SK", "GSI2PK", "received_at", "message_id", "integration_id")}
        )
        assert found == [
            Stored("message", item_size(message) + 100, KEPT.message),
            Stored("GSI2 entry", index_entry + 100, KEPT.message, index=True),
            Stored("payload", item_size(payload) + 100, KEPT.payload),
            Stored("claim", item_size(claim) + 100, 1.0),
            Stored("event", item_size(event) + 100, KEPT.message),
        ]

    def test_an_inline_payload_is_kept_as_a_payload(self):
        message = message_item(payload=s('{"po_number":"PO-1"}'))

        found = stored_items([message], {MESSAGE}, [], read_at=READ_AT, overhead=100)

        inline = item_size({"payload": message["payload"]})
        assert found == [
            Stored(INLINE_PAYLOAD, inline, KEPT.payload),
            Stored("message", item_size(message) - inline + 100, KEPT.message),
        ]


class TestPrice:
    def test_bytes_per_message_by_kind_and_how_long_they_are_kept(self):
        stored = [Stored("message", 600, 30), Stored("message", 400, 30), Stored("claim", 300, 1)]

        shares = storage_per_message(stored, count=2)

        assert {k: (v.bytes, v.days) for k, v in shares.items()} == {"claim": (150, 1), "message": (500, 30)}

    def test_gb_months_per_message_times_the_price_per_million(self):
        """1,000 B kept 30 days and a 1,000 B index entry kept 30 days, a month being 730 h:
        2,000 B x 30/30.4167 months = 1.973e-6 GB-months per message, x $0.25 x 1e6 = $0.493;
        point-in-time recovery bills the table's 1,000 B alone, x $0.20: $0.197."""
        shares = storage_per_message(
            [Stored("message", 1_000, 30), Stored("GSI2 entry", 1_000, 30, index=True)], count=1
        )

        storage, pitr = storage_cost_per_million(shares, load_prices())

        months = 30 / (730 / 24)
        assert storage == pytest.approx(2_000 * months / 1e9 * 0.25 * 1e6)
        assert storage == pytest.approx(0.4932, abs=1e-4)
        assert pitr == pytest.approx(1_000 * months / 1e9 * 0.20 * 1e6)

    def test_nothing_stored_costs_nothing(self):
        assert storage_cost_per_million({}, load_prices()) == (0.0, 0.0)


def test_the_default_retention_is_the_templates_one_description() -> None:
    from devstack.cfn import load_template  # noqa: PLC0415
    from tests.aws import TEMPLATE  # noqa: PLC0415

    parameters = load_template(TEMPLATE)["Parameters"]

    assert (KEPT.payload, KEPT.message) == (7, 30)
    assert KEPT.message == int(parameters["MessageRetentionDays"]["Default"])
    assert KEPT.payload == int(parameters["PayloadRetentionDays"]["Default"])


def test_a_message_item_with_its_ttl_is_kept_until_it() -> None:
    message = message_item(expires_at={"N": str(int(READ_AT) + 30 * 86_400)})

    [found] = stored_items([message], {MESSAGE}, [], read_at=READ_AT, overhead=100)

    assert found == Stored("message", item_size(message) + 100, 30.0)
