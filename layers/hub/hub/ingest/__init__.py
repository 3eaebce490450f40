"""Use cases behind the partner API."""
