"""`make run` as a newcomer meets it: `python -m devstack` started the way the Makefile starts it
(the project's folder, the venv's interpreter), on free ports. Its banner signs in with a token
that the printed admin URL accepts, its `export` line is valid shell that points hubctl at the
stack, and after "Ctrl-C to stop." the functions' logs (their JSON logs and EMF lines) go to the
printed file, not to the console. Ctrl-C (SIGINT) stops it cleanly."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from devstack.lambda_runtime import INSTANCE_START_ENV
from tests.pipeline import wait_for_status
from tests.waiting import cpu_seconds, wait_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Console:
    """What the process printed (stdout and stderr, as a terminal shows them), read as it comes."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self) -> list[str]:
        with self.lock:
            return list(self.lines)

    def wait_for(self, text: str) -> list[str]:
        """The lines printed once one contains `text`: waits while the process prints or works
        (its CPU time: a whole stack starting on a loaded 2-core machine takes minutes)."""

        def printed() -> list[str]:
            seen = self.snapshot()
            if self.process.poll() is not None and not any(text in line for line in seen):
                raise AssertionError(f"no {text!r} on the console; it showed:\n" + "\n".join(seen))
            return seen

        return wait_for(
            printed,
            f"{text!r} on the console",
            until=lambda seen: any(text in line for line in seen),
            progress=cpu_seconds(self.process.pid),
        )


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Not the project's .devstack/functions.log: a developer's `make run` may be writing it.
    return tmp_path_factory.mktemp("make-run") / "functions.log"


@pytest.fixture(scope="module")
def make_run(log_file: Path) -> Iterator[Console]:
    # As a developer's shell has it: no HUB_LOCAL_/HUB_ADMIN_ settings, and instances spawned as
    # `make run` ships (the suite's own stacks fork them: tests/conftest.py).
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HUB_LOCAL_", "HUB_ADMIN_")) and k != INSTANCE_START_ENV
    }
    environ.update(
        HUB_LOCAL_AWS_PORT="0",
        HUB_LOCAL_API_PORT="0",
        HUB_LOCAL_URL_PORT="0",
        HUB_LOCAL_ECHO_PORT="0",
        HUB_LOCAL_LOG_FILE=str(log_file),
        # This checkout's code, whatever the venv's editable install points at.
        PYTHONPATH=os.pathsep.join(str(ROOT / p) for p in ("layers/hub", "cli", ".")),
        PYTHONUNBUFFERED="1",
    )
    process = subprocess.Popen(  # the Makefile's `$(PY) -m devstack`
        [sys.executable, "-m", "devstack"],
        cwd=ROOT,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    console = Console(process)
    reader = threading.Thread(target=console.read, daemon=True)
    reader.start()
    try:
        console.wait_for("Ctrl-C to stop.")
        yield console
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        reader.join(timeout=10)


def value_after(lines: list[str], label: str) -> str:
    [line] = [line for line in lines if line.startswith(label)]
    return line.removeprefix(label).strip()


def exported(lines: list[str]) -> dict[str, str]:
    """The banner's export line run by a real shell: the values it sets."""
    [line] = [line.strip() for line in lines if line.strip().startswith("export HUB_ADMIN_URL=")]
    script = f'{line}\nprintf "%s\\n" "$HUB_ADMIN_URL" "$HUB_ADMIN_TOKEN" "$HUB_TENANT"'
    bash = shutil.which("bash")
    assert bash is not None
    ran = subprocess.run([bash, "-c", script], capture_output=True, text=True, timeout=10, check=True)
    url, token, tenant = ran.stdout.splitlines()
    return {"HUB_ADMIN_URL": url, "HUB_ADMIN_TOKEN": token, "HUB_TENANT": tenant}


def test_the_banner_signs_in_and_exports_what_hubctl_needs_with_values_that_work(make_run: Console) -> None:
    lines = make_run.snapshot()
    page_and_token = value_after(lines, "sign in with:")
    token, page = re.fullmatch(r"(\S+)\s+at\s+(\S+)", page_and_token).groups()  # type: ignore[union-attr]
    variables = exported(lines)

    assert page == variables["HUB_ADMIN_URL"] + "/admin"
    assert variables["HUB_ADMIN_TOKEN"] == token
    with httpx.Client(timeout=30, trust_env=False) as http:
        assert http.get(page).status_code == 200  # the operator's page itself
        tenant_url = f"{variables['HUB_ADMIN_URL']}/api/admin/tenants/{variables['HUB_TENANT']}"
        tenant = http.get(tenant_url, headers={"Authorization": f"Bearer {token}"})
        refused = http.get(tenant_url, headers={"Authorization": "Bearer hub_adm_not-the-token"})
    assert tenant.status_code == 200, tenant.text
    assert tenant.json()["tenant_id"] == variables["HUB_TENANT"] == "tnt_demo"
    assert refused.status_code == 401


def test_function_logs_go_to_the_printed_file_and_the_console_stays_quiet(
    make_run: Console, log_file: Path
) -> None:
    lines = make_run.snapshot()
    printed = value_after(lines, "function logs:").split("  ")[0]
    api_url = value_after(lines, "HTTP API:")
    api_key = value_after(lines, "demo API key:")
    banner_end = len(lines)
    assert Path(printed) == log_file
    po_number = f"PO-{uuid.uuid4().hex[:8]}"
    body = {
        "integration_id": "int_demo_erp",
        "message_type": "purchase_order",
        "external_id": po_number,
        "payload": {"po_number": po_number, "lines": [{"sku": "A-1", "qty": 1}]},
    }

    with httpx.Client(base_url=api_url, timeout=30, trust_env=False) as http:
        http.headers["Authorization"] = f"Bearer {api_key}"
        accepted = http.post("/api/edi-hub/receive-message", json=body)
        assert accepted.status_code == 202, accepted.text
        message_id = accepted.json()["message_id"]
        # That stack runs in another process: its functions' log file growing is its progress.
        wait_for_status(
            http, message_id, "sent", progress=lambda: log_file.exists() and log_file.stat().st_size
        )
    logged = wait_for(
        lambda: log_file.read_text(encoding="utf-8"),
        "the message's lines in the log file",
        until=lambda text: message_id in text and '"delivered"' in text and '"_aws"' in text,
        progress=lambda: None,  # the probe's answer, the file, is all there is to see move
    )

    # The message's one INFO line (issue 29: the ingest's "message received" is DEBUG): the worker's.
    assert message_id in logged
    assert '"message":"delivered"' in logged
    assert '"_aws"' in logged  # EMF metric lines
    after_banner = make_run.snapshot()[banner_end:]
    assert [line for line in after_banner if line.startswith("{") or message_id in line] == []
