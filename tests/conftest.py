"""Process-wide test setup: fake credentials, a fixed region, no real AWS endpoint reachable."""

from __future__ import annotations

import os

# Set before any boto3 client exists. moto intercepts every call; these values just keep
# botocore from looking for real credentials or a real region.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "OrderPipelineTest",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
)
os.environ.pop("AWS_PROFILE", None)
