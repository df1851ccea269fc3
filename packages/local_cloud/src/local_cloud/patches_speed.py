"""The patches that only make the emulator faster, as the upstreamable changes of moto they form, each
measured against a test gate; and the reads of moto's backend that replace API calls (registered in
:data:`local_cloud.patches.PATCHES`)."""

from __future__ import annotations

from local_cloud.patch_types import Patch, SpeedChange

#: The speed changes the emulator makes to moto: each kept while it saves at least 10% of the order pipeline's
#: test gate, end to end (``local_cloud.patch_types.MIN_GATE_SHARE``); switch one off by its name in
#: ``OPS_LOCAL_DISABLE_PATCHES`` to measure it again. Removed on 2026-11-28 because they did not (measured the
#: same way, the gate's emulator tests with them on and off): moto's DynamoDB backend (expression caches, index
#: queries by key, item-level transaction snapshots, projections), moto's core request path (URL dispatch, action
#: names, serializer keys, AttributeValues as held) and SQS's retention check.
#: The Step Functions interpreter's change: its name, as its patches and ``OPS_LOCAL_DISABLE_PATCHES`` give it.
STEP_FUNCTIONS_SPEED = "moto_stepfunctions_speed"

SPEED_CHANGES: tuple[SpeedChange, ...] = (
    SpeedChange(
        STEP_FUNCTIONS_SPEED,
        "moto's Step Functions interpreter parses a definition once per text, builds one boto3 client per task "
        "service and Region, and one JSONPath parser per path (local_cloud.moto_speed).",
        emulator_tests_with=305.3,
        emulator_tests_without=429.7,
        gate_seconds=556.0,
        measured="2026-11-28 17:24-18:09 UTC, one series on a fresh clone of the order pipeline at fa2e750 (load "
        "1.7 to 2.6), its emulator tests (819): every patch on 337.0 and 273.6 s (545 and 432 CPU s), this change "
        "off 429.7 s (709 CPU s), its client and JSONPath caches alone off 348.4 s (583 CPU s); the removed "
        "changes off, each between the two: 303.9, 336.6 and 285.8 s, all three together 366.5 s. The whole gate: "
        "556 s (that commit's fresh clone).",
    ),
)

SPEED_REGISTRY: tuple[Patch, ...] = (
    # -- speed: one change, moto_stepfunctions_speed (above); the figures per patch are the chaos run's ------
    Patch(
        "sfn_client_cache",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils:boto_client_for",
        "speed",
        "moto's interpreter builds a new boto3 client (re-reading service models) for every task "
        "(every module of moto_patches.STEP_FUNCTIONS_CLIENT_MODULES).",
        "local_cloud.moto_speed.cached_step_functions_clients",
        "test_canary_boto_client_for_is_the_lambda_task_client_factory",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 41.1 vs 32.8 / 35.4, +7.0 CPU s (+21%). Earlier: 150 orders, 51.5 vs 46.6 "
        "(-10%).",
        change=STEP_FUNCTIONS_SPEED,
    ),
    Patch(
        "asl_parse_cache",
        "moto.stepfunctions.parser.asl.parse.asl_parser:AmazonStateLanguageParser.parse",
        "speed",
        "moto re-parses the definition (ANTLR) for every execution; the parsed program is stateless.",
        "local_cloud.moto_speed.cached_asl_parse",
        "test_canary_asl_parse_is_a_pure_static_method",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 45.7 vs 35.4 / 32.0, +12.0 CPU s (+36%). Earlier: 150 orders, 56.3 vs 46.6 "
        "(-17%).",
        change=STEP_FUNCTIONS_SPEED,
    ),
    Patch(
        "json_path_cache",
        "moto.stepfunctions.parser.asl.utils.json_path:parse + "
        "moto.stepfunctions.parser.asl.component.common.path.result_path:parse",
        "speed",
        "moto's interpreter builds a new jsonpath_ng parser (PLY yacc tables) for every path of every state; "
        "each path is parsed once (a parsed expression holds no per-evaluation state).",
        "local_cloud.moto_speed.cached_json_path_parse",
        "test_canary_json_path_parse_is_a_module_level_pure_function",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 30.9 vs 32.0 / 29.7, +0.05 CPU s: below that run's noise. Counted instead: 306 "
        "parses per 50 orders without it, 843 us each (timeit), about 5 CPU s of a 2,000-order chaos run.",
        change=STEP_FUNCTIONS_SPEED,
    ),
    Patch(
        "sfn_history_read",
        "moto.stepfunctions.responses:get_backend",
        "speed-read",
        "Not a patch: the report reads execution histories from moto's in-process backend instead of through "
        "GetExecutionHistory (moto's generic serializer plus botocore's parser, about 0.1 s per history), and "
        "reads them once for both the customer-data scan and the state-transition count.",
        "local_cloud.histories.execution_histories",
        "test_canary_backend_history_equals_the_api_history",
        "150 executions: 2.86 CPU s through the API, 0.03 s from the backend, same state-transition count "
        "(6.21); the report had read them about 1.7 times.",
    ),
    Patch(
        "ddb_scan_read",
        "moto.dynamodb.models:dynamodb_backends",
        "speed-read",
        "Not a patch: the report reads the orders, ledger and inventory tables from moto's in-process backend "
        "instead of through Scan (moto's generic serializer plus botocore's parser for every item, for each of the "
        "several scans a report makes), under the lock the DynamoDB writes hold.",
        "local_cloud.tables.scan_all",
        "test_canary_backend_scan_equals_the_api_scan",
        "One 1,000-order chaos shard's report and replay: 10.7 s through Scan, 1.8 s from the backend.",
    ),
    Patch(
        "sqs_delay_read",
        "moto.sqs.models:sqs_backends",
        "speed-read",
        "Not a patch: when only delayed messages are left (throttled records requeued with DelaySeconds), the event "
        "loop moves the simulated clock to the earliest one's due time, read from moto's in-process queue (SQS's API "
        "gives the count of delayed messages, not their times), instead of a second at a time.",
        "local_cloud.event_sources.SqsPoller.next_delayed_at",
        "test_canary_sqs_delayed_until_is_the_send_time_plus_the_delay",
        "tests/e2e/test_dlq.py's interrupted replay (5 orders throttled into the DLQ): 179 s a second at a time, "
        "12.9 s with the jump (the whole test_dlq.py module: 40 s).",
    ),
    Patch(
        "sqs_age_read",
        "moto.sqs.models:sqs_backends",
        "speed-read",
        "Not a patch: ApproximateAgeOfOldestMessage (a stalled consumer's alarm) is the age of the oldest "
        "message, read from moto's in-process queue (SQS's API gives no message's send time without receiving it).",
        "local_cloud.alarms.AlarmEvaluator.oldest_age",
        "test_canary_sqs_sent_timestamp_is_the_send_time",
        "One read per age alarm per evaluation; receiving with SentTimestamp would change the messages' visibility.",
    ),
)
