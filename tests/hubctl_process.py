"""hubctl as a real process: the console script `make install` puts beside the interpreter
(pyproject's [project.scripts]), pointed at an admin API by its environment, never by a profile
file or a default tenant of the machine it runs on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
        ran = subprocess.run(
            [str(SCRIPT), *argv],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert self.env["HUB_ADMIN_TOKEN"] not in ran.stdout + ran.stderr  # never printed
        if check:
            assert ran.returncode == 0, ran.stderr
        return ran

    def json(self, *argv: str, stdin: str | None = None) -> Any:
        return json.loads(self("-o", "json", *argv, stdin=stdin).stdout)
