"""Execution histories for the report, read once from moto's in-process Step Functions backend.

Why not the API: the report reads every execution's history (customer-data scan, state
transitions). Through boto3, moto serializes each history with its generic serializer and botocore
parses it back; for a 1,000-order shard that round trip was the largest single cost of the report
(profiled: about 0.1 s per history). The backend holds the same events the API would return
(``GetExecutionHistoryOutput.events``), so the report reads them there, in ``ListExecutions``
order. Registered in local_cloud.patches (``sfn_history_read``) with a canary comparing both reads.
"""

from __future__ import annotations

from typing import Any

from local_cloud.clients import aws, moto_in_process
from local_cloud.template import ACCOUNT, REGION

History = tuple[str, list[dict[str, Any]]]  # (execution ARN, events)


def _from_backend(state_machine_arn: str) -> list[History]:
    from moto.stepfunctions.responses import get_backend

    backend = get_backend(ACCOUNT, REGION)
    # ListExecutions' order (moto's list_executions is paginated; its body sorts the same way).
    executions = sorted(
        backend.describe_state_machine(state_machine_arn).executions, key=lambda e: e.start_date, reverse=True
    )
    return [(e.execution_arn, list(backend.get_execution_history(e.execution_arn)["events"])) for e in executions]


def _from_api(state_machine_arn: str) -> list[History]:
    sfn = aws("stepfunctions")
    histories = sfn.get_paginator("get_execution_history")
    out: list[History] = []
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn):
        for execution in page["executions"]:
            arn = execution["executionArn"]
            out.append((arn, [e for h in histories.paginate(executionArn=arn) for e in h["events"]]))
    return out


def execution_histories(state_machine_arn: str) -> list[History]:
    """Every execution of the state machine with its events (newest execution first, as ListExecutions).

    In-process moto: read from the backend. A moto server elsewhere (``AWS_ENDPOINT_URL``): the API.
    """
    return _from_backend(state_machine_arn) if moto_in_process() else _from_api(state_machine_arn)


def transitions_per_execution(histories: list[History], sample: int = 100) -> float:
    """Average states entered per execution, over the first ``sample`` executions."""
    chosen = histories[:sample]
    if not chosen:
        return 0.0
    total = sum(1 for _, events in chosen for e in events if str(e["type"]).endswith("StateEntered"))
    return total / len(chosen)


#: History events of one attempt of a task state (a retry is another one within the same state entry).
_ATTEMPT_EVENTS = ("LambdaFunctionScheduled", "TaskScheduled", "ActivityScheduled")


def billed_transitions_per_execution(histories: list[History], sample: int = 100) -> float:
    """Average state transitions per execution as Step Functions bills them: every state entered, plus
    every retry of a task ("each retry will be charged as an additional state transition",
    https://aws.amazon.com/step-functions/pricing/), over the first ``sample`` executions."""
    chosen = histories[:sample]
    if not chosen:
        return 0.0
    total = 0
    for _, events in chosen:
        attempted = False
        for event in events:
            kind = str(event["type"])
            if kind.endswith("StateEntered"):
                total, attempted = total + 1, False
            elif kind.endswith(_ATTEMPT_EVENTS):  # the backend's events are enums: match the name's end
                total += int(attempted)  # the first attempt is the entry's transition
                attempted = True
    return total / len(chosen)


def failure_summary(arn: str, events: list[dict[str, Any]], limit: int = 300) -> dict[str, Any]:
    """What an execution did last and why it failed: state names, error names, causes cut to ``limit``.

    For the report's ``stuck_orders`` (an order left non-terminal), so a failed invariant says why.
    """
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
    failures = []
    for event in events:
        for key, details in event.items():
            if key.endswith("FailedEventDetails") or key.endswith("TimedOutEventDetails"):
                failures.append(
                    {
                        "type": event.get("type"),
                        "error": details.get("error"),
                        "cause": str(details.get("cause", ""))[:limit],
                    }
                )
    return {"execution": arn.rsplit(":", 1)[-1], "states": entered, "failures": failures[-5:]}
