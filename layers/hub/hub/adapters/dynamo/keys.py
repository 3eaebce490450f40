"""Every partition / sort key shape of the hub table, with its TTL and the use case that owns
it. Nothing else in the code base spells a key.

- message (+ its execution): ``MSG#<message>`` / ``STATUS`` - ingest, worker, admin; no TTL
- large payload: ``MSG#<message>`` / ``PAYLOAD`` - ingest; no TTL
- idempotency-key claim: ``IDEM#<integration>#<sha256(key)>`` / ``CLAIM`` - ingest; TTL
- fingerprint claim: ``FP#<integration>#<fingerprint>`` / ``CLAIM`` - ingest; TTL
- business key (+ entity lease): ``BK#<integration>#<type>#<digest>`` / ``CURRENT`` - worker
- API key ``APIKEY#<sha256(key)>`` / ``APIKEY``, integration ``INTEGRATION#<id>`` / ``CONFIG``,
  tenant ``TENANT#<id>`` / ``PROFILE`` - configuration (the worker flags a gone connection)
- alert claims ``ALERT#...`` / ``ALARM#...`` (hub.adapters.alert_claims, TTL) and client
  certificates ``CERT#<connection>`` (hub.adapters.certificates) - their own adapters

GSI1 is sparse: a message item carries ``GSI1PK`` / ``GSI1SK`` only while it is in a status an
operator lists (`LISTED_STATUSES`), so the happy path (received -> sent) never writes the index.
Certificates use GSI1 under one fixed partition, sorted by expiry.
"""

from __future__ import annotations

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


def idempotency_claim_key(integration_id: str, key_hash: str) -> Key:
    return {"PK": f"IDEM#{integration_id}#{key_hash}", "SK": "CLAIM"}


def fingerprint_claim_key(integration_id: str, fingerprint: str) -> Key:
    return {"PK": f"FP#{integration_id}#{fingerprint}", "SK": "CLAIM"}


def business_key(entity: str) -> Key:
    """`entity` is `<integration>#<message type>#<digest of the key values>`."""
    return {"PK": f"BK#{entity}", "SK": "CURRENT"}


def api_key_key(key_hash: str) -> Key:
    return {"PK": f"APIKEY#{key_hash}", "SK": "APIKEY"}


def integration_key(integration_id: str) -> Key:
    return {"PK": f"INTEGRATION#{integration_id}", "SK": "CONFIG"}


def tenant_key(tenant_id: str) -> Key:
    return {"PK": f"TENANT#{tenant_id}", "SK": "PROFILE"}


def status_partition(tenant_id: str, status: str) -> str:
    return f"TENANT#{tenant_id}#STATUS#{status}"


def status_index_keys(tenant_id: str, status: str, updated_at: str, message_id: str) -> Key:
    """GSI1: messages of a tenant in one listed status, ordered by last change."""
    return {"GSI1PK": status_partition(tenant_id, status), "GSI1SK": f"{updated_at}#{message_id}"}
