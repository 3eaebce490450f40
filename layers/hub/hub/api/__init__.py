"""HTTP glue shared by the API handlers: one error shape, request parsing, auth headers."""
