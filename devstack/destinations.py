"""Lambda destinations, locally: the SQS queue or SNS topic an invocation record goes to.

Used by the asynchronous invocation's ``EventInvokeConfig.DestinationConfig`` and by the
stream event source's ``DestinationConfig.OnFailure``. Lambda and EventBridge destinations are
not emulated (logged).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)


class Destinations:
    """Sends invocation records to destination ARNs through the stack's moto clients."""

    def __init__(self, sqs: Any, sns: Any) -> None:
        self._sqs = sqs
        self._sns = sns
        self._queue_urls: dict[str, str] = {}

    def send(self, arn: str, record: Mapping[str, Any], *, source: str) -> bool:
        """Delivers ``record`` as JSON to the queue or topic ``arn``; False when that kind of
        destination is not emulated. ``source`` (the function) only names it in the log."""
        body = json.dumps(record)
        service = arn.split(":")[2] if arn.count(":") >= 5 else ""
        if service == "sqs":
            url = self._queue_urls.get(arn)
            if url is None:
                url = str(self._sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"])
                self._queue_urls[arn] = url
            self._sqs.send_message(QueueUrl=url, MessageBody=body)
            return True
        if service == "sns":
            self._sns.publish(TopicArn=arn, Message=body)
            return True
        logger.warning("%s: destination %s is not emulated locally; record dropped", source, arn)
        return False
