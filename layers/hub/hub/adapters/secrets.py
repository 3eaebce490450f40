"""Secrets Manager values read at run time (the bootstrap admin token's hash, the Slack webhook
URL), through Powertools' parameters utility: read at first use, then kept in memory for
`max_age` seconds, so a rotated secret takes effect within that time without a deploy.

The values are secrets: never logged, never part of an error raised here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from hub.adapters.aws import client, error_code
from hub.errors import ConfigurationError, ServiceUnavailable

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

#: AWS answers that no retry fixes: the stack is misconfigured (a wrong ARN, a missing grant).
_MISCONFIGURED = frozenset({"ResourceNotFoundException", "AccessDeniedException", "InvalidRequestException"})


class SecretValues:
    def __init__(self, max_age_seconds: int) -> None:
        self._max_age = max_age_seconds
        self._provider: SecretsProvider | None = None
        # botocore logs every response body at DEBUG; GetSecretValue's holds the secret.
        logging.getLogger("botocore.parsers").setLevel(logging.INFO)

    def get(self, secret_arn: str) -> str:
        """The secret's string. ConfigurationError when the stack cannot read it (missing,
        denied), ServiceUnavailable when Secrets Manager fails (retryable)."""
        from aws_lambda_powertools.utilities.parameters import SecretsProvider  # noqa: PLC0415
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError  # noqa: PLC0415

        if self._provider is None:
            self._provider = SecretsProvider(boto3_client=client("secretsmanager"))
        try:
            value: Any = self._provider.get(secret_arn, max_age=self._max_age)
        except GetParameterError as failed:
            cause = failed.__context__
            if isinstance(cause, ClientError) and error_code(cause) in _MISCONFIGURED:
                raise ConfigurationError(f"secret cannot be read ({error_code(cause)})") from None
            raise ServiceUnavailable(
                "secrets are temporarily unavailable", details={"operation": "GetSecretValue"}
            ) from None
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return str(value)
