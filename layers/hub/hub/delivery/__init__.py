"""Delivery to the customer's system: one port (`Connector`), one adapter per protocol."""
