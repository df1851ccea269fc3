"""``ops resolve <order-id> --outcome completed|compensated --reason "..."``: close a parked order after a
person acted outside the system (refunded in the processor's dashboard, let the customer keep a parcel
the carrier would not recall, shipped a replacement by hand).

One conditional write of the order (``order_domain.operator_actions.move``): NEEDS_ATTENTION -> the
outcome, only if the order is still as read and no other actor's lease is live, with a history entry
(who: the caller's IAM principal; when; why: the reason, which must hold no customer data). The
attempt counts as reconciled: a person vouched for it, so the sweeper does not page on it
(docs/decisions/0029). Refused (:class:`ResolveRefused`, one line, exit status 2, nothing written):
an unknown order, an order that is not parked (``ops repair`` is for those), a reason that is empty,
too long or holds customer data, and an order another actor holds or that moved meanwhile.
"""

from __future__ import annotations

import json
from typing import Any

from ops.errors import OpsError
from ops.repair import REPAIR_HOLDER, execution_status, load_order, operator_arn
from ops.target import Target

OUTCOMES = ("completed", "compensated")


class ResolveRefused(OpsError):
    """The resolve would be wrong or unsafe; the message says what, why, and what to do instead."""


def resolve(target: Target, order_id: str, outcome: str, reason: str) -> dict[str, Any]:
    """Record ``outcome`` for the parked order ``order_id``; returns what was recorded."""
    from order_domain import clock, lease, operator_actions
    from order_domain.status import OrderStatus

    if outcome not in OUTCOMES:
        raise ResolveRefused(f"--outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    order = load_order(target, order_id)
    if order is None:
        raise ResolveRefused(
            f"cannot resolve order {order_id}: not in the orders table; check the order ID and --stack"
        )
    status = str(order.get("status"))
    if status != OrderStatus.NEEDS_ATTENTION.value:
        raise ResolveRefused(
            f"refusing to resolve order {order_id}: it is {status}, not parked (NEEDS_ATTENTION); "
            + ("nothing to resolve" if status in ("COMPLETED", "COMPENSATED") else "use ops repair")
        )
    problem = operator_actions.reason_problem(reason, order.get("order"))
    if problem:
        raise ResolveRefused(f"refusing to resolve order {order_id}: {problem}")
    other = lease.held_by_other(order, "-")
    # A repair whose execution parked the order again still holds its lease: replaced once it ended.
    replaces = other if other and other.startswith(REPAIR_HOLDER) else None
    if replaces is not None and execution_status(target, replaces[len(REPAIR_HOLDER) :]) != "RUNNING":
        other = None
    to, attempt = OrderStatus(outcome.upper()), int(order.get("payment_attempt", 1))
    by = operator_arn(target)
    made = operator_actions.entry(to, attempt, by=by, action="resolve", reason=reason)
    vouched = {"at": clock.iso(), "attempt": attempt, "findings": [], "resolved_by": by}
    moved = other is None and operator_actions.move(
        target.client("dynamodb"),
        target.output("OrdersTableName"),
        order,
        to,
        made,
        replaces=replaces,
        also={"reconciled": vouched},
        append={"reconciled_attempts": [attempt]},
    )
    if not moved:
        raise ResolveRefused(
            f"refusing to resolve order {order_id}: "
            + (f"{other} is handling it" if other else "it changed while this command looked at it")
            + "; run the command again to see its status"
        )
    return {"order_id": order_id, "result": "resolved", "status": to.value, "payment_attempt": attempt, "by": by}


def add_parser(commands: Any, target_arguments: Any) -> None:
    """The ``resolve`` command's arguments (``target_arguments``: the CLI's --stack/--region/... adder)."""
    parser = commands.add_parser(
        "resolve",
        help="close a parked (NEEDS_ATTENTION) order a person settled outside the system, with the outcome "
        "and why (anything else is refused: exit 2)",
    )
    parser.add_argument("order_id")
    parser.add_argument(
        "--outcome",
        required=True,
        choices=OUTCOMES,
        help="completed: the customer keeps the goods and we keep the money; compensated: money and goods went back",
    )
    parser.add_argument(
        "--reason",
        required=True,
        help="what was done and where (e.g. a ticket); kept on the order, so no customer data",
    )
    target_arguments(parser)


def run(target: Target, args: Any) -> int:
    """The CLI's ``resolve``: print what was recorded (a refusal is an :class:`OpsError`: one line, exit 2)."""
    print(json.dumps(resolve(target, args.order_id, args.outcome, args.reason), indent=2))
    return 0
