"""Reusable, generic L3 constructs for a resilient SQS -> Lambda -> Step Functions pipeline.

No application vocabulary here (a test keeps it so): an application's own constructs live in the
application. Each construct lives in its own module with typed props; import what
you need. They compose the way aws-solutions-constructs do: existing resources (``existing_queue``,
``existing_table``, any ``IFunction`` / ``ITopic``) and pass-through props (``queue_props``,
``table_props``, ``function_props``, merged over the defaults, see :mod:`constructs_lib.overrides`),
with bad combinations rejected at synth.

- :class:`constructs_lib.function.PipelineFunction` - Lambda defaults (runtime, arm64, layers, tracing, JSON logs).
- :class:`constructs_lib.alarms.FunctionAlarms` - the errors / throttles alarms for any function.
- :class:`constructs_lib.layers.PythonPackagesLayer` - a layer built from installed distributions, no Docker,
  staged under the app's outdir.
- :class:`constructs_lib.queue.ResilientQueue` - queue + DLQ + DLQ alarm + partial-batch event source.
- :class:`constructs_lib.tables.IdempotencyTable` / :class:`constructs_lib.tables.DataTable`.
- :class:`constructs_lib.monitoring.Monitoring` - the one monitoring facade: ``monitor_queue``,
  ``monitor_function``, ``monitor_state_machine``, ``add_alarms``, ``add_graph``; the dashboard
  (:class:`constructs_lib.dashboard.PipelineDashboard`) is built from what was registered.
- :class:`constructs_lib.generic_saga.Saga` - forward steps with reverse compensations, outcome recorders.
- :class:`constructs_lib.checks.ResilienceChecks` - synth-time Aspect: DLQs, alarms, visibility timeouts,
  a failure alarm on every function and state machine.
- :class:`constructs_lib.encryption.DataEncryptionKey` - a rotated customer-managed key for tables and log groups.
- :class:`constructs_lib.providers.HttpsProvider` - a real provider's URL and API-key secret, granted per function.
- :class:`constructs_lib.logical_ids.TransparentScope` - group constructs without changing logical IDs.
"""

__version__ = "0.1.0"
