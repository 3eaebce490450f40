"""How many SQS batches a local event source runs at once (Lambda's pollers: start at 5, add
one while there is a backlog, drop back when idle, never past the cap)."""

from __future__ import annotations

import threading

from devstack.sqs_source import STARTING_CONCURRENCY, Concurrency

NEVER = threading.Event()


def stopped() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


def test_it_starts_at_five_batches_unless_the_cap_is_lower() -> None:
    assert STARTING_CONCURRENCY == 5
    assert Concurrency(5, 20, 0.0).limit == 5
    assert Concurrency(5, 2, 0.0).limit == 2  # ScalingConfig.MaximumConcurrency 2


def test_without_a_backlog_a_full_set_of_slots_waits() -> None:
    slots = Concurrency(2, 10, 0.0)
    assert slots.acquire(NEVER, backlog=False)
    assert slots.acquire(NEVER, backlog=False)

    assert not slots.acquire(stopped(), backlog=False)  # would wait: nothing free, no backlog
    assert (slots.limit, slots.in_flight) == (2, 2)


def test_a_backlog_adds_one_batch_at_a_time_up_to_the_cap_and_idle_drops_back() -> None:
    slots = Concurrency(2, 3, 0.0)
    for _ in range(2):
        slots.acquire(NEVER, backlog=False)

    assert slots.acquire(stopped(), backlog=True)  # grew to 3
    assert not slots.acquire(stopped(), backlog=True)  # the cap
    assert (slots.limit, slots.peak) == (3, 3)

    for _ in range(3):
        slots.release()
    slots.idle()
    slots.idle()
    assert (slots.limit, slots.in_flight) == (2, 0)  # never below where it started


def test_a_release_wakes_a_waiting_acquire() -> None:
    slots = Concurrency(1, 1, 0.0)
    slots.acquire(NEVER, backlog=False)
    got = threading.Event()

    def take() -> None:
        if slots.acquire(NEVER, backlog=False):
            got.set()

    waiter = threading.Thread(target=take)
    waiter.start()

    slots.release()
    waiter.join(timeout=10)

    assert got.is_set()
    assert slots.in_flight == 1
