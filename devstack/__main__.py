"""``python -m devstack``: run template.yaml locally until Ctrl-C.

Ports come from HUB_LOCAL_AWS_PORT, HUB_LOCAL_API_PORT, HUB_LOCAL_URL_PORT and
HUB_LOCAL_ECHO_PORT (defaults 5000, 3000, 3001, 3100). Function instances re-import this
module under spawn, so it imports nothing heavy at module level.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

logger = logging.getLogger("devstack")

_DEFAULT_PORTS = {
    "HUB_LOCAL_AWS_PORT": 5000,
    "HUB_LOCAL_API_PORT": 3000,
    "HUB_LOCAL_URL_PORT": 3001,
    "HUB_LOCAL_ECHO_PORT": 3100,
}


def _port(name: str) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw else _DEFAULT_PORTS[name]
    except ValueError:
        raise SystemExit(f"{name} must be a port number, got {raw!r}") from None


def _seed_lines(stack: Any) -> list[str]:
    """The demo's lines, or a note when the demo module is not there (yet)."""
    try:
        from devstack import demo  # noqa: PLC0415 - optional, and imports the hub package
    except ModuleNotFoundError as exc:
        if exc.name != "devstack.demo":
            logger.warning("demo data not seeded: %s", exc)
        return ["(no demo data: devstack/demo.py is not available)"]
    return list(demo.seed(stack))


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from devstack.stack import LocalStack  # noqa: PLC0415 - keep spawn re-imports light

    stopping = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    stack = LocalStack(
        template_path=Path("template.yaml"),
        project_root=Path.cwd(),
        aws_port=_port("HUB_LOCAL_AWS_PORT"),
        api_port=_port("HUB_LOCAL_API_PORT"),
        url_port=_port("HUB_LOCAL_URL_PORT"),
        echo_port=_port("HUB_LOCAL_ECHO_PORT"),
    )
    stack.start()
    try:
        lines = _seed_lines(stack)
        print(f"moto (AWS):     {stack.aws_endpoint}")
        print(f"HTTP API:       {stack.api_url}")
        for logical_id, url in stack.function_urls.items():
            print(f"function URL:   {url}  ({logical_id})")
        print(f"echo endpoint:  {stack.echo_url}")
        for name, value in stack.resources.items():
            print(f"  {name}: {value}")
        print()
        for line in lines:
            print(line)
        print("\nCtrl-C to stop.", flush=True)
        while not stopping.wait(0.5):
            pass
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
