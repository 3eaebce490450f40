"""``python -m devstack``: run template.yaml locally until Ctrl-C.

Ports come from HUB_LOCAL_AWS_PORT, HUB_LOCAL_API_PORT, HUB_LOCAL_URL_PORT and
HUB_LOCAL_ECHO_PORT (defaults 5000, 3000, 3001, 3100). SLACK_ALERTS_WEBHOOK_URL, when set, is
the template's SlackAlertsWebhookUrl: the alert notifier posts there. Function instances re-import this
module under spawn, so it imports nothing heavy at module level.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping
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


def parameter_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """Template parameters taken from the environment (only the alert webhook for now)."""
    url = environ.get("SLACK_ALERTS_WEBHOOK_URL", "").strip()
    return {"SlackAlertsWebhookUrl": url} if url else {}


def built_template(environ: Mapping[str, str]) -> Path | None:
    """HUB_LOCAL_BUILT_DIR (`make run BUILT=1`): the `sam build` output to run instead of the
    source tree - its template.yaml, whose CodeUri/ContentUri point at the built folders."""
    folder = environ.get("HUB_LOCAL_BUILT_DIR", "").strip()
    if not folder:
        return None
    template = Path(folder) / "template.yaml"
    if not template.is_file():
        raise SystemExit(
            f"HUB_LOCAL_BUILT_DIR={folder}: no template.yaml there (`make run BUILT=1` builds it first)"
        )
    return template


def startup_lines(
    *,
    api_url: str,
    function_urls: Mapping[str, str],
    aws_endpoint: str,
    echo_url: str,
    demo_lines: list[str],
    slack_alerts: bool = False,
) -> list[str]:
    """What a newcomer needs on start: where things answer, the demo, how to stop."""
    lines = [f"HTTP API:        {api_url}"]
    lines += [f"Function URL:    {url}  ({logical_id})" for logical_id, url in function_urls.items()]
    if "AdminApiFunction" in function_urls:
        # The operator's page is served by the admin function itself (issue 13).
        lines.append(f"operator page:   {function_urls['AdminApiFunction'].rstrip('/')}/admin")
    # Never the webhook URL itself: it is a secret.
    alerts = (
        "dead letters -> Slack (SLACK_ALERTS_WEBHOOK_URL)"
        if slack_alerts
        else ("Slack off (set SLACK_ALERTS_WEBHOOK_URL)")
    )
    lines += [
        f"AWS (moto):      {aws_endpoint}  (AWS_ENDPOINT_URL for the aws CLI and boto3)",
        f"echo:            {echo_url}",
        f"alerts:          {alerts}; CloudWatch alarms are provisioned but never fire on moto",
        "",
        *demo_lines,
        "",
        "Ctrl-C to stop.",
    ]
    return lines


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("botocore", "boto3"):  # "Found credentials in environment variables" etc.
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from devstack.stack import LocalStack  # noqa: PLC0415 - keep spawn re-imports light

    stopping = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    from devstack import demo  # noqa: PLC0415

    overrides = {**demo.parameter_overrides(), **parameter_overrides(os.environ)}
    built = built_template(os.environ)
    stack = LocalStack(
        template_path=built or Path("template.yaml"),
        project_root=Path.cwd(),
        isolated_functions=built is not None,
        aws_port=_port("HUB_LOCAL_AWS_PORT"),
        api_port=_port("HUB_LOCAL_API_PORT"),
        url_port=_port("HUB_LOCAL_URL_PORT"),
        echo_port=_port("HUB_LOCAL_ECHO_PORT"),
        parameter_overrides=overrides,
    )
    stack.start()
    try:
        lines = startup_lines(
            api_url=stack.api_url,
            function_urls=stack.function_urls,
            aws_endpoint=stack.aws_endpoint,
            echo_url=stack.echo_url,
            demo_lines=_seed_lines(stack),
            slack_alerts="SlackAlertsWebhookUrl" in overrides,
        )
        print("\n".join(lines), flush=True)
        while not stopping.wait(0.5):
            pass
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
