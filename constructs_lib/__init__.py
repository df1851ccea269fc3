"""Reusable L3 constructs for a resilient SQS -> Lambda -> Step Functions order pipeline.

Each construct lives in its own module with typed props; import what you need:

- :class:`constructs_lib.function.PipelineFunction` - Lambda defaults (runtime, layers, tracing, JSON logs).
- :class:`constructs_lib.layers.PythonPackagesLayer` - a layer built from installed distributions, no Docker.
- :class:`constructs_lib.queue.ResilientQueue` - queue + DLQ + DLQ alarm + partial-batch event source.
- :class:`constructs_lib.tables.IdempotencyTable` / :class:`constructs_lib.tables.DataTable`.
- :class:`constructs_lib.saga.OrderSaga` - the reserve/charge/ship saga with reverse compensations.
- :class:`constructs_lib.checks.ResilienceChecks` - synth-time Aspect: DLQs, alarms, visibility timeouts.
"""
