"""Run the synthesized pipeline on one machine against moto, in-process.

One entry point, ``python -m harness`` (``__main__`` -> ``cli`` -> ``cli_run``), over named groups, each
importing only the groups after it (the ``harness-layers`` import contract, pyproject.toml): ``drill`` and
``spike``, ``run``, ``matrix`` and ``engines``, ``stack`` (the local stack), ``reporting``, ``faults``, ``workload``.
"""
