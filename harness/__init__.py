"""Run the synthesized pipeline on one machine against moto, in-process."""
