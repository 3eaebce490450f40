"""One cold start in a fresh interpreter, run by bench/cold_start.py (a script, not a module).

    python -P bench/_cold_child.py <spec.json> <out.json>

The spec says what to run:

- ``function``: put the function's code folder and layer on ``sys.path`` and make it the working
  directory (as Lambda's task root), import the handler module, then answer one event;
- ``baseline``: ``import boto3; boto3.client("dynamodb")``.

Times are ``time.perf_counter`` differences taken in this process, from just before the first
import of interest (after the interpreter, the standard library modules below and the spec are
loaded: the same for both kinds) to the end of the work. ``init_s`` is the import alone (for
a function: its module, i.e. Lambda's init phase; for the baseline: import and client). Peak RSS
is this process's ``VmHWM`` from /proc/self/status at the end: Linux carries
``getrusage(RUSAGE_SELF).ru_maxrss`` over from the parent through fork and exec, so it reports the
(bigger) parent's peak; ``ru_maxrss`` is the fallback where /proc is missing. The environment (the
function's, with AWS_ENDPOINT_URL) is set by the parent at process start.
"""

import time

_STARTED = time.perf_counter()

import importlib  # noqa: E402 - after the clock: these few modules load for both kinds
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402


class _Context:
    """Just enough of the Lambda context for Powertools."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.function_name = spec["function_name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.memory_limit_in_mb = int(spec["memory_mb"])
        self.aws_request_id = "bench-cold-start"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _baseline() -> tuple[float, float, Any]:
    started = time.perf_counter()
    import boto3  # noqa: PLC0415

    boto3.client("dynamodb")
    done = time.perf_counter()
    return started, done, done


def _function(spec: dict[str, Any]) -> tuple[float, float, Any]:
    sys.path[:0] = spec["paths"]
    os.chdir(spec["code_dir"])
    module_name, _, function_name = spec["handler"].rpartition(".")
    started = time.perf_counter()
    handler = getattr(importlib.import_module(module_name), function_name)
    imported = time.perf_counter()
    answer = handler(spec["event"], _Context(spec))
    return started, imported, answer


def _peak_rss_kib() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    with open(sys.argv[1]) as file:
        spec = json.load(file)
    if spec.get("site"):  # run with -S: the packages as Lambda has them, not the virtualenv's
        sys.path.append(spec["site"])
    if spec["mode"] == "baseline":
        started, imported, answer = _baseline()
        answer = None
    elif os.environ.get("BENCH_COLD_PROFILE"):  # where the time goes: python -m bench.cold_start --profile
        import cProfile  # noqa: PLC0415

        profile = cProfile.Profile()
        started, imported, answer = profile.runcall(_function, spec)
        profile.dump_stats(os.path.join(os.environ["BENCH_COLD_PROFILE"], f"{spec['function_name']}.prof"))
    else:
        started, imported, answer = _function(spec)
    done = time.perf_counter()
    result = {
        "total_s": done - started,
        "init_s": imported - started,
        "before_s": started - _STARTED,
        "peak_rss_kib": _peak_rss_kib(),
        "answer": json.dumps(answer, default=str)[:400],
    }
    with open(sys.argv[2], "w") as file:
        json.dump(result, file)


main()
