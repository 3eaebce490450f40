"""Delivery-status callbacks from destinations (issue 12, seed 004 pattern 5)."""
