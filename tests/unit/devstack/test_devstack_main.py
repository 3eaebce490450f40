"""What ``python -m devstack`` prints on start."""

from __future__ import annotations

from devstack.__main__ import startup_lines


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
