"""The patches that make the emulator behave like AWS: correctness, emulation, simulated time, fault
injection and observation (registered in :data:`local_cloud.patches.PATCHES`)."""

from __future__ import annotations

from local_cloud.patch_types import Patch

FIDELITY_REGISTRY: tuple[Patch, ...] = (
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
    Patch(
        "sfn_task_error_names",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda:StateTaskLambda._from_error"
        " + moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda:"
        "StateTaskServiceLambda._from_error"
        " + moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sqs:"
        "StateTaskServiceSqs._from_error"
        " + moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb:"
        "StateTaskServiceDynamoDB._from_error",
        "correctness",
        "moto named a throttled Lambda task (function ARN as Resource) Exception, so the saga's Retry on "
        "Lambda.TooManyRequestsException never matched and a throttle cancelled valid orders; it named every SQS "
        "task refusal SQS.SdkClientException. On AWS a task error is <Service>.<ErrorName> (Lambda.<ErrorCode>: "
        "https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html; ServiceName.ErrorName "
        "with the Exception suffix: "
        "https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html), "
        "an error the service's model does not name is the SDK's base exception (Lambda.AWSLambdaException, "
        "SQS.AmazonSQSException, DynamoDB.AmazonDynamoDBException) and no answer is <Service>.SdkClientException.",
        "local_cloud.environment.moto_behaviour",
        "test_canary_sfn_task_errors_named_as_aws",
    ),
    Patch(
        "sfn_task_timeout_on_clock",
        "moto.stepfunctions.parser.asl.component.state.exec.execute_state:threading",
        "correctness",
        "moto times a Task state's TimeoutSeconds in wall seconds; under load a DynamoDB write (milliseconds on "
        "AWS) timed out in MarkCompleted and still wrote afterwards. The timeout counts simulated time, as every "
        "other duration of the local run (state-task.html, TimeoutSeconds).",
        "local_cloud.environment.moto_behaviour",
        "test_canary_sfn_task_timeout_counts_simulated_time",
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
        "sfn_execution_running_from_start",
        "moto.stepfunctions.parser.backend.execution:Execution.__init__",
        "correctness",
        "moto's StartExecution lists the new execution before it sets its status; a ListExecutions on another "
        "thread in between raised (a chaos shard died under load). On AWS StartExecution returns a RUNNING "
        "execution (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html): "
        "RUNNING from the moment it exists.",
        "local_cloud.environment.moto_behaviour",
        "test_canary_sfn_execution_is_listed_running_from_its_start",
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
        "Step Functions Retry waits (IntervalSeconds x BackoffRate) take simulated time, not wall time: on an "
        "execution's thread the execution waits for its own target (SimClock.sleep, decision 0026).",
        "local_cloud.environment.moto_behaviour",
        "test_canary_sfn_retrier_sleeps_through_module_time",
    ),
    Patch(
        "sfn_execution_waits",
        "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl:RetrierDecl._eval_body"
        " + moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils:"
        "execute_lambda_function_integration"
        " + moto.stepfunctions.parser.backend.execution_worker:ExecutionWorker._execution_logic",
        "simulated-time",
        "On AWS executions retrying at once wait at once; a Retry wait that advanced the one shared clock moved "
        "every execution's time by the sum of all waits (an outage's failures spread over minutes). A Retry and a "
        "Lambda task's invocation act for their execution (its waits are its own), an execution's end wakes the "
        "runner, which steps the clock when every running execution waits (decision 0026).",
        "local_cloud.sfn_waits.execution_waits",
        "test_canary_sfn_execution_waits_act_for_their_execution",
    ),
    Patch(
        "http_retry_wait",
        "urllib3.util.retry:time",
        "simulated-time",
        "The provider clients' urllib3 retry backoff on an execution's thread is that execution's wait on the "
        "simulated clock (it took wall time, during which the runner could not step the clock); on any other "
        "thread a wall-clock sleep, as before.",
        "local_cloud.sfn_waits.http_retry_waits",
        "test_canary_urllib3_retry_sleeps_through_module_time",
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
    Patch(
        "function_environment",
        "os:environ._data",
        "emulation",
        "On Lambda a function's code sees its environment variables for the whole invocation, in its own "
        "execution environment; the emulator runs every function in one process, whose os.environ is shared: "
        "a handler reading os.environ got KeyError or the test process's value. While invocations run, "
        "os.environ's storage is an overlay: each invocation (its context) sees its function's variables over "
        "the process's, every other thread the process's own.",
        "local_cloud.function_env.function_environment",
        "test_canary_os_environ_reads_and_writes_through_its_data_mapping",
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
)
