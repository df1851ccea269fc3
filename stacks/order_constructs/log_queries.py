"""The stack's saved Logs Insights queries: ``ops trace``'s query over every function's log group, for the console.

A saved query (``AWS::Logs::QueryDefinition``,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-logs-querydefinition.html) appears
in the console's Logs Insights page with its log groups selected: a person replaces the placeholder with a
correlation ID or an order ID, picks a time range and runs one bounded query (the same text ``ops trace``
runs: :mod:`lambda_resilience.log_queries`).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_logs as logs
from constructs import Construct

from lambda_resilience.log_queries import MAX_LOG_GROUPS, SAVED_TRACE_QUERY


class TraceQuery(Construct):
    """``<stack>/trace-by-correlation-or-order-id`` over ``log_groups`` (at most 50, StartQuery's limit)."""

    def __init__(self, scope: Construct, construct_id: str, *, log_groups: Sequence[logs.ILogGroup]) -> None:
        super().__init__(scope, construct_id)
        if len(log_groups) > MAX_LOG_GROUPS:
            raise ValueError(f"a saved query takes at most {MAX_LOG_GROUPS} log groups, got {len(log_groups)}")
        self.definition = logs.CfnQueryDefinition(
            self,
            "Definition",
            name=f"{Stack.of(self).stack_name}/trace-by-correlation-or-order-id",
            query_string=SAVED_TRACE_QUERY,
            log_group_names=[g.log_group_name for g in log_groups],
        )
