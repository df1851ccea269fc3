"""Idempotency on Powertools, keyed by business identity.

Powertools does the hard part (atomic conditional put, IN_PROGRESS -> COMPLETED, in-progress
expiry from the Lambda's remaining time, cached responses, payload validation, TTL). We add:

- readable keys: the caller's business key (``order-123#charge-payment#attempt-1``) is stored
  verbatim, so an operator can read which operation ran for which order. Powertools would
  store ``<function>.<qualname>#<md5>``; we override its key method for that;
- a missing key is an error (never silent, non-idempotent processing);
- a key reused with a different payload raises :class:`PayloadMismatch`, logged with both
  payload hashes;
- a metric and a log line for every duplicate suppressed.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyKeyError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.correlation import current_correlation_id
from shared.exceptions import ConfigurationError, MissingIdempotencyKey, OperationInProgress, PayloadMismatch

#: In-progress expiry = the Lambda's remaining time, clamped to these bounds (seconds). The floor
#: keeps a nearly timed-out invocation from being taken over while it still writes; the ceiling
#: bounds how long a crashed attempt blocks redelivery (Lambda's maximum timeout).
DEFAULT_IN_PROGRESS_FLOOR_SECONDS = 5.0
DEFAULT_IN_PROGRESS_CEILING_SECONDS = 900.0

#: Field of the command dict that holds the business key, and the field hashed for validation.
KEY_FIELD = "idempotency_key"
PAYLOAD_FIELD = "payload"


def business_key(order_id: str, operation: str, attempt: int = 1) -> str:
    """``order-123#charge-payment#attempt-1``: the key of one business operation."""
    if not order_id or not operation:
        raise MissingIdempotencyKey("order_id and operation are required to build an idempotency key")
    if attempt < 1:
        raise MissingIdempotencyKey(f"attempt must be >= 1, got {attempt}")
    return f"{order_id}#{operation}#attempt-{attempt}"


class PayloadHashMismatch(IdempotencyValidationError):
    """IdempotencyValidationError that keeps both hashes for the log line."""

    def __init__(self, key: str, stored_hash: str | None, received_hash: str | None) -> None:
        super().__init__(f"payload for idempotency key {key} does not match the stored record")
        self.key = key
        self.stored_hash = stored_hash
        self.received_hash = received_hash


class _Deferred:
    """Stands in for the boto3 client until first use (Powertools creates one eagerly at import)."""


_DEFERRED = _Deferred()


class BusinessKeyPersistenceLayer(DynamoDBPersistenceLayer):
    """DynamoDB persistence storing the caller's business key verbatim as the record ID.

    Also: the DynamoDB client is created on first use (cold-start import stays cheap); the
    in-progress expiry is the Lambda's remaining time clamped to ``[floor, ceiling]`` seconds;
    and a put that replaces an expired IN_PROGRESS record (the previous attempt crashed) is
    reported to ``on_takeover`` - detected by asking DynamoDB for the old item on the same
    conditional put (``ReturnValues=ALL_OLD``), so it costs no extra call.
    """

    def __init__(
        self,
        table_name: str,
        *,
        in_progress_floor_seconds: float = DEFAULT_IN_PROGRESS_FLOOR_SECONDS,
        in_progress_ceiling_seconds: float = DEFAULT_IN_PROGRESS_CEILING_SECONDS,
        boto3_client: Any | None = None,
    ) -> None:
        if not 0 <= in_progress_floor_seconds <= in_progress_ceiling_seconds:
            raise ValueError("need 0 <= in_progress_floor_seconds <= in_progress_ceiling_seconds")
        self._lazy_client: Any | None = None
        self._client_lock = threading.Lock()
        self.in_progress_floor_ms = int(in_progress_floor_seconds * 1000)
        self.in_progress_ceiling_ms = int(in_progress_ceiling_seconds * 1000)
        self.on_takeover: Callable[[str], None] | None = None
        self._initialised = False  # Powertools' __init__ reads self.client: do not create it then
        super().__init__(table_name=table_name, boto3_client=boto3_client or _DEFERRED)
        self._initialised = True

    @property
    def client(self) -> Any:
        if not self._initialised:
            return self._lazy_client or _DEFERRED
        if self._lazy_client is None:
            with self._client_lock:
                if self._lazy_client is None:
                    client = boto3.session.Session().client("dynamodb")
                    client.meta.events.register("before-parameter-build.dynamodb.PutItem", self._request_old_item)
                    client.meta.events.register("after-call.dynamodb.PutItem", self._detect_takeover)
                    self._lazy_client = client
        return self._lazy_client

    @client.setter
    def client(self, value: Any) -> None:
        if value is not _DEFERRED:
            self._lazy_client = value

    def _request_old_item(self, params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == self.table_name and "ConditionExpression" in params:
            params["ReturnValues"] = "ALL_OLD"

    def _detect_takeover(self, parsed: dict[str, Any], **_: Any) -> None:
        old = parsed.get("Attributes") or {}
        if old.get(self.status_attr, {}).get("S") == "INPROGRESS" and self.on_takeover is not None:
            self.on_takeover(str(old.get(self.key_attr, {}).get("S", "")))

    def _get_hashed_idempotency_key(self, data: dict[str, Any]) -> str | None:
        key = data.get(KEY_FIELD) if isinstance(data, dict) else None
        if not isinstance(key, str) or not key.strip():
            # Powertools lets IdempotencyKeyError through unchanged; we map it to our own error.
            raise IdempotencyKeyError(f"command has no {KEY_FIELD!r}")
        return key

    def save_inprogress(self, data: dict[str, Any], remaining_time_in_millis: int | None = None) -> None:
        remaining = self.in_progress_ceiling_ms if remaining_time_in_millis is None else remaining_time_in_millis
        clamped = min(max(remaining, self.in_progress_floor_ms), self.in_progress_ceiling_ms)
        super().save_inprogress(data=data, remaining_time_in_millis=clamped)

    def _validate_payload(self, data_payload: dict[str, Any] | DataRecord, stored_data_record: DataRecord) -> None:
        if not self.payload_validation_enabled:
            return
        if isinstance(data_payload, DataRecord):
            received = data_payload.payload_hash
        else:
            received = self._get_hashed_payload(data=data_payload)
        if stored_data_record.payload_hash != received:
            raise PayloadHashMismatch(stored_data_record.idempotency_key, stored_data_record.payload_hash, received)


class IdempotentOperation:
    """Make ``fn(command) -> dict`` run at most once per business key.

    ``command`` is ``{"idempotency_key": "...", "payload": {...}}``; only ``payload`` is hashed
    for the same-key-different-payload check. Duplicates get the first call's result.
    """

    def __init__(
        self,
        *,
        persistence: BusinessKeyPersistenceLayer,
        ttl_seconds: int,
        logger: Logger,
        metrics: Metrics | None = None,
    ) -> None:
        self._logger = logger
        self._metrics = metrics
        self.config = IdempotencyConfig(
            payload_validation_jmespath=PAYLOAD_FIELD,
            raise_on_no_idempotency_key=True,
            expires_after_seconds=ttl_seconds,
            response_hook=self._on_duplicate,
        )
        self.persistence = persistence
        persistence.on_takeover = self._on_takeover

    def _on_duplicate(self, response: Any, idempotent_data: DataRecord) -> Any:
        self._logger.info("duplicate suppressed", extra={"idempotency_key": idempotent_data.idempotency_key})
        if self._metrics is not None:
            self._metrics.add_metric(name="DuplicatesSuppressed", unit=MetricUnit.Count, value=1)
        return response

    def _on_takeover(self, key: str) -> None:
        self._logger.warning(
            "took over an expired in-progress record (the previous attempt ended abruptly)",
            extra={"idempotency_key": key},
        )
        if self._metrics is not None:
            self._metrics.add_metric(name="IdempotencyTakeovers", unit=MetricUnit.Count, value=1)

    def __call__(self, fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any], LambdaContext | None], Any]:
        guarded = idempotent_function(
            data_keyword_argument="command", persistence_store=self.persistence, config=self.config
        )(fn)

        @functools.wraps(fn)
        def run(command: dict[str, Any], context: LambdaContext | None = None) -> Any:
            if context is not None:
                self.config.register_lambda_context(context)
            try:
                return guarded(command=command)
            except IdempotencyKeyError as exc:
                raise MissingIdempotencyKey(str(exc)) from exc
            except PayloadHashMismatch as exc:
                self._logger.error(
                    "idempotency key reused with a different payload",
                    extra={
                        "idempotency_key": exc.key,
                        "stored_payload_hash": exc.stored_hash,
                        "received_payload_hash": exc.received_hash,
                        "correlation_id": current_correlation_id(),
                    },
                )
                if self._metrics is not None:
                    self._metrics.add_metric(name="PayloadMismatches", unit=MetricUnit.Count, value=1)
                raise PayloadMismatch(str(exc)) from exc
            except IdempotencyAlreadyInProgressError as exc:
                raise OperationInProgress(f"operation {command.get(KEY_FIELD)} is in progress elsewhere") from exc

        return run


def make_persistence(
    table_name: str | None,
    *,
    in_progress_floor_seconds: float = DEFAULT_IN_PROGRESS_FLOOR_SECONDS,
    in_progress_ceiling_seconds: float = DEFAULT_IN_PROGRESS_CEILING_SECONDS,
) -> BusinessKeyPersistenceLayer:
    """Persistence layer on the idempotency table (``IDEMPOTENCY_TABLE_NAME``)."""
    if not table_name:
        raise ConfigurationError("IDEMPOTENCY_TABLE_NAME is not set: refusing to run without idempotency")
    return BusinessKeyPersistenceLayer(
        table_name,
        in_progress_floor_seconds=in_progress_floor_seconds,
        in_progress_ceiling_seconds=in_progress_ceiling_seconds,
    )
