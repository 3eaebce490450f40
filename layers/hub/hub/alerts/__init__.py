"""Alerts: dead-lettered messages and CloudWatch alarms turned into one Slack message and one
email per group (an integration or an alarm) and UTC hour. ``model`` is pure; ``notifier`` is the
use case over the ports in ``hub.ports``."""
