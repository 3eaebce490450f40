"""SNS event sources: a topic's messages invoke the subscribed function asynchronously.

moto cannot invoke our functions itself, but it does deliver a topic's messages to HTTP
subscriptions (a plain POST, no confirmation handshake). So each ``Type: SNS`` event becomes an
HTTP subscription to this gateway, which turns the notification into the event Lambda gets from
SNS and hands it to the function without making the publisher wait, as SNS does. The invocation
is asynchronous, as on AWS: Lambda's retries and EventInvokeConfig destinations apply
(devstack/async_invoke.py). Filter policies are moto's own (set on the subscription).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from devstack.http_server import AppHandler, BackgroundHttpServer

logger = logging.getLogger(__name__)

InvokeAsync = Callable[[str, dict[str, Any]], None]  # (logical id, event)


@dataclass(frozen=True)
class SnsSourceConfig:
    """The resolved ``Type: SNS`` event properties."""

    function: str
    topic_arn: str
    filter_policy: Mapping[str, Any] | None = None
    filter_policy_scope: str | None = None


def lambda_event(notification: Mapping[str, Any], subscription_arn: str) -> dict[str, Any]:
    """An SNS HTTP notification body as the event Lambda receives from SNS (one record; Lambda
    spells two of the URL fields differently from the HTTP body)."""
    attributes = {
        name: {"Type": attribute.get("Type", "String"), "Value": attribute.get("Value")}
        for name, attribute in (notification.get("MessageAttributes") or {}).items()
    }
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": {
                    "Type": notification.get("Type", "Notification"),
                    "MessageId": notification["MessageId"],
                    "TopicArn": notification["TopicArn"],
                    "Subject": notification.get("Subject"),
                    "Message": notification["Message"],
                    "Timestamp": notification.get("Timestamp"),
                    "SignatureVersion": notification.get("SignatureVersion"),
                    "Signature": notification.get("Signature"),
                    "SigningCertUrl": notification.get("SigningCertURL"),
                    "UnsubscribeUrl": notification.get("UnsubscribeURL"),
                    "MessageAttributes": attributes,
                },
            }
        ]
    }


class _SnsHandler(AppHandler["SnsGateway"]):
    def serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        status = 200 if self.app.deliver(self.path.split("?", 1)[0], body) else 404
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()


class SnsGateway(BackgroundHttpServer):
    """One HTTP endpoint per SNS event source (a free port on ``host``)."""

    def __init__(self, host: str, invoke_async: InvokeAsync, max_workers: int = 4) -> None:
        super().__init__("sns", host, 0, _SnsHandler)
        self._invoke_async = invoke_async
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sns-invoke")
        self._routes: dict[str, tuple[str, str]] = {}  # path -> (function, subscription arn)

    def subscribe(self, sns: Any, config: SnsSourceConfig) -> str:
        """Subscribes this gateway to the topic for `config.function`; the subscription ARN."""
        path = f"/sns/{config.function}/{len(self._routes)}"
        attributes = {}
        if config.filter_policy:
            attributes["FilterPolicy"] = json.dumps(config.filter_policy)
        if config.filter_policy_scope:
            attributes["FilterPolicyScope"] = config.filter_policy_scope
        arn = str(
            sns.subscribe(
                TopicArn=config.topic_arn,
                Protocol="http",
                Endpoint=f"{self.base_url}{path}",
                Attributes=attributes,
                ReturnSubscriptionArn=True,
            )["SubscriptionArn"]
        )
        self._routes[path] = (config.function, arn)
        return arn

    def deliver(self, path: str, body: bytes) -> bool:
        """Queues the function's invocation; False for a path no subscription uses."""
        route = self._routes.get(path)
        if route is None:
            return False
        try:
            notification = json.loads(body)
        except ValueError:
            logger.warning("sns: an unreadable notification for %s was dropped", route[0])
            return True
        if notification.get("Type") != "Notification":
            return True  # subscription confirmations and the like: nothing to invoke
        function, subscription_arn = route
        self._executor.submit(self._invoke_async, function, lambda_event(notification, subscription_arn))
        return True

    def stop(self) -> None:
        super().stop()
        self._executor.shutdown(wait=False, cancel_futures=True)
