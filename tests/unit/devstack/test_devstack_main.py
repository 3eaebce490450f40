"""What ``python -m devstack`` prints on start."""

from __future__ import annotations

from pathlib import Path

from devstack.__main__ import function_log, sign_in_lines, startup_lines, verbose


def test_start_banner_lists_endpoints_then_the_demo_then_how_to_stop() -> None:
    lines = startup_lines(
        api_url="http://127.0.0.1:3000",
        function_urls={"StatusFunction": "http://127.0.0.1:3001"},
        aws_endpoint="http://127.0.0.1:5000",
        echo_url="http://127.0.0.1:3100/echo",
        demo_lines=["demo tenant: tnt_demo"],
    )

    assert [line.split(":", 1)[0] for line in lines[:5]] == [
        "HTTP API",
        "Function URL",
        "AWS (moto)",
        "echo",
        "alerts",
    ]
    assert "http://127.0.0.1:3001  (StatusFunction)" in lines[1]
    assert "Slack off" in lines[4]
    assert lines[5:] == ["", "demo tenant: tnt_demo", "", "Ctrl-C to stop."]


def test_start_banner_shows_the_operator_page_on_the_admin_function_url() -> None:
    lines = startup_lines(
        api_url="http://127.0.0.1:3000",
        function_urls={"AdminApiFunction": "http://127.0.0.1:3001/"},
        aws_endpoint="http://127.0.0.1:5000",
        echo_url="http://127.0.0.1:3100/echo",
        demo_lines=[],
    )

    assert "operator page:   http://127.0.0.1:3001/admin" in lines


def test_sign_in_lines_name_the_page_the_token_and_an_export_line_for_hubctl() -> None:
    lines = sign_in_lines(
        admin_url="http://127.0.0.1:3001/",
        admin_token="hub_admin_demo_x",
        tenant_id="tnt_demo",
        log_file=Path("/srv/hub/.devstack/functions.log"),
    )

    assert lines == [
        "sign in with:    hub_admin_demo_x  at http://127.0.0.1:3001/admin",
        "for hubctl, paste into your shell:",
        "  export HUB_ADMIN_URL=http://127.0.0.1:3001 HUB_ADMIN_TOKEN=hub_admin_demo_x HUB_TENANT=tnt_demo",
        "function logs:   /srv/hub/.devstack/functions.log"
        "  (tail -f it; HUB_LOCAL_VERBOSE=1 shows them here)",
    ]


def test_the_export_line_quotes_a_token_the_shell_would_split() -> None:
    [_, _, export, _] = sign_in_lines(
        admin_url="http://127.0.0.1:3001", admin_token="a b$c", tenant_id=None, log_file=None
    )

    assert export == "  export HUB_ADMIN_URL=http://127.0.0.1:3001 HUB_ADMIN_TOKEN='a b$c'"


def test_sign_in_comes_last_before_how_to_stop() -> None:
    lines = startup_lines(
        api_url="http://127.0.0.1:3000",
        function_urls={"AdminApiFunction": "http://127.0.0.1:3001"},
        aws_endpoint="http://127.0.0.1:5000",
        echo_url="http://127.0.0.1:3100/echo",
        demo_lines=["demo tenant: tnt_demo"],
        sign_in=["sign in with: t", "function logs: f"],
    )

    assert lines[-6:] == [
        "demo tenant: tnt_demo",
        "",
        "sign in with: t",
        "function logs: f",
        "",
        "Ctrl-C to stop.",
    ]


def test_function_logs_go_to_a_file_under_the_project_unless_verbose(tmp_path: Path) -> None:
    assert function_log({}, tmp_path) == (tmp_path / ".devstack" / "functions.log").resolve()
    assert function_log({"HUB_LOCAL_LOG_FILE": "logs/f.log"}, tmp_path) == (tmp_path / "logs/f.log").resolve()
    elsewhere = (tmp_path / "elsewhere.log").resolve()
    assert function_log({"HUB_LOCAL_LOG_FILE": str(elsewhere)}, Path("/srv/hub")) == elsewhere
    assert function_log({"HUB_LOCAL_VERBOSE": "1"}, tmp_path) is None
    assert function_log({"HUB_LOCAL_VERBOSE": "0"}, tmp_path) is not None
    assert verbose({"HUB_LOCAL_VERBOSE": "yes"})
