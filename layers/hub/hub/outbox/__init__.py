"""The outbox (issue 12): every state change leaves exactly once as an event."""
