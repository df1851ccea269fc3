"""Every patch the emulator applies to moto, Powertools, botocore or the standard library.

One entry per patched attribute: what it patches, why (``kind``), where it is applied and the
canary test that fails when an upgrade moves it (in the package's tests:
``tests/test_patch_canaries.py``, which also fails when the emulator patches an attribute
not listed here). A patch is kept only where it buys correctness, an emulation AWS does itself
(no Docker, IAM, limits, simulated time), fault injection, or a measured speed-up. A caller that
patches third-party code of its own (fault injection of its scenarios) keeps its own registry of
:class:`Patch` entries and renders the table of both with :func:`markdown_rows`.

Speed patches can be switched off to measure them again, e.g.
``OPS_LOCAL_DISABLE_PATCHES=asl_parse_cache,url_dispatch_cache`` in the environment.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["correctness", "emulation", "simulated-time", "fault-injection", "observation", "speed", "speed-read"]


@dataclass(frozen=True)
class Patch:
    """One patched attribute of a third-party module (``target``: ``module:Owner.attribute``)."""

    name: str
    target: str
    kind: Kind
    why: str
    applied_by: str
    canary: str
    measured: str = ""  # speed patches: what it saves, as measured


PATCHES: tuple[Patch, ...] = (
    # -- correctness: moto differs from AWS where a guarantee depends on it ---------------------------
    Patch(
        "atomic_dynamodb",
        "moto.dynamodb.models:DynamoDBBackend.{put_item,update_item,delete_item,transact_write_items,get_item,"
        "transact_get_items}",
        "correctness",
        "AWS applies a conditional write atomically per item; moto checks the condition and stores the item in "
        "two Python steps, so two threads could both pass it. Serialised with one lock.",
        "local_cloud.moto_patches.atomic_dynamodb",
        "test_canary_atomic_dynamodb_serialises_moto_item_writes",
    ),
    Patch(
        "states_all_excludes_terminal_errors",
        "moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl:ErrorEqualsDecl._eval_body",
        "correctness",
        "On AWS States.ALL catches neither States.Runtime nor States.DataLimitExceeded (they fail the execution: "
        "https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html); moto's wildcard "
        "matched them, so a Catch on States.ALL handled locally what fails on AWS.",
        "local_cloud.environment.moto_behaviour",
        "test_canary_states_all_does_not_catch_runtime_errors",
    ),
    Patch(
        "dynamodb_task_timeout",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb:"
        "StateTaskServiceDynamoDB._from_error",
        "correctness",
        "moto's DynamoDB task reports its own timeout as DynamoDB.AmazonDynamoDBException; on AWS a task past its "
        "TimeoutSeconds fails with States.Timeout (concepts-error-handling.html), which retriers and catchers name.",
        "local_cloud.environment.moto_behaviour",
        "test_canary_dynamodb_task_timeout_is_states_timeout",
    ),
    # -- emulation: what AWS does that moto does not ------------------------------------------------
    Patch(
        "lambda_in_process",
        "moto.awslambda.models:LambdaFunction._invoke_lambda",
        "emulation",
        "moto runs functions in Docker (not available); invocations from boto3 and from Step Functions' "
        "Lambda tasks run the template's handler in-process instead.",
        "local_cloud.lambda_runtime.route_invocations",
        "test_canary_lambda_invoke_reaches_the_in_process_function",
    ),
    Patch(
        "sfn_trace_header",
        "moto.stepfunctions.responses:StepFunctionResponse.{start_execution,describe_execution}"
        " + moto.stepfunctions.parser.backend.execution:Execution.start",
        "emulation",
        "moto's StartExecution drops traceHeader; AWS keeps it (DescribeExecution answers it, the execution joins "
        "that X-Ray trace). Passed to the parser backend, which stores it; over 256 characters or not ASCII: "
        "ValidationException, as AWS. Registered for the tasks as the execution starts (before its first task).",
        "local_cloud.environment.moto_behaviour",
        "test_canary_start_execution_keeps_the_trace_header",
    ),
    Patch(
        "sfn_task_trace_header",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils:"
        "execute_lambda_function_integration",
        "emulation",
        "On AWS a Lambda task's invocation carries the execution's X-Ray trace (the layer's invocation span "
        "is parented on it); moto passes none. The execution's traceHeader is the header of the Lambda "
        "invocations its tasks make (local_cloud.otel_layer).",
        "local_cloud.environment.moto_behaviour",
        "test_canary_lambda_task_invocation_gets_the_executions_trace_header",
    ),
    Patch(
        "iam_api_call",
        "botocore.client:BaseClient._make_api_call",
        "emulation",
        "Every call of a function or the state machine is authorized against its role before it reaches moto. "
        "Class level, because Powertools and moto build clients from their own sessions (a before-call "
        "handler would have to be registered on every session, including ones created before the run).",
        "local_cloud.iam_enforce.enforce_iam",
        "test_canary_make_api_call_sees_operation_and_api_params",
    ),
    Patch(
        "iam_state_machine_client",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils:boto_client_for",
        "emulation",
        "Step Functions' tasks (Lambda and the direct integrations of moto_patches.STEP_FUNCTIONS_CLIENT_MODULES) "
        "call as the state machine's role (IAM); wraps the client moto builds.",
        "local_cloud.iam_enforce.enforce_iam",
        "test_canary_boto_client_for_is_the_lambda_task_client_factory",
    ),
    Patch(
        "iam_thread_pool_caller",
        "concurrent.futures:ThreadPoolExecutor.submit",
        "emulation",
        "Work a handler submits to a thread pool keeps its caller (a context variable) for IAM checks.",
        "local_cloud.iam_enforce.enforce_iam",
        "test_canary_thread_pool_submit_signature",
    ),
    Patch(
        "limits_api_call",
        "botocore.client:BaseClient._make_api_call",
        "emulation",
        "AWS quotas (payload sizes, StartExecution and Invoke rates, Lambda concurrency) answered as AWS does.",
        "local_cloud.limits_enforce.enforce_limits",
        "test_canary_make_api_call_sees_operation_and_api_params",
    ),
    Patch(
        "limits_state_transition",
        "moto.stepfunctions.parser.asl.component.state.state:CommonStateField._eval_body",
        "emulation",
        "Every state entered spends a StateTransition token (Standard workflows' bucket).",
        "local_cloud.limits_enforce.enforce_limits",
        "test_canary_sfn_interpreter_enters_states_through_eval_body",
    ),
    Patch(
        "limits_execution_end",
        "moto.stepfunctions.parser.asl.component.program.program:Program._eval_body",
        "emulation",
        "The end of an execution (not of a Map/Parallel branch) frees its place in the spike's accounting.",
        "local_cloud.limits_enforce.enforce_limits",
        "test_canary_sfn_interpreter_enters_states_through_eval_body",
    ),
    # -- simulated time: waits and clocks follow the run's SimClock ------------------------------------
    Patch(
        "sfn_retry_wait",
        "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl:time",
        "simulated-time",
        "Step Functions Retry waits (IntervalSeconds x BackoffRate) take simulated time, not wall time.",
        "local_cloud.environment.moto_behaviour",
        "test_canary_sfn_retrier_sleeps_through_module_time",
    ),
    Patch(
        "botocore_retry_wait",
        "botocore.endpoint:time",
        "simulated-time",
        "botocore's retry backoff after a throttling error waits in simulated time (no public hook: the "
        "endpoint sleeps on the delay its needs-retry handlers return).",
        "local_cloud.environment.moto_behaviour",
        "test_canary_botocore_endpoint_sleeps_through_module_time",
    ),
    Patch(
        "sqs_clock",
        "moto.sqs.models:{unix_time,unix_time_millis}",
        "simulated-time",
        "SQS visibility timeouts, DelaySeconds and sent timestamps follow the simulated clock.",
        "local_cloud.environment.sqs_on_clock",
        "test_canary_sqs_delay_follows_the_patched_clock",
    ),
    Patch(
        "idempotency_clock",
        "aws_lambda_powertools.utilities.idempotency.persistence.{base,dynamodb,datarecord}:dt",
        "simulated-time",
        "Powertools idempotency's in-progress expiry and record TTL read the simulated clock (freezegun "
        "would shift every thread's time, moto's included).",
        "local_cloud.simtime.simulated_now",
        "test_canary_powertools_idempotency_reads_dt_datetime_now",
    ),
    Patch(
        "metrics_clock",
        "aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch:dt",
        "simulated-time",
        "Powertools Metrics stamps each EMF document with dt.datetime.now(): on the simulated clock the "
        "handlers' metrics fall in the same alarm periods as the AWS/Lambda metrics the emulator produces.",
        "local_cloud.simtime.simulated_now",
        "test_canary_powertools_metrics_stamp_dt_datetime_now",
    ),
    Patch(
        "metrics_per_invocation",
        "aws_lambda_powertools.metrics.metrics:Metrics.{_metrics,_dimensions,_metadata}",
        "emulation",
        "Powertools keeps every Metrics instance's metrics, dimensions and metadata in class-level dicts; on AWS "
        "each execution environment runs one invocation at a time, the emulator runs them all in one process: "
        "one function's flush printed another's ExpectedErrors under its own service (false pages of the "
        "Errors - ExpectedErrors alarms in a business-only run). Per thread, each invocation has its own.",
        "local_cloud.powertools_state.metrics_per_invocation",
        "test_canary_powertools_metrics_share_class_level_dicts",
    ),
    # -- fault injection ---------------------------------------------------------------------------
    Patch(
        "throttle_dynamodb",
        "moto.dynamodb.models:DynamoDBBackend.{put_item,update_item,get_item,delete_item,transact_write_items,query}",
        "fault-injection",
        "DynamoDB item calls answer ProvisionedThroughputExceededException, raised from moto's backend so the "
        "caller sees what botocore returns from AWS.",
        "local_cloud.faults.throttle_dynamodb",
        "test_canary_moto_backend_item_methods_signatures",
    ),
    # -- observation -------------------------------------------------------------------------------
    Patch(
        "count_calls",
        "moto.core.botocore_stubber:BotocoreStubber.__call__",
        "observation",
        "Counts exactly the requests moto answers in-process (cost per order), from every client of every "
        "session; a before-send handler would miss clients created before it was registered.",
        "local_cloud.calls.count_aws_calls",
        "test_canary_count_aws_calls_counts_each_moto_request",
    ),
    Patch(
        "emf_print",
        "aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch:print",
        "observation",
        "Powertools prints EMF documents with the builtin print to sys.stdout at flush time; pytest puts its "
        "own sys.stdout back between the tests that share a module-scoped pipeline, so metrics would be lost. "
        "Shadowing print in that one module (create=True: a module global, not an existing attribute) keeps "
        "them in the capture.",
        "local_cloud.capture.capture_stdout",
        "test_canary_emf_flush_prints_through_the_module_print",
    ),
    # -- speed (measured; switch off with OPS_LOCAL_DISABLE_PATCHES to measure again) -----------------
    Patch(
        "sfn_client_cache",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils:boto_client_for",
        "speed",
        "moto's interpreter builds a new boto3 client (re-reading service models) for every task "
        "(every module of moto_patches.STEP_FUNCTIONS_CLIENT_MODULES).",
        "local_cloud.moto_patches.cached_step_functions_clients",
        "test_canary_boto_client_for_is_the_lambda_task_client_factory",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 41.1 vs 32.8 / 35.4, +7.0 CPU s (+21%). Earlier: 150 orders, 51.5 vs 46.6 "
        "(-10%).",
    ),
    Patch(
        "asl_parse_cache",
        "moto.stepfunctions.parser.asl.parse.asl_parser:AmazonStateLanguageParser.parse",
        "speed",
        "moto re-parses the definition (ANTLR) for every execution; the parsed program is stateless.",
        "local_cloud.moto_patches.cached_asl_parse",
        "test_canary_asl_parse_is_a_pure_static_method",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 45.7 vs 35.4 / 32.0, +12.0 CPU s (+36%). Earlier: 150 orders, 56.3 vs 46.6 "
        "(-17%).",
    ),
    Patch(
        "json_path_cache",
        "moto.stepfunctions.parser.asl.utils.json_path:parse + "
        "moto.stepfunctions.parser.asl.component.common.path.result_path:parse",
        "speed",
        "moto's interpreter builds a new jsonpath_ng parser (PLY yacc tables) for every path of every state; "
        "each path is parsed once (a parsed expression holds no per-evaluation state).",
        "local_cloud.moto_patches.cached_json_path_parse",
        "test_canary_json_path_parse_is_a_module_level_pure_function",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 30.9 vs 32.0 / 29.7, +0.05 CPU s: below that run's noise. Counted instead: 306 "
        "parses per 50 orders without it, 843 us each (timeit), about 5 CPU s of make chaos.",
    ),
    Patch(
        "serializer_key_cache",
        "moto.core.serialize:AttributePicker.get_possible_keys + XFormedAttributePicker.get_possible_keys + "
        "ResponseSerializer._serialize_structure_member",
        "speed",
        "moto's response serializer runs six alias providers for every member of every value (a DynamoDB "
        "AttributeValue has ten members and carries one); for a plain dict the keys to try depend only on "
        "picker, shape, parent shape and key, so they are computed once, and a member none of whose keys is "
        "in the dict is skipped (moto would pick None and skip it).",
        "local_cloud.moto_patches.cached_serializer_keys",
        "test_canary_serializer_key_cache_changes_no_response",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 31.6 vs 29.7 / 26.2, +3.7 CPU s (+13%). Earlier: two interleaved pairs at 150 "
        "orders, -20%.",
    ),
    Patch(
        "update_expression_cache",
        "moto.dynamodb.parsing.expressions:UpdateExpressionParser.make + moto.dynamodb.parsing.validators:deepcopy",
        "speed",
        "moto parses an UpdateExpression twice per UpdateItem and deep-copies the tree for every validation; each "
        "text is parsed once and each validation gets its own copy unpickled from bytes made at parse time (the "
        "same tree, node for node; nothing mutates the cached one).",
        "local_cloud.moto_patches.cached_update_expressions",
        "test_canary_update_expression_cache_gives_each_validation_an_equal_copy",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 32.8 vs 26.2 / 31.1, +4.2 CPU s (+14%). One UpdateItem's two parses and one "
        "copy (timeit): 477 us without it, 24 us with it.",
    ),
    Patch(
        "condition_lex_cache",
        "moto.dynamodb.comparisons:ConditionExpressionParser._lex_condition_expression",
        "speed",
        "moto lexes every condition, filter and key-condition expression with six regular expressions per token "
        "on every call; tokens depend only on the text, so each text is lexed once (fresh token nodes per call; "
        "names and values are resolved per call as before).",
        "local_cloud.moto_patches.cached_condition_lexing",
        "test_canary_condition_lex_cache_gives_the_same_tokens_and_answers",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 29.5 vs 31.1 / 28.4, -0.3 CPU s: below that run's noise. Counted instead: 1,819 "
        "lexes per 50 orders; one condition of three clauses (timeit) 63 us lexed, 10 us from the cache: "
        "about 4 CPU s of make chaos.",
    ),
    Patch(
        "action_names_cache",
        "moto.core.responses:method_names_from_class",
        "speed",
        "moto lists a response class's methods (inspect.getmembers) on every request to find the action; "
        "computed once per class.",
        "local_cloud.moto_patches.cached_action_names",
        "test_canary_action_names_are_a_function_of_the_class",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 36.0 vs 28.4 / 35.5, +4.0 CPU s (+13%); 30 us per request without it (timeit).",
    ),
    Patch(
        "sqs_retention_check",
        "moto.sqs.models:SQSBackend.is_message_valid_based_on_retention_period",
        "speed",
        "moto builds all of a queue's attributes (three passes over its messages) three times per message it "
        "receives, to read the retention period: a receive is quadratic in queue depth. The one attribute is "
        "read directly, against the same simulated clock.",
        "local_cloud.moto_patches.direct_sqs_retention_check",
        "test_canary_sqs_retention_check_still_drops_expired_messages",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 31.9 vs 35.5 / 26.5, +0.9 CPU s (+3%): 200 orders keep the queue shallow; the "
        "cost is quadratic in depth (a chaos shard starts 1,000 deep): ReceiveMessage of 10 from a queue of "
        "500 (timeit) 248 ms without it, 8.1 ms with it.",
    ),
    Patch(
        "url_dispatch_cache",
        "moto.core.botocore_stubber:BotocoreStubber.process_request",
        "speed",
        "moto finds every request's handler by matching its URL against every service's URL patterns (about 120 "
        "regular expressions for a DynamoDB call), then compiling the backend's own; the handler depends only on "
        "the URL, so it is found once per URL (passthrough and allow-list settings still checked per request; "
        "the request is normalised, recorded and handled as moto does).",
        "local_cloud.moto_patches.cached_url_dispatch",
        "test_canary_url_dispatch_cache_reaches_the_same_handler",
        "3 interleaved pairs of 1,800 DynamoDB and SQS calls (2026-11-25): 1,454 / 1,570 / 1,447 us per call "
        "without it, 1,299 / 1,370 / 1,291 us with it (-11% per call; moto calls are about half of a run's "
        "CPU).",
    ),
    Patch(
        "fewer_gc_passes",
        "gc:freeze + gc:set_threshold",
        "speed",
        "Not moto: CPython's collector walked moto's items, messages and histories about every 700 allocations "
        "(perf: ~12% of a chaos run's CPU). While a deployed pipeline runs, what exists after deployment is frozen "
        "out of collection and the thresholds are 50,000/20/100; reference counting is unchanged, thresholds "
        "and freeze are restored on exit.",
        "local_cloud.environment.fewer_gc_passes",
        "test_canary_fewer_gc_passes_restores_the_collector",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 33.0 vs 26.5 / 29.4, +5.1 CPU s (+18%). Earlier: one 1,000-order shard, 130.9 s "
        "wall without it, 109.6 s with it.",
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
    Patch(
        "transaction_snapshot",
        "moto.dynamodb.models:copy + DynamoDBBackend.transact_write_items",
        "speed",
        "moto deep-copies whole tables before every TransactWriteItems; only the named items are snapshotted.",
        "local_cloud.moto_patches.item_level_transaction_rollback",
        "test_canary_transact_write_items_rolls_back_only_named_items",
        "make patch-costs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 38.1 vs 29.4 / 38.4: +4.2 CPU s against their mean, but within the load's rise "
        "during it. Earlier: 150 orders, 48.9 vs 46.1 (-6%); the cost grows with table size.",
    ),
)

#: Environment variable naming speed patches to leave off (comma-separated ``Patch.name``).
DISABLE_ENV = "OPS_LOCAL_DISABLE_PATCHES"


def by_name(name: str) -> Patch:
    for patch in PATCHES:
        if patch.name == name:
            return patch
    raise KeyError(f"no patch named {name!r} in local_cloud.patches.PATCHES")


def enabled(name: str) -> bool:
    """Whether the speed patch ``name`` applies (only speed patches can be switched off)."""
    patch = by_name(name)
    disabled = {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}
    return patch.kind != "speed" or patch.name not in disabled


def targets(patch: Patch) -> list[tuple[str, str]]:
    """``(module, dotted attribute)`` pairs a patch names (``{a,b}`` expands)."""
    out: list[tuple[str, str]] = []
    for part in patch.target.split(" + "):
        module, _, attr = part.partition(":")
        if "{" in module:
            head, _, rest = module.partition("{")
            names, _, tail = rest.partition("}")
            mods = [f"{head}{n}{tail}" for n in names.split(",")]
        else:
            mods = [module]
        if not attr and "." in part:  # "DynamoDBBackend.transact_write_items" after " + "
            module, attr = patch.target.split(":", 1)[0], part
            mods = [module]
        head, _, rest = attr.partition("{")
        attrs = [f"{head}{n}{rest.partition('}')[2]}" for n in rest.partition("}")[0].split(",")] if rest else [attr]
        out.extend((m, a) for m in mods for a in attrs)
    return out


def resolve(module: str, attribute: str) -> Any:
    """The object at ``module:attribute`` now (raises if an upgrade moved it)."""
    obj: Any = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def markdown_rows(patches: tuple[Patch, ...] = PATCHES) -> str:
    """The documentation table's rows, one per patch (the canary test checks the docs hold them)."""
    rows = []
    for p in patches:
        why = p.why + (f" Measured: {p.measured}" if p.measured else "")
        rows.append(f"| `{p.name}` | `{p.target}` | {p.kind} | {why} | `{p.canary}` |")
    return "\n".join(rows)
