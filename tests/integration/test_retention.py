"""Retention (issue 29) through the real handlers on moto, the table from template.yaml: a
tenant's own retention set by a platform admin over the admin API (and refused otherwise), the
platform's defaults from the template."""

from __future__ import annotations

import pytest

from hub.adapters.dynamo.tenancy import DynamoConfigRepository

TENANTS = "/api/admin/tenants"


def _code(answer) -> str:
    assert set(answer.body) == {"error"}
    return str(answer.body["error"]["code"])


class TestTenantRetention:
    def test_a_tenant_without_its_own_shows_the_platforms_defaults(self, stack, tenancy, admin_api):
        shown = admin_api("GET", f"{TENANTS}/t1").body

        assert (shown["payload_retention_days"], shown["message_retention_days"]) == (None, None)
        assert shown["retention"] == {"payload_days": 7, "message_days": 30}

    def test_a_platform_admin_creates_and_changes_a_tenants_retention(self, stack, admin_api):
        created = admin_api(
            "POST",
            TENANTS,
            body={
                "tenant_id": "acme",
                "name": "ACME",
                "payload_retention_days": 2,
                "message_retention_days": 10,
            },
        )
        assert created.status == 201, created.body
        assert created.body["retention"] == {"payload_days": 2, "message_days": 10}

        # Only what is given changes; null goes back to the platform's default.
        longer = admin_api("PATCH", f"{TENANTS}/acme", body={"message_retention_days": 90})
        assert longer.status == 200, longer.body
        assert (longer.body["payload_retention_days"], longer.body["message_retention_days"]) == (2, 90)
        default = admin_api("PATCH", f"{TENANTS}/acme", body={"payload_retention_days": None})
        assert default.body["payload_retention_days"] is None
        assert default.body["retention"] == {"payload_days": 7, "message_days": 90}
        assert admin_api("GET", f"{TENANTS}/acme").body == default.body

        # What ingest reads (the configuration item) carries it too.
        stored = DynamoConfigRepository(stack.table).get_tenant("acme")
        assert stored is not None
        assert (stored.payload_retention_days, stored.message_retention_days) == (None, 90)

        # The audit entry shows before and after.
        entries = admin_api("GET", f"{TENANTS}/acme/audit").body["items"]
        assert entries[0]["action"] == "tenant.updated"
        assert entries[0]["before"]["payload_retention_days"] == 2
        assert entries[0]["after"]["payload_retention_days"] is None

    def test_a_message_retention_below_the_payload_default_shortens_the_payloads(self, stack, admin_api):
        created = admin_api(
            "POST", TENANTS, body={"tenant_id": "brief", "name": "B", "message_retention_days": 3}
        )

        assert created.status == 201, created.body
        assert created.body["retention"] == {"payload_days": 3, "message_days": 3}

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"payload_retention_days": 0}, "payload_retention_days"),
            ({"message_retention_days": 3651}, "message_retention_days"),
            ({"payload_retention_days": "seven"}, "payload_retention_days"),
            ({"payload_retention_days": 1.5}, "payload_retention_days"),
            # Longer than the message's: its own, or the platform's default (30).
            ({"payload_retention_days": 10, "message_retention_days": 5}, "payload_retention_days"),
            ({"payload_retention_days": 31}, "payload_retention_days"),
        ],
    )
    def test_bad_values_are_refused_naming_the_field(self, stack, tenancy, admin_api, body, field):
        created = admin_api("POST", TENANTS, body={"tenant_id": "bad", "name": "Bad", **body})
        changed = admin_api("PATCH", f"{TENANTS}/t1", body=body)

        for answer in (created, changed):
            assert (answer.status, _code(answer)) == (400, "validation_error"), body
            assert field in {d["field"] for d in answer.body["error"]["details"]}
        assert admin_api("GET", f"{TENANTS}/bad").status == 404
        assert admin_api("GET", f"{TENANTS}/t1").body["retention"] == {"payload_days": 7, "message_days": 30}

    def test_a_change_is_checked_against_what_the_tenant_keeps(self, stack, tenancy, admin_api):
        assert admin_api("PATCH", f"{TENANTS}/t1", body={"message_retention_days": 5}).status == 200

        refused = admin_api("PATCH", f"{TENANTS}/t1", body={"payload_retention_days": 6})

        assert (refused.status, _code(refused)) == (400, "validation_error")
        assert refused.body["error"]["details"][0]["problem"] == "exceeds_message_retention"

    def test_only_a_platform_admin_sets_it(self, stack, tenancy, admin_api):
        tokens = {
            role: admin_api(
                "POST", "/api/admin/tokens", body={"label": role, "role": role, "tenant_id": "t1"}
            ).body["token"]
            for role in ("admin", "operator")
        }
        platform_operator = admin_api(
            "POST", "/api/admin/tokens", body={"label": "po", "role": "operator", "tenant_id": None}
        ).body["token"]

        for token in (tokens["admin"], tokens["operator"], platform_operator):
            answer = admin_api("PATCH", f"{TENANTS}/t1", token=token, body={"payload_retention_days": 1})
            assert (answer.status, _code(answer)) == (403, "forbidden")
        # The tenant's admin still renames it.
        assert admin_api("PATCH", f"{TENANTS}/t1", token=tokens["admin"], body={"name": "One"}).status == 200
        assert admin_api("GET", f"{TENANTS}/t1").body["payload_retention_days"] is None
