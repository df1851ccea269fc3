"""``tools/rehearse_saga.py``: on MiniStack, whose functions' errors are all ``Runtime.HandlerError``, the forward
steps' ``States.ALL`` goes to their compensations (as the named business errors do on AWS), tokens kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.rehearse_saga import compensate_unknown_errors

ASL = Path(__file__).resolve().parents[1] / "explore" / "saga.asl.json"
TOKEN = {"Fn::GetAtt": ["ChargeFunction", "Arn"]}


def _template() -> tuple[dict[str, Any], str]:
    """A template whose state machine is the exported saga, one function ARN a token again (as CDK writes it)."""
    text = json.dumps(json.loads(ASL.read_text()), separators=(",", ":"))
    arn = json.loads(text)["States"]["ChargePayment"]["Resource"]
    head, tail = text.split(arn, 1)
    machine = {
        "Type": "AWS::StepFunctions::StateMachine",
        "Properties": {"DefinitionString": {"Fn::Join": ["", [head, TOKEN, tail]]}},
    }
    return {"Resources": {"Saga": machine, "Topic": {"Type": "AWS::SNS::Topic"}}}, arn


def _definition(template: dict[str, Any], arn: str) -> dict[str, Any]:
    parts = template["Resources"]["Saga"]["Properties"]["DefinitionString"]["Fn::Join"][1]
    assert parts.count(TOKEN) == 1  # the token is kept, in place
    return dict(json.loads("".join(arn if p == TOKEN else p for p in parts)))


def _last_catch(definition: dict[str, Any], state: str) -> tuple[list[str], str, str]:
    caught = definition["States"][state]["Catch"][-1]
    return caught["ErrorEquals"], caught["Next"], caught["ResultPath"]


def test_rehearse_saga_routes_the_forward_catch_all_to_each_compensation() -> None:
    template, arn = _template()
    before = _definition(template, arn)
    assert _last_catch(before, "ChargePayment") == (["States.ALL"], "MarkNeedsAttention", "$.compensation_error")
    assert compensate_unknown_errors(template) == ["ReserveInventory", "ChargePayment", "ShipOrder"]
    after = _definition(template, arn)
    assert _last_catch(after, "ReserveInventory") == (["States.ALL"], "ReleaseInventory", "$.error")
    assert _last_catch(after, "ChargePayment") == (["States.ALL"], "RefundPayment", "$.error")
    assert _last_catch(after, "ShipOrder") == (["States.ALL"], "CancelShipment", "$.error")
    # Nothing else moves: the compensations still park when they fail.
    for name in set(before["States"]) - {"ReserveInventory", "ChargePayment", "ShipOrder"}:
        assert after["States"][name] == before["States"][name], name
