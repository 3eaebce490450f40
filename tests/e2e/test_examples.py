"""Every file in examples/ runs as written (issue 28, point 8): the commands of its header comment
(`export ...`, `hubctl ...`) run in order by a real shell, with the installed hubctl, from a
folder laid out like the project's, against a local stack that has never seen the file's tenant
(one stack per file: each file is self-contained). Only the header's `NAME=...` placeholders get
values, as a newcomer types them in; everything else runs exactly as printed. Then the same
`apply` again changes nothing.

The SEFAZ header ends with `hubctl test` against the real SEFAZ homologation host: whatever this
machine's network allows, the answer names that host and a cause (no network here: `dns`)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, parameter_overrides
from devstack.stack import LocalStack
from hub.domain.failure import FailureCause
from tests.aws import local_stack_on_free_ports
from tests.hubctl_process import SCRIPT, run_while_working
from tests.pki import PFX_PASSWORD, build_pki

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
#: What a newcomer types where a header says `NAME=...`.
PLACEHOLDERS = {
    "ACME_ERP_TOKEN": "acme-erp-bearer-" + "x" * 24,
    "WMS_CLIENT_SECRET": "wms-client-secret-value",
    # The Standard Webhooks spec's published test secret.
    "SHOP_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "SEFAZ_PFX_PASSWORD": PFX_PASSWORD.decode(),
}
_PLACEHOLDER = re.compile(r"\b([A-Z][A-Z0-9_]*)=(whsec_)?\.\.\.(?=\s|$)")
#: The real host of the SEFAZ example (its `hubctl test` goes there).
SEFAZ_HOST = "homologacao.nfe.fazenda.sp.gov.br:443"


def header_commands(path: Path) -> list[str]:
    """The commands of the file's header comment: its `#   export ...` and `#   hubctl ...` lines."""
    commands = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.removeprefix("#")
        if text.startswith("   ") and text.split()[0] in ("export", "hubctl"):
            commands.append(text.strip())
    return commands


def typed_in(command: str) -> str:
    """`command` with each `NAME=...` placeholder given the value a newcomer would type."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in PLACEHOLDERS, f"a new placeholder in an example's header: {name}"
        return f"{name}={shlex.quote(PLACEHOLDERS[name])}"

    return _PLACEHOLDER.sub(value, command)


@dataclass(frozen=True)
class Ran:
    command: str
    exit_code: int
    output: str


def run_in_a_shell(commands: list[str], folder: Path, environ: dict[str, str]) -> list[Ran]:
    """Runs `commands` in one bash session (an `export` holds for the next ones), each one's
    output and exit code kept apart."""
    marker = "@@exit-code"
    script = "\n".join(f'{{ {command}\n}} 2>&1; echo "{marker} $?"' for command in commands)
    bash = shutil.which("bash")
    assert bash is not None
    done = run_while_working([bash, "-c", script], env=environ, cwd=folder)
    assert done.stderr == "", done.stderr
    parts = re.split(rf"^{marker} (\d+)$\n?", done.stdout, flags=re.MULTILINE)
    outputs, codes = parts[0::2], parts[1::2]
    assert len(codes) == len(commands), done.stdout
    return [
        Ran(command, int(code), output)
        for command, code, output in zip(commands, codes, outputs[: len(codes)], strict=True)
    ]


@pytest.fixture
def fresh_stack() -> Iterator[LocalStack]:
    """A stack that has never seen the examples' tenant."""
    overrides = parameter_overrides()
    with local_stack_on_free_ports(stack_name="hub-examples", parameter_overrides=overrides) as stack:
        yield stack


@pytest.fixture
def project_folder(tmp_path: Path) -> Path:
    """A folder laid out like the project's (examples/ in it) with the A1 file the SEFAZ header
    names."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "a1.pfx").write_bytes(build_pki().client_pfx)
    return tmp_path


def shell_environment(stack: LocalStack, folder: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("HUB_", "HUBCTL_"))}
    environ.update(
        PATH=f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        HUB_ADMIN_URL=stack.function_urls["AdminApiFunction"],
        HUB_ADMIN_TOKEN=DEMO_ADMIN_TOKEN,
        HUBCTL_CONFIG=str(folder / "no-profiles.toml"),
        # This checkout's code, whatever the venv's editable install points at.
        PYTHONPATH=os.pathsep.join(str(ROOT / p) for p in ("layers/hub", "cli", ".")),
    )
    return environ


def test_every_example_has_commands_in_its_header():
    assert {path.name for path in EXAMPLES} >= {
        "rest.yaml",
        "sap_idoc_to_rest.yaml",
        "sefaz_nfe_status.yaml",
        "signed_webhook.yaml",
        "outbound_webhooks.yaml",
    }
    for path in EXAMPLES:
        commands = header_commands(path)
        without_comments = [command.split("  #")[0].strip() for command in commands]
        assert f"hubctl apply -f examples/{path.name}" in without_comments, path


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_the_header_runs_as_written_on_a_hub_without_its_tenant(
    example: Path, fresh_stack: LocalStack, project_folder: Path
):
    commands = [typed_in(command) for command in header_commands(example)]
    again = f"hubctl apply -f examples/{example.name}"

    ran = run_in_a_shell([*commands, again], project_folder, shell_environment(fresh_stack, project_folder))

    *header, applied_again = ran
    for step in header:
        if step.command.startswith("hubctl test ") and example.name == "sefaz_nfe_status.yaml":
            # The real SEFAZ: reachable or not from here, the answer names the host and a cause.
            assert step.exit_code in (0, 1), step
            named = re.search(rf"^host:\s+{re.escape(SEFAZ_HOST)}$", step.output, flags=re.MULTILINE)
            assert named is not None, step.output
            if step.exit_code:
                cause = re.search(r"^cause:\s+(\S+)$", step.output, flags=re.MULTILINE)
                assert cause is not None, step.output
                assert cause.group(1) in {c.value for c in FailureCause}, step.output
            continue
        assert step.exit_code == 0, step
    applies = [step for step in header if step.command.startswith("hubctl apply")]
    created = [line for step in applies for line in step.output.splitlines()]
    assert "+ Tenant tnt_acme (create)" in created
    assert applied_again.exit_code == 0, applied_again
    unchanged = [line for line in applied_again.output.splitlines() if line.startswith(("+", "~", "="))]
    assert unchanged, applied_again
    assert all(line.endswith("(unchanged)") for line in unchanged), applied_again.output
    for secret in PLACEHOLDERS.values():
        assert secret not in "".join(step.output for step in ran)  # never printed back
