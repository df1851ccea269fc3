"""The stuck-order sweeper: every 5 minutes it finishes or parks stuck orders and reconciles recently
terminal ones with the providers' records (lambdas/order_domain/sweeper.py); it alarms on both."""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

import order_domain.env as env
from constructs_lib.alarms import first_occurrence_alarm
from constructs_lib.dashboard import DashboardGraph
from constructs_lib.logical_ids import TransparentScope, keep_rule_permission_id
from order_domain.reconcile_sizing import RECONCILE_WINDOW_SECONDS, SWEEP_SECONDS, SWEEPER_TIMEOUT_SECONDS
from stacks.order_constructs.data import BY_STATUS_INDEX, UNSETTLED_INDEX
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import DDB_ORDER_STEP, grant_index_query, grant_items, grant_queue
from stacks.order_constructs.providers import OrderProviders

#: Metrics the sweeper emits (lambdas/sweeper/handler.py) under service=sweeper.
STUCK_ORDERS_METRIC = "StuckOrders"
SIDE_EFFECT_MISMATCHES_METRIC = "SideEffectMismatches"
#: One per run (its alarm treats missing data as breaching) and the NEEDS_ATTENTION orders at each run.
SWEEPER_RUNS_METRIC = "SweeperRuns"
PARKED_ORDERS_METRIC = "ParkedOrders"
#: Orders a sweep had no time or capacity for (left to the next sweep): a ticket, before they leave the window.
SWEEP_DEFERRED_METRIC = "SweepDeferred"
#: The sweeper reconciles orders that became terminal this recently (three 5-minute sweeps).
SWEEP_RECONCILE_WINDOW_SECONDS = RECONCILE_WINDOW_SECONDS
#: SweepDeferred tickets when every sweep of this many heartbeat windows (two sweeps each) deferred orders: three
#: windows, 30 minutes, two reconcile windows. M out of N with M = N: a missing window (a fresh deploy) is no breach.
SWEEP_DEFERRED_WINDOWS = 3
#: A sweep makes provider lookups per order, paced below the provider's read limit; it stops taking orders
#: order_domain.reconcile_sizing.RESERVE_SECONDS before this timeout, which ends before the next sweep starts
#: (every 5 minutes: two sweeps never check one attempt at once), and leaves the rest to the next sweep.
SWEEPER_TIMEOUT = Duration.seconds(SWEEPER_TIMEOUT_SECONDS)
SWEEP_RATE = Duration.seconds(SWEEP_SECONDS)


#: The heartbeat and parked-orders alarms' period: two sweeps, so every aligned period holds a run
#: whatever the schedule's offset (docs/decisions/0023).
DEFAULT_HEARTBEAT_WINDOW = Duration.minutes(10)


def _sweeper_metric(
    namespace: str, name: str, statistic: str, label: str | None = None, period: Duration = SWEEP_RATE
) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=name,
        dimensions_map={"service": "sweeper"},
        statistic=statistic,
        period=period,
        label=label,
    )


@dataclass(frozen=True)
class StuckOrderSweeperProps:
    """Props for :class:`StuckOrderSweeper`.

    Attributes:
        functions: the order functions' defaults.
        orders_table: read through its ``by-status`` index, items read and moved like a saga step.
        state_machine: its RUNNING executions are listed (a running order is not stuck).
        saga_timeout: the saga's execution timeout: ``stuck_after_minutes`` must exceed it.
        needs_attention_queue: where parked and mismatched orders are announced.
        providers: looked up to reconcile terminal orders.
        stuck_after_minutes: an order non-terminal for longer is stuck (1..1440).
        start_delay: how long intake may hold an order RECEIVED before its execution starts (throttle
            requeues, then redeliveries); ``stuck_after_minutes`` must exceed it plus the saga timeout.
            Default 0.
        heartbeat_window: the period of the heartbeat alarm (a sweeper that has not run in a whole period
            pages: the alarm's INSUFFICIENT_DATA action) and of the parked-orders alarm; at least two sweep
            intervals, whole minutes. Default 10 minutes.
    """

    functions: OrderFunctionDefaults
    orders_table: dynamodb.ITable
    state_machine: sfn.IStateMachine
    saga_timeout: Duration
    needs_attention_queue: sqs.IQueue
    providers: OrderProviders
    stuck_after_minutes: int
    start_delay: Duration = field(default_factory=lambda: Duration.seconds(0))
    heartbeat_window: Duration = field(default_factory=lambda: DEFAULT_HEARTBEAT_WINDOW)

    def __post_init__(self) -> None:
        window = self.heartbeat_window.to_seconds()
        if window < 2 * SWEEP_RATE.to_seconds() or window % 60:
            raise ValueError(
                f"heartbeat_window ({int(window)} s) must be whole minutes and at least two sweep intervals "
                f"({int(2 * SWEEP_RATE.to_seconds())} s): a period may fall between two runs otherwise"
            )
        budget = self.saga_timeout.to_seconds() + self.start_delay.to_seconds()
        if self.stuck_after_minutes * 60 <= budget:
            raise ValueError(
                f"stuck_after_minutes ({self.stuck_after_minutes}) must exceed the saga timeout "
                f"({int(self.saga_timeout.to_seconds())} s) plus intake's start delay "
                f"({int(self.start_delay.to_seconds())} s): a retrying saga is not stuck"
            )


class StuckOrderSweeper(TransparentScope):
    """The sweeper function on a 5-minute schedule, its errors alarm (a failing sweeper reports no
    stuck orders), the ``StuckOrders`` and ``SideEffectMismatches`` alarms (Maximum > 0 in two sweeps),
    and its dashboard graph; all registered on the monitoring facade.

    Attributes:
        function: the sweeper ``PipelineFunction``.
        sweep_rule: the schedule.
        stuck_alarm, mismatch_alarm, errors_alarm, heartbeat_alarm, parked_alarm, deferred_alarm: its alarms.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: StuckOrderSweeperProps) -> None:
        super().__init__(scope, construct_id)
        self.function = props.functions.create(
            self,
            "Sweeper",
            "sweeper",
            {
                env.ORDERS_TABLE_NAME: props.orders_table.table_name,
                env.STUCK_AFTER_SECONDS: str(props.stuck_after_minutes * 60),
                env.RECONCILE_WINDOW_SECONDS: str(SWEEP_RECONCILE_WINDOW_SECONDS),
                env.STATE_MACHINE_ARN: props.state_machine.state_machine_arn,
                env.NEEDS_ATTENTION_QUEUE_URL: props.needs_attention_queue.queue_url,
            },
            timeout=SWEEPER_TIMEOUT,
            alarm_description="the stuck-order sweeper is failing (stuck orders would go unreported)",
            idempotency_metrics=False,
        )
        assert self.function.errors_alarm is not None  # the defaults always give an alarm topic
        self.errors_alarm = self.function.errors_alarm
        self._grant(props)
        self.sweep_rule = events.Rule(
            self,
            "SweepSchedule",
            schedule=events.Schedule.rate(SWEEP_RATE),
            targets=[targets.LambdaFunction(self.function.function, retry_attempts=2)],
        )
        keep_rule_permission_id(self.sweep_rule, self.function.function)
        self._alarms(props)

    def _grant(self, props: StuckOrderSweeperProps) -> None:
        fn = self.function.function
        grant_index_query(props.orders_table, BY_STATUS_INDEX, fn)
        grant_index_query(props.orders_table, UNSETTLED_INDEX, fn)  # order_domain.settle_poll
        grant_items(props.orders_table, fn, *DDB_ORDER_STEP, "dynamodb:BatchGetItem")  # reconcile_reads' filter
        grant_queue(props.needs_attention_queue, fn, "sqs:SendMessage")
        fn.add_to_role_policy(
            iam.PolicyStatement(actions=["states:ListExecutions"], resources=[props.state_machine.state_machine_arn])
        )
        props.providers.connect_payment(self.function)
        props.providers.connect_carrier(self.function)

    def _deferred_alarm(self, props: StuckOrderSweeperProps) -> cloudwatch.Alarm:
        """A ticket (runbooks.py) when *every* sweep of :data:`SWEEP_DEFERRED_WINDOWS` heartbeat windows deferred
        orders: ``Minimum`` of ``SweepDeferred`` > 0 in 3 of 3 periods (each sweep publishes it, 0 included;
        "M out of N": https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html).
        One deferral is no incident: the next sweep takes the oldest first, and a burst (``make chaos``'s first
        drain: 2, 27, 257, 164, then 0; or 40 at the first sweep after a deploy) is caught up within a reconcile
        window; ``Maximum`` > 0 ticketed it, a notification nobody acts on. Deferral that outlasts two windows is
        the capacity problem the runbook is for, ticketed once for as long as it lasts: the capacity covers twice
        the seeds' average rate (order_domain.reconcile_sizing), so a peak such as the seeds' Black Friday raises it
        (expected: its orders are settled by the webhooks), as do slow lookups or a lasting rise. A stopped sweeper
        publishes nothing (missing, not breaching): that is the heartbeat's page."""
        window = props.heartbeat_window
        metric = _sweeper_metric(props.functions.metrics_namespace, SWEEP_DEFERRED_METRIC, "Minimum", period=window)
        alarm = first_occurrence_alarm(
            self,
            "SweepDeferredAlarm",
            metric,
            f"every sweep of the last {int(window.to_minutes()) * SWEEP_DEFERRED_WINDOWS} minutes left orders to a "
            "later sweep (no time or reconciliation capacity left: above twice the average order rate it is sized "
            "for, a peak, or slow provider lookups): terminal orders leave the reconcile window unchecked and "
            "unsettled effects are polled late",
            props.functions.alarm_topic,
        )
        cfn = alarm.node.default_child
        assert isinstance(cfn, cloudwatch.CfnAlarm)
        cfn.evaluation_periods = cfn.datapoints_to_alarm = SWEEP_DEFERRED_WINDOWS
        return alarm

    def _alarms(self, props: StuckOrderSweeperProps) -> None:
        topic, ns = props.functions.alarm_topic, props.functions.metrics_namespace
        window = props.heartbeat_window  # two sweeps: a 5-minute period fed by a 5-minute sweep may hold no run
        stuck = _sweeper_metric(ns, STUCK_ORDERS_METRIC, "Maximum", period=window)
        self.stuck_alarm = first_occurrence_alarm(
            self,
            "StuckOrdersAlarm",
            stuck,
            f"orders non-terminal for more than {props.stuck_after_minutes} minutes",
            topic,
        )
        self.mismatch_alarm = first_occurrence_alarm(
            self,
            "SideEffectMismatchAlarm",
            _sweeper_metric(ns, SIDE_EFFECT_MISMATCHES_METRIC, "Maximum", period=window),
            "a COMPLETED or COMPENSATED order whose provider records disagree (see the needs-attention queue)",
            topic,
        )
        self.heartbeat_alarm = cloudwatch.Alarm(
            self,
            "SweeperHeartbeatAlarm",
            alarm_description=f"the stuck-order sweeper has not run in {int(window.to_minutes())} minutes "
            "(stuck and parked orders go unreported)",
            metric=_sweeper_metric(ns, SWEEPER_RUNS_METRIC, "Sum", period=window),
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=1,
            # Not BREACHING: a new alarm would page before the first sweep of every fresh deploy. A period
            # without a run moves OK -> INSUFFICIENT_DATA, and that transition pages (docs/decisions/0023).
            treat_missing_data=cloudwatch.TreatMissingData.MISSING,
        )
        for add in (self.heartbeat_alarm.add_insufficient_data_action, self.heartbeat_alarm.add_alarm_action):
            add(cw_actions.SnsAction(topic))
        self.parked_alarm = first_occurrence_alarm(
            self,
            "ParkedOrdersAlarm",
            _sweeper_metric(ns, PARKED_ORDERS_METRIC, "Maximum", period=window),
            "orders parked in NEEDS_ATTENTION (announced for as long as they are parked; each is a message on the "
            "needs-attention queue, naming the order)",
            topic,
        )
        _keep_state_through_missing_data(self.parked_alarm)
        self.deferred_alarm = self._deferred_alarm(props)
        monitoring = props.functions.monitoring
        monitoring.add_alarms(
            (self.stuck_alarm, self.mismatch_alarm, self.heartbeat_alarm, self.parked_alarm, self.deferred_alarm)
        )
        monitoring.add_graph(
            DashboardGraph(
                "Stuck orders (sweeper): found, finished, parked; side-effect mismatches",
                [
                    stuck.with_(label="Stuck orders"),
                    _sweeper_metric(ns, "StuckOrdersFinished", "Sum", "Finished (COMPLETED)"),
                    _sweeper_metric(ns, "StuckOrdersParked", "Sum", "Parked (NEEDS_ATTENTION)"),
                    _sweeper_metric(ns, SIDE_EFFECT_MISMATCHES_METRIC, "Sum", "Side-effect mismatches"),
                ],
                label="orders",
            )
        )


def _keep_state_through_missing_data(alarm: cloudwatch.Alarm) -> None:
    """``TreatMissingData: ignore`` for a level of the orders the sweeper publishes (ParkedOrders): the orders stay
    parked while the sweeper does not run, and "the current alarm state is maintained"
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarms-and-missing-data).
    Not breaching moved it, and OrdersAtRisk, to OK during a stop, and the first sweep after it notified again;
    the heartbeat pages for the stop (issue 41)."""
    cfn = alarm.node.default_child
    assert isinstance(cfn, cloudwatch.CfnAlarm)
    cfn.treat_missing_data = "ignore"
