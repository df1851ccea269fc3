"""The order pipeline's own constructs (order vocabulary), built on the generic ``constructs_lib``.

One module per construct, each with typed props (checked once, at synth) and its created resources
as attributes; each grants what its functions use, sets the environment variables it defines
(names from ``order_domain.env``) and registers what it watches on the stack's one
:class:`constructs_lib.monitoring.Monitoring` facade. Each grouping construct is a
:class:`constructs_lib.logical_ids.TransparentScope`: resources keep their logical IDs.

- :mod:`.stage` - :class:`StageConfig`, the stage rules read once from context.
- :mod:`.alerting` - the encrypted alarm topic.
- :mod:`.data` - the tables and the prod data key.
- :mod:`.layers` - the Powertools and app-code layers.
- :mod:`.functions` - the settings every order function shares, and its registration.
- :mod:`.grants` - the grants by use (named actions, defined once).
- :mod:`.providers` - the payment and carrier providers (HTTPS or sandbox).
- :mod:`.needs_attention` - the needs-attention queue.
- :mod:`.steps` - the saga's seven step functions.
- :mod:`.order_saga` - the order saga (state machine).
- :mod:`.intake` - the orders queue and intake.
- :mod:`.replay` - the DLQ replay function and its rules.
- :mod:`.sweeper` - the stuck-order sweeper and its alarms.
- :mod:`.api` - the order API (REST: POST /orders to the queue, GET /orders/{id} from the table).
"""
