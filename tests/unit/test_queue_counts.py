"""The queue tabs' counts, what a row shows as the current error, and an attempt's request
summary (issue 28): the use case over the in-memory fakes, the rules on their own (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hub.adapters.dynamo.status_index import queue_row
from hub.admin.operations import COUNT_CAP, Operations
from hub.admin.timeline import request_summary
from hub.domain.ids import new_id
from hub.domain.status import FAILING_STATUSES, PipelineStatus, current_error_class
from hub.domain.tenancy import Destination, DestinationProtocol, SoapSettings
from tests.contract.scenario import new_message
from tests.fakes import FakeHub
from tests.fakes.operations import fake_operations

S = PipelineStatus
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def operations(hub: FakeHub) -> Operations:
    return fake_operations(hub)


def messages_in(
    hub: FakeHub, tenant_id: str, status: PipelineStatus, n: int, integration_id: str = "int_a"
) -> None:
    for i in range(n):
        new = new_message(
            tenant_id=tenant_id, integration_id=integration_id, received_at=NOW + timedelta(seconds=i)
        )
        hub.messages.create(new, NOW)
        record = hub.messages.get(new.record.message_id)
        assert record is not None
        if status is not S.RECEIVED:
            hub.messages.transition(record, status, NOW + timedelta(minutes=1, seconds=i))


def test_each_status_tab_is_counted_and_all_has_no_count() -> None:
    hub = FakeHub()
    tenant_id = new_id("tnt")
    messages_in(hub, tenant_id, S.RETRY_PENDING, 3)
    messages_in(hub, tenant_id, S.ERROR, 2)
    messages_in(hub, tenant_id, S.ERROR, 1, integration_id="int_b")
    messages_in(hub, tenant_id, S.RECEIVED, 4)
    messages_in(hub, new_id("tnt"), S.ERROR, 5)  # another tenant's

    counted = operations(hub).queue_counts(tenant_id)

    assert counted.view() == {
        "tenant_id": tenant_id,
        "counts": {"waiting": 3, "dead_letter": 0, "error": 3},
        "capped_at": COUNT_CAP,
        "at_least": [],
    }
    assert operations(hub).queue_counts(tenant_id, "int_b").counts == {
        "waiting": 0,
        "dead_letter": 0,
        "error": 1,
    }


def test_a_tab_over_the_cap_counts_as_at_least_the_cap_reading_no_more() -> None:
    hub = FakeHub()
    tenant_id = new_id("tnt")
    messages_in(hub, tenant_id, S.DEAD_LETTER, COUNT_CAP + 5)
    hub.status_index.read.clear()

    counted = operations(hub).queue_counts(tenant_id)

    assert counted.counts["dead_letter"] == COUNT_CAP
    assert counted.at_least == ["dead_letter"]
    # One bounded read per tab: never more rows than the cap.
    assert sorted(hub.status_index.read) == [0, 0, COUNT_CAP]


@pytest.mark.parametrize("status", list(PipelineStatus))
def test_only_a_failing_message_shows_its_error_class_as_current(status: PipelineStatus) -> None:
    fields: dict[str, Any] = {
        "message_id": new_id("msg"),
        "pipeline_status": status,
        "last_retry_error_class": "http_5xx",
        "retry_count": 2,
    }

    row = queue_row(fields)

    failing = status in (S.RETRY_PENDING, S.DEAD_LETTER, S.ERROR)
    assert row["last_retry_error_class"] == ("http_5xx" if failing else None)
    assert current_error_class(status.value, "http_5xx") == row["last_retry_error_class"]
    assert (status in FAILING_STATUSES) is failing
    # The rest of the row is the item's.
    assert (row["pipeline_status"], row["retry_count"]) == (status.value, 2)


def test_an_attempts_request_summary_names_the_host_never_the_path_or_credentials() -> None:
    record = new_message(tenant_id="t1").record
    http = Destination(
        url="https://user:secret@erp.example.com:8443/hooks/T0/B0/s3cr3t?token=abc",
        method="PUT",
        headers={"X-Api-Key": "k"},
    )
    soap = Destination(
        url="https://nfe.example.gov.br/ws/NFeStatusServico4.asmx",
        protocol=DestinationProtocol.SOAP,
        soap=SoapSettings(wsdl="nfelib:x.wsdl", operation="nfeStatusServicoNF"),
    )

    shown = request_summary(record, http)

    assert shown == {
        "protocol": "http",
        "method": "PUT",
        "host": "erp.example.com:8443",
        "connection_id": None,
        "idempotency_key": record.message_id,
        "correlation_id": record.correlation_id,
    }
    assert not {"secret", "s3cr3t", "abc", "k"} & {str(v) for v in shown.values()}
    assert request_summary(record, soap) == {
        "protocol": "soap",
        "host": "nfe.example.gov.br",
        "operation": "nfeStatusServicoNF",
        "connection_id": None,
    }
    assert request_summary(record, None) is None
