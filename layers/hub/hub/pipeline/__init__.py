"""The pipeline worker's use cases: chained steps with their delivery guarantees."""
