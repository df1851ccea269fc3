"""The local run (``python -m harness local run``, ``make demo``, ``make chaos``): a whole run in order (``run``,
which also re-exports the names callers used before its split), its shards, one process per CPU, merged
(``shards``), the incidents it injects at random simulated times (``incidents``) and the on-call's answer to the
park pages once the faults are over (``oncall``). It imports the fault matrix, the local stack, the reports, the
faults and the workload."""
