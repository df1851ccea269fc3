"""Examples built with this project's library (constructs_lib)."""
