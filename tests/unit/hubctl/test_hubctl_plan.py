"""The apply plan: current view + the file's spec -> create / update / unchanged, and its diff."""

from __future__ import annotations

from hubctl.manifest import Kind
from hubctl.plan import ABSENT, Action, Change, diff_text, normalized, plan, unflagged

SPEC = {
    "name": "ERP",
    "url": "https://erp.example.com/orders",
    "headers": {"X-Source": "hub", "Authorization": "Bearer abc"},
    "auth": {"kind": "bearer", "token": "tok-1"},
}
VIEW = {
    "connection_id": "conn_erp",
    "version": 3,
    "created_at": "2026-11-30T10:00:00Z",
    "name": "ERP",
    "url": "https://erp.example.com/orders",
    "method": "POST",
    "headers": {"X-Source": "hub", "Authorization": "***"},
    "auth": {"kind": "bearer", "token": "***", "username": None},
}


def test_no_current_view_is_a_create_listing_every_field_with_secrets_masked():
    result = plan(None, SPEC)

    assert result.action is Action.CREATE
    assert Change("auth.token", ABSENT, "***") in result.changes
    assert Change("headers.Authorization", ABSENT, "***") in result.changes
    assert "tok-1" not in diff_text("Connection t/conn_erp", result)
    assert "Bearer abc" not in diff_text("Connection t/conn_erp", result)


def test_the_same_spec_against_its_view_is_unchanged_whatever_the_hub_adds():
    result = plan(VIEW, SPEC, version=3)

    assert result.action is Action.UNCHANGED
    assert result.changes == []
    assert diff_text("Connection t/conn_erp", result) == "= Connection t/conn_erp (unchanged)"


def test_a_secret_whose_value_alone_changed_cannot_be_seen_and_is_unchanged():
    result = plan(VIEW, {**SPEC, "auth": {"kind": "bearer", "token": "tok-2"}})

    assert result.action is Action.UNCHANGED


def test_a_secret_added_or_removed_is_a_change():
    added = plan({**VIEW, "auth": {"kind": "bearer", "token": None}}, SPEC)
    removed = plan(VIEW, {**SPEC, "auth": {"kind": "bearer", "token": None}})

    assert added.changes == [Change("auth.token", None, "***")]
    assert removed.changes == [Change("auth.token", "***", None)]


def test_set_flags_in_a_view_read_as_masked_secrets():
    view = {**VIEW, "auth": {"kind": "bearer", "token_set": True}}

    assert unflagged(view)["auth"] == {"kind": "bearer", "token": "***"}
    assert plan(view, SPEC).action is Action.UNCHANGED
    assert plan({**VIEW, "auth": {"kind": "bearer", "token_set": False}}, SPEC).action is Action.UPDATE


def test_a_changed_field_is_an_update_with_before_and_after_and_the_version():
    result = plan(VIEW, {**SPEC, "url": "https://erp.example.com/v2/orders", "idempotent_retries": True}, 3)

    assert result.action is Action.UPDATE
    assert result.version == 3
    assert result.changes == [
        Change("url", "https://erp.example.com/orders", "https://erp.example.com/v2/orders"),
        Change("idempotent_retries", ABSENT, True),
    ]
    assert diff_text("Connection t/conn_erp", result).splitlines() == [
        "~ Connection t/conn_erp (update, version 3)",
        '    url: "https://erp.example.com/orders" -> "https://erp.example.com/v2/orders"',
        "    idempotent_retries: (absent) -> true",
    ]


def test_lists_compare_whole_and_numbers_by_value():
    view = {"retry_policy": {"ladder_seconds": [1.0, 5.0], "retry_max": 5, "retry_auto_enabled": False}}

    assert (
        plan(view, {"retry_policy": {"ladder_seconds": [1, 5], "retry_max": 5.0}}).action is Action.UNCHANGED
    )
    assert plan(view, {"retry_policy": {"ladder_seconds": [1, 5, 10]}}).changes == [
        Change("retry_policy.ladder_seconds", [1.0, 5.0], [1, 5, 10])
    ]
    # a boolean is not a number
    assert plan(view, {"retry_policy": {"retry_auto_enabled": 0}}).action is Action.UPDATE


def test_an_explicit_empty_object_replaces_what_is_there():
    result = plan(VIEW, {"headers": {}})

    assert result.changes == [Change("headers", VIEW["headers"], {})]


def test_a_null_in_the_file_matches_a_field_the_view_leaves_out():
    assert plan({"name": "x"}, {"name": "x", "connection_id": None}).action is Action.UNCHANGED


def test_a_client_certificate_in_the_file_is_shown_masked_and_never_compared():
    """A connection may carry its client certificate (uploaded with the save: the SEFAZ example);
    the hub never shows one back, so it is write-only like a subscription's secret."""
    certificate = {"pkcs12_base64": "MIIKcAIBAzCCCj...", "password": "pfx-password"}
    spec = {**SPEC, "use_client_certificate": True, "client_certificate": certificate}
    # As the hub shows it: the auth with its defaults.
    view = {**VIEW, "use_client_certificate": True, "auth": {**VIEW["auth"], "header_name": "X-Api-Key"}}

    created = plan(None, spec)
    again = plan(view, spec, version=3, compared=normalized(Kind.CONNECTION, spec))

    assert Change("client_certificate", ABSENT, "***") in created.changes
    shown = diff_text("Connection t/conn_erp", created)
    assert "MIIKcAIBAzCCCj" not in shown
    assert "pfx-password" not in shown
    assert again.action is Action.UNCHANGED


def test_a_connections_limits_compare_as_the_hub_stores_them():
    """Issue 30: `limits` in a Connection spec; the hub shows an unset one as null."""
    spec = {"url": "https://erp.example.com/in", "limits": {"rate_per_second": 5, "max_concurrency": 2}}
    view = {
        "url": "https://erp.example.com/in",
        "limits": {"max_concurrency": 2, "rate_per_second": 5.0, "burst": None},
    }
    compared = normalized(Kind.CONNECTION, spec)

    assert plan(view, spec, version=2, compared=compared).action is Action.UNCHANGED
    faster = {**spec, "limits": {"rate_per_second": 10, "max_concurrency": 2}}
    changed = plan(view, faster, version=2, compared=normalized(Kind.CONNECTION, faster))
    assert changed.action is Action.UPDATE
    assert [c.path for c in changed.changes] == ["limits.rate_per_second"]
