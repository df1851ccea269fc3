"""DLQ replay (schedule, or a DLQ alarm going to ALARM): redrive transient failures to their source.

Only the ``transient`` category is replayed, at most MAX_PER_RUN messages per DLQ per run, and
never a message already replayed MAX_AUTOMATIC_REPLAYS times (a human looks at those). Every run that moved,
skipped or could not reach a message leaves a record a person reads with ``ops dlq history`` (the failures
table, one item per hour: :mod:`lambda_resilience.replay_history`) and a log line naming each message moved
(order, attempt, correlation ID, category: never the customer's data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from lambda_resilience.correlation import correlation_scope, new_correlation_id
from lambda_resilience.replay import MAX_AUTOMATIC_REPLAYS, replay
from lambda_resilience.replay_history import record_run
from lambda_resilience.tracing import traced
from order_domain.logs import get_logger
from order_domain.settings import load
from order_domain.settings.replay import DlqReplaySettings
from order_domain.wiring import replay_clients

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

MAX_PER_RUN = 100
settings = load(DlqReplaySettings)
clients = replay_clients()
logger = get_logger()
metrics = Metrics()


@metrics.log_metrics
@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    results = {}
    with correlation_scope(logger, f"replay-{new_correlation_id()}"):
        for dlq_url, source_url in settings.replay_targets:
            report = replay(
                clients,
                dlq_url,
                source_url,
                settings.failures_table,
                category="transient",
                max_messages=MAX_PER_RUN,
                max_replays=MAX_AUTOMATIC_REPLAYS,
            )
            results[dlq_url] = report.as_dict()
            metrics.add_metric(name="MessagesReplayed", unit=MetricUnit.Count, value=len(report.replayed))
            not_received = 0 if report.read.complete else report.read.not_received
            dlq = dlq_url.rstrip("/").rsplit("/", 1)[-1]
            logger.info(
                "replay done",
                extra={
                    "dlq": dlq_url,
                    "replayed": len(report.replayed),
                    "skipped": len(report.skipped),
                    "not_received": not_received,
                    "replayed_messages": report.details,
                },
            )
            if settings.failures_table and (report.replayed or report.skipped or not_received):
                record_run(
                    clients,
                    settings.failures_table,
                    dlq=dlq,
                    replayed=report.details,
                    skipped=len(report.skipped),
                    not_received=not_received,
                )
    return results
