"""The patches that only make the emulator faster, each measured, and the reads of moto's backend that
replace API calls (registered in :data:`local_cloud.patches.PATCHES`)."""

from __future__ import annotations

from local_cloud.patch_types import Patch

SPEED_REGISTRY: tuple[Patch, ...] = (
    # -- speed (measured; switch off with OPS_LOCAL_DISABLE_PATCHES to measure again) -----------------
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
        "local_cloud.moto_speed.cached_serializer_keys",
        "test_canary_serializer_key_cache_changes_no_response",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 31.6 vs 29.7 / 26.2, +3.7 CPU s (+13%). Earlier: two interleaved pairs at 150 "
        "orders, -20%.",
    ),
    Patch(
        "attribute_values_as_held",
        "moto.core.serialize:BaseJSONSerializer._serialize_type_structure",
        "speed",
        "moto's JSON serializer walks every DynamoDB AttributeValue of every answer through its shape (ten "
        "members, an alias lookup each); moto holds items as DynamoDB JSON, so a value without binary is "
        "written as held (B and BS, and anything unexpected, still go through moto).",
        "local_cloud.moto_speed.attribute_values_as_held",
        "test_canary_attribute_values_as_held_changes_no_response",
        "one chaos shard (1,000 orders, 2026-11-25), with and without it in one run on the two cores: 190.2 vs "
        "197.5 CPU s (-3.7%). A GetItem of a 3 KB order item (timeit, the other speed patches on): 1.79 ms "
        "without it, 1.06 ms with it.",
    ),
    Patch(
        "projection_without_round_trip",
        "moto.dynamodb.models.dynamo_type:Item.project",
        "speed",
        "moto projects an item (a ProjectionExpression, every item an INCLUDE index holds) by converting the "
        "whole item to Python values and the picked paths back; top-level names whose values come back "
        "unchanged (no set, no binary, numbers as Decimal prints them) are copied as held.",
        "local_cloud.moto_data_speed.projection_without_round_trip",
        "test_canary_projection_without_round_trip_changes_no_item",
        "one chaos shard (1,000 orders, 2026-11-25), with and without it and attribute_values_as_held in one run "
        "on the two cores, twice: 154.9 vs 167.0 and 173.4 vs 186.7 CPU s (-7.2%, -7.1%; this one about half).",
    ),
    Patch(
        "update_expression_cache",
        "moto.dynamodb.parsing.expressions:UpdateExpressionParser.make + moto.dynamodb.parsing.validators:deepcopy",
        "speed",
        "moto parses an UpdateExpression twice per UpdateItem and deep-copies the tree for every validation; each "
        "text is parsed once and each validation gets its own copy unpickled from bytes made at parse time (the "
        "same tree, node for node; nothing mutates the cached one).",
        "local_cloud.moto_data_speed.cached_update_expressions",
        "test_canary_update_expression_cache_gives_each_validation_an_equal_copy",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
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
        "local_cloud.moto_data_speed.cached_condition_lexing",
        "test_canary_condition_lex_cache_gives_the_same_tokens_and_answers",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 29.5 vs 31.1 / 28.4, -0.3 CPU s: below that run's noise. Counted instead: 1,819 "
        "lexes per 50 orders; one condition of three clauses (timeit) 63 us lexed, 10 us from the cache: "
        "about 4 CPU s of a 2,000-order chaos run.",
    ),
    Patch(
        "action_names_cache",
        "moto.core.responses:method_names_from_class",
        "speed",
        "moto lists a response class's methods (inspect.getmembers) on every request to find the action; "
        "computed once per class.",
        "local_cloud.moto_speed.cached_action_names",
        "test_canary_action_names_are_a_function_of_the_class",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 36.0 vs 28.4 / 35.5, +4.0 CPU s (+13%); 30 us per request without it (timeit).",
    ),
    Patch(
        "sqs_retention_check",
        "moto.sqs.models:SQSBackend.is_message_valid_based_on_retention_period",
        "speed",
        "moto builds all of a queue's attributes (three passes over its messages) three times per message it "
        "receives, to read the retention period: a receive is quadratic in queue depth. The one attribute is "
        "read directly, against the same simulated clock.",
        "local_cloud.moto_data_speed.direct_sqs_retention_check",
        "test_canary_sqs_retention_check_still_drops_expired_messages",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
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
        "local_cloud.moto_speed.cached_url_dispatch",
        "test_canary_url_dispatch_cache_reaches_the_same_handler",
        "3 interleaved pairs of 1,800 DynamoDB and SQS calls (2026-11-25): 1,454 / 1,570 / 1,447 us per call "
        "without it, 1,299 / 1,370 / 1,291 us with it (-11% per call; moto calls are about half of a run's "
        "CPU).",
    ),
    Patch(
        "index_query_by_key",
        "moto.dynamodb.models.table:Table.{query,all_items}",
        "speed",
        "moto answers a Query on a secondary index by walking the whole table, sizing every item with the "
        "partition key before comparing its sort key, and deep-copying and converting each match whole before "
        "projecting it; the sweeper queries the by-status index twice per sweep (about 57 sweeps per chaos shard). "
        "The items are narrowed to those whose keys match (moto's own comparisons) and cut to the index entry "
        "first; moto's query then runs on them (a Limit or a multi-attribute key: the whole table, as before).",
        "local_cloud.moto_data_speed.index_query_by_key",
        "test_canary_index_query_by_key_gives_the_same_pages",
        "A sweep's two by-status queries on a 1,000-order table (40 rows returned), CPU per sweep, two interleaved "
        "pairs (2026-11-25): 115.0 / 117.6 ms without it, 27.4 / 28.3 ms with it (-76%). A 400-order chaos shard "
        "with every incident, before and after side by side: the sweeper's index queries 3.30 -> 0.71 CPU s "
        "(48 sweeps each); about 15 CPU s of a 2,000-order chaos run by scaling to its 1,037-order shards.",
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
        "local_cloud.moto_data_speed.item_level_transaction_rollback",
        "test_canary_transact_write_items_rolls_back_only_named_items",
        "patch-cost runs (2026-11-25, 200 chaos orders, one process; CPU s without it vs the baselines "
        "before / after it): 38.1 vs 29.4 / 38.4: +4.2 CPU s against their mean, but within the load's rise "
        "during it. Earlier: 150 orders, 48.9 vs 46.1 (-6%); the cost grows with table size.",
    ),
)
