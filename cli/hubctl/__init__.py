"""hubctl: the operator's command line for the hub's admin API (docs/hubctl.md)."""

__version__ = "0.1.0"
