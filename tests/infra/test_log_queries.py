"""The stack saves ``ops trace``'s Logs Insights query as an ``AWS::Logs::QueryDefinition`` over every
function's log group: the console's bounded read of one order (issue 41, Build 1)."""

from __future__ import annotations

from lambda_resilience.log_queries import PLACEHOLDER, SAVED_TRACE_QUERY
from tests.infra.conftest import SynthResult


def _log_group_ids(result: SynthResult) -> set[str]:
    return {result.logical_id(f.log_group.node.default_child) for f in result.stack.functions}


def test_log_queries_trace_definition_covers_every_function_log_group(dev: SynthResult, prod: SynthResult) -> None:
    for result in (dev, prod):
        (definition,) = result.of_type("AWS::Logs::QueryDefinition").values()
        props = definition["Properties"]
        assert props["QueryString"] == SAVED_TRACE_QUERY and PLACEHOLDER in props["QueryString"]
        assert props["Name"].startswith(f"{result.stack.stack_name}/")
        referenced = {ref["Ref"] for ref in props["LogGroupNames"]}
        assert referenced == _log_group_ids(result)
