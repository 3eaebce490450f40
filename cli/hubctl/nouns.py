"""The nouns of `hubctl get|describe NOUN [ID]`: each one's names (singular, plural, short),
its id field, its columns, and whether it lives in a tenant. `kind/id` (what `-o name` prints)
is accepted wherever an id is."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class Noun:
    #: The singular, as `-o name` prints it (`message/msg_...`).
    name: str
    plural: str
    short: tuple[str, ...]
    id_field: str
    columns: tuple[str, ...]
    #: Added by `-o wide`.
    wide: tuple[str, ...] = ()
    #: Its routes are under a tenant (the --tenant, $HUB_TENANT or profile default applies).
    in_tenant: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, self.plural, *self.short)

    def wide_columns(self) -> tuple[str, ...]:
        return self.columns + self.wide


TENANT = Noun(
    "tenant",
    "tenants",
    ("tnt",),
    "tenant_id",
    ("tenant_id", "name", "default_mode", "state", "created_at"),
    # Null: the platform's default (issue 29); describe shows what applies, `retention`.
    ("updated_at", "payload_retention_days", "message_retention_days", "version"),
    in_tenant=False,
)
INTEGRATION = Noun(
    "integration",
    "integrations",
    ("int", "ints"),
    "integration_id",
    ("integration_id", "name", "mode", "connection_id", "version", "last_received_at"),
    ("message_types", "updated_at"),
)
CONNECTION = Noun(
    "connection",
    "connections",
    ("conn", "conns"),
    "connection_id",
    ("connection_id", "name", "protocol", "platform", "url", "version"),
    ("use_client_certificate", "updated_at"),
)
KEY = Noun(
    "key",
    "keys",
    ("apikey", "apikeys", "api-key", "api-keys"),
    "key_id",
    ("key_id", "prefix", "label", "state", "created_at", "last_used_day", "expires_at", "integration_ids"),
    ("revoked_at",),
)
SUBSCRIPTION = Noun(
    "subscription",
    "subscriptions",
    ("sub", "subs"),
    "subscription_id",
    ("subscription_id", "url", "event_types", "integration_ids", "enabled", "version"),
    ("description", "disabled_reason", "updated_at"),
)
MESSAGE = Noun(
    "message",
    "messages",
    ("msg", "msgs"),
    "message_id",
    (
        "message_id",
        "integration_id",
        "message_type",
        "pipeline_status",
        "dest_status",
        "last_retry_error_class",
        "retry_count",
        "updated_at",
    ),
    ("external_id", "received_at", "next_retry_at", "uncertain"),
    in_tenant=False,  # addressed by id; a listing or a search names its tenant
)
TOKEN = Noun(
    "token",
    "tokens",
    ("tok", "toks"),
    "token_id",
    ("token_id", "prefix", "label", "role", "tenant_id", "created_at", "revoked_at"),
    in_tenant=False,  # absent: platform tokens
)
BULK_JOB = Noun(
    "bulk-job",
    "bulk-jobs",
    ("bulkjob", "bulkjobs", "job", "jobs", "bj"),
    "job_id",
    ("job_id", "action", "state", "matched", "done", "skipped", "failed", "created_at"),
    ("filter", "force", "created_by", "updated_at"),
)

NOUNS = (TENANT, INTEGRATION, CONNECTION, KEY, SUBSCRIPTION, MESSAGE, TOKEN, BULK_JOB)
_BY_NAME = {name: noun for noun in NOUNS for name in noun.names}


def noun_named(text: str) -> Noun:
    """The noun a word names (any of its names, any case); argparse's type for NOUN."""
    found = _BY_NAME.get(text.lower())
    if found is None:
        known = ", ".join(noun.plural for noun in NOUNS)
        raise argparse.ArgumentTypeError(f"unknown noun {text!r} (one of: {known}; singular or short too)")
    return found


def split_ref(text: str, expected: Noun | None = None) -> tuple[Noun | None, str]:
    """`kind/id` (as `-o name` prints it) as its noun and id; a bare id as (None, id). A kind
    other than `expected` is an argparse error."""
    kind, slash, rest = text.partition("/")
    if not slash or kind.lower() not in _BY_NAME:
        return None, text
    noun = _BY_NAME[kind.lower()]
    if expected is not None and noun is not expected:
        raise argparse.ArgumentTypeError(f"{text!r} is a {noun.name}, not a {expected.name}")
    return noun, rest


def message_ref(text: str) -> str:
    """A message id, bare or as `message/<id>` (argparse's type for MESSAGE_ID)."""
    return split_ref(text, MESSAGE)[1]


def job_ref(text: str) -> str:
    """A bulk job id, bare or as `bulk-job/<id>`."""
    return split_ref(text, BULK_JOB)[1]


@dataclass(frozen=True)
class Ref:
    """NOUN or NOUN/ID as typed."""

    noun: Noun
    id: str | None = None


def noun_ref(text: str) -> Ref:
    """argparse's type for NOUN: a noun's name, or `kind/id` as `-o name` prints it."""
    kind, slash, rest = text.partition("/")
    noun = noun_named(kind)
    if slash and not rest:
        raise argparse.ArgumentTypeError(f"{text!r}: no id after the slash")
    return Ref(noun, rest or None)
