"""A second saga built with :class:`constructs_lib.generic_saga.Saga`: reserve a parcel slot, charge,
book a courier, notify the customer (four steps, three compensations), with its own handlers and app."""
