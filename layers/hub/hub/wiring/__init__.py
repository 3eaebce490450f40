"""Builds use cases with their AWS adapters, once per process (lazily: nothing at import), one
module per function so that a function's graph reads in one place:

- `hub.wiring.ingest`       the ingest API (IngestApiFunction)
- `hub.wiring.worker`       the pipeline worker (PipelineWorkerFunction)
- `hub.wiring.admin`        the admin API (AdminApiFunction)
- `hub.wiring.outbox`       the outbox publisher (OutboxPublisherFunction)
- `hub.wiring.webhooks`     the webhook sender (WebhookSenderFunction)
- `hub.wiring.alerts`       the alert notifier (AlertNotifierFunction)
- `hub.wiring.cert_expiry`  the certificate expiry check (CertExpiryFunction)
- `hub.wiring.common`       how several of them build the same things (configuration, data
                            keys, egress policy, secrets and Slack, connectors, retries, the
                            operator's moves, search, the audit trail); it keeps nothing
- `hub.wiring.registry`     `once` (a builder's one instance per process) and `reset`

Each function's module has its settings model (`SETTINGS`: `hub.config.Settings` or narrower,
`settings()` its one validated instance) and `init()`, which its handler calls at import: a
missing or malformed variable fails the cold start with an error naming it, not a 500 at first
use. Everything the function keeps is built from those settings (one model validated per
process). Every variable a model requires is in its function's template Environment
(tests/unit/test_wiring.py).

Each builder imports what it builds, so a function loads only the adapters and libraries its
own routes use (the ingest API never imports zeep, cryptography or httpx; the worker imports a
connector's libraries at its first delivery over that protocol). Keep new imports of adapters
and use cases inside the builder that needs them, never at the top of a module;
`tests/unit/test_architecture.py` checks what each handler loads. A handler (and the hub's own
code) imports its function's module; `wiring.<builder>()` (`_EXPORTS`, as tests and the
benchmarks call them) finds the builder in its module, loaded at first use.

The one thing done at import: the SnapStart hooks are registered with the Lambda runtime when it
has them (`register_snapstart_hooks`, end of this module); after a restore everything built is
forgotten (`after_restore`).
"""

from __future__ import annotations

import random
from importlib import import_module
from typing import Any

from hub.wiring.registry import reset

#: The functions' modules, each with its `SETTINGS` and `init()`.
FUNCTIONS = ("ingest", "worker", "admin", "outbox", "webhooks", "alerts", "cert_expiry")
#: Every module of the wiring: `hub.wiring.<name>` loads at first use.
MODULES = (*FUNCTIONS, "common", "registry")

#: `wiring.<name>` for the builders tests, the local stack and the benchmarks reach through the
#: package: the module (above) that defines each. Handlers import from their own module.
_EXPORTS = {
    **dict.fromkeys(
        (
            "ingestor",
            "tenant_throttle",
            "webhook_receiver",
            "status_callbacks",
            "config_repository",
            "webhook_config",
        ),
        "ingest",
    ),
    **dict.fromkeys(
        (
            "pipeline_worker",
            "worker_batch",
            "retry_scheduler",
            "build_pipeline_worker",
            "connection_gate",
            "releaser",
            "delivery_connectors",
            "delivery_config",
            "bulk_runner",
        ),
        "worker",
    ),
    **dict.fromkeys(
        (
            "failed_token_guard",
            "admin_token_throttle",
            "bootstrap_token_sha256",
            "admin_authenticator",
            "admin_idempotency",
            "operations",
            "bulk_jobs",
            "erasure",
            "health",
            "tenant_admin",
            "integration_admin",
            "integration_cards",
            "connection_admin",
            "certificate_service",
            "connection_control",
            "callback_token_admin",
            "api_key_admin",
            "token_admin",
            "subscription_admin",
            "audit_log",
        ),
        "admin",
    ),
    **dict.fromkeys(("outbox_publisher", "outbox_sinks", "subscription_sink"), "outbox"),
    "webhook_sender": "webhooks",
    "alert_notifier": "alerts",
    "cert_expiry_alerter": "cert_expiry",
}


def __getattr__(name: str) -> Any:
    """`wiring.<builder>` and `wiring.<module>`, loaded at first use (PEP 562); `wiring.settings`
    is the process-wide `hub.config.settings`."""
    if name in MODULES:
        return import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    if name == "settings":
        from hub.config import settings

        return settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def required_variables(function: str) -> frozenset[str]:
    """The environment variables the settings of `function` (one of FUNCTIONS) cannot do
    without: its model's fields that have no default (e.g. HUB_TABLE_NAME)."""
    from hub.config import variable

    model = import_module(f"{__name__}.{function}").SETTINGS
    return frozenset(variable(name) for name, field in model.model_fields.items() if field.is_required())


# --- issue 29: SnapStart ---------------------------------------------------------------------------


def before_snapshot() -> None:
    """Run by the Lambda runtime before it snapshots an initialized environment (SnapStart on):
    loads boto3 and botocore, so an environment resumed from the snapshot does not import them
    again at its first invocation. Modules only: no session, client, credential or connection."""
    import hub.adapters.aws  # noqa: F401


def after_restore() -> None:
    """Run by the Lambda runtime after it resumes an environment from a SnapStart snapshot.
    Every environment resumed from one snapshot starts with the same memory, so what must differ
    per environment, or is stale by now, is dropped; the first invocation builds what it uses, as
    on a cold start:

    - `random`'s generator is re-seeded from the OS (retry and lock-wait jitter would otherwise be
      the same sequence in every environment: retries in step). Ids and tokens come from
      `os.urandom` and `secrets`, which the restored kernel already makes unique;
    - every use case built so far (`reset`), with the caches they hold - configuration, secrets,
      connection states, rate-limit buckets - whose ages count on a clock the snapshot froze,
      and the settings;
    - boto3's session, its clients with their connection pools (cut at the snapshot) and the
      credentials it resolved (possibly expired by the restore)."""
    from hub.adapters.aws import reset_clients

    random.seed()
    reset()
    reset_clients()


def register_snapstart_hooks(runtime: Any = None) -> bool:
    """Registers `before_snapshot` and `after_restore` with the Lambda runtime's SnapStart hooks
    (`snapshot_restore_py`, present in Lambda's Python runtimes only; `runtime` stands in for it
    in tests). Called when this package loads, which every handler's import of its function's
    module does; the hooks run only on a function with SnapStart on. Returns whether they were
    registered."""
    hooks = runtime if runtime is not None else _snapstart_runtime()
    if hooks is None:
        return False
    hooks.register_before_snapshot(before_snapshot)
    hooks.register_after_restore(after_restore)
    return True


def _snapstart_runtime() -> Any:
    try:
        import snapshot_restore_py
    except ImportError:  # not in Lambda: no snapshots
        return None
    return snapshot_restore_py


__all__ = [
    "FUNCTIONS",
    "MODULES",
    "after_restore",
    "before_snapshot",
    "register_snapstart_hooks",
    "required_variables",
    "reset",
]

register_snapstart_hooks()
