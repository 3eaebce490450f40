"""The long fuzzing run (issue 15): tests/fuzz (Schemathesis against both OpenAPI documents on a
local stack) with many more examples per operation and mode than `make test` runs, shrinking on,
in a pytest process of its own; then the tally per API (cases, operations reached, 2xx answers,
answers by status, failures), also written to bench/results/fuzz.json.

    python -m bench.fuzz [--examples N]     # N per operation and mode (default 40: ~10 min here)

Exit status: pytest's (0 when both documents held on every case).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from bench.common import ROOT

REPORT = ROOT / "bench" / "results" / "fuzz.json"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=40, help="examples per operation and mode")
    args = parser.parse_args()
    REPORT.unlink(missing_ok=True)
    env = {**os.environ, "FUZZ_MAX_EXAMPLES": str(args.examples), "FUZZ_REPORT": str(REPORT)}
    started = time.monotonic()
    # --timeout=0: the suite's 300 s per test is for `make test`'s bounded run.
    command = [sys.executable, "-m", "pytest", "tests/fuzz", "-q", "-p", "no:cacheprovider", "--timeout=0"]
    outcome = subprocess.run(command, cwd=ROOT, env=env, check=False)  # noqa: S603 - our own argv
    elapsed = time.monotonic() - started
    if not REPORT.exists():
        print(f"no tally written ({REPORT}): the run stopped before fuzzing (exit {outcome.returncode})")
        return outcome.returncode or 1
    tallies = json.loads(REPORT.read_text())
    tallies["run"] = {"examples": args.examples, "seconds": round(elapsed, 1), "exit": outcome.returncode}
    REPORT.write_text(json.dumps(tallies, indent=2) + "\n")
    print(f"\nfuzzing, {args.examples} examples per operation and mode, {elapsed:.0f} s")
    header = ("api     ", " cases", "operations", "with 2xx", "  2xx", "failures", "by status")
    print(" | ".join(header))
    for api in ("partner", "admin"):
        if api not in tallies:
            print(f"{api:8} | not run")
            continue
        t = tallies[api]
        statuses = " ".join(f"{status}:{n}" for status, n in t["by_status"].items())
        print(
            f"{api:8} | {t['cases']:>6} | {t['operations']:>10} | {t['operations_with_2xx']:>8} | "
            f"{t['answers_2xx']:>5} | {len(t['failures']):>8} | {statuses}"
        )
    print(f"written to {REPORT.relative_to(ROOT)}")
    return outcome.returncode


if __name__ == "__main__":
    sys.exit(main())
