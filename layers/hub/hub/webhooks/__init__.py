"""Inbound webhooks: a partner's own payload, authenticated by the integration's verification
scheme on the raw bytes, adapted into the internal event model, then ingested like any message."""
