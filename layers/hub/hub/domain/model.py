"""The base of every pydantic model of the hub: its validator is built at its first use.

pydantic builds a model's validator and serializer when the class is created, unless
`defer_build` is set. A function imports many more models than an invocation uses (the admin
API declares every route's body and answer; the ingest API the status-callback and webhook models
beside receive-message's; every function the whole configuration tree), and building them all
was a large share of a cold start. Deferred, a model is built the first time it validates,
serializes or gives its JSON schema (or when a model holding it is built), once per process; what
an invocation never touches is never built. Validation itself is unchanged.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class HubModel(BaseModel):
    """`BaseModel` built at first use. Subclasses' own `model_config` merges with this one."""

    model_config = ConfigDict(defer_build=True)
