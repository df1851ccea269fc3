"""The parts of :class:`constructs_lib.generic_saga.Saga`, one module per concern (import the public
names from :mod:`constructs_lib.generic_saga`)."""
