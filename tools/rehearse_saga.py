"""``make rehearse``: the saga's forward catch-all routed to the compensations, for MiniStack only.

MiniStack 1.5.33 names every error a function raises ``Runtime.HandlerError`` (its ``services/lambda_svc.py``),
where AWS names it by the exception's class (https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html)
and Step Functions matches ``ErrorEquals`` against that name
(https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). So on MiniStack no business
catch matches: a declined card reaches each forward step's ``States.ALL``, which parks the order (decision 0034).
The rehearsal routes that catch to the step's compensation, where the named business error goes on AWS, so the
smoke test's declined and undeliverable orders are compensated as on AWS; everything else is deployed as
synthesized. docs/deploy.md lists it among the differences.
"""

from __future__ import annotations

import json
import re
from typing import Any

from stacks.order_constructs.saga_errors import COMPENSATE_ON

STATE_MACHINE = "AWS::StepFunctions::StateMachine"
_PLACEHOLDER = "@@token{}@@"


def compensate_unknown_errors(template: dict[str, Any]) -> list[str]:
    """Rewrite, in place, each forward step's ``States.ALL`` catch to the target and path of its ``compensate_on``
    catch (its compensation); the states rewritten, in the order the saga runs them."""
    rewritten: list[str] = []
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != STATE_MACHINE:
            continue
        props = resource["Properties"]
        definition, tokens = _parse(props["DefinitionString"])
        for name, errors in COMPENSATE_ON.items():
            catches = definition["States"].get(name, {}).get("Catch", [])
            named = next((c for c in catches if c["ErrorEquals"] == list(errors)), None)
            if named is None or not catches or catches[-1]["ErrorEquals"] != ["States.ALL"]:
                continue
            catches[-1].update(Next=named["Next"], ResultPath=named["ResultPath"])
            rewritten.append(name)
        props["DefinitionString"] = _render(definition, tokens)
    return rewritten


def _parse(definition: Any) -> tuple[dict[str, Any], list[Any]]:
    """The definition's JSON, each intrinsic (a Ref, a GetAtt) replaced by a placeholder string; the intrinsics."""
    if isinstance(definition, str):
        return json.loads(definition), []
    parts = definition["Fn::Join"][1]
    tokens = [p for p in parts if not isinstance(p, str)]
    placeholders = iter(range(len(tokens)))
    text = "".join(p if isinstance(p, str) else _PLACEHOLDER.format(next(placeholders)) for p in parts)
    return json.loads(text), tokens


def _render(definition: dict[str, Any], tokens: list[Any]) -> Any:
    """The definition back as the template holds it: a string, or an ``Fn::Join`` around its intrinsics."""
    text = json.dumps(definition, separators=(",", ":"))
    if not tokens:
        return text
    pieces = re.split(r"@@token(\d+)@@", text)
    parts: list[Any] = []
    for i, piece in enumerate(pieces):
        parts.append(tokens[int(piece)] if i % 2 else piece)
    return {"Fn::Join": ["", [p for p in parts if p != ""]]}
