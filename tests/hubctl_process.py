"""hubctl as a real process: the console script `make install` puts beside the interpreter
(pyproject's [project.scripts]), pointed at an admin API by its environment, never by a profile
file or a default tenant of the machine it runs on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.waiting import combined, cpu_seconds, every_invocation, wait_for

SCRIPT = Path(sys.executable).with_name("hubctl")
#: The checkout these tests belong to: the console script imports hubctl from it (an editable
#: install may point at another checkout of the same project).
ROOT = Path(__file__).resolve().parents[1]


class Hubctl:
    def __init__(self, url: str, token: str, tmp_path: Path) -> None:
        self.token = token
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HUB_ADMIN_", "HUBCTL_")) and k != "HUB_TENANT"
        }
        self.env.update(
            HUB_ADMIN_URL=url,
            HUB_ADMIN_TOKEN=token,
            HUBCTL_CONFIG=str(tmp_path / "no-profiles.toml"),
            PYTHONPATH=os.pathsep.join(str(ROOT / part) for part in ("layers/hub", "cli", ".")),
        )

    def __call__(
        self, *argv: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        ran = run_while_working([str(SCRIPT), *argv], env=self.env, stdin=stdin)
        assert self.env["HUB_ADMIN_TOKEN"] not in ran.stdout + ran.stderr  # never printed
        if check:
            assert ran.returncode == 0, ran.stderr
        return ran

    def json(self, *argv: str, stdin: str | None = None) -> Any:
        return json.loads(self("-o", "json", *argv, stdin=stdin).stdout)


def run_while_working(
    argv: list[str], *, env: dict[str, str], stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `argv` to its end, its output captured as text: waits while the process or a local
    stack of this process works (tests/waiting.py; `hubctl ... --wait` polls for minutes on a
    loaded machine), and kills it once both stood still for the stall bound. A process of
    processes (a shell) shows its work through the stack it talks to."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=out, stderr=err, text=True
        )
        assert process.stdin is not None
        with process.stdin:
            process.stdin.write(stdin or "")
        try:
            wait_for(
                lambda: process.poll() is not None,
                f"{' '.join(argv[1:3])} to end",
                progress=combined(every_invocation, cpu_seconds(process.pid)),
            )
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, process.returncode, out.read(), err.read())
