"""The local stack: the app synthesized and deployed on the emulator. What a run does (``options``), the cloud
assembly it runs (``synth``), the deployed pipeline and its event loop (``pipeline``), ``ops local up``'s
long-lived stack and its moto endpoint (``up``, ``local_endpoint``), and what each speed patch of the emulator
saves (``patch_costs``, ``python -m harness.stack.patch_costs``). It imports the workload, the faults (a run's
fault rates) and the reports (the pipeline reports its run)."""
