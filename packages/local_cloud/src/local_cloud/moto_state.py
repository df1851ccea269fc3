"""What CloudWatch sees of the deployment without calling its APIs: moto's in-process records.

CloudWatch gets ``AWS/States`` execution metrics from Step Functions and queue depths from SQS itself, and
keeps its own alarms' states; it does not call ListExecutions, GetQueueAttributes, DescribeAlarms or
SetAlarmState. The evaluator did, every simulated minute:
each call went through botocore's serializer and moto's dispatcher and sorted every execution of the
run (about 8% of a chaos shard's CPU). These readers take the same facts from the objects moto
answers those calls from, and return None when moto in this process does not hold them (the caller
then falls back to the API: a moto server elsewhere).

Why hand-written: moto offers no read-only view of its backends; these read the attributes its own
responses read (``moto/stepfunctions/parser/backend/execution.py`` ``to_execution_list_item``,
``moto/cloudwatch/models.py`` ``FakeAlarm``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: ARN fields: arn:partition:service:region:account:resource.
_REGION, _ACCOUNT = 3, 4


def sfn_executions(state_machine_arn: str) -> Sequence[Any] | None:
    """The state machine's executions in moto (oldest first, the live list), or None if moto here has none.

    Each has ``exec_arn``, ``status`` (``RUNNING``, ``SUCCEEDED``, ...) and ``stop_date`` (None until it stops)."""
    parts = state_machine_arn.split(":")
    if len(parts) < 7:
        return None
    backend = _sfn_backend(parts[_ACCOUNT], parts[_REGION])
    if backend is None:
        return None
    machine = next((m for m in backend.state_machines if m.arn == state_machine_arn), None)
    return None if machine is None else machine.executions


def running_executions(account: str, region: str) -> list[str]:
    """The ARNs of every execution moto here runs (RUNNING), across its state machines; [] when it runs none."""
    backend = _sfn_backend(account, region)
    if backend is None:
        return []
    return [
        e.execution_arn
        for machine in backend.state_machines
        for e in machine.executions
        if getattr(e, "exec_status", None) is not None and execution_status(e) == "RUNNING"
    ]


def executes_here(account: str, region: str) -> bool:
    """Whether moto runs Step Functions executions in this process (its records can be read here)."""
    return _sfn_backend(account, region) is not None


def _sfn_backend(account: str, region: str) -> Any:
    """moto's Step Functions backend here when it executes definitions (the local run's), else None."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import get_backend

    backend = get_backend(account, region)
    return backend if isinstance(backend, StepFunctionsParserBackend) else None


def execution_status(execution: Any) -> str:
    """An execution's status as ListExecutions gives it (``RUNNING`` until moto sets another)."""
    status = getattr(execution, "exec_status", None)
    return "RUNNING" if status is None else str(status.value)


def alarm_states(account: str, region: str, names: Iterable[str]) -> dict[str, tuple[str, str]] | None:
    """``{alarm name: (StateValue, StateReason)}`` from moto's CloudWatch, or None if it lacks one of them."""
    from moto.cloudwatch.models import cloudwatch_backends

    alarms = cloudwatch_backends[account][region].alarms
    states = {}
    for name in names:
        alarm = alarms.get(name)
        if alarm is None:
            return None
        states[name] = (alarm.state_value, alarm.state_reason or "")
    return states


def queue_depth(account: str, region: str, name: str) -> int | None:
    """The queue's ApproximateNumberOfMessages (visible, not delayed: what GetQueueAttributes answers, read
    from the same ``Queue.approximate_number_of_messages``), or None if moto here has no such queue."""
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[account][region].queues.get(name)
    return None if queue is None else int(queue.approximate_number_of_messages)


def set_alarm_state(account: str, region: str, name: str, state: str, reason: str) -> bool:
    """What SetAlarmState does in moto (``CloudWatchBackend.set_alarm_state``); False if moto here lacks the alarm."""
    from moto.cloudwatch.models import cloudwatch_backends

    backend = cloudwatch_backends[account][region]
    if name not in backend.alarms:
        return False
    backend.set_alarm_state(name, reason, None, state)  # type: ignore[arg-type]  # as the API: no StateReasonData
    return True
