"""A travel booking saga (hotel, flight, card) built only on the installed packages: ``constructs_lib`` for the
infrastructure, ``lambda_resilience`` for the handlers, ``local_cloud`` to run it on this machine."""
