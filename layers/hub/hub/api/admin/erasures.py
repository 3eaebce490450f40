"""Erasure (issue 29): an LGPD / GDPR request to delete one message, or a tenant's messages by
external id or business key, before their retention would (hub.admin.erasure). Operators and
admins; audited with ids only."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, ConfigDict, Field, model_validator

from hub.admin.access import Role, by_use_case, requires, tenant
from hub.admin.erasure import ERASE_BATCH, ErasedBy
from hub.api.admin.common import ADMIN, BODY, MESSAGE, ReprocessRequest, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.wiring.admin import erasure

router = Router()

_ANSWER = (
    f'`{{"erased": [message ids], "more": bool}}`: at most {ERASE_BATCH} messages per call; while '
    "`more` is true, call again."
)
_WHAT = (
    "Erasing a message deletes its payload, its status callbacks, its pointers and the message "
    "itself; the audit log keeps its id, never the value it was found by. The payload is shared "
    "by content: another message of the integration with the very same payload loses it too. "
    "A step still to run for it is dropped; a delivery under way may still reach the destination."
)


class ErasureRequest(BaseModel):
    """Exactly one of them: the value the tenant's messages carry, exactly as stored."""

    model_config = ConfigDict(extra="forbid")
    external_id: str | None = Field(default=None, min_length=1, max_length=255)
    #: A key of several fields as its values joined by `|` (as the search takes it).
    business_key: str | None = Field(default=None, min_length=1, max_length=255)

    @model_validator(mode="after")
    def _exactly_one(self) -> ErasureRequest:
        if (self.external_id is None) == (self.business_key is None):
            raise ValueError("give external_id or business_key (one of them)")
        return self

    def by(self) -> tuple[ErasedBy, str]:
        if self.external_id is not None:
            return ErasedBy.EXTERNAL_ID, self.external_id
        assert self.business_key is not None
        return ErasedBy.BUSINESS_KEY, self.business_key


@router.post(
    "/api/admin/messages/<message_id>/erase",
    **answers(
        "Erase a message now (LGPD / GDPR): its payload, callbacks and the message itself",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
        description=f"Operator role. {_WHAT} Answers {_ANSWER}",
    ),
)
@documented(path=ReprocessRequest)
@requires(by_use_case(Role.OPERATOR, what="message"))
def erase_message(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    return json_response(200, erasure().erase_message(checked.message_id, _principal()))


@router.post(
    "/api/admin/tenants/<tenant_id>/erasures",
    **answers(
        "Erase a tenant's messages by external id or business key (LGPD / GDPR)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY),
        tags=["messages"],
        description=(
            f"Operator role. The messages the search finds by the value (`external_id`, or "
            "`business_key`: the message holding the key now), past their retention too. "
            f"{_WHAT} Answers {_ANSWER}"
        ),
    ),
)
@documented(body=ErasureRequest, path=TenantQuery)
@requires(tenant(Role.OPERATOR))
def erase_by_value(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    by, value = parse_body(router.current_event, ErasureRequest).by()
    return json_response(200, erasure().erase_by(path.tenant_id, by, value, _principal()))
