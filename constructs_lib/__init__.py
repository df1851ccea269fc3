"""Reusable L3 constructs for a resilient SQS -> Lambda -> Step Functions order pipeline.

Each construct lives in its own module with typed props; import what you need. They compose the
way aws-solutions-constructs do: existing resources (``existing_queue``, ``existing_table``, any
``IFunction`` / ``ITopic``) and pass-through props (``queue_props``, ``table_props``,
``function_props``, merged over the defaults, see :mod:`constructs_lib.overrides`), with bad
combinations rejected at synth.

- :class:`constructs_lib.function.PipelineFunction` - Lambda defaults (runtime, arm64, layers, tracing, JSON logs).
- :class:`constructs_lib.alarms.FunctionAlarms` - the errors / throttles alarms for any function.
- :class:`constructs_lib.layers.PythonPackagesLayer` - a layer built from installed distributions, no Docker,
  staged under the app's outdir.
- :class:`constructs_lib.queue.ResilientQueue` - queue + DLQ + DLQ alarm + partial-batch event source.
- :class:`constructs_lib.tables.IdempotencyTable` / :class:`constructs_lib.tables.DataTable`.
- :class:`constructs_lib.dashboard.PipelineDashboard` - queues, DLQs, idempotency, workflow executions.
- :class:`constructs_lib.saga.OrderSaga` - the reserve/charge/ship saga with reverse compensations.
- :class:`constructs_lib.checks.ResilienceChecks` - synth-time Aspect: DLQs, alarms, visibility timeouts,
  a failure alarm on every function and state machine.
- :class:`constructs_lib.encryption.DataEncryptionKey` - a rotated customer-managed key for tables and log groups.
- :class:`constructs_lib.providers.HttpsProvider` - a real provider's URL and API-key secret, granted per function.
- :class:`constructs_lib.stage.StageConfig` - stage rules read once from context (prod needs providers and alarm_email).
"""
