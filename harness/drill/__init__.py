"""The on-call drill (``python -m harness drill``, ``make drill``): five incidents on the local stack, one after
another on the simulated clock, each answered with ``python -m ops`` commands only (``drill``), typed at a
terminal that counts each command's AWS calls (``console``), and the drill's records and ``--check`` verdict
(``judge``). It imports the run's incidents, the local stack and the workload."""
