"""Black Friday (``python -m harness local spike``, ``make spike``): the seeds' spike on the local run, scaled
with every rate quota (``spike``), its plot (``spike_plot``), and ``python -m harness capacity`` (``ops
capacity`` forwards to it): the same fluid model from the synthesized template alone, which AWS quota binds
first at an offered rate (``capacity``). It imports the local stack, the reports and the workload."""
