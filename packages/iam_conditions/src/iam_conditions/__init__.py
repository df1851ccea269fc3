"""IAM policy conditions evaluated offline as AWS documents them, failing closed (:mod:`iam_conditions.evaluate`)."""

__version__ = "0.1.0"

from iam_conditions.evaluate import (
    OPERATORS,
    Context,
    UnsupportedOperator,
    Verdict,
    applies,
    evaluate,
    parse_operator,
    unsupported_operators,
)
from iam_conditions.values import Unknown, glob, token

__all__ = [
    "OPERATORS",
    "Context",
    "Unknown",
    "UnsupportedOperator",
    "Verdict",
    "applies",
    "evaluate",
    "glob",
    "parse_operator",
    "token",
    "unsupported_operators",
]
