"""Request models and error lists the admin routers share."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from hub.certificates.model import (
    CertificateExpired,
    CertificateKeyMismatch,
    CertificatePasswordInvalid,
    CertificateRejected,
)
from hub.domain.model import HubModel
from hub.errors import (
    Conflict,
    Forbidden,
    MalformedBody,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    RateLimited,
    StorageUnavailable,
    TooManyFailedTokens,
    Unauthorized,
    ValidationFailed,
)

MessageId = Annotated[str, Field(pattern=r"^msg_[0-9a-z]{26}$")]


#: Tenant and connection ids: no '#' (they are parts of table keys).
Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]


class ReprocessRequest(HubModel):
    model_config = ConfigDict(extra="forbid")
    message_id: MessageId


class ReprocessBody(ReprocessRequest):
    #: Send again a message its destination already accepted (`sent`, `received_observed`);
    #: without it such a reprocess is 409 `already_delivered`.
    force: bool = False


class IntegrationPath(HubModel):
    integration_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class TenantQuery(HubModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id


class ConnectionPath(HubModel):
    connection_id: Id


class KeyListQuery(HubModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=2048)


#: What any admin route can answer: no or a bad token (401), too many bad tokens from the
#: caller's address lately or the token over its rate (429), a role too low or a platform action
#: with a tenant's token (403), another tenant's resource or a missing one (404), a body over the
#: admin API's limit (413).
ADMIN = (
    Unauthorized,
    TooManyFailedTokens,
    RateLimited,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    StorageUnavailable,
)


#: A route that parses a JSON body (our strict parser, then the model).
BODY = (MalformedBody, ValidationFailed)


#: A route with a message or integration id in its path.
MESSAGE = (ValidationFailed,)


#: Optimistic writes: `If-Match` with the version the caller read (412 when it is stale).
VERSIONED = (ValidationFailed, PreconditionFailed, Conflict)


#: A PKCS#12 the upload refuses.
CERTIFICATE = (CertificateRejected, CertificatePasswordInvalid, CertificateKeyMismatch, CertificateExpired)


ETAG = {"ETag": 'The version, for If-Match on the next change: "3"'}
