"""``python -m devstack``: run template.yaml locally until Ctrl-C.

Ports come from HUB_LOCAL_AWS_PORT, HUB_LOCAL_API_PORT, HUB_LOCAL_URL_PORT and
HUB_LOCAL_ECHO_PORT (defaults 5000, 3000, 3001, 3100). SLACK_ALERTS_WEBHOOK_URL, when set, is
the template's SlackAlertsWebhookUrl: the alert notifier posts there. Function instances re-import this
module under spawn, so it imports nothing heavy at module level.

The console is for people: the start banner (where things answer, the demo, how to sign in and
the `export` line for hubctl) stays on screen. What the functions print (their output,
Powertools' JSON logs, EMF metric lines) and the stack's own info lines go to a file,
`.devstack/functions.log` (HUB_LOCAL_LOG_FILE names another), emptied at each start; warnings
still show on the console. HUB_LOCAL_VERBOSE=1 prints everything on the console instead.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

logger = logging.getLogger("devstack")

#: Where the functions' logs go unless HUB_LOCAL_VERBOSE=1, under the project's folder.
DEFAULT_FUNCTION_LOG = Path(".devstack") / "functions.log"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

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


def verbose(environ: Mapping[str, str]) -> bool:
    """HUB_LOCAL_VERBOSE=1 (or true, yes): the functions' logs on the console, as they come."""
    return environ.get("HUB_LOCAL_VERBOSE", "").strip().lower() in ("1", "true", "yes")


def function_log(environ: Mapping[str, str], project_root: Path) -> Path | None:
    """The file the functions' logs go to (absolute): HUB_LOCAL_LOG_FILE, else
    `.devstack/functions.log` in the project's folder; None when HUB_LOCAL_VERBOSE asks for the
    console."""
    if verbose(environ):
        return None
    chosen = Path(environ.get("HUB_LOCAL_LOG_FILE", "").strip() or DEFAULT_FUNCTION_LOG)
    return (chosen if chosen.is_absolute() else project_root / chosen).resolve()


def configure_logging(log_file: Path | None) -> None:
    """The stack's own logging: with a log file, info lines go there (beside the functions'
    output) and only warnings reach the console; without one, everything on the console."""
    logging.basicConfig(level=logging.INFO, format=_LOG_FORMAT)
    if log_file is not None:
        for handler in logging.getLogger().handlers:
            handler.setLevel(logging.WARNING)
        to_file = logging.FileHandler(log_file, encoding="utf-8")
        to_file.setFormatter(logging.Formatter(_LOG_FORMAT))
        logging.getLogger().addHandler(to_file)
    for noisy in ("botocore", "boto3"):  # "Found credentials in environment variables" etc.
        logging.getLogger(noisy).setLevel(logging.WARNING)


def sign_in_lines(
    *, admin_url: str, admin_token: str, tenant_id: str | None, log_file: Path | None
) -> list[str]:
    """How to sign in to the page, the line that points hubctl at this stack (both only with an
    admin API), and where the functions' logs are."""
    lines = []
    if admin_url:
        exported = {"HUB_ADMIN_URL": admin_url.rstrip("/"), "HUB_ADMIN_TOKEN": admin_token}
        if tenant_id:
            exported["HUB_TENANT"] = tenant_id
        lines += [
            f"sign in with:    {admin_token}  at {admin_url.rstrip('/')}/admin",
            "for hubctl, paste into your shell:",
            "  export " + " ".join(f"{name}={shlex.quote(value)}" for name, value in exported.items()),
        ]
    if log_file is None:
        lines.append("function logs:   on this console (HUB_LOCAL_VERBOSE=1)")
    else:
        lines.append(f"function logs:   {log_file}  (tail -f it; HUB_LOCAL_VERBOSE=1 shows them here)")
    return lines


def startup_lines(
    *,
    api_url: str,
    function_urls: Mapping[str, str],
    aws_endpoint: str,
    echo_url: str,
    demo_lines: list[str],
    slack_alerts: bool = False,
    sign_in: list[str] | None = None,
) -> list[str]:
    """What a newcomer needs on start: where things answer, the demo, how to sign in (last, so
    it is what the screen shows), how to stop."""
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
        *([*sign_in, ""] if sign_in else []),
        "Ctrl-C to stop.",
    ]
    return lines


def main() -> int:
    log_file = function_log(os.environ, Path.cwd())
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.write_text("", encoding="utf-8")  # this run's lines only
    configure_logging(log_file)
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
        function_log=log_file,
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
            sign_in=sign_in_lines(
                admin_url=stack.function_urls.get("AdminApiFunction", ""),
                admin_token=demo.admin_token(),
                tenant_id=demo.DEMO_TENANT_ID,
                log_file=log_file,
            ),
        )
        print("\n".join(lines), flush=True)
        while not stopping.wait(0.5):
            pass
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
