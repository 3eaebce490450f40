"""A limited connection's permits on the hub table (issue 30): one conditional UpdateItem per
permit against moto (hub.adapters.dynamo.connection_limits), several workers at once."""

from __future__ import annotations

import threading

import boto3

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connection_limits import DynamoConnectionLimits
from hub.delivery.breaker import HeldReason
from hub.delivery.limits import Permit, Refusal
from hub.domain.delivery_limits import DeliveryLimits

ATTEMPT_MS = 40_000


def acquire(limits_store: DynamoConnectionLimits, limits: DeliveryLimits, holder: str, now_ms: int):
    return limits_store.acquire("t1", "con_erp", limits, holder=holder, now_ms=now_ms, attempt_ms=ATTEMPT_MS)


def stored(stack) -> dict:
    key = {k: {"S": v} for k, v in keys.connection_limit_key("t1", "con_erp").items()}
    return boto3.client("dynamodb").get_item(TableName=stack.table, Key=key).get("Item", {})


class TestRate:
    def test_the_burst_then_the_interval_across_instances(self, stack):
        limits = DeliveryLimits(rate_per_second=5, burst=2)
        one, other = DynamoConnectionLimits(stack.table), DynamoConnectionLimits(stack.table)

        assert isinstance(acquire(one, limits, "m1", 10_000), Permit)
        # another instance has never seen the item: it reads it before its first permit
        assert isinstance(acquire(other, limits, "m2", 10_000), Permit)
        assert acquire(one, limits, "m3", 10_000) == Refusal(HeldReason.RATE_LIMITED, 200)
        assert isinstance(acquire(other, limits, "m3", 10_200), Permit)
        assert stored(stack)["tat"] == {"N": "10600"}

    def test_a_refusal_writes_nothing(self, stack):
        limits = DeliveryLimits(rate_per_second=1)
        store = DynamoConnectionLimits(stack.table)
        acquire(store, limits, "m1", 10_000)
        before = stored(stack)

        assert isinstance(acquire(store, limits, "m2", 10_500), Refusal)
        assert stored(stack) == before


class TestConcurrency:
    def test_two_slots_then_a_refusal_then_a_release_frees_one(self, stack):
        limits = DeliveryLimits(max_concurrency=2)
        store = DynamoConnectionLimits(stack.table)
        first = acquire(store, limits, "m1", 1_000)
        assert isinstance(first, Permit)
        assert isinstance(acquire(store, limits, "m2", 1_000), Permit)
        assert isinstance(acquire(store, limits, "m3", 1_000), Refusal)

        store.release("t1", "con_erp", first, holder="m1")

        assert isinstance(acquire(store, limits, "m3", 1_001), Permit)
        item = stored(stack)
        assert sorted(name for name in item if name.startswith("h")) == ["h0", "h1"]
        assert {item["h0"]["S"], item["h1"]["S"]} == {"m2", "m3"}

    def test_a_release_after_the_slot_was_taken_over_leaves_the_new_holder(self, stack):
        limits = DeliveryLimits(max_concurrency=1)
        store = DynamoConnectionLimits(stack.table)
        dead = acquire(store, limits, "m1", 1_000)
        assert isinstance(dead, Permit)
        # its lease ended (the worker was killed): another delivery takes the slot
        assert isinstance(acquire(store, limits, "m2", dead.lease_until_ms + 1), Permit)

        store.release("t1", "con_erp", dead, holder="m1")

        assert stored(stack)["h0"] == {"S": "m2"}

    def test_workers_racing_never_hold_more_than_the_limit(self, stack):
        limits = DeliveryLimits(max_concurrency=3, rate_per_second=100, burst=100)
        granted: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(12)

        def worker(index: int) -> None:
            store = DynamoConnectionLimits(stack.table)  # one instance each, as on Lambda
            start.wait()
            decision = acquire(store, limits, f"m{index}", 5_000)
            if isinstance(decision, Permit):
                with lock:
                    granted.append(f"m{index}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert len(granted) == 3
        item = stored(stack)
        assert {item[f"h{k}"]["S"] for k in range(3)} == set(granted)


def taken(stack, message_id: str, owner: str) -> None:
    """The message item as a step's take leaves it: its lease is `owner`'s."""
    item = {name: {"S": value} for name, value in keys.message_key(message_id).items()}
    boto3.client("dynamodb").put_item(
        TableName=stack.table, Item={**item, "lease_owner": {"S": owner}, "lease_until": {"N": "9999999999"}}
    )


def finished(stack, message_id: str) -> None:
    """The step's finishing write gives the message's lease back."""
    key = {name: {"S": value} for name, value in keys.message_key(message_id).items()}
    boto3.client("dynamodb").update_item(
        TableName=stack.table, Key=key, UpdateExpression="REMOVE lease_owner, lease_until"
    )


class TestSlotsFreeWithoutAWrite:
    """A finished delivery's slot is taken again without being given back (one write each)."""

    LIMITS = DeliveryLimits(max_concurrency=1)

    def test_an_instance_takes_its_own_slot_again_for_its_next_delivery(self, stack):
        store = DynamoConnectionLimits(stack.table)
        taken(stack, "m1", "o1")  # its outcome not even written yet: the instance knows it ended
        assert isinstance(acquire(store, self.LIMITS, "m1/o1", 1_000), Permit)
        store.finished("t1", "con_erp", holder="m1/o1")

        again = acquire(store, self.LIMITS, "m2/o2", 2_000)

        assert isinstance(again, Permit)
        assert again.replaces == "m1/o1"
        assert stored(stack)["h0"] == {"S": "m2/o2"}

    def test_while_its_delivery_runs_the_instance_does_not_take_it_again(self, stack):
        store = DynamoConnectionLimits(stack.table)
        taken(stack, "m1", "o1")
        assert isinstance(acquire(store, self.LIMITS, "m1/o1", 1_000), Permit)
        assert isinstance(acquire(store, self.LIMITS, "m2/o2", 2_000), Refusal)

    def test_another_instance_reads_the_holders_message_and_takes_a_slot_whose_run_is_over(self, stack):
        one, other = DynamoConnectionLimits(stack.table), DynamoConnectionLimits(stack.table)
        taken(stack, "m1", "o1")
        assert isinstance(acquire(one, self.LIMITS, "m1/o1", 1_000), Permit)
        # its run still holds the message's lease: the slot is busy
        assert isinstance(acquire(other, self.LIMITS, "m2/o2", 2_000), Refusal)

        finished(stack, "m1")
        taken(stack, "m2", "o2")

        permit = acquire(other, self.LIMITS, "m2/o2", 3_000)
        assert isinstance(permit, Permit)
        assert permit.replaces == "m1/o1"
        assert stored(stack)["h0"] == {"S": "m2/o2"}
        # ...and the first instance, which thought the slot its own, finds it taken
        one.finished("t1", "con_erp", holder="m1/o1")
        assert isinstance(acquire(one, self.LIMITS, "m3/o3", 4_000), Refusal)

    def test_a_later_take_of_the_same_message_is_not_the_holders_run(self, stack):
        one, other = DynamoConnectionLimits(stack.table), DynamoConnectionLimits(stack.table)
        taken(stack, "m1", "o1")
        assert isinstance(acquire(one, self.LIMITS, "m1/o1", 1_000), Permit)
        taken(stack, "m1", "o9")  # its run is over and a retry took the message again

        assert isinstance(acquire(other, self.LIMITS, "m2/o2", 2_000), Permit)

    def test_the_drain_counts_a_slot_free_once_its_holders_run_is_over(self, stack):
        store = DynamoConnectionLimits(stack.table)
        limits = DeliveryLimits(max_concurrency=2)
        for n in (1, 2):
            taken(stack, f"m{n}", f"o{n}")
            assert isinstance(acquire(store, limits, f"m{n}/o{n}", 1_000), Permit)
        finished(stack, "m2")

        state = store.settled(store.get("t1", "con_erp"), 2_000)

        assert [slot.holder for slot in state.slots.values()] == ["m1/o1"]


class TestDrain:
    def test_one_drain_at_a_time_and_new_deliveries_wait_while_it_runs(self, stack):
        limits = DeliveryLimits(rate_per_second=10, burst=10)
        store = DynamoConnectionLimits(stack.table)
        assert store.claim_drain("t1", "con_erp", run="r1", first="j1", now_ms=1_000, lease_ms=60_000)
        assert not store.claim_drain("t1", "con_erp", run="r2", first="x", now_ms=2_000, lease_ms=60_000)
        # Its jobs run one after another: the one named runs and names the next; a copy does not
        ran = {"run": "r1", "now_ms": 2_000, "lease_ms": 60_000}
        assert store.run_drain("t1", "con_erp", job="j1", following="j2", **ran)
        assert not store.run_drain("t1", "con_erp", job="j1", following="j3", **ran)
        assert not store.run_drain(
            "t1", "con_erp", run="r2", job="j2", following="j4", now_ms=2_000, lease_ms=60_000
        )
        assert store.get("t1", "con_erp").drain_next == "j2"

        # another instance, whose view has no drain, is refused by the write's condition
        other = DynamoConnectionLimits(stack.table)
        refused = acquire(other, limits, "new", 3_000)
        assert isinstance(refused, Refusal)
        assert refused.reason is HeldReason.RATE_LIMITED
        released = other.acquire(
            "t1", "con_erp", limits, holder="old", now_ms=3_000, attempt_ms=ATTEMPT_MS, released=True
        )
        assert isinstance(released, Permit)

        store.end_drain("t1", "con_erp", run="r2")  # not its lease: nothing changes
        assert store.get("t1", "con_erp").drain_until_ms == 62_000
        store.end_drain("t1", "con_erp", run="r1")
        assert store.get("t1", "con_erp").drain_until_ms is None
        assert isinstance(acquire(other, limits, "new", 3_000), Permit)

    def test_a_dead_drains_lease_runs_out(self, stack):
        store = DynamoConnectionLimits(stack.table)
        assert store.claim_drain("t1", "con_erp", run="dead", first="j1", now_ms=1_000, lease_ms=60_000)
        assert store.claim_drain("t1", "con_erp", run="next", first="j1", now_ms=61_001, lease_ms=60_000)
