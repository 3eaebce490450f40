"""Outbound webhook subscriptions, managed through the admin API (issue 12).

- Created with one secret (given, or generated: `whsec_` + 24 random bytes), shown once in the
  create answer and never again (views mask every secret); sealed at rest, opened only by the
  webhook sender.
- Versioned like connections: `If-Match` with a stale version is 412; a PUT equal to the
  stored content changes nothing.
- The signing secrets are bound to the receiver (issue 27, point 4): a PUT whose `url` moves to
  another scheme, host or port must carry a new secret (`secret`, or `rotate_secret: true` for
  a generated one, returned once), else 400 `secret_required`. The new secret replaces every
  current one at once: the new receiver never sees a signature the old receiver would accept.
- Otherwise secrets are not part of a PUT: a rotation adds a new one
  (shown once) and gives the current ones an expiry after a grace period (0: at once), so
  receivers can switch without a gap; `retire-secrets` drops every secret but the newest.
- Disabling (an operator, or the sender on `410 Gone`) writes a `subscription.disabled` event
  in the same transaction; enabling clears the reason.
- Failed deliveries are listed newest first and replayed by an operator, one event or all
  since a time: the same event (the same `webhook-id`) goes out again as a new run with a fresh
  retry schedule; a successful replay clears the failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from hub.admin.access import Principal
from hub.admin.audit import MASK, Audit
from hub.admin.versioned import Versioned
from hub.delivery.egress import EgressPolicy
from hub.domain.clock import utcnow
from hub.domain.destination_binding import subscription_moved
from hub.domain.ids import new_id
from hub.errors import Conflict, NotFound, SecretRequired, ValidationFailed
from hub.outbox.events import OutboxEvent
from hub.outbox.subscriptions import (
    MAX_SECRETS,
    SigningSecret,
    Subscription,
    SubscriptionSpec,
    new_secret,
)
from hub.outbox.webhooks import FailedWebhook, FailurePage, WebhookJob, WebhookQueue, disabled_event

logger = logging.getLogger(__name__)

#: The most failed deliveries one "replay since T" sends (the answer says when more remain).
REPLAY_LIMIT = 1000


class SubscriptionExists(Conflict):
    code = "subscription_exists"


class SubscriptionDisabled(Conflict):
    """The subscription is disabled: enable it before replaying its failed deliveries."""

    code = "subscription_disabled"


class TooManySecrets(Conflict):
    """A rotation would leave more than five current secrets: retire old ones first."""

    code = "too_many_secrets"


class SubscriptionStore(Protocol):
    def tenant_exists(self, tenant_id: str) -> bool: ...

    def get(self, tenant_id: str, subscription_id: str) -> Subscription | None: ...

    def list_subscriptions(
        self, tenant_id: str, limit: int, cursor: str | None
    ) -> tuple[list[Subscription], str | None]: ...

    def create(self, subscription: Subscription) -> None:
        """Conflict when the tenant already has a subscription of that id."""
        ...

    def replace(
        self, subscription: Subscription, expected_version: int, event: OutboxEvent | None = None
    ) -> None:
        """VersionConflict when the stored version is not `expected_version`."""
        ...

    def delete(self, tenant_id: str, subscription_id: str, expected_version: int) -> None: ...


class FailureStore(Protocol):
    def get(self, tenant_id: str, subscription_id: str, event_id: str) -> FailedWebhook | None: ...

    def mark_replayed(self, tenant_id: str, subscription_id: str, event_id: str, at: datetime) -> None: ...

    def list_failures(
        self, tenant_id: str, subscription_id: str, limit: int, cursor: str | None
    ) -> FailurePage: ...

    def since(self, tenant_id: str, subscription_id: str, since: datetime) -> Iterator[FailedWebhook]: ...


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def subscription_view(subscription: Subscription) -> dict[str, Any]:
    """A subscription as the admin API shows it: secrets masked (their ids and dates shown)."""
    return {
        **subscription.settings(),
        "secrets": [
            {
                "secret_id": s.secret_id,
                "secret": MASK,
                "created_at": _iso(s.created_at),
                "expires_at": _iso(s.expires_at),
            }
            for s in sorted(subscription.secrets, key=lambda s: s.created_at, reverse=True)
        ],
        "version": subscription.version,
        "created_at": _iso(subscription.created_at),
        "updated_at": _iso(subscription.updated_at),
    }


def failure_view(failure: FailedWebhook) -> dict[str, Any]:
    return {
        "event_id": failure.event.id,
        "event_type": failure.event.type.value,
        "message_id": failure.event.message_id,
        "version": failure.event.version,
        "failed_at": _iso(failure.failed_at),
        "error_class": failure.error_class,
        "dest_status": failure.dest_status,
        "detail": failure.detail or None,
        "attempts": failure.attempts,
        "replayed_at": _iso(failure.replayed_at),
    }


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        "subscription failed validation",
        details=[{"field": field, "problem": "value_error", "message": message}],
    )


class SubscriptionAdmin:
    """The subscription use cases of the admin API. The handler authorizes (role and the path's
    tenant); every use case also checks that the stored subscription is the path tenant's."""

    def __init__(
        self,
        store: SubscriptionStore,
        failures: FailureStore,
        queue: Callable[[], WebhookQueue],
        audit: Audit,
        clock: Callable[[], datetime] = utcnow,
        *,
        egress: EgressPolicy | None = None,
    ) -> None:
        self._store = store
        self._failures = failures
        self._queue = queue
        self._audit = audit
        self._versions = Versioned("subscription", audit, logger)
        self._clock = clock
        #: The URL rules of the deployment (absent: public https receivers only).
        self._egress = egress or EgressPolicy()

    # --- reads --------------------------------------------------------------------------------

    def get(self, tenant_id: str, subscription_id: str) -> dict[str, Any]:
        return subscription_view(self._stored(tenant_id, subscription_id))

    def list_subscriptions(self, tenant_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
        page, next_cursor = self._store.list_subscriptions(tenant_id, limit, cursor)
        return {"items": [subscription_view(s) for s in page], "next_cursor": next_cursor}

    def failed_deliveries(
        self, tenant_id: str, subscription_id: str, limit: int, cursor: str | None
    ) -> dict[str, Any]:
        self._stored(tenant_id, subscription_id)
        page = self._failures.list_failures(tenant_id, subscription_id, limit, cursor)
        return {"items": [failure_view(f) for f in page.items], "next_cursor": page.next_cursor}

    # --- writes -------------------------------------------------------------------------------

    def create(self, principal: Principal, tenant_id: str, spec: SubscriptionSpec) -> dict[str, Any]:
        """A new subscription (version 1) with one secret, returned once as `secret`."""
        if spec.rotate_secret:
            raise _invalid(
                "rotate_secret", "a new subscription gets its secret: give one as `secret`, or none"
            )
        if not self._store.tenant_exists(tenant_id):
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        self._egress.check_url(spec.url, "url", https_only=True)
        now = self._clock()
        secret = spec.secret or new_secret()
        subscription = Subscription(
            subscription_id=spec.subscription_id or new_id("sub"),
            tenant_id=tenant_id,
            url=spec.url,
            event_types=tuple(spec.event_types),
            integration_ids=tuple(spec.integration_ids) if spec.integration_ids is not None else None,
            description=spec.description,
            enabled=spec.enabled,
            disabled_reason=None if spec.enabled else "created disabled",
            secrets=(SigningSecret(secret_id=new_id("whs"), created_at=now, value=secret),),
            version=1,
            created_at=now,
            updated_at=now,
        )
        try:
            self._store.create(subscription)
        except Conflict as taken:
            raise SubscriptionExists(
                "a subscription with this id exists",
                details={"subscription_id": subscription.subscription_id},
            ) from taken
        view = subscription_view(subscription)
        self._versions.record(
            principal, "subscription.created", tenant_id, subscription.subscription_id, now, after=view
        )
        return {**view, "secret": secret}

    def update(
        self,
        principal: Principal,
        tenant_id: str,
        subscription_id: str,
        spec: SubscriptionSpec,
        if_match: int | None,
    ) -> dict[str, Any]:
        """Replaces url, event types, integration filter, description and enabled. Stale
        `if_match` → 412; equal content → the stored view, unchanged. A `url` on another
        origin needs a new secret in the same request (SecretRequired, 400): it then signs
        alone, and the answer shows it once as `secret`."""
        if spec.subscription_id not in (None, subscription_id):
            raise _invalid("subscription_id", "differs from the subscription in the path")
        if spec.secret is not None and spec.rotate_secret:
            raise _invalid("rotate_secret", "give a secret or ask for one, not both")
        stored = self._stored(tenant_id, subscription_id)
        moved = subscription_moved(stored.url, spec.url)
        renewing = spec.secret is not None or spec.rotate_secret
        if renewing and not moved:
            field = "secret" if spec.secret is not None else "rotate_secret"
            raise _invalid(field, "secrets change by rotation (POST .../rotate-secret), not by PUT")
        self._egress.check_url(spec.url, "url", https_only=True)
        self._versions.check(subscription_id, stored.version, if_match)
        if moved and not renewing:
            raise SecretRequired(
                "url moves the subscription to another receiver (scheme, host or port): send a new "
                "signing secret in the same request",
                details=[
                    {
                        "field": "secret",
                        "problem": "secret_required",
                        "message": "give the new receiver's secret as `secret`, or set `rotate_secret: true`",
                        "moved": ["url"],
                    }
                ],
            )
        changes: dict[str, Any] = {
            "url": spec.url,
            "event_types": tuple(spec.event_types),
            "integration_ids": tuple(spec.integration_ids) if spec.integration_ids is not None else None,
            "description": spec.description,
            "enabled": spec.enabled,
        }
        if all(getattr(stored, name) == value for name, value in changes.items()):
            return subscription_view(stored)
        if spec.enabled and not stored.enabled:
            changes["disabled_reason"] = None
        elif not spec.enabled and stored.enabled:
            changes["disabled_reason"] = f"disabled by {principal.label or principal.token_id}"
        if not moved:
            return self._save(principal, stored, "subscription.updated", changes)
        # Every current secret stops at once: a signature the old receiver trusts never goes to
        # the new one (which could replay it there).
        value = spec.secret or new_secret()
        changes["secrets"] = (SigningSecret(secret_id=new_id("whs"), created_at=self._clock(), value=value),)
        view = self._save(principal, stored, "subscription.updated", changes)
        return {**view, "secret": value}

    def set_enabled(
        self, principal: Principal, tenant_id: str, subscription_id: str, enabled: bool, reason: str | None
    ) -> dict[str, Any]:
        """Enables (clearing the reason) or disables (writing `subscription.disabled`);
        the same state again changes nothing."""
        stored = self._stored(tenant_id, subscription_id)
        if stored.enabled == enabled:
            return subscription_view(stored)
        if enabled:
            return self._save(
                principal, stored, "subscription.enabled", {"enabled": True, "disabled_reason": None}
            )
        why = reason or f"disabled by {principal.label or principal.token_id}"
        return self._save(
            principal, stored, "subscription.disabled", {"enabled": False, "disabled_reason": why}
        )

    def rotate_secret(
        self, principal: Principal, tenant_id: str, subscription_id: str, secret: str | None, grace: timedelta
    ) -> dict[str, Any]:
        """Adds a secret (given or generated; returned once as `secret`); every current secret
        signs too until `grace` has passed (0: it stops at once)."""
        stored = self._stored(tenant_id, subscription_id)
        now = self._clock()
        ends = now + grace
        kept = [
            s.model_copy(update={"expires_at": min(s.expires_at or ends, ends)}) for s in stored.pruned(now)
        ]
        kept = [s for s in kept if s.current(now)]
        value = secret or new_secret()
        if len(kept) + 1 > MAX_SECRETS:
            raise TooManySecrets(
                "a subscription signs with at most five secrets: retire old ones first",
                details={"current_secrets": len(kept)},
            )
        fresh = SigningSecret(secret_id=new_id("whs"), created_at=now, value=value)
        view = self._save(principal, stored, "subscription.secret_rotated", {"secrets": (*kept, fresh)})
        return {**view, "secret": value}

    def retire_secrets(self, principal: Principal, tenant_id: str, subscription_id: str) -> dict[str, Any]:
        """Keeps only the newest secret (ends a rotation's grace period early)."""
        stored = self._stored(tenant_id, subscription_id)
        newest = max(stored.secrets, key=lambda s: s.created_at)
        if len(stored.secrets) == 1 and newest.expires_at is None:
            return subscription_view(stored)
        kept = newest.model_copy(update={"expires_at": None})
        return self._save(principal, stored, "subscription.secrets_retired", {"secrets": (kept,)})

    def delete(
        self, principal: Principal, tenant_id: str, subscription_id: str, if_match: int | None
    ) -> None:
        stored = self._stored(tenant_id, subscription_id)
        self._versions.check(subscription_id, stored.version, if_match)
        with self._versions.writing(subscription_id):
            self._store.delete(tenant_id, subscription_id, stored.version)
        self._versions.record(
            principal,
            "subscription.deleted",
            tenant_id,
            subscription_id,
            self._clock(),
            before=subscription_view(stored),
        )

    def replay(
        self,
        principal: Principal,
        tenant_id: str,
        subscription_id: str,
        *,
        event_id: str | None,
        since: datetime | None,
    ) -> dict[str, Any]:
        """Sends failed deliveries again: one event, or every one failed at or after `since`
        (at most REPLAY_LIMIT; `more` says when some remain). The same event id each time."""
        stored = self._stored(tenant_id, subscription_id)
        if not stored.enabled:
            raise SubscriptionDisabled(
                "the subscription is disabled: enable it first", details={"subscription_id": subscription_id}
            )
        if event_id is not None:
            failure = self._failures.get(tenant_id, subscription_id, event_id)
            if failure is None:
                raise NotFound("no failed delivery of this event", details={"event_id": event_id})
            chosen = [failure]
            more = False
        else:
            assert since is not None
            chosen, more = [], False
            for failure in self._failures.since(tenant_id, subscription_id, since):
                if len(chosen) == REPLAY_LIMIT:
                    more = True
                    break
                chosen.append(failure)
        now = self._clock()
        run = new_id("run")
        jobs = [
            WebhookJob(
                subscription_id=subscription_id, event=f.event, first_attempt_at=now, run_id=run, replay=True
            )
            for f in chosen
        ]
        if jobs:
            self._queue().send(jobs)
            for failure in chosen:
                self._failures.mark_replayed(tenant_id, subscription_id, failure.event.id, now)
        answer = {"replayed": len(jobs), "event_ids": [f.event.id for f in chosen][:100], "more": more}
        target_detail = {"event_id": event_id} if event_id else {"since": _iso(since)}
        self._audit.record(
            principal,
            tenant_id,
            "subscription.replayed",
            {"subscription_id": subscription_id, **{k: str(v) for k, v in target_detail.items()}},
            now,
            after={"replayed": len(jobs), "more": more},
        )
        return answer

    # --- helpers ------------------------------------------------------------------------------

    def _save(
        self, principal: Principal, stored: Subscription, action: str, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        now = self._clock()
        changed = stored.model_copy(update={**changes, "version": stored.version + 1, "updated_at": now})
        event = None
        if stored.enabled and not changed.enabled:
            event = disabled_event(stored, "operator", now)
        with self._versions.writing(stored.subscription_id):
            self._store.replace(changed, stored.version, event)
        before, after = subscription_view(stored), subscription_view(changed)
        self._versions.record(
            principal, action, stored.tenant_id, stored.subscription_id, now, before=before, after=after
        )
        return after

    def _stored(self, tenant_id: str, subscription_id: str) -> Subscription:
        found = self._store.get(tenant_id, subscription_id)
        return self._versions.owned(found, lambda s: s.tenant_id, tenant_id, subscription_id)
