"""Build and CI helpers (gates run by ``make test``)."""
