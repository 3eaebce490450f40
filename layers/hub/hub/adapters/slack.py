"""Slack incoming-webhook adapter: an alert becomes one plain-text message.

The webhook URL is a secret (whoever has it can post to the channel): it is held as a SecretStr,
never logged, and never part of an error this adapter raises — httpx's own errors and its
request log line both contain the URL, so neither is passed on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from hub.delivery.egress import DestinationNotAllowed
from hub.errors import AlertChannelUnavailable

if TYPE_CHECKING:
    import httpx
    from pydantic import SecretStr

    from hub.alerts.model import Alert
    from hub.delivery.egress import EgressPolicy

#: Slack's short error codes ("no_service", "invalid_payload"); anything else is not echoed.
_SLACK_ERROR = re.compile(r"^[a-z_]{1,64}$")


def slack_text(alert: Alert) -> str:
    """The message text: title, then the alert's lines, with Slack's control characters escaped
    (so no id or alarm reason can become a link or an @channel)."""
    text = f"{alert.title}\n{alert.text}"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackWebhook:
    name = "slack"

    def __init__(
        self,
        url: SecretStr | Callable[[], SecretStr],
        egress: EgressPolicy,
        http: httpx.Client | None = None,
    ) -> None:
        #: The URL, or where to read it at each alert (a cached secret: a rotation takes effect).
        self._url = url
        self._egress = egress
        #: Made at the first alert, and httpx imported then: an HTTPS client loads the CA
        #: bundle, and most runs of the daily expiry check (and grouped dead letters) send nothing.
        self._http = http
        # httpx logs every request with its full URL at INFO; for a webhook that is the secret.
        logging.getLogger("httpx").setLevel(logging.WARNING)

    def send(self, alert: Alert) -> None:
        import httpx  # noqa: PLC0415 - at the first alert only (see __init__)

        payload = {"text": slack_text(alert), "mrkdwn": False, "unfurl_links": False}
        if self._http is None:
            timeout = httpx.Timeout(10.0, connect=5.0)
            self._http = self._egress.http_client(timeout=timeout)
        try:
            url = self._url() if callable(self._url) else self._url
            response = self._http.post(url.get_secret_value(), json=payload)
        except (httpx.HTTPError, DestinationNotAllowed) as exc:
            raise AlertChannelUnavailable(
                "Slack did not take the alert", details={"channel": self.name, "error": type(exc).__name__}
            ) from None  # the cause names the URL
        if not response.is_success:
            details: dict[str, object] = {"channel": self.name, "status": response.status_code}
            if _SLACK_ERROR.match(response.text.strip()):
                details["slack_error"] = response.text.strip()
            raise AlertChannelUnavailable("Slack did not take the alert", details=details)
