"""SES adapter: an alert becomes one plain-text email from a verified sender identity."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.alerts.model import Alert
from hub.errors import AlertChannelUnavailable


class SesEmailChannel:
    name = "email"

    def __init__(self, sender: str, recipient: str) -> None:
        self._sender = sender
        self._recipient = recipient

    def send(self, alert: Alert) -> None:
        try:
            client("ses").send_email(
                Source=self._sender,
                Destination={"ToAddresses": [self._recipient]},
                Message={
                    "Subject": {"Data": alert.title, "Charset": "UTF-8"},
                    "Body": {"Text": {"Data": alert.text, "Charset": "UTF-8"}},
                },
            )
        except ClientError as exc:
            # e.g. MessageRejected (sender not verified), Throttling: retried with the event.
            raise AlertChannelUnavailable(
                "email did not take the alert", details={"channel": self.name, "error": error_code(exc)}
            ) from exc
        except BotoCoreError as exc:
            raise AlertChannelUnavailable(
                "email did not take the alert", details={"channel": self.name, "error": type(exc).__name__}
            ) from exc
