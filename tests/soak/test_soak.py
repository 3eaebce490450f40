"""The soak's small version in `make test` (issue 15; the full one is `make soak`): 40
messages from 8 partners through the local stack to a destination answering 200 /
503 / 429 / too slow at random, while pipeline-worker processes are crashed, and every check of
bench.soak passes: none lost, none applied twice, every sent one applied once, one outbox event
per status change, no lease or admission left held.

The crashes here hit idle instances only (the next batch cold-starts a replacement): a crash
mid-batch leaves its message's lease held for its 5 minutes (hub.pipeline.rules.LOCK_LEASE),
longer than this test may take. `make soak` crashes busy ones too."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import SoakConfig, run
from tests.waiting import CEILING_SECONDS, STALL_SECONDS

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(1200)  # the run's own ceiling (cap_s) and the stack's start and stop
def test_a_small_soak_with_worker_crashes_passes_every_check(tmp_path: Path) -> None:
    # The drain waits as long as messages become final or the stack works, and gives up once
    # nothing moved for a stall bound (a loaded machine is slow, not stuck); cap_s and settle_s
    # are ceilings only.
    config = SoakConfig(
        n=40,
        kill_every=1.5,
        kill_busy_share=0.0,
        cap_s=CEILING_SECONDS,
        stall_s=STALL_SECONDS,
        drain_s=40.0,
        settle_s=120.0,
        seed=15,
        results=tmp_path / "soak.json",
    )
    lines: list[str] = []

    summary = run(config, say=lines.append)

    report = "\n".join(lines)
    assert summary["ok"], report
    assert summary["acknowledged"] == 40, report
    assert summary["all_final_before_cap"], report
    assert summary["worker_kills_survived"]["total"] >= 2, report
    assert summary["statuses"].get("sent", 0) >= 32, report
    assert (tmp_path / "soak.json").exists()
