"""What a forked instance starts from (``DEVSTACK_INSTANCE_START=forkserver``, which the test
suite sets): the third-party libraries every handler imports, imported once in the fork server.

Only libraries a Lambda function gets from its layers or the runtime; never the ``hub`` package
or a handler, which each instance still imports itself with its own environment and paths, so
a handler's init (its settings check, its clients) runs in every cold start as on Lambda. The
constants of the runtime's environment are set first: Powertools reads ``AWS_EXECUTION_ENV`` at
import.
"""

from __future__ import annotations

import os

os.environ["AWS_EXECUTION_ENV"] = "AWS_Lambda_python3.12"
os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"

import aws_lambda_powertools
import aws_lambda_powertools.event_handler
import aws_lambda_powertools.event_handler.openapi.params
import aws_lambda_powertools.utilities.batch
import aws_lambda_powertools.utilities.data_classes  # noqa: F401
import boto3
import boto3.dynamodb.types  # noqa: F401
import botocore.config
import botocore.session  # noqa: F401
import cryptography.hazmat.primitives.serialization  # noqa: F401
import httpx  # noqa: F401
import jmespath  # noqa: F401
import pydantic  # noqa: F401

import devstack.lambda_runtime  # noqa: F401 - the instances' entry point
