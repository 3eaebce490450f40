"""The admin API's routes, one Powertools Router per resource (functions/admin_api/app.py
includes them), and the one middleware that enforces what each route declares (guard)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from hub.api.admin import (
    admin_tokens,
    api_keys,
    audit,
    bulk_jobs,
    connections,
    erasures,
    health,
    integrations,
    messages,
    queue_counts,
    search,
    subscriptions,
    tenants,
)

#: Included in this order (the OpenAPI document lists operations by path, whatever the order).
ROUTERS: tuple[Router, ...] = (
    messages.router,
    search.router,
    queue_counts.router,
    connections.router,
    tenants.router,
    api_keys.router,
    admin_tokens.router,
    audit.router,
    integrations.router,
    subscriptions.router,
    health.router,
    bulk_jobs.router,
    erasures.router,
)
