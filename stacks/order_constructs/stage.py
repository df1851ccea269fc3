"""The order pipeline's stage settings (dev / prod) read once from CDK context, and the stage rules
checked at synth (the app's: which providers, which keys, which e-mail)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Node

from constructs_lib.providers import ProviderEndpoint
from stacks.order_constructs.runbooks import DEFAULT_RUNBOOK_BASE_URL, check_runbook_base_url

__all__ = ["PROD_REQUIRED_KEYS", "PROVIDER_KEYS", "ProviderEndpoint", "StageConfig"]

VALID_STAGES = ("dev", "prod")

#: The context keys of the HTTPS provider adapters (all four or none).
PROVIDER_KEYS = ("payment_api_url", "payment_api_secret_arn", "carrier_api_url", "carrier_api_secret_arn")
#: What ``-c stage=prod`` cannot synthesize without (``otel_layer_arn``: decision 0019).
PROD_REQUIRED_KEYS = (*PROVIDER_KEYS, "webhook_secret_arn", "alarm_email", "otel_layer_arn")

#: AWS's OpenTelemetry Lambda layer, one version ARN: ``arn:aws:lambda:<region>:<account>:layer:
#: AWSOpenTelemetryDistroPython:<version>``. The version is a plain per-region number (look it up
#: with ``aws lambda list-layer-versions`` in the target region), so it comes from context, never
#: from this code. Layer enabled by ``AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument``:
#: https://aws-otel.github.io/docs/getting-started/lambda and
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-Application-Signals-Enable-LambdaMain.html
OTEL_LAYER_ARN = re.compile(
    r"arn:(?P<partition>aws(?:-[a-z]+)*):lambda:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):(?P<account>\d{12}):"
    r"layer:(?P<name>AWSOpenTelemetryDistroPython):(?P<version>[1-9]\d*)"
)

#: ``arn:<partition>:secretsmanager:<region>:<account>:secret:<name>`` (``<name>`` may carry the
#: ``-XXXXXX`` suffix Secrets Manager appends; see :attr:`ProviderEndpoint.secret_resource`).
SECRET_ARN = re.compile(
    r"arn:(?P<partition>aws(?:-[a-z]+)*):secretsmanager:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):"
    r"(?P<account>\d{12}):secret:(?P<name>[A-Za-z0-9/_+=.@-]{1,512})"
)


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(key: str, value: str, *, allow_loopback_http: bool) -> None:
    """``https://`` with a host; in dev also ``http://`` to a loopback address (the local run's
    sandbox served on 127.0.0.1, which the adapter accepts too; prod never)."""
    parts = urlsplit(value)
    loopback_http = allow_loopback_http and parts.scheme == "http" and _is_loopback(parts.hostname or "")
    if (parts.scheme != "https" and not loopback_http) or not parts.hostname or any(c.isspace() for c in value):
        allowed = "an https:// URL (or http:// to 127.0.0.1 in dev)" if allow_loopback_http else "an https:// URL"
        raise ValueError(f"{key} must be {allowed} with a host, got {value!r}")


def _check_secret_arn(key: str, value: str) -> None:
    if not SECRET_ARN.fullmatch(value):
        raise ValueError(
            f"{key} must be a Secrets Manager secret ARN "
            f"(arn:<partition>:secretsmanager:<region>:<account>:secret:<name>), got {value!r}"
        )


#: Default stuck threshold: above the order saga's budgeted execution timeout (9,819 s = 163.7 min: every
#: forward attempt retried as AWS advises for Lambda service errors, 6 times, each Lambda attempt with a
#: failed 10 s Init phase and 2 s of Step Functions latency, plus each forward step's throttle retrier at
#: its worst, 511 s, and its outage retrier at its worst, 1,802 s: issue 40) plus intake's start delay under a
#: sustained StartExecution throttle (40 requeues of at most 60 s, then 5 receives of 180 s: 3,300 s = 55 min):
#: 218.7 min, rounded up to 220. StuckOrderSweeperProps refuses a threshold at or below that sum
#: (stacks/order_constructs/sweeper.py).
DEFAULT_STUCK_AFTER_MINUTES = 220


@dataclass(frozen=True)
class StageConfig:
    """What differs between stages.

    Attributes:
        name: ``dev`` (default) or ``prod``.
        alarm_email: e-mail subscribed to the alarm topic (context ``alarm_email``); required in prod.
        stuck_after_minutes: an order in a non-terminal status for longer than this is stuck
            (context ``stuck_after_minutes``, default 220: above the saga's execution timeout of 9,819 s
            plus intake's start delay of 3,300 s,
            so an order whose saga is still retrying is never reported; StuckOrderSweeperProps checks this).
        payment_api_url, payment_api_secret_arn, carrier_api_url, carrier_api_secret_arn: the
            real providers (context keys of the same names). All four or none; required in prod.
            Without them (dev only) the sandbox provider functions are deployed instead.
        otel_layer_arn: AWS's OpenTelemetry Lambda layer version (context ``otel_layer_arn``,
            :data:`OTEL_LAYER_ARN`); required in prod. With it, every function gets the layer and its
            wrapper (spans exported to X-Ray); without it (dev), the functions keep Lambda's active
            tracing and carry the W3C context, but record no spans of their own (decision 0019).
        intake_throttle_backoff: intake requeues a throttled record with a delay and its event source
            gets a MaximumConcurrency (context ``intake_throttle_backoff``, default true); false
            restores the earlier behaviour (a throttle fails the record) to measure the difference.
        webhook_secret_arn: the Secrets Manager secret of the providers' webhook signing secrets
            (``{"signing_secrets": ["whsec_..."]}``; context ``webhook_secret_arn``); required in prod.
            Without it (dev only) the stack creates a placeholder secret.
        api_account_log_role: this stack owns the account's API Gateway CloudWatch logging role
            (``AWS::ApiGateway::Account``, one per account and Region; context ``api_account_log_role``,
            default false). Deploy exactly one stack per account and Region with it, or set the role
            outside CDK (decision 0018, "As built (issue 29)"); the stage's execution logging needs it.
        runbook_base_url: where every alarm description's runbook link points (context
            ``runbook_base_url``; default the repository-relative ``docs/runbooks/``; an https:// URL
            or a relative path ending with ``/``; ``stacks/order_constructs/runbooks.py``).

    Rules (checked here, so ``cdk synth`` fails before building anything): a known stage; an
    ``https://`` URL with a host (dev may also point at ``http://127.0.0.1``: the local run); a
    Secrets Manager secret ARN; an e-mail address; the four provider keys together; in prod, the
    four provider keys and ``alarm_email``. Every missing key is named in one message.
    """

    name: str = "dev"
    alarm_email: str | None = None
    stuck_after_minutes: int = DEFAULT_STUCK_AFTER_MINUTES
    payment_api_url: str | None = None
    payment_api_secret_arn: str | None = None
    carrier_api_url: str | None = None
    carrier_api_secret_arn: str | None = None
    intake_throttle_backoff: bool = True
    otel_layer_arn: str | None = None
    webhook_secret_arn: str | None = None
    api_account_log_role: bool = False
    runbook_base_url: str = DEFAULT_RUNBOOK_BASE_URL

    def __post_init__(self) -> None:
        if self.name not in VALID_STAGES:
            raise ValueError(f"stage must be one of {VALID_STAGES}, got {self.name!r}")
        if not 1 <= self.stuck_after_minutes <= 24 * 60:
            raise ValueError(f"stuck_after_minutes must be within 1..1440, got {self.stuck_after_minutes}")
        if self.alarm_email is not None and "@" not in self.alarm_email:
            raise ValueError(f"alarm_email does not look like an e-mail address: {self.alarm_email!r}")
        for key in ("payment_api_url", "carrier_api_url"):
            if (value := getattr(self, key)) is not None:
                _check_url(key, value, allow_loopback_http=not self.is_prod)
        for key in ("payment_api_secret_arn", "carrier_api_secret_arn", "webhook_secret_arn"):
            if (value := getattr(self, key)) is not None:
                _check_secret_arn(key, value)
        if self.otel_layer_arn is not None and not OTEL_LAYER_ARN.fullmatch(self.otel_layer_arn):
            raise ValueError(
                "otel_layer_arn must be a version ARN of AWS's OpenTelemetry layer "
                "(arn:aws:lambda:<region>:<account>:layer:AWSOpenTelemetryDistroPython:<version>), "
                f"got {self.otel_layer_arn!r}"
            )
        check_runbook_base_url(self.runbook_base_url)
        if self.is_prod:
            missing = [key for key in PROD_REQUIRED_KEYS if not getattr(self, key)]
            if missing:
                raise ValueError(
                    f"stage=prod requires context keys missing here: {', '.join(missing)} "
                    "(prod runs against real providers and must alert someone; pass each with -c key=value)"
                )
        given = [key for key in PROVIDER_KEYS if getattr(self, key)]
        if given and len(given) < len(PROVIDER_KEYS):
            missing = [key for key in PROVIDER_KEYS if key not in given]
            raise ValueError(
                f"the HTTPS provider adapters need all four provider context keys; missing: {', '.join(missing)}"
            )

    @property
    def is_prod(self) -> bool:
        return self.name == "prod"

    @property
    def removal_policy(self) -> RemovalPolicy:
        return RemovalPolicy.RETAIN if self.is_prod else RemovalPolicy.DESTROY

    @property
    def deletion_protection(self) -> bool:
        return self.is_prod

    @property
    def payment_api(self) -> ProviderEndpoint | None:
        """The real payment provider, or None (dev without the keys: the sandbox)."""
        if self.payment_api_url and self.payment_api_secret_arn:
            return ProviderEndpoint(self.payment_api_url, self.payment_api_secret_arn)
        return None

    @property
    def carrier_api(self) -> ProviderEndpoint | None:
        """The real carrier, or None (dev without the keys: the sandbox)."""
        if self.carrier_api_url and self.carrier_api_secret_arn:
            return ProviderEndpoint(self.carrier_api_url, self.carrier_api_secret_arn)
        return None

    @property
    def uses_sandbox(self) -> bool:
        """Deploy the sandbox providers (their functions, ledger table and code): dev without provider keys."""
        return self.payment_api is None

    @property
    def customer_managed_keys(self) -> bool:
        """Encrypt order data and logs with a customer-managed KMS key (prod); dev keeps AWS-owned keys."""
        return self.is_prod

    @property
    def log_retention(self) -> logs.RetentionDays:
        """Audit-relevant logs (functions, state machine): one year in prod, one month in dev."""
        return logs.RetentionDays.ONE_YEAR if self.is_prod else logs.RetentionDays.ONE_MONTH

    @property
    def saga_log_level(self) -> sfn.LogLevel:
        """The state machine's execution logging: ERROR in prod (failed executions' error events only:
        the per-state timeline of every execution stays in its execution history, 90 days,
        https://docs.aws.amazon.com/step-functions/latest/dg/limits-overview.html), ALL in dev.
        Decision 0022: ALL with data is about 20 history events of ~1 KB per order, the largest line of
        the bill after Step Functions itself."""
        return sfn.LogLevel.ERROR if self.is_prod else sfn.LogLevel.ALL

    @property
    def saga_log_class(self) -> logs.LogGroupClass:
        """The state machine log group's class: Infrequent Access in prod (half the ingestion price; its
        ERROR events are read when an execution failed, by Logs Insights, which IA keeps; nothing extracts
        metrics from it), Standard in dev (Live Tail). Decision 0022."""
        return logs.LogGroupClass.INFREQUENT_ACCESS if self.is_prod else logs.LogGroupClass.STANDARD

    @property
    def saga_execution_data(self) -> bool:
        """Inputs and outputs in the execution log: dev only (decision 0022)."""
        return not self.is_prod

    @classmethod
    def from_context(cls, node: Node) -> StageConfig:
        """Read the stage settings from CDK context (``-c stage=prod -c alarm_email=a@b.c ...``).

        An empty value (``-c alarm_email=``) counts as not given.
        """

        def text(key: str) -> str | None:
            value = node.try_get_context(key)
            if value is None:
                return None
            return str(value).strip() or None

        stuck = node.try_get_context("stuck_after_minutes")
        stuck = DEFAULT_STUCK_AFTER_MINUTES if stuck is None or stuck == "" else stuck
        try:
            stuck_minutes = int(stuck)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"stuck_after_minutes must be an integer, got {stuck!r}") from exc
        return cls(
            name=str(node.try_get_context("stage") or "dev"),
            alarm_email=text("alarm_email"),
            stuck_after_minutes=stuck_minutes,
            payment_api_url=text("payment_api_url"),
            payment_api_secret_arn=text("payment_api_secret_arn"),
            carrier_api_url=text("carrier_api_url"),
            carrier_api_secret_arn=text("carrier_api_secret_arn"),
            intake_throttle_backoff=(text("intake_throttle_backoff") or "true").lower()
            not in ("false", "0", "no", "off"),
            otel_layer_arn=text("otel_layer_arn"),
            webhook_secret_arn=text("webhook_secret_arn"),
            api_account_log_role=(text("api_account_log_role") or "false").lower() in ("true", "1", "yes", "on"),
            runbook_base_url=text("runbook_base_url") or DEFAULT_RUNBOOK_BASE_URL,
        )
