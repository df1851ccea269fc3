"""harness/reporting/costs.py: Lambda priced at the arm64 rate, x86_64 alongside for comparison."""

from __future__ import annotations

import pytest

from harness.reporting.costs import (
    LAMBDA_ARCHITECTURE,
    LAMBDA_PER_GB_SECOND,
    LAMBDA_PER_MILLION_REQUESTS,
    PerOrder,
    dollars_per_million_orders,
    lambda_dollars_per_million_orders,
)

UNITS = PerOrder(lambda_invocations=4.0, dynamodb_wru=10.0, dynamodb_rru=5.0, sqs_requests=1.3, state_transitions=5.0)


def test_costs_lambda_priced_at_arm64_rate() -> None:
    assert LAMBDA_ARCHITECTURE == "arm64"
    # us-east-1 list prices, first tier (https://aws.amazon.com/lambda/pricing/)
    assert LAMBDA_PER_GB_SECOND == {"arm64": 0.0000133334, "x86_64": 0.0000166667}
    assert LAMBDA_PER_MILLION_REQUESTS == 0.20
    # 4 invocations x (0.20 + 0.1 s x 0.5 GB x 13.3334 per million GB-s)
    assert lambda_dollars_per_million_orders(UNITS) == pytest.approx(4 * (0.20 + 0.05 * 13.3334))
    assert lambda_dollars_per_million_orders(UNITS, "x86_64") == pytest.approx(4 * (0.20 + 0.05 * 16.6667))


def test_costs_report_shows_arm64_saving_over_x86() -> None:
    usd = dollars_per_million_orders(UNITS)
    x86 = usd["x86_64_for_comparison"]
    assert usd["lambda_architecture"] == "arm64"
    saving = round(4 * 0.05 * (16.6667 - 13.3334), 2)  # duration only: requests cost the same
    assert x86["arm64_saves"] == saving == 0.67
    assert x86["standard_workflow"] == pytest.approx(usd["standard_workflow"] + saving, abs=0.011)
    assert x86["express_workflow"] == pytest.approx(usd["express_workflow"] + saving, abs=0.011)
    assert usd["of_which_lambda"]["x86_64"] > usd["of_which_lambda"]["arm64"]
    # the Step Functions part does not depend on the architecture
    assert usd["of_which_step_functions"]["standard"] == 125.0


def test_costs_by_service_adds_up_to_each_workflow_total() -> None:
    usd = dollars_per_million_orders(UNITS)
    by = usd["by_service"]
    common = by["lambda"] + by["dynamodb"] + by["sqs"]
    assert common + by["step_functions_standard"] == pytest.approx(usd["standard_workflow"], abs=0.02)
    assert common + by["step_functions_express"] == pytest.approx(usd["express_workflow"], abs=0.02)
    assert by["step_functions_standard"] == pytest.approx(5.0 * 0.025 * 1000)  # $0.025 per 1,000 transitions


def test_call_counter_keeps_the_provider_stand_ins_calls_apart() -> None:
    import threading

    from local_cloud.calls import CallCounter, outside_the_pipeline

    counter = CallCounter()
    counter.add("dynamodb", "PutItem")
    with outside_the_pipeline():
        counter.add("dynamodb", "PutItem")
        other = threading.Thread(target=counter.add, args=("sqs", "SendMessage"))  # another thread: pipeline's
        other.start()
        other.join()
    assert counter.calls == {("dynamodb", "PutItem"): 1, ("sqs", "SendMessage"): 1}
    assert counter.outside == {("dynamodb", "PutItem"): 1}
