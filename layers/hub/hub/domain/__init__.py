"""Pure domain model: no I/O, no AWS, no HTTP."""
