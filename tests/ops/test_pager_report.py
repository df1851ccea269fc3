"""harness.reporting.pager: each page explained or not, each harmful fault paged or not, and --check's verdict."""

from __future__ import annotations

from typing import Any

from harness.reporting.invariants import CHECKS
from harness.reporting.pager import pager_section, pager_table, precision_recall
from local_cloud.alarm_actions import Notice

DLQ = {
    "AlarmName": "dlq",
    "MetricName": "ApproximateNumberOfMessagesVisible",
    "Dimensions": [{"Name": "QueueName", "Value": "q-dlq"}],
}
FUNCTION = {
    "AlarmName": "charge",
    "Metrics": [{"Id": "errors", "MetricStat": {"Metric": {"MetricName": "Errors"}}}, {"Id": "e", "Expression": "x"}],
}
ALARMS: dict[str, Any] = {"dlq": DLQ, "charge": FUNCTION}


class _Actions:
    def __init__(self, *notices: Notice) -> None:
        self.history = list(notices)


def _page(alarm: str, at: float = 60.0) -> Notice:
    return Notice(alarm, "ALARM", at, "1 of 1 datapoints [1] breach", "arn:aws:sns:us-east-1:1:t")


def _section(report: dict[str, Any], *notices: Notice) -> dict[str, Any]:
    return pager_section(_Actions(*notices), ALARMS, {"q-dlq"}, report, 0.0)  # type: ignore[arg-type]


def test_pager_function_page_without_fault_is_unexplained() -> None:
    section = _section({"faults_injected": {}}, _page("charge"))
    assert precision_recall(section) == (0.0, 100.0)
    assert "UNEXPLAINED" in "\n".join(pager_table(section))
    assert CHECKS["pager_precision_and_recall_100_percent"]({"pager": section})


def test_pager_malformed_message_unpaged_fails_recall() -> None:
    section = _section({"faults_injected": {"malformed": 3, "duplicate_late": 5}, "malformed_in_dlq_as_permanent": 3})
    assert [f["fault"] for f in section["faults"]] == ["malformed"]  # duplicates are absorbed, not harmful
    assert precision_recall(section) == (100.0, 0.0)
    assert "NOBODY PAGED" in "\n".join(pager_table(section))


def test_pager_malformed_refused_at_the_edge_is_no_incident() -> None:
    """Through the order API a malformed order gets 400 at once: its caller knows, nothing is dead-lettered."""
    report = {"faults_injected": {"malformed": 3}, "malformed_refused_at_send": 3, "malformed_in_dlq_as_permanent": 0}
    section = _section(report)
    assert section["faults"] == []
    assert precision_recall(section) == (100.0, 100.0)


def test_pager_crash_and_dlq_pages_explained_and_announced() -> None:
    report = {"faults_injected": {"malformed": 1, "crash": 2}, "malformed_in_dlq_as_permanent": 1}
    section = _section(report, _page("dlq", 30.0), _page("charge", 90.0))
    assert precision_recall(section) == (100.0, 100.0)
    by_fault = {f["fault"]: f for f in section["faults"]}
    assert by_fault["malformed"]["first_page_after_s"] == 30.0 and by_fault["crash"]["paged_by"] == ["charge"]
    assert CHECKS["pager_precision_and_recall_100_percent"]({"pager": section}) is None


def test_pager_time_to_page_is_measured_from_the_fault_not_the_run_start() -> None:
    """A crash 100 s into the run, paged 30 s later (a page at 90 s was before it happened)."""
    report = {"faults_injected": {"crash": 2}, "faults_first_at": {"crash": 100.0}}
    section = _section(report, _page("charge", 90.0), _page("charge", 130.0))
    (crash,) = section["faults"]
    assert crash["first_injected_after_s"] == 100.0
    assert crash["first_page_after_s"] == 30.0
    assert "30.0 s after the first fault" in "\n".join(pager_table(section))


def test_fault_counter_first_at_is_when_the_kind_first_happened() -> None:
    from local_cloud.faults import FaultCounter

    times = iter([10.0, 20.0, 30.0])
    counter = FaultCounter()
    counter.add("malformed")  # planned before the run: no clock yet
    counter.clock = lambda: next(times)
    counter.happened_at(5.0)  # the planned extras are sent
    counter.add("crash")
    counter.add("crash")
    assert counter.first_at == {"malformed": 5.0, "crash": 10.0}
    assert counter.injected == {"malformed": 1, "crash": 2}


def test_pager_dlq_arrivals_alarm_is_a_dlq_page() -> None:
    """The arrivals alarm (metric math ``DIFF(depth)`` over the DLQ's depth) announces dead-lettered messages."""
    depth = {
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [{"Name": "QueueName", "Value": "q-dlq"}],
    }
    arrivals: dict[str, Any] = {"AlarmName": "arrivals", "Metrics": [{"Id": "depth", "MetricStat": {"Metric": depth}}]}
    section = pager_section(
        _Actions(_page("arrivals")),  # type: ignore[arg-type]
        {**ALARMS, "arrivals": arrivals},
        {"q-dlq"},
        {"faults_injected": {"malformed": 1}, "malformed_in_dlq_as_permanent": 1},
        0.0,
    )
    assert [p["kind"] for p in section["pages"]] == ["dlq"]
    assert precision_recall(section) == (100.0, 100.0)


def test_pager_new_fault_families_are_paged_and_explained() -> None:
    """A provider outage, a throttled state machine and API 5XX: each injected family needs its page (0023)."""
    alarms = {
        "outage": {
            "AlarmName": "outage",
            "Metrics": [
                {"Id": "failed0", "MetricStat": {"Metric": {"MetricName": "DependencyFirstCallFailures"}}},
                {"Id": "calls0", "MetricStat": {"Metric": {"MetricName": "Invocations"}}},
            ],
        },
        "sfn": {"AlarmName": "sfn", "MetricName": "ExecutionThrottled"},
        "api": {"AlarmName": "api", "MetricName": "5XXError"},
        "heartbeat": {"AlarmName": "heartbeat", "MetricName": "SweeperRuns"},
    }
    report = {
        "faults_injected": {"provider_outage": 40, "throttle_sfn": 3, "api_5xx": 2, "sweeper_stopped": 1},
        "throttles": {"stepfunctions:StateTransition": 3},
        "api_server_errors": 2,
    }
    pages = [_page(name, 60.0 + i) for i, name in enumerate(alarms)]
    section = pager_section(_Actions(*pages), alarms, set(), report, 0.0)  # type: ignore[arg-type]
    assert [p["kind"] for p in section["pages"]] == ["provider_outage", "throttled", "api", "sweeper_stopped"]
    assert precision_recall(section) == (100.0, 100.0)
    unpaged = pager_section(_Actions(), alarms, set(), report, 0.0)  # type: ignore[arg-type]
    assert precision_recall(unpaged) == (100.0, 0.0)


def _check_exit(monkeypatch: Any, capsys: Any, section: dict[str, Any], *extra: str) -> tuple[int, str]:
    """``ops local run --check`` on a run whose report holds ``section`` as its pager: (exit status, stderr)."""
    import harness.run.run
    from harness.cli import main

    def run_local(_options: Any) -> dict[str, Any]:
        report: dict[str, Any] = {"pager": section}
        report["invariants"] = {"pager_precision_and_recall_100_percent": CHECKS[PAGER_CHECK](report)}
        return report

    monkeypatch.setattr(harness.run.run, "run_local", run_local)
    code = main(["local", "run", "--orders", "1", "--check", "--json", *extra])
    return code, capsys.readouterr().err


PAGER_CHECK = "pager_precision_and_recall_100_percent"


def test_pager_check_fails_on_an_unexplained_page(monkeypatch: Any, capsys: Any) -> None:
    """Precision below 100%: a function page and no fault that explains it -> ``--check`` exits 1."""
    code, err = _check_exit(monkeypatch, capsys, _section({"faults_injected": {}}, _page("charge")))
    assert code == 1
    assert f"FAIL {PAGER_CHECK}: pager precision 0.0%, recall 100.0%" in err


def test_pager_check_fails_on_a_harmful_fault_nobody_was_paged_for(monkeypatch: Any, capsys: Any) -> None:
    """Recall below 100%: a crash injected and no page -> ``--check`` exits 1."""
    code, err = _check_exit(monkeypatch, capsys, _section({"faults_injected": {"crash": 2}}))
    assert code == 1
    assert f"FAIL {PAGER_CHECK}: pager precision 100.0%, recall 0.0%" in err and "nobody paged for ['crash']" in err


def test_pager_check_passes_when_every_page_is_explained_and_every_fault_paged(monkeypatch: Any, capsys: Any) -> None:
    report = {"faults_injected": {"malformed": 1, "crash": 2}, "malformed_in_dlq_as_permanent": 1}
    code, err = _check_exit(monkeypatch, capsys, _section(report, _page("dlq", 30.0), _page("charge", 90.0)))
    assert code == 0
    assert f"ok   {PAGER_CHECK}" in err


def test_pager_check_expect_no_pages_fails_on_any_page_even_explained(monkeypatch: Any, capsys: Any) -> None:
    """``make business``: a run without incidents pages nobody; an explained page still fails it."""
    report = {"faults_injected": {"malformed": 1}, "malformed_in_dlq_as_permanent": 1}
    section = _section(report, _page("dlq", 30.0))
    assert _check_exit(monkeypatch, capsys, section)[0] == 0
    code, err = _check_exit(monkeypatch, capsys, section, "--expect-no-pages")
    assert code == 1
    assert "FAIL no_page_in_a_run_without_incidents: 1 pages: dlq" in err
    assert _check_exit(monkeypatch, capsys, _section({"faults_injected": {}}), "--expect-no-pages")[0] == 0


OUTAGE = {
    "AlarmName": "outage",
    "Metrics": [
        {"Id": "failed0", "MetricStat": {"Metric": {"MetricName": "DependencyFirstCallFailures"}}},
        {"Id": "invoked0", "MetricStat": {"Metric": {"MetricName": "Invocations"}}},
        {"Id": "e", "Expression": "failed0 - 0.5 * invoked0"},
    ],
}


def test_pager_each_incident_needs_its_own_page_within_a_minute() -> None:
    """Two provider outages: the first paged 40 s after it began; the second's only page came 75 s after:
    too late (the seeds' one minute), so recall counts it as missed, even though the family paged."""
    ALARMS["outage"] = OUTAGE
    try:
        incidents = [
            {"family": "provider_outage", "started_at": 100.0, "harmful_at": 100.0, "ended_at": 190.0},
            {"family": "provider_outage", "started_at": 600.0, "harmful_at": 600.0, "ended_at": 690.0},
        ]
        report = {"faults_injected": {"provider_outage": 40}, "incidents": incidents}
        section = _section(report, _page("outage", 140.0), _page("outage", 675.0))
    finally:
        del ALARMS["outage"]
    rows = [f for f in section["faults"] if f["fault"] == "provider_outage"]
    assert [(f["paged_by"], f["first_page_after_s"]) for f in rows] == [(["outage"], 40.0), ([], None)]
    assert precision_recall(section) == (100.0, 50.0)
    assert "incident provider_outage at 600.0 s x1: NOBODY PAGED within 60 s" in pager_table(section)


def test_pager_incident_paged_at_the_instant_it_became_harmful_counts() -> None:
    """A stopped sweeper's heartbeat alarm evaluated at the very instant its window lapsed: the page is
    announced (its time is rounded to the millisecond in the report, which must not put it before the incident;
    seen in an incidents run under load: harmful at ...423.2312133, paged at ...423.2312, reported 423.231)."""
    ALARMS["heartbeat"] = {"AlarmName": "heartbeat", "MetricName": "SweeperRuns", "Namespace": "OrderPipeline"}
    harmful = 1795643423.2312133
    try:
        incidents = [{"family": "sweeper_stopped", "started_at": harmful - 360.0, "harmful_at": harmful}]
        report = {"faults_injected": {"sweeper_stopped": 1}, "incidents": incidents}
        section = _section(report, _page("heartbeat", harmful))
    finally:
        del ALARMS["heartbeat"]
    (row,) = [f for f in section["faults"] if f["fault"] == "sweeper_stopped"]
    assert (row["paged_by"], row["first_page_after_s"]) == (["heartbeat"], 0.0)


def test_pager_outage_alarm_page_not_explained_by_injected_throttling_inside_provider_steps() -> None:
    """The outage alarms count the providers' own failures (DependencyFailures, issue 41): a chaos run's DynamoDB
    throttling inside a provider step is no outage, so an outage page it alone would explain is a false page; the
    providers' lost answers (their transport failing after they acted) are the providers' failures."""
    ALARMS["outage"] = OUTAGE
    try:
        throttled = _section({"faults_injected": {"throttle_dynamodb": 12}}, _page("outage", 90.0))
        lost = _section({"faults_injected": {"ambiguous_read_timeout": 3}}, _page("outage", 90.0))
        unexplained = _section({"faults_injected": {"duplicate_late": 3}}, _page("outage", 90.0))
    finally:
        del ALARMS["outage"]
    assert [p["kind"] for p in lost["pages"]] == ["provider_outage"]
    assert precision_recall(lost)[0] == 100.0
    assert precision_recall(throttled)[0] == 0.0
    assert precision_recall(unexplained)[0] == 0.0


def test_pager_outage_failure_metrics_are_the_middlewares() -> None:
    from harness.reporting.pager import OUTAGE_FAILURE_METRICS
    from lambda_resilience.step import (
        DEPENDENCY_FAILURES_METRIC,
        FIRST_CALL_FAILURES_METRIC,
        TRANSIENT_FAILURES_METRIC,
    )

    assert {FIRST_CALL_FAILURES_METRIC, DEPENDENCY_FAILURES_METRIC, TRANSIENT_FAILURES_METRIC} == OUTAGE_FAILURE_METRICS
