"""Operator CLI: ``python -m ops <command>``. Local pipeline runs, and (later) DLQ, trace, repair."""
