"""Operator actions on messages and queues (seed 000, scenarios C, D and G; seed 002, 7)."""
