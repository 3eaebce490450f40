"""``make bench``: ingest overhead, cold start, end to end, the breaker, then tenant fairness, each
part in its own process (``python -m bench.<part>``, each also runnable alone), into a fresh
bench/results/latest.json;
then the summary table: target | figure | met?.

A part that crashes is reported and the others still run; its figures show as "not measured".
A missed target never fails the bench: the exit status is 0 when every part ran, 1 otherwise.

    python -m bench [--quick]     # --quick: small sizes, for trying the bench itself out
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from bench.common import RESULTS, ROOT, merge_results, summary_lines

PARTS = ("ingest", "cold_start", "e2e", "breaker", "fairness")
QUICK = {
    "ingest": ["--n", "60", "--warmup", "20"],
    "cold_start": ["--pairs", "2"],
    "e2e": ["--n", "40", "--variant-n", "10"],
    "breaker": ["--per-round", "5", "--rounds", "3"],
    "fairness": ["--noisy-n", "200", "--quiet-n", "20", "--instances", "10", "--paced-n", "40"],
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (not for figures you report)")
    args = parser.parse_args()
    RESULTS.unlink(missing_ok=True)
    failed = []
    for part in PARTS:
        print(f"== bench.{part}", flush=True)
        started = time.monotonic()
        command = [sys.executable, "-m", f"bench.{part}", *(QUICK[part] if args.quick else [])]
        finished = subprocess.run(command, cwd=ROOT, check=False)  # noqa: S603 - our own modules
        print(
            f"== bench.{part}: {time.monotonic() - started:.0f} s, exit {finished.returncode}\n", flush=True
        )
        if finished.returncode != 0:
            failed.append(part)
    results = merge_results({"bench_parts_failed": failed})
    for line in summary_lines(results):
        print(line)
    if failed:
        print(f"parts that did not finish: {', '.join(failed)} (their figures are missing above)")
    print(f"results: {RESULTS.relative_to(ROOT)} ({len(json.dumps(results))} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
