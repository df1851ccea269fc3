"""Run ``fn(command)`` at most once per business key, on Powertools' ``idempotent_function``.

Powertools does the hard part (atomic conditional put, IN_PROGRESS -> COMPLETED, in-progress
expiry from the Lambda's remaining time, cached responses, payload validation, TTL). This adds:

- readable keys: the caller's business key is the record ID (see :mod:`.persistence`);
- a missing key is an error (never silent, non-idempotent processing);
- a key reused with a different payload raises :class:`PayloadMismatch`, logged with both hashes;
- the in-progress expiry clamped to ``[floor, ceiling]`` (through the public
  ``IdempotencyConfig.register_lambda_context``: Powertools reads the remaining time from it);
- a metric and a log line for every duplicate suppressed (``response_hook``) and every takeover;
- an answer that depends on the moment (:class:`~lambda_resilience.exceptions.UncachedAnswer`) is
  returned and never stored: only effects' outcomes are cached.

The persistence layer and its DynamoDB client are built on the first call, not at import.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyKeyError,
    IdempotencyValidationError,
)

from lambda_resilience.correlation import current_correlation_id
from lambda_resilience.exceptions import (
    ConfigurationError,
    MissingIdempotencyKey,
    OperationInProgress,
    PayloadMismatch,
    UncachedAnswer,
)
from lambda_resilience.idempotency.config import KEY_FIELD, PAYLOAD_FIELD, InProgressExpiry

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from lambda_resilience.idempotency.persistence import BusinessKeyPersistenceLayer

Command = dict[str, Any]
Guarded = Callable[[Command, "LambdaContext | None"], Any]

#: The Lambda context of the invocation running in this thread / task.
_invocation: ContextVar[Any] = ContextVar("lambda_resilience_invocation", default=None)


def invocation_seconds_left() -> float | None:
    """The remaining time of the Lambda invocation running this operation (None outside one)."""
    context = _invocation.get()
    return None if context is None else context.get_remaining_time_in_millis() / 1000


class _ClampedRemainingTime:
    """What Powertools reads from the registered Lambda context - ``get_remaining_time_in_millis`` -
    taken from the current invocation's context and clamped to the in-progress bounds."""

    def __init__(self, expiry: InProgressExpiry) -> None:
        self.expiry = expiry

    def get_remaining_time_in_millis(self) -> int:
        context = _invocation.get()
        return self.expiry.clamp_ms(context.get_remaining_time_in_millis() if context is not None else None)


class IdempotentOperation:
    """Decorator: make ``fn(command) -> result`` run at most once per business key.

    ``command`` is ``{"idempotency_key": "...", "payload": {...}}``; only ``payload`` is hashed
    for the same-key-different-payload check. Duplicates get the first call's result.

    Args:
        table_name: the idempotency table (partition key ``id``, TTL on ``expiration``).
        ttl_seconds: how long a record (and the cached result) is kept.
        logger: Powertools Logger for duplicate, takeover and mismatch lines.
        metrics: optional Powertools Metrics (``DuplicatesSuppressed``, ``IdempotencyTakeovers``,
            ``PayloadMismatches``).
        in_progress: bounds of the in-progress expiry.
        boto3_client: the DynamoDB client; default: the process-wide one
            (:func:`lambda_resilience.aws.client`), on first use.
    """

    def __init__(
        self,
        table_name: str | None,
        *,
        ttl_seconds: int,
        logger: Logger,
        metrics: Metrics | None = None,
        in_progress: InProgressExpiry | None = None,
        boto3_client: Any | None = None,
    ) -> None:
        if not table_name:
            raise ConfigurationError("no idempotency table name: refusing to run without idempotency")
        self.table_name = table_name
        self._logger = logger
        self._metrics = metrics
        self._client = boto3_client
        self._persistence: BusinessKeyPersistenceLayer | None = None
        self._lock = threading.RLock()
        self.config = IdempotencyConfig(
            payload_validation_jmespath=PAYLOAD_FIELD,
            raise_on_no_idempotency_key=True,
            expires_after_seconds=ttl_seconds,
            response_hook=self._on_duplicate,
        )
        self.config.register_lambda_context(
            cast("LambdaContext", _ClampedRemainingTime(in_progress or InProgressExpiry()))
        )

    @property
    def persistence(self) -> BusinessKeyPersistenceLayer:
        """The Powertools persistence layer (created, with its client, on first use)."""
        if self._persistence is None:
            with self._lock:
                if self._persistence is None:
                    from lambda_resilience.idempotency.persistence import BusinessKeyPersistenceLayer

                    if self._client is None:
                        from lambda_resilience.aws import client

                        # The process-wide client: building another costs a cold start ~10 ms.
                        self._client = client("dynamodb")
                    self._persistence = BusinessKeyPersistenceLayer(
                        self.table_name, boto3_client=self._client, on_takeover=self._on_takeover
                    )
        return self._persistence

    def _on_duplicate(self, response: Any, idempotent_data: DataRecord) -> Any:
        self._logger.info("duplicate suppressed", extra={"idempotency_key": idempotent_data.idempotency_key})
        self._count("DuplicatesSuppressed")
        return response

    def _on_takeover(self, key: str) -> None:
        self._logger.warning(
            "took over an expired in-progress record (the previous attempt ended abruptly)",
            extra={"idempotency_key": key},
        )
        self._count("IdempotencyTakeovers")

    def _count(self, name: str) -> None:
        if self._metrics is not None:
            from aws_lambda_powertools.metrics import MetricUnit

            self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)

    def _mismatch(self, command: Command, exc: Exception) -> PayloadMismatch:
        from lambda_resilience.idempotency.persistence import payload_hash, stored_payload_hash

        key = str(command.get(KEY_FIELD))
        try:
            stored: str | None = stored_payload_hash(self.persistence, key)
        except Exception:  # the log line must not hide the mismatch
            stored = None
        self._logger.error(
            "idempotency key reused with a different payload",
            extra={
                "idempotency_key": key,
                "stored_payload_hash": stored,
                "received_payload_hash": payload_hash(command.get(PAYLOAD_FIELD)),
                "correlation_id": current_correlation_id(),
            },
        )
        self._count("PayloadMismatches")
        return PayloadMismatch(f"payload for idempotency key {key} does not match the stored record: {exc}")

    def __call__(self, fn: Callable[[Command], Any]) -> Guarded:
        guarded: Callable[..., Any] | None = None

        def build() -> Callable[..., Any]:
            return idempotent_function(
                data_keyword_argument="command", persistence_store=self.persistence, config=self.config
            )(fn)

        @functools.wraps(fn)
        def run(command: Command, context: LambdaContext | None = None) -> Any:
            nonlocal guarded
            if guarded is None:
                with self._lock:
                    guarded = guarded or build()
            token = _invocation.set(context)
            try:
                return guarded(command=command)
            except UncachedAnswer as answer:  # Powertools deleted the record: the next call computes it again
                return answer.result
            except IdempotencyKeyError as exc:
                raise MissingIdempotencyKey(str(exc)) from exc
            except IdempotencyValidationError as exc:
                raise self._mismatch(command, exc) from exc
            except IdempotencyAlreadyInProgressError as exc:
                raise OperationInProgress(f"operation {command.get(KEY_FIELD)} is in progress elsewhere") from exc
            finally:
                _invocation.reset(token)

        return run
