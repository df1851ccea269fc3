"""Contract tests: what lambda_resilience relies on in Powertools, moto and botocore.

The package uses public API only, with ONE documented exception: it overrides
``BasePersistenceLayer._get_hashed_idempotency_key`` (Powertools has no public way to store a
key verbatim). These tests fail on the upgrade that breaks an assumption, instead of letting it
fail silently in production.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.idempotency import IdempotentOperation, InProgressExpiry
from lambda_resilience.idempotency.persistence import BusinessKeyPersistenceLayer, payload_hash
from tests.middleware.conftest import fake_context

from .conftest import Observed

PACKAGE = Path(__file__).resolve().parents[2] / "packages" / "lambda_resilience" / "src" / "lambda_resilience"
#: The private Powertools members the package may touch (README, "Powertools through its public API").
DOCUMENTED_EXCEPTIONS = {"_get_hashed_idempotency_key"}


class Boom(Exception):
    pass


def _items(table: str) -> list[dict[str, Any]]:
    return boto3.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]


def test_powertools_contract_hashed_key_method_has_the_signature_we_override() -> None:
    method = BasePersistenceLayer._get_hashed_idempotency_key
    assert list(inspect.signature(method).parameters) == ["self", "data"]
    assert BusinessKeyPersistenceLayer._get_hashed_idempotency_key is not method  # ours is in place


def test_powertools_contract_record_id_is_verbatim_through_put_update_get_and_delete(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    """Every persistence operation Powertools runs goes through the overridden key method."""
    op = IdempotentOperation(idempotency_table, ttl_seconds=3600, logger=observed.logger)
    runs: list[str] = []

    def effect(command: dict[str, Any]) -> dict[str, Any]:
        runs.append(command["idempotency_key"])
        if command["payload"].get("fail"):
            raise Boom("fails before completing")
        return {"ok": True}

    run = op(effect)
    run({"idempotency_key": "a#op#attempt-1", "payload": {}}, lambda_context)  # put + update
    assert [i["id"]["S"] for i in _items(idempotency_table)] == ["a#op#attempt-1"]
    assert run({"idempotency_key": "a#op#attempt-1", "payload": {}}, lambda_context) == {"ok": True}  # get
    with pytest.raises(Boom):
        run({"idempotency_key": "b#op#attempt-1", "payload": {"fail": True}}, lambda_context)  # put + delete
    assert [i["id"]["S"] for i in _items(idempotency_table)] == ["a#op#attempt-1"]
    assert runs == ["a#op#attempt-1", "b#op#attempt-1"]


def test_powertools_contract_payload_hash_matches_stored_validation(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    payload = {"b": [1, 2, {"c": "é"}], "a": None, "n": 12345678901234567890, "t": True, "s": "x y"}
    IdempotentOperation(idempotency_table, ttl_seconds=3600, logger=observed.logger)(lambda command: {})(
        {"idempotency_key": "h#op#attempt-1", "payload": payload}, lambda_context
    )
    (item,) = _items(idempotency_table)
    assert item["validation"]["S"] == payload_hash(payload)
    assert payload_hash(payload) == hashlib.md5(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def test_powertools_contract_in_progress_expiry_comes_from_the_registered_context(
    idempotency_table: str, observed: Observed
) -> None:
    """Powertools reads the remaining time from ``IdempotencyConfig.lambda_context`` (public)."""
    assert "register_lambda_context" in vars(IdempotencyConfig)
    op = IdempotentOperation(
        idempotency_table, ttl_seconds=3600, logger=observed.logger, in_progress=InProgressExpiry(7, 7)
    )
    seen: list[int] = []

    def effect(command: dict[str, Any]) -> dict[str, Any]:
        item = boto3.client("dynamodb").get_item(TableName=idempotency_table, Key={"id": {"S": "p#op#attempt-1"}})
        seen.append(int(item["Item"]["in_progress_expiration"]["N"]))
        return {}

    import time

    start_ms = time.time() * 1000
    op(effect)({"idempotency_key": "p#op#attempt-1", "payload": {}}, fake_context(timeout_seconds=300))
    end_ms = time.time() * 1000
    # 7 s after the moment Powertools saved the record, which lies between start and end: bounded by
    # the call's own duration, not a fixed slack (a loaded machine once took 9 s to get there).
    assert len(seen) == 1 and start_ms + 7000 - 1000 <= seen[0] <= end_ms + 7000 + 1000


def _private_uses(tree: ast.AST) -> list[str]:
    """``x._name`` where ``x`` is not ``self``, and ``_name`` methods defined on classes."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
        if isinstance(node, ast.ClassDef) and node.bases:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("_") and not item.name.startswith("__"):
                    found.append(f"{node.name}.{item.name} (line {item.lineno})")
    return found


def test_powertools_contract_package_touches_no_private_member_but_the_documented_one() -> None:
    """No ``_``-prefixed attribute of another object is read, and a subclass defines no
    ``_``-prefixed method (it could override a private one of Powertools') except the documented one."""
    offenders = {}
    for module in sorted(PACKAGE.rglob("*.py")):
        uses = [
            u
            for u in _private_uses(ast.parse(module.read_text()))
            if u.split(" ")[0].split(".")[-1] not in DOCUMENTED_EXCEPTIONS
        ]
        if uses:
            offenders[str(module.relative_to(PACKAGE))] = uses
    assert offenders == {}
