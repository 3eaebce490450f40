"""Key shapes: docs/data-model.md (every item, its keys, TTL, writers and readers, and the GSI
partitions; the reasons in docs/decisions/).

Every partition / sort key of the hub table is spelled here and nowhere else in the code base.
A key derived from a client-chosen id (connection, integration, subscription, client
certificate) carries its tenant, so those functions take the tenant first: a read without one
does not type-check (docs/decisions/tenant-scoped-ids.md)."""

from __future__ import annotations

import base64
import hashlib

from hub.domain.status import PipelineStatus

Key = dict[str, str]

#: The statuses the admin queue tabs list from GSI1; only these put a message in the index.
LISTED_STATUSES = frozenset({PipelineStatus.ERROR, PipelineStatus.RETRY_PENDING, PipelineStatus.DEAD_LETTER})

MESSAGE_SK = "STATUS"
PAYLOAD_SK = "PAYLOAD"
MESSAGE_PREFIX = "MSG#"


def message_key(message_id: str) -> Key:
    return {"PK": f"{MESSAGE_PREFIX}{message_id}", "SK": MESSAGE_SK}


def payload_key(message_id: str) -> Key:
    return {"PK": f"{MESSAGE_PREFIX}{message_id}", "SK": PAYLOAD_SK}


def message_id_of(pk: str) -> str:
    return pk.removeprefix(MESSAGE_PREFIX)


def idempotency_claim_key(tenant_id: str, integration_id: str, key_hash: str) -> Key:
    return {"PK": f"IDEM#{tenant_id}#{integration_id}#{key_hash}", "SK": "CLAIM"}


def fingerprint_claim_key(tenant_id: str, integration_id: str, fingerprint: str) -> Key:
    return {"PK": f"FP#{tenant_id}#{integration_id}#{fingerprint}", "SK": "CLAIM"}


def business_key(entity: str) -> Key:
    """`entity` is `<tenant>#<integration>#<message type>#<digest of the key values>`
    (hub.pipeline.rules.entity_key)."""
    return {"PK": f"BK#{entity}", "SK": "CURRENT"}


def api_key_key(key_hash: str) -> Key:
    return {"PK": f"APIKEY#{key_hash}", "SK": "APIKEY"}


def api_key_partition(tenant_id: str) -> str:
    return f"TENANT#{tenant_id}#APIKEYS"


def api_key_index_keys(tenant_id: str, key_id: str) -> Key:
    """GSI1: a tenant's API keys by key id (time-ordered). GSI1 projects only message
    attributes, so a listing reads the keys' items by the PK the index returns."""
    return {"GSI1PK": api_key_partition(tenant_id), "GSI1SK": key_id}


def integration_key(tenant_id: str, integration_id: str) -> Key:
    """A tenant's integration: its id is unique within the tenant only."""
    return {"PK": f"INTEGRATION#{tenant_id}#{integration_id}", "SK": "CONFIG"}


def integration_partition(tenant_id: str) -> str:
    return f"TENANT#{tenant_id}#INTEGRATIONS"


def integration_index_keys(tenant_id: str, integration_id: str) -> Key:
    """GSI1: a tenant's integrations by id. GSI1 projects only message attributes, so a listing
    reads the integrations' items by the PK the index returns."""
    return {"GSI1PK": integration_partition(tenant_id), "GSI1SK": integration_id}


def connection_key(tenant_id: str, connection_id: str) -> Key:
    """A tenant's connection (issue 11): where and how an integration delivers; its id is
    unique within the tenant only."""
    return {"PK": f"CONNECTION#{tenant_id}#{connection_id}", "SK": "CONFIG"}


def connection_partition(tenant_id: str) -> str:
    return f"TENANT#{tenant_id}#CONNECTIONS"


def connection_index_keys(tenant_id: str, connection_id: str) -> Key:
    """GSI1: a tenant's connections by id; a listing reads the items by the PK the index returns."""
    return {"GSI1PK": connection_partition(tenant_id), "GSI1SK": connection_id}


def tenant_integrations_partition(tenant_id: str) -> str:
    """GSI1: a tenant's integrations (``<integration_id>`` sort keys), as the integrations admin
    writes them; the connections admin reads it to refuse deleting a connection in use."""
    return f"TENANT#{tenant_id}#INTEGRATIONS"


def tenant_key(tenant_id: str) -> Key:
    return {"PK": f"TENANT#{tenant_id}", "SK": "PROFILE"}


#: GSI1 partition holding every tenant written by the admin API (or `put_tenant`), by tenant id.
TENANTS_PARTITION = "TENANTS"


def tenant_index_keys(tenant_id: str) -> Key:
    """GSI1: every tenant in one partition, sorted by id. Tenants are few and listed rarely;
    GSI1 projects only message attributes, so a listing reads the items by the PK it returns."""
    return {"GSI1PK": TENANTS_PARTITION, "GSI1SK": tenant_id}


def status_partition(tenant_id: str, status: str) -> str:
    return f"TENANT#{tenant_id}#STATUS#{status}"


def status_index_keys(tenant_id: str, status: str, updated_at: str, message_id: str) -> Key:
    """GSI1: messages of a tenant in one listed status, ordered by last change."""
    return {"GSI1PK": status_partition(tenant_id, status), "GSI1SK": f"{updated_at}#{message_id}"}


#: GSI2's sort key: the message item's own attribute (nothing added to the item).
RECEIVED_SORT_KEY = "received_at"


def messages_partition(tenant_id: str) -> str:
    """GSI2's partition of a tenant's messages: the bare tenant id (only messages carry GSI2PK)."""
    return tenant_id


def received_index_keys(tenant_id: str) -> Key:
    """GSI2: every message of a tenant, ordered by `received_at`; written once, when the
    message item is created."""
    return {"GSI2PK": messages_partition(tenant_id)}


#: GSI3's sort key: the message item's own attribute, as for GSI2.
LOOKUP_SORT_KEY = "received_at"
CORRELATION_POINTER_SK = "CORRELATION"


def lookup_partition(tenant_id: str, value: str) -> str:
    """GSI3's partition of the messages of `tenant_id` that carry `value` (an external id or a
    correlation id): the tenant and a 128-bit digest of the value (22 characters: every byte on
    the message item is paid again by each update of it, and a value may hold `#`). The search
    compares the items' own values, so a digest collision finds nothing wrong."""
    digest = hashlib.sha256(value.encode("utf-8")).digest()[:16]
    return f"{tenant_id}#{base64.urlsafe_b64encode(digest).decode().rstrip('=')}"


def lookup_index_keys(tenant_id: str, value: str) -> Key:
    """GSI3: `value` of a tenant's message, written once with the item that carries it."""
    return {"GSI3PK": lookup_partition(tenant_id, value)}


def lookup_values(
    external_id: str | None, correlation_id: str, correlation_given: bool
) -> tuple[str, str | None]:
    """What GSI3 indexes of one message: the value its item carries (the external id, else the
    correlation id), and the correlation id its pointer item carries - only when the partner gave
    one (not the gateway's request id, the fallback) and it differs from the external id."""
    if external_id is None:
        return correlation_id, None
    if correlation_given and correlation_id != external_id:
        return external_id, correlation_id
    return external_id, None


def correlation_pointer_key(message_id: str) -> Key:
    """A message's correlation pointer (in GSI3 by its correlation id), beside its item."""
    return {"PK": f"{MESSAGE_PREFIX}{message_id}", "SK": CORRELATION_POINTER_SK}


ALERT_SK = "ALERT"


def dead_letter_alert_key(tenant_id: str, integration_id: str, hour: str) -> Key:
    """The dead letters of one integration in one UTC hour (``YYYY-MM-DDTHH``)."""
    return {"PK": f"ALERT#{tenant_id}#{integration_id}#{hour}", "SK": ALERT_SK}


def alarm_alert_key(alarm_name: str, hour: str) -> Key:
    """One CloudWatch alarm in one UTC hour (``YYYY-MM-DDTHH``)."""
    return {"PK": f"ALARM#{alarm_name}#{hour}", "SK": ALERT_SK}


#: GSI1 partition holding every client certificate, sorted by expiry.
CERT_EXPIRY_PARTITION = "CERT#EXPIRY"


def certificate_key(tenant_id: str, connection_id: str) -> Key:
    return {"PK": f"CERT#{tenant_id}#{connection_id}", "SK": "CLIENT"}


def certificate_expiry_index_keys(not_after: str, tenant_id: str, connection_id: str) -> Key:
    """GSI1: all certificates in one partition, sorted by `not_after` (second-precision UTC
    ISO). The sort key carries what the expiry check needs: GSI1 projects attributes meant for
    messages."""
    return {"GSI1PK": CERT_EXPIRY_PARTITION, "GSI1SK": f"{not_after}#{tenant_id}#{connection_id}"}


def certificate_expiry_of(gsi1sk: str) -> tuple[str, str, str]:
    """`(not_after, tenant_id, connection_id)` from a certificate's GSI1SK."""
    not_after, tenant_id, connection_id = gsi1sk.split("#", 2)
    return not_after, tenant_id, connection_id


def cert_alert_key(tenant_id: str, connection_id: str, not_after: str, bucket: int) -> Key:
    """One expiry alert of a certificate (`not_after` as in its GSI1SK) and alert bucket (days)."""
    return {"PK": f"CERTALERT#{tenant_id}#{connection_id}#{not_after}#{bucket}", "SK": ALERT_SK}


ADMIN_TOKEN_SK = "ADMINTOKEN"  # noqa: S105 - a sort key, not a secret


def admin_token_key(token_hash: str) -> Key:
    return {"PK": f"ADMINTOKEN#{token_hash}", "SK": ADMIN_TOKEN_SK}


def admin_token_id_key(token_id: str) -> Key:
    """The pointer from a token's id to its hash (revocation names the id)."""
    return {"PK": f"ADMINTOKENID#{token_id}", "SK": ADMIN_TOKEN_SK}


def admin_token_partition(tenant_id: str | None) -> str:
    return f"TENANT#{tenant_id}#ADMINTOKENS" if tenant_id is not None else "PLATFORM#ADMINTOKENS"


def admin_token_index_keys(tenant_id: str | None, token_id: str) -> Key:
    """GSI1: a scope's tokens by token id (time-ordered); the listing reads the items by PK."""
    return {"GSI1PK": admin_token_partition(tenant_id), "GSI1SK": token_id}


def admin_idempotency_key(token_id: str, key_sha256: str) -> Key:
    """An admin token's Idempotency-Key claim: the key is the token's own (token ids hold no
    ``#``), stored by its hash."""
    return {"PK": f"ADMINIDEM#{token_id}#{key_sha256}", "SK": "CLAIM"}


def audit_key(scope: str, at: str, entry_id: str) -> Key:
    return {"PK": audit_partition(scope), "SK": f"{at}#{entry_id}"}


def audit_partition(scope: str) -> str:
    return f"AUDIT#{scope}"


def event_key(event_id: str) -> Key:
    """An outbox event item (hub.outbox.events): leaves through the table's stream."""
    return {"PK": f"EVENT#{event_id}", "SK": "EVENT"}


def subscription_key(tenant_id: str, subscription_id: str) -> Key:
    """An outbound webhook subscription (issue 12); its id is unique within the tenant only."""
    return {"PK": f"SUBSCRIPTION#{tenant_id}#{subscription_id}", "SK": "CONFIG"}


def subscription_partition(tenant_id: str) -> str:
    return f"TENANT#{tenant_id}#SUBSCRIPTIONS"


def subscription_index_keys(tenant_id: str, subscription_id: str) -> Key:
    """GSI1: a tenant's subscriptions by id; readers get the items by the PK the index returns."""
    return {"GSI1PK": subscription_partition(tenant_id), "GSI1SK": subscription_id}


WEBHOOK_FAILURE_SK = "FAILED"


def webhook_failure_key(tenant_id: str, subscription_id: str, event_id: str) -> Key:
    """A webhook delivery given up on (one per subscription and event: a later failure of the
    same event replaces it)."""
    return {"PK": f"WHFAIL#{tenant_id}#{subscription_id}#{event_id}", "SK": WEBHOOK_FAILURE_SK}


def webhook_failure_partition(tenant_id: str, subscription_id: str) -> str:
    return f"SUBSCRIPTION#{tenant_id}#{subscription_id}#FAILED"


def webhook_failure_index_keys(tenant_id: str, subscription_id: str, failed_at: str, event_id: str) -> Key:
    """GSI1: a subscription's failed deliveries by failure time (fixed-width UTC)."""
    return {
        "GSI1PK": webhook_failure_partition(tenant_id, subscription_id),
        "GSI1SK": f"{failed_at}#{event_id}",
    }


CALLBACK_SK = "CALLBACK"
CALLBACK_RECORD_PREFIX = "CALLBACK#"


def callback_credential_key(tenant_id: str, connection_id: str) -> Key:
    """A connection's status-callback credential (beside its `CONFIG` item)."""
    return {"PK": connection_key(tenant_id, connection_id)["PK"], "SK": CALLBACK_SK}


def callback_record_key(message_id: str, received_at: str, callback_id: str) -> Key:
    """One status callback of a message, as received (`received_at` fixed-width UTC: the sort
    key orders a message's callbacks by arrival)."""
    return {
        "PK": f"{MESSAGE_PREFIX}{message_id}",
        "SK": f"{CALLBACK_RECORD_PREFIX}{received_at}#{callback_id}",
    }


def connection_state_key(tenant_id: str, connection_id: str) -> Key:
    """A connection's pause and breaker state (apart from its configuration item, which an
    admin PUT replaces whole)."""
    return {"PK": f"CONNSTATE#{tenant_id}#{connection_id}", "SK": "STATE"}


def connection_limit_key(tenant_id: str, connection_id: str) -> Key:
    """A limited connection's permits (issue 30): the rate's `tat` and the concurrency slots
    (hub.delivery.limits); apart from the pause and breaker state, which a permit never reads."""
    return {"PK": f"CONNLIMIT#{tenant_id}#{connection_id}", "SK": "LIMIT"}


def held_partition(tenant_id: str, connection_id: str) -> str:
    return f"HELD#{tenant_id}#{connection_id}"


def held_key(tenant_id: str, connection_id: str, message_id: str) -> Key:
    """A message held on a connection (paused / breaker open); message ids sort by receipt."""
    return {"PK": held_partition(tenant_id, connection_id), "SK": message_id}


def bulk_job_key(tenant_id: str, job_id: str) -> Key:
    """A bulk job (issue 28): its filter, its position and its counts; TTL 30 days."""
    return {"PK": f"BULKJOB#{tenant_id}#{job_id}", "SK": "JOB"}


def bulk_job_partition(tenant_id: str) -> str:
    return f"TENANT#{tenant_id}#BULKJOBS"


def bulk_job_index_keys(tenant_id: str, job_id: str) -> Key:
    """GSI1: a tenant's bulk jobs, newest first (job ids sort by creation time)."""
    return {"GSI1PK": bulk_job_partition(tenant_id), "GSI1SK": job_id}
