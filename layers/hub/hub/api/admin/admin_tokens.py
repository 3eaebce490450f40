"""Admin tokens, and who the presented one is."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field

from hub.admin.access import Role, any_token, by_use_case, requires, whoami
from hub.api.admin.common import ADMIN, BODY, Id, KeyListQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.model import HubModel
from hub.errors import (
    PayloadTooLarge,
    RateLimited,
    StorageUnavailable,
    TooManyFailedTokens,
    Unauthorized,
    ValidationFailed,
)
from hub.wiring.admin import token_admin

router = Router()


class NewAdminToken(HubModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(min_length=1, max_length=100)
    role: Role
    #: Null: a platform token.
    tenant_id: Id | None


class TokenListQuery(KeyListQuery):
    #: Absent: the platform's tokens.
    tenant_id: Id | None = None


class TokenPath(HubModel):
    token_id: Annotated[str, Field(pattern=r"^tok_[0-9a-z]{26}$")]


@router.post(
    "/api/admin/tokens",
    **answers(
        "Create an admin token (shown once)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY),
        tags=["admin-tokens"],
    ),
)
@documented(body=NewAdminToken)
@requires(by_use_case(Role.ADMIN, what="tenant"))
def create_admin_token() -> Response:
    request = parse_body(router.current_event, NewAdminToken)
    created = token_admin().create(_principal(), request.tenant_id, request.label, request.role)
    return json_response(201, created)


@router.get(
    "/api/admin/tokens",
    **answers(
        "Admin tokens of a tenant or of the platform, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["admin-tokens"],
    ),
)
@documented(query=TokenListQuery)
@requires(by_use_case(Role.VIEWER, what="tenant"))
def list_admin_tokens() -> Response:
    query = parse_query(router.current_event, TokenListQuery)
    return json_response(
        200, token_admin().list_tokens(_principal(), query.tenant_id, query.limit, query.cursor)
    )


@router.post(
    "/api/admin/tokens/<token_id>/revoke",
    **answers(
        "Revoke an admin token",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["admin-tokens"],
    ),
)
@documented(path=TokenPath)
@requires(by_use_case(Role.ADMIN, what="admin token"))
def revoke_admin_token(token_id: str) -> Response:
    path = validated(TokenPath, {"token_id": token_id}, "path")
    return json_response(200, token_admin().revoke(_principal(), path.token_id))


@router.get(
    "/api/admin/me",
    **answers(
        "Who the presented admin token is, and what its role may do",
        ok={200: OBJECT},
        errors=(Unauthorized, TooManyFailedTokens, RateLimited, PayloadTooLarge, StorageUnavailable),
        tags=["admin-tokens"],
        description=(
            "Any admin token, the bootstrap token too. `can` names every action of the "
            "operator's page with whether this token may take it (hub.admin.access.PERMISSIONS): "
            "the page offers nothing the API would refuse with 403."
        ),
    ),
)
@requires(any_token())
def whoami_route() -> Response:
    return json_response(200, whoami(_principal()))
