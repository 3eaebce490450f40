"""The local stack's SQS fair queues (issue 30): the detection rules and the receive order, on a
clock the tests move (devstack.fair_queues; the moto side is in the integration tier)."""

from __future__ import annotations

from dataclasses import dataclass

from devstack.fair_queues import (
    CONCURRENCY_MIN_IN_FLIGHT,
    PROCESSING_WINDOW_SECONDS,
    QUIET_AFTER_SECONDS,
    FairShare,
    tenant_of,
)


@dataclass
class Msg:
    id: str
    group_id: str | None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def messages(tenant: str | None, count: int, start: int = 0) -> list[Msg]:
    return [Msg(f"{tenant}-{start + i}", tenant) for i in range(count)]


def fair(clock: Clock) -> FairShare:
    return FairShare(clock=clock)


def order_of(share: FairShare, waiting: list[Msg], in_flight: set[str] | None = None) -> list[str]:
    """The receive order; every message counted in flight still is unless `in_flight` says."""
    return [m.id for m in share.order(waiting, lambda i: in_flight is None or i in in_flight)]


def sent(share: FairShare, batch: list[Msg]) -> list[Msg]:
    for message in batch:
        share.sent(tenant_of(message))
    return batch


class TestTenants:
    def test_the_group_id_is_the_tenant_and_a_message_without_one_is_its_own(self) -> None:
        assert tenant_of(Msg("m1", "t1")) == "t1"
        assert tenant_of(Msg("m1", None)) != tenant_of(Msg("m2", None))


class TestConcurrencyShare:
    def test_a_tenant_with_30_in_flight_and_over_10_percent_is_served_after_quiet_ones(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", CONCURRENCY_MIN_IN_FLIGHT)))
        share.ended("unknown")  # nothing happens for a message it never saw
        waiting = sent(share, messages("A", 3, start=100)) + sent(share, messages("B", 2))

        assert order_of(share, waiting) == ["B-0", "B-1", "A-100", "A-101", "A-102"]
        assert share.noisy() == {"A"}

    def test_29_in_flight_is_not_enough(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", CONCURRENCY_MIN_IN_FLIGHT - 1)))
        clock.now += 0  # no processing time has passed: only the concurrency rule could apply
        waiting = sent(share, messages("A", 2, start=100)) + sent(share, messages("B", 1))

        assert order_of(share, waiting) == ["A-100", "A-101", "B-0"]  # the queue's order

    def test_30_in_flight_at_10_percent_or_less_of_the_queue_is_not_enough(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", 30)))
        # 9 other tenants with 30 each: A holds exactly 10 %
        for other in "CDEFGHIJK":
            share.received(sent(share, messages(other, 30)))
        waiting = sent(share, messages("A", 1, start=100)) + sent(share, messages("B", 1))

        assert order_of(share, waiting) == ["A-100", "B-0"]

    def test_among_noisy_tenants_the_one_with_fewest_in_flight_comes_first(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", 60)))
        share.received(sent(share, messages("C", 40)))
        waiting = (
            sent(share, messages("A", 1, start=100))
            + sent(share, messages("C", 1, start=100))
            + sent(share, messages("B", 1))
        )

        assert order_of(share, waiting) == ["B-0", "C-100", "A-100"]

    def test_messages_done_leave_the_count(self) -> None:
        clock = Clock()
        share = fair(clock)
        batch = sent(share, messages("A", 40))
        share.received(batch)
        for message in batch[:15]:
            share.ended(message.id)  # deleted
        # 10 more went back to the queue (their visibility ran out): the order sees them gone
        still = {m.id for m in batch[25:]}
        waiting = sent(share, messages("A", 1, start=100)) + sent(share, messages("B", 1))

        assert order_of(share, waiting, in_flight=still) == ["A-100", "B-0"]
        assert share.in_flight() == {"A": 15}


class TestProcessingTimeShare:
    def test_a_slow_tenant_with_few_in_flight_is_noisy(self) -> None:
        clock = Clock()
        share = fair(clock)
        slow = sent(share, messages("A", 2))
        share.received(slow)
        for quick in (sent(share, messages("B", 1, start=i)) for i in range(5)):
            share.received(quick)
            clock.now += 0.1
            share.ended(quick[0].id)
        clock.now += 20  # A's two have been processed for 20 s; B's five took 0.5 s in all
        waiting = sent(share, messages("A", 1, start=100)) + sent(share, messages("B", 1, start=100))

        assert order_of(share, waiting) == ["B-100", "A-100"]
        assert share.noisy() == {"A"}

    def test_time_older_than_the_window_no_longer_counts(self) -> None:
        clock = Clock()
        share = fair(clock)
        slow = sent(share, messages("A", 1))
        share.received(slow)
        clock.now += 30
        share.ended(slow[0].id)
        clock.now += PROCESSING_WINDOW_SECONDS + 1
        quick = sent(share, messages("B", 1))
        share.received(quick)
        clock.now += 1
        share.ended(quick[0].id)
        waiting = sent(share, messages("A", 1, start=100)) + sent(share, messages("B", 1, start=100))

        # only B's last second is recent: B is over 10 %, A is not (and B waits behind A)
        assert order_of(share, waiting) == ["A-100", "B-100"]

    def test_two_tenants_over_the_share_are_served_by_fewest_in_flight(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", 3)))
        share.received(sent(share, messages("C", 1)))
        clock.now += 10
        waiting = sent(share, messages("A", 1, start=100)) + sent(share, messages("C", 1, start=100))

        assert order_of(share, waiting) == ["C-100", "A-100"]


class TestQuietAgain:
    def test_a_drained_backlog_is_not_ordered_and_a_noisy_tenant_still_flows_alone(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", 40)))
        waiting = sent(share, messages("A", 2, start=100))

        # no quiet tenant waits: the noisy one's messages come, in the queue's order
        assert order_of(share, waiting) == ["A-100", "A-101"]
        assert share.noisy() == {"A"}
        assert order_of(share, []) == []
        assert share.noisy() == frozenset()  # nothing waits: nothing to deprioritise

    def test_five_minutes_without_a_send_make_a_tenant_quiet(self) -> None:
        clock = Clock()
        share = fair(clock)
        share.received(sent(share, messages("A", 40)))
        waiting = sent(share, messages("A", 1, start=100))
        clock.now += QUIET_AFTER_SECONDS - 1
        waiting += sent(share, messages("B", 1))
        assert order_of(share, waiting) == ["B-0", "A-100"]

        clock.now += 1  # A's last send is 5 minutes old
        assert order_of(share, waiting) == ["A-100", "B-0"]
        assert share.noisy() == frozenset()

    def test_a_message_received_again_ends_its_earlier_receive(self) -> None:
        clock = Clock()
        share = fair(clock)
        batch = sent(share, messages("A", 1))
        share.received(batch)
        clock.now += 5
        share.received(batch)  # its visibility ran out and another consumer got it

        assert share.in_flight() == {"A": 1}
