"""Outbound webhook subscriptions: configuration, secrets, enable/disable, failed deliveries."""

from __future__ import annotations

from datetime import timedelta

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field, model_validator

from hub.admin.access import Role, requires, tenant
from hub.admin.subscriptions import SubscriptionDisabled, SubscriptionExists, TooManySecrets
from hub.api.admin.common import ADMIN, BODY, ETAG, VERSIONED, Id, KeyListQuery, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import etag, if_match, json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.api.views import IfMatch
from hub.delivery.egress import DestinationNotAllowed
from hub.domain.clock import Rfc3339Time
from hub.domain.model import HubModel
from hub.domain.tenancy import DEFAULT_ROTATION_GRACE, MAX_ROTATION_GRACE_HOURS
from hub.errors import PreconditionFailed, QueueUnavailable, SecretRequired, ValidationFailed
from hub.outbox.subscriptions import SubscriptionSpec, secret_key
from hub.wiring.admin import subscription_admin

router = Router()


class TenantSubscriptionPath(HubModel):
    tenant_id: Id
    subscription_id: Id


class SecretRotation(HubModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    #: The new `whsec_` secret (absent: generated, shown once).
    secret: str | None = Field(default=None, repr=False)
    #: How long the current secrets keep signing beside the new one (0: they stop at once).
    grace_hours: int = Field(
        default=int(DEFAULT_ROTATION_GRACE.total_seconds() // 3600), ge=0, le=MAX_ROTATION_GRACE_HOURS
    )

    @model_validator(mode="after")
    def _whsec(self) -> SecretRotation:
        if self.secret is not None:
            secret_key(self.secret)
        return self


class DisableRequest(HubModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(default=None, min_length=1, max_length=300)


class ReplayRequest(HubModel):
    """Exactly one of `event_id` (one failed delivery) or `since` (every one failed at or after)."""

    model_config = ConfigDict(extra="forbid")
    event_id: str | None = Field(default=None, min_length=1, max_length=300)
    since: Rfc3339Time | None = None

    @model_validator(mode="after")
    def _one(self) -> ReplayRequest:
        if (self.event_id is None) == (self.since is None):
            raise ValueError("give exactly one of event_id and since")
        return self


def _subscription_path(tenant_id: str, subscription_id: str) -> TenantSubscriptionPath:
    given = {"tenant_id": tenant_id, "subscription_id": subscription_id}
    return validated(TenantSubscriptionPath, given, "path")


@router.post(
    "/api/admin/tenants/<tenant_id>/subscriptions",
    **answers(
        "Create an outbound webhook subscription (its secret is shown once)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, SubscriptionExists, DestinationNotAllowed),
        tags=["subscriptions"],
        headers={201: ETAG},
    ),
)
@documented(body=SubscriptionSpec, path=TenantQuery)
@requires(tenant(Role.ADMIN, what="subscription"))
def create_subscription(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(router.current_event, SubscriptionSpec)
    view = subscription_admin().create(_principal(), path.tenant_id, request)
    return json_response(201, view, etag(view["version"]))


@router.get(
    "/api/admin/tenants/<tenant_id>/subscriptions",
    **answers(
        "A tenant's webhook subscriptions, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["subscriptions"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
@requires(tenant(Role.VIEWER, what="subscription"))
def list_subscriptions(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(
        200, subscription_admin().list_subscriptions(path.tenant_id, query.limit, query.cursor)
    )


@router.get(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>",
    **answers(
        "A webhook subscription (secrets masked)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantSubscriptionPath)
@requires(tenant(Role.VIEWER, what="subscription"))
def get_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    view = subscription_admin().get(path.tenant_id, path.subscription_id)
    return json_response(200, view, etag(view["version"]))


@router.put(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>",
    **answers(
        "Replace a webhook subscription (If-Match: its ETag; secrets change by rotation)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, *VERSIONED, DestinationNotAllowed, SecretRequired),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(body=SubscriptionSpec, path=TenantSubscriptionPath, headers=IfMatch)
@requires(tenant(Role.ADMIN, what="subscription"))
def replace_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    request = parse_body(router.current_event, SubscriptionSpec)
    view = subscription_admin().update(
        _principal(), path.tenant_id, path.subscription_id, request, if_match(router.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@router.delete(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>",
    **answers(
        "Delete a webhook subscription",
        ok={204: None},
        errors=(*ADMIN, *VERSIONED),
        tags=["subscriptions"],
    ),
)
@documented(path=TenantSubscriptionPath, headers=IfMatch)
@requires(tenant(Role.ADMIN, what="subscription"))
def delete_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    subscription_admin().delete(
        _principal(), path.tenant_id, path.subscription_id, if_match(router.current_event)
    )
    return Response(status_code=204, body="")


@router.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/rotate-secret",
    **answers(
        "Add a signing secret (shown once); the current ones keep signing for the grace period",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, PreconditionFailed, TooManySecrets),
        tags=["subscriptions"],
        headers={201: ETAG},
    ),
)
@documented(body=SecretRotation, body_required=False, path=TenantSubscriptionPath)
@requires(tenant(Role.ADMIN, what="subscription"))
def rotate_subscription_secret(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    request = (
        parse_body(router.current_event, SecretRotation) if router.current_event.body else SecretRotation()
    )
    view = subscription_admin().rotate_secret(
        _principal(),
        path.tenant_id,
        path.subscription_id,
        request.secret,
        timedelta(hours=request.grace_hours),
    )
    return json_response(201, view, etag(view["version"]))


@router.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/retire-secrets",
    **answers(
        "Stop signing with every secret but the newest (ends a rotation early)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, PreconditionFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantSubscriptionPath)
@requires(tenant(Role.ADMIN, what="subscription"))
def retire_subscription_secrets(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    view = subscription_admin().retire_secrets(_principal(), path.tenant_id, path.subscription_id)
    return json_response(200, view, etag(view["version"]))


@router.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/enable",
    **answers(
        "Enable a webhook subscription",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, PreconditionFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantSubscriptionPath)
@requires(tenant(Role.OPERATOR, what="subscription"))
def enable_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    view = subscription_admin().set_enabled(_principal(), path.tenant_id, path.subscription_id, True, None)
    return json_response(200, view, etag(view["version"]))


@router.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/disable",
    **answers(
        "Disable a webhook subscription (emits subscription.disabled)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, PreconditionFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(body=DisableRequest, body_required=False, path=TenantSubscriptionPath)
@requires(tenant(Role.OPERATOR, what="subscription"))
def disable_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    request = (
        parse_body(router.current_event, DisableRequest) if router.current_event.body else DisableRequest()
    )
    view = subscription_admin().set_enabled(
        _principal(), path.tenant_id, path.subscription_id, False, request.reason
    )
    return json_response(200, view, etag(view["version"]))


@router.get(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/failed-deliveries",
    **answers(
        "A subscription's failed webhook deliveries, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["subscriptions"],
    ),
)
@documented(query=KeyListQuery, path=TenantSubscriptionPath)
@requires(tenant(Role.VIEWER, what="subscription"))
def list_failed_deliveries(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(
        200,
        subscription_admin().failed_deliveries(
            path.tenant_id, path.subscription_id, query.limit, query.cursor
        ),
    )


@router.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/failed-deliveries/replay",
    **answers(
        "Send failed webhook deliveries again (one event, or all since a time; same webhook-id)",
        ok={202: OBJECT},
        errors=(*ADMIN, *BODY, SubscriptionDisabled, QueueUnavailable),
        tags=["subscriptions"],
    ),
)
@documented(body=ReplayRequest, path=TenantSubscriptionPath)
@requires(tenant(Role.OPERATOR, what="subscription"))
def replay_failed_deliveries(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    request = parse_body(router.current_event, ReplayRequest)
    answer = subscription_admin().replay(
        _principal(), path.tenant_id, path.subscription_id, event_id=request.event_id, since=request.since
    )
    return json_response(202, answer)
