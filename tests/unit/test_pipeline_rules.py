import pytest

from hub.pipeline import rules


@pytest.mark.parametrize(
    ("lock_wait", "base"), [(0, 2), (1, 5), (2, 15), (3, 30), (4, 60), (5, 120), (29, 120)]
)
def test_busy_ladder_with_twenty_percent_jitter(lock_wait, base):
    low = rules.lock_wait_delay(lock_wait, rand=lambda: 0.0)
    high = rules.lock_wait_delay(lock_wait, rand=lambda: 0.999999)
    middle = rules.lock_wait_delay(lock_wait, rand=lambda: 0.5)
    assert middle == base
    assert low == max(1, round(base * 0.8))
    assert high == round(base * 1.2)


def test_thirty_waits_take_about_fifty_minutes():
    total = sum(rules.lock_wait_delay(n, rand=lambda: 0.5) for n in range(rules.MAX_LOCK_WAITS))
    assert 50 * 60 <= total <= 55 * 60


def test_entity_key_is_the_business_key_when_there_is_one():
    a = rules.entity_key("t1", "int_1", "order", ['"PO-1"'])
    assert a == rules.entity_key("t1", "int_1", "order", ['"PO-1"'])
    assert a != rules.entity_key("t1", "int_2", "order", ['"PO-1"'])
    assert a != rules.entity_key("t1", "int_1", "order", ['"PO-2"'])
    # Integration ids are unique within a tenant only: another tenant's PO-1 is another entity.
    assert a != rules.entity_key("t2", "int_1", "order", ['"PO-1"'])
    # No business key: the message is its own entity (its own lease is the lock).
    assert rules.entity_key("t1", "int_1", "order", []) == ""


def test_the_orphan_grace_outlasts_an_ingest_invocation():
    """A step is published before its message is committed, within one ingest invocation: the
    worker must keep looking for the message for longer than that invocation can run."""
    from devstack.cfn import load_template  # noqa: PLC0415
    from tests.aws import TEMPLATE  # noqa: PLC0415

    template = load_template(TEMPLATE)
    ingest = template["Resources"]["IngestApiFunction"]["Properties"]
    timeout = ingest.get("Timeout", template["Globals"]["Function"]["Timeout"])
    assert rules.ORPHAN_GRACE.total_seconds() > timeout
