"""DynamoDB: the single hub table. `keys` holds every item kind's key shape, `table` the one
client wrapper (and the one translation of AWS errors into `hub.errors`), and one module per
repository. docs/data-model.md draws the same map."""
