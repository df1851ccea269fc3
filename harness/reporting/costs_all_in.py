"""The whole bill per million orders: the pipeline's own resources (:mod:`harness.reporting.costs`) plus the REST
API, CloudWatch Logs (functions and state machine), custom metrics, traces, KMS and Secrets Manager,
each from a local run's own counts (log lines and bytes, metric series, execution history events,
invocations, AWS calls) and AWS's published prices (decision 0022).

Prices: us-east-1 list prices, read 2026-11-24, free tiers ignored:
- API Gateway REST API: $3.50 per million requests, first 333 million a month
  (https://aws.amazon.com/api-gateway/pricing/).
- CloudWatch Logs (https://aws.amazon.com/cloudwatch/pricing/): Standard ingestion $0.50 per GB; vended
  logs (Step Functions' execution logs are vended logs) $0.50 per GB for the first 10 TB; the Infrequent
  Access class $0.25 per GB (custom and vended logs, first 10 TB); storage $0.03
  per GB-month, measured after gzip level 6 compression with 26 bytes of metadata per event (the pricing
  page's note). Ingested size: each event's UTF-8 message plus 26 bytes, as PutLogEvents counts a batch
  (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html).
- CloudWatch custom metrics: $0.30 per metric per month, first 10,000 (same page); one metric is one
  namespace + name + dimension values, as the run's EMF documents define them.
- X-Ray: $5.00 per million traces recorded (https://aws.amazon.com/xray/pricing/).
- KMS: $0.03 per 10,000 requests (https://aws.amazon.com/kms/pricing/).
- Secrets Manager: $0.40 per secret per month, $0.05 per 10,000 API calls
  (https://aws.amazon.com/secrets-manager/pricing/).

Modelled, not measured (stated so): Lambda's START and REPORT records per invocation at system log level
INFO (their sizes from AWS's JSON examples,
https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html); KMS calls (SQS,
DynamoDB and CloudWatch Logs reuse a data key, so requests scale with keyed resources and time, not with
orders: one GenerateDataKey and one Decrypt per resource per 5 minutes, SQS's default reuse period,
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-server-side-encryption.html);
and the monthly volume that fixed monthly charges (metrics, secrets, KMS) are spread over.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

API_PER_MILLION_REQUESTS = 3.50
LOGS_INGEST_PER_GB = 0.50  # Standard log class and vended logs (first 10 TB) alike
LOGS_INGEST_IA_PER_GB = 0.25  # Infrequent Access log class (first 10 TB)
LOGS_STORAGE_PER_GB_MONTH = 0.03
LOG_EVENT_OVERHEAD_BYTES = 26
CUSTOM_METRIC_PER_MONTH = 0.30
XRAY_PER_MILLION_TRACES = 5.00
KMS_PER_10K_REQUESTS = 0.03
SECRET_PER_MONTH = 0.40
SECRETS_PER_10K_CALLS = 0.05
GB = 1024**3
#: Lambda's START / REPORT records in JSON format (AWS's examples, a cold start's REPORT with initDurationMs).
PLATFORM_START_BYTES = 170
PLATFORM_REPORT_BYTES = 430
#: Resources of the prod template encrypted under a customer-managed key (tests/infra/test_bill_inputs.py counts them).
KMS_KEYED_RESOURCES = 15  # with the providers' webhook's log group
KMS_REQUESTS_PER_RESOURCE_PER_MONTH = 2 * 30 * 24 * 12  # one GenerateDataKey + one Decrypt per 5 minutes
#: Secrets in Secrets Manager: the provider API keys (payment, carrier) and the webhook's signing secret.
SECRETS = 3
#: Orders a month that fixed monthly charges are spread over (an assumption: a shop whose Black Friday
#: peaks at 50,000 orders a minute, the seeds' figure, sells far more than this in a month).
ORDERS_PER_MONTH = 10_000_000
#: History event types logged at level ERROR (https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html).
_ERROR_EVENT_SUFFIXES = ("Failed", "TimedOut", "Aborted")


@dataclass(frozen=True)
class Levers:
    """What the bill depends on that a team chooses (decision 0022)."""

    saga_log_level: str = "ERROR"  # ALL | ERROR | FATAL | OFF
    saga_execution_data: bool = False
    #: The state machine log group's class: STANDARD | INFREQUENT_ACCESS (half the ingestion price; no
    #: metric filters, EMF or Live Tail, none of which that group needs).
    saga_log_class: str = "STANDARD"
    system_log_level: str = "INFO"  # INFO keeps START and REPORT (Init Duration); WARN drops them
    retention_months: float = 12.0
    #: Share of orders whose W3C trace (our spans, the layer's) is recorded: the sampled flag the edge
    #: mints into the ``traceparent``; the layer's fast-start SDK follows the parent's flag.
    trace_sample_rate: float = 1.0
    #: Traces per order of API Gateway's, Lambda's and Step Functions' own X-Ray segments when they are
    #: not in a sampled W3C trace (X-Ray's default rule, ~5%, decided apart from the edge's flag).
    xray_segment_traces: float = 0.05
    #: X-Ray's default rule also records the first request each second (its reservoir): a fixed monthly
    #: number of traces, whatever the volume (https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html).
    xray_reservoir_per_second: float = 0.0
    #: The functions' application log level: WARN drops the INFO lines (EMF documents are kept, they
    #: carry the metrics).
    app_log_level: str = "INFO"


#: Before issue 30: the state machine logged ALL with execution data, REPORT records were filtered out
#: (WARN); every order's W3C trace recorded (the carriers always sent the sampled flag), X-Ray's own
#: segments in a second trace at X-Ray's default 5% (its reservoir not counted then).
BEFORE = Levers(saga_log_level="ALL", saga_execution_data=True, system_log_level="WARN")
#: The edge's default sampling rate (stacks/order_constructs/api.py TRACE_SAMPLE_PERCENT, decision 0019).
EDGE_RATE = 0.05
#: As deployed (prod): state machine ERROR without data, REPORT records kept, one trace per order sampled
#: once at the edge at 5%; X-Ray's default rule still records its own segments of 5% of the other orders
#: (in the same trace ID, billed once) and one trace a second (reservoir).
CHOSEN = Levers(
    saga_log_class="INFREQUENT_ACCESS",
    trace_sample_rate=EDGE_RATE,
    xray_segment_traces=0.05 * (1 - EDGE_RATE),
    xray_reservoir_per_second=1.0,
)
#: The further lever, not taken (decision 0022): the functions' INFO lines dropped in prod.
WARN_APP_LOGS = Levers(**{**asdict(CHOSEN), "app_log_level": "WARN"})
SECONDS_PER_MONTH = 30 * 24 * 3600


def _gzip6(lines: Iterable[str]) -> int:
    return len(gzip.compress("\n".join(lines).encode("utf-8", "surrogatepass"), compresslevel=6))


def _saga_log_lines(histories: Sequence[tuple[str, list[dict[str, Any]]]], levers: Levers) -> list[str]:
    """The execution log's events at ``levers``' level: each history event as JSON, details without data."""
    lines = []
    for _, events in histories:
        for event in events:
            kind = str(event.get("type", ""))
            if levers.saga_log_level == "OFF" or (
                levers.saga_log_level in ("ERROR", "FATAL") and not kind.endswith(_ERROR_EVENT_SUFFIXES)
            ):
                continue
            if levers.saga_log_level == "FATAL" and not kind.startswith("Execution"):
                continue
            if not levers.saga_execution_data:
                event = {k: _without_data(v) for k, v in event.items()}
            lines.append(json.dumps(event, default=str))
    return lines


def _without_data(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if k not in ("input", "output", "inputDetails", "outputDetails")}
    return value


def _metric_series(lines: Iterable[str]) -> set[tuple[str, str, str]]:
    series = set()
    for line in lines:
        if '"_aws"' not in line:
            continue
        doc = json.loads(line)
        for directive in doc["_aws"].get("CloudWatchMetrics", []):
            for dims in directive.get("Dimensions", []):
                values = json.dumps({d: doc.get(d) for d in dims}, sort_keys=True)
                for metric in directive.get("Metrics", []):
                    series.add((directive.get("Namespace", ""), metric["Name"], values))
    return series


def _logs_usd(
    events: float, raw_bytes: float, compressed_bytes: float, levers: Levers, ingest_per_gb: float = LOGS_INGEST_PER_GB
) -> float:
    ingested = raw_bytes + events * LOG_EVENT_OVERHEAD_BYTES
    stored = compressed_bytes + events * LOG_EVENT_OVERHEAD_BYTES
    return (ingested * ingest_per_gb + stored * LOGS_STORAGE_PER_GB_MONTH * levers.retention_months) / GB


def all_in(
    *,
    pipeline_usd: float,
    orders: int,
    lambda_invocations: int,
    log_lines: Sequence[str],
    histories: Sequence[tuple[str, list[dict[str, Any]]]],
    operations: Mapping[str, int],
    levers: Levers = CHOSEN,
) -> dict[str, Any]:
    """USD per million orders, all in: ``pipeline_usd`` (Step Functions, Lambda, DynamoDB, SQS) plus the
    other services, each line item with the per-order counts it is computed from."""
    n = max(1, orders)
    per_million = 1e6 / n
    log_lines, fn_events, fn_bytes, fn_compressed = _function_logs(log_lines, lambda_invocations, levers)
    saga_lines = _saga_log_lines(histories, levers)
    saga_bytes = sum(len(line.encode()) for line in saga_lines)
    series = _metric_series(log_lines)
    secrets_calls = operations.get("secretsmanager:GetSecretValue", 0)
    monthly_fixed = _monthly_fixed(len(series), levers)
    per_month_to_per_million = 1e6 / ORDERS_PER_MONTH
    items = {
        "pipeline": pipeline_usd,
        "api_gateway_rest": API_PER_MILLION_REQUESTS,  # one POST /orders per order
        "logs_functions": _logs_usd(fn_events, fn_bytes, fn_compressed, levers) * per_million,
        "logs_state_machine": _logs_usd(
            len(saga_lines),
            saga_bytes,
            _gzip6(saga_lines),
            levers,
            LOGS_INGEST_IA_PER_GB if levers.saga_log_class == "INFREQUENT_ACCESS" else LOGS_INGEST_PER_GB,
        )
        * per_million,
        "custom_metrics": monthly_fixed["custom_metrics"] * per_month_to_per_million,
        "traces": (levers.trace_sample_rate + levers.xray_segment_traces) * XRAY_PER_MILLION_TRACES
        + monthly_fixed["xray_reservoir"] * per_month_to_per_million,
        "kms": monthly_fixed["kms"] * per_month_to_per_million,
        "secrets_manager": secrets_calls * per_million * SECRETS_PER_10K_CALLS / 10_000
        + monthly_fixed["secrets"] * per_month_to_per_million,
    }
    rounded = {k: round(v, 2) for k, v in items.items()}
    return {
        "usd_per_million_orders": round(sum(rounded.values()), 2),  # the parts as printed add up to it
        "items": rounded,
        "per_order": {
            "function_log_events": round(fn_events / n, 2),
            "function_log_bytes": round(fn_bytes / n),
            "state_machine_log_events": round(len(saga_lines) / n, 2),
            "state_machine_log_bytes": round(saga_bytes / n),
            "api_requests": 1,
            "traces": round(levers.trace_sample_rate + levers.xray_segment_traces, 4),
            "secrets_manager_calls": round(secrets_calls / n, 4),
        },
        "metric_series": len(series),
        "monthly_fixed_usd": {k: round(v, 2) for k, v in monthly_fixed.items()},
        "orders_per_month_assumed": ORDERS_PER_MONTH,
        "levers": asdict(levers),
    }


def _function_logs(
    log_lines: Sequence[str], lambda_invocations: int, levers: Levers
) -> tuple[Sequence[str], int, int, float]:
    """The functions' log lines the levers keep, and their (events, bytes, compressed bytes) with the
    platform's START/REPORT lines."""
    if levers.app_log_level in ("WARN", "WARNING", "ERROR"):
        log_lines = [line for line in log_lines if '"level": "INFO"' not in line and '"level":"INFO"' not in line]
    platform = 2 if levers.system_log_level in ("INFO", "DEBUG") else 0
    fn_events = len(log_lines) + platform * lambda_invocations
    app_bytes = sum(len(line.encode("utf-8", "surrogatepass")) for line in log_lines)
    fn_bytes = app_bytes + lambda_invocations * (PLATFORM_START_BYTES + PLATFORM_REPORT_BYTES) * (platform // 2)
    fn_compressed = fn_bytes * _gzip6(log_lines) / max(1, app_bytes)  # the app lines' compression ratio
    return log_lines, fn_events, fn_bytes, fn_compressed


def _monthly_fixed(metric_series: int, levers: Levers) -> dict[str, float]:
    """The month's fixed charges (USD), whatever the order count."""
    return {
        "custom_metrics": metric_series * CUSTOM_METRIC_PER_MONTH,
        "secrets": SECRETS * SECRET_PER_MONTH,
        "kms": KMS_KEYED_RESOURCES * KMS_REQUESTS_PER_RESOURCE_PER_MONTH * KMS_PER_10K_REQUESTS / 10_000,
        "xray_reservoir": levers.xray_reservoir_per_second * SECONDS_PER_MONTH * XRAY_PER_MILLION_TRACES / 1e6,
    }
