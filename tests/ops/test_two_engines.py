"""Every mapping template and gateway response of the synthesized order API rendered on two engines,
Apache Velocity 1.7 with API Gateway's variables (``velocity_engine``) and the local data plane's
(``local_cloud.apigateway.vtl``, airspeed), over a corpus of requests (docs/local-run.md, "Two
engines"): charset suffixes, unicode, quotes and control characters in every header and field,
query-string overrides, bodies at each size limit. The outputs and the overrides must be equal."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_cloud.apigateway.vtl import java_values, render, substitute, template_variables
from order_domain.model import MAX_BODY_BYTES
from stacks.order_constructs.api_mapping import JSON_CONTENT_TYPES
from tests.infra.conftest import SynthResult, join_to_string, synth_pipeline
from tests.ops.velocity_engine import Case, compile_engine, render_all

ORDER: dict[str, Any] = {
    "order_id": "order-123",
    "customer_id": "c-1",
    "currency": "EUR",
    "payment_token": "tok_1",
    "items": [{"sku": "SKU-1", "quantity": 1, "unit_price_cents": 100}],
    "shipping_address": {"name": "Ada", "line1": "1 Road", "city": "X", "postcode": "1", "country": "GB"},
}
CALLER = "arn:aws:iam::123456789012:user/checkout"
ROLE_SESSION = "arn:aws:sts::123456789012:assumed-role/checkout/i-0abc"
#: What a header or a field may hold: quotes, backslashes, separators, unicode (one BMP, one astral),
#: control characters, lengths at the bounds.
HOSTILE = [
    "a~b*c",
    'a"b',
    "a'b",
    "a\\b",
    "a,b:c",
    "é",
    "😀",
    "a\x01b",
    "tab\tx",
    "",
    " ",
    "x" * 128,
    "x" * 129,
    "k" * 256,
]
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(tmp_path_factory.mktemp("cdk-two-engines"), stage="dev")


@pytest.fixture(scope="module")
def velocity(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_engine(tmp_path_factory.mktemp("velocity-build"))


def _templates(dev: SynthResult) -> dict[str, str]:
    """``{"POST request": ..., "POST 400": ..., "gateway BAD_REQUEST_BODY": ...}``: every template."""
    found: dict[str, str] = {}
    for method in dev.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        verb, integration = props["HttpMethod"], props["Integration"]
        if integration["Type"] == "AWS_PROXY":  # the providers' webhook: no template, the function answers
            continue
        requests = {join_to_string(t) for t in integration["RequestTemplates"].values()}
        assert len(requests) == 1, "every content type has the same request template"
        found[f"{verb} request"] = requests.pop()
        for response in integration["IntegrationResponses"]:
            for template in response.get("ResponseTemplates", {}).values():
                found[f"{verb} {response.get('SelectionPattern') or 'default'}"] = join_to_string(template)
    for response in dev.of_type("AWS::ApiGateway::GatewayResponse").values():
        for template in response["Properties"]["ResponseTemplates"].values():
            found[f"gateway {response['Properties']['ResponseType']}"] = template
    return found


def _context(caller: str = CALLER, **path: str) -> dict[str, Any]:
    return {
        "requestId": "0af76519-16cd-43dd-8448-eb211c80319c",
        "extendedRequestId": "Xa1b2C3d4E5f6G=",
        "path": "/v1/orders",
        "identity": {"userArn": caller},
        "error": {"message": "", "messageString": '""', "responseType": "", "validationErrorString": ""},
        "requestOverride": {"path": dict(path), "header": {}, "querystring": {}},
        "responseOverride": {"status": "", "header": {}},
    }


def _params(header: dict[str, str] | None = None, query: dict[str, str] | None = None, **path: str) -> dict[str, Any]:
    return {"path": dict(path), "querystring": dict(query or {}), "header": dict(header or {})}


def _padded(size: int, char: str = " ") -> str:
    """A JSON body of ``size`` bytes: trailing whitespace, or ``char`` repeated inside ``customer_id``."""
    if char == " ":
        text = json.dumps(ORDER)
        return text + " " * (size - len(text.encode()))
    text = json.dumps({**ORDER, "customer_id": ""}, ensure_ascii=False)
    pad, rest = divmod(size - len(text.encode()), len(char.encode()))
    body = json.dumps({**ORDER, "customer_id": char * pad + "x" * rest}, ensure_ascii=False)
    assert len(body.encode()) == size
    return body


def _post_requests() -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    body = json.dumps(ORDER)
    key = {"Idempotency-Key": "k1"}
    for name in ("X-Correlation-Id", "Idempotency-Key", "traceparent"):
        for value in HOSTILE:
            yield f"header {name}={value!r}", body, _params({**key, name: value}), _context()
        yield f"header {name} lower-case", body, _params({**key, name.lower(): "v-1"}), _context()
        yield f"query overrides {name}", body, _params({**key, name: "h-1"}, {name: "forged"}), _context()
    yield "traceparent valid", body, _params({**key, "traceparent": TRACEPARENT}), _context()
    for xray in (  # the stage's X-Ray trace seeds the traceparent; the last two hex digits: sampled or not
        "Root=1-5759e988-bd862e3fe1be46a994272700;Parent=53995c3f42cd8ad8;Sampled=1",
        "Root=1-5759e988-bd862e3fe1be46a9942727ff;Parent=53995c3f42cd8ad8;Sampled=0",
        "Root=1-5759e988-bd862e3fe1be46a99427270c",
        "1-5759e988-bd862e3fe1be46a99427270d;Parent=53995c3f42cd8ad8",
        "Root=1-5759E988-nothex",
        "",
    ):
        yield f"xrayTraceId={xray!r}", body, _params(key), {**_context(), "xrayTraceId": xray}
    yield "idempotency key as sf-string", body, _params({"Idempotency-Key": '"k-1"'}), _context()
    yield "assumed-role caller", body, _params(key), _context(ROLE_SESSION)
    for content_type in JSON_CONTENT_TYPES:
        yield f"content type {content_type}", body, _params({**key, "Content-Type": content_type}), _context()
    for field in ("customer_id", "payment_token"):
        for value in HOSTILE:
            yield f"field {field}={value!r}", json.dumps({**ORDER, field: value}), _params(key), _context()
    yield (
        "unicode body, not escaped",
        json.dumps({**ORDER, "customer_id": "é😀"}, ensure_ascii=False),
        _params(key),
        _context(),
    )
    for missing in ORDER:
        rest = {k: v for k, v in ORDER.items() if k != missing}
        yield f"missing {missing}", json.dumps(rest), _params(key), _context()
    for size in (MAX_BODY_BYTES - 1, MAX_BODY_BYTES, MAX_BODY_BYTES + 1):
        yield f"body of {size} bytes", _padded(size), _params(key), _context()
    yield "body over the limit in 2-byte characters", _padded(MAX_BODY_BYTES + 2, "é"), _params(key), _context()
    yield "body at the limit in 2-byte characters", _padded(MAX_BODY_BYTES, "é"), _params(key), _context()


def _post_responses() -> Iterator[tuple[str, str, str, dict[str, Any], dict[str, Any]]]:
    sent = {"SendMessageResponse": {"SendMessageResult": {"MessageId": "m-1/é"}}}
    stash = {"order_id": "order-123", "correlation_id": "cid-1", "idempotency_key": "k1"}
    errors = {
        "too long": {
            "Error": {"Code": "InvalidParameterValue", "Message": "Message must be shorter than 69632 bytes."}
        },
        "other": {"Error": {"Code": 'Bad"Code', "Message": "x"}},
    }
    for label, path in (("stash", stash), ("no stash", {})):
        for name, value in (("X-Correlation-Id", "h-1"), ("X-Correlation-Id", 'a"b')):
            params = _params({name: value}, {name: "forged"})
            yield f"2xx {label} {value!r}", r"2\d{2}", json.dumps(sent), params, _context(**path)
            for error, body in errors.items():
                yield f"400 {error} {label} {value!r}", "400", json.dumps(body), params, _context(**path)
            yield f"5xx {label} {value!r}", r"5\d{2}", json.dumps(errors["other"]), params, _context(**path)
            yield f"default {label} {value!r}", "default", "{}", params, _context(**path)
    invalid_action = json.dumps({"Error": {"Code": "InvalidAction", "Message": "no"}})
    for refused, detail in (
        ("400", "Idempotency-Key must be 1 to 255 characters of A-Za-z0-9._~+/=:-"),
        ("413", "over"),
    ):
        context = _context(**stash, refused=refused, refused_detail=detail)
        yield f"400 refused {refused}", "400", invalid_action, _params(), context


def _get_cases() -> Iterator[tuple[str, str, str, dict[str, Any], dict[str, Any]]]:
    for order_id in ("order-123", "../x", 'a"b', "a b", "é", ""):
        yield f"request id={order_id!r}", "request", "", _params(id=order_id), _context()
        yield f"400 id={order_id!r}", "400", '{"__type":"ValidationException"}', _params(id=order_id), _context()
    yield "400 throttled", "400", '{"__type":"x#ThrottlingException"}', _params(id="order-1"), _context()
    base = {
        "order_id": {"S": "order-123"},
        "status": {"S": "COMPENSATED"},
        "created_at": {"S": "t0"},
        "updated_at": {"S": "t1"},
        "attempts": {"L": [{"M": {"attempt": {"N": "1"}, "received_at": {"S": "t0"}}}]},
        "history": {"L": [{"M": {"status": {"S": "RECEIVED"}, "at": {"S": "t0"}, "attempt": {"N": "1"}}}]},
    }
    refusal = {"M": {"caller": {"S": CALLER}, "rule": {"S": "AttemptMismatch"}, "idempotency_key": {"S": "k/2"}}}
    items = {
        "absent": {},
        "owned": {"Item": {**base, "owner": {"S": CALLER}, "payment_attempt": {"N": "1"}}},
        "owned legacy": {"Item": {**base, "owner": {"S": CALLER}}},
        "owned with refusal": {"Item": {**base, "owner": {"S": CALLER}, "last_refusal": refusal}},
        "another's": {"Item": {**base, "owner": {"S": "arn:aws:iam::1:user/x"}}},
        "another's, refused": {"Item": {**base, "owner": {"S": "x"}, "refused_callers": {"SS": [CALLER, "y"]}}},
        "no owner": {"Item": base},
    }
    for name, item in items.items():
        for caller in (CALLER, ROLE_SESSION):
            yield (
                f"found {name} as {caller[-12:]}",
                r"2\d{2}",
                json.dumps(item),
                _params(id="order-123"),
                _context(caller),
            )


def _cases(dev: SynthResult) -> list[tuple[str, Case]]:
    templates = _templates(dev)
    cases = [(f"POST request: {n}", Case(templates["POST request"], b, p, c)) for n, b, p, c in _post_requests()]
    cases += [(f"POST {s}: {n}", Case(templates[f"POST {s}"], b, p, c)) for n, s, b, p, c in _post_responses()]
    cases += [(f"GET {s}: {n}", Case(templates[f"GET {s}"], b, p, c)) for n, s, b, p, c in _get_cases()]
    cases += [
        (f"GET default: {n}", Case(templates["GET default"], "{}", _params(id="x"), _context())) for n in ("500",)
    ]
    return cases


def _local(case: Case) -> dict[str, Any]:
    context = java_values(copy.deepcopy(case.context))
    output = render(case.template, template_variables(case.body, case.params, context, {}))
    return {"output": output, "context": json.loads(json.dumps(context))}


def _overrides(context: dict[str, Any]) -> dict[str, Any]:
    response = context["responseOverride"]
    return {
        "requestOverride.path": context["requestOverride"]["path"],
        "responseOverride.status": str(response.get("status") or ""),
        "responseOverride.header": response.get("header", {}),
    }


def test_two_engines_agree_on_every_mapping_template(dev: SynthResult, velocity: Path) -> None:
    cases = _cases(dev)
    assert len({c.template for _, c in cases}) == len([k for k in _templates(dev) if not k.startswith("gateway")])
    java = render_all(velocity, [c for _, c in cases])
    differences = []
    for (name, case), theirs in zip(cases, java, strict=True):
        assert "error" not in theirs, (name, theirs.get("error"))
        ours = _local(case)
        if ours["output"] != theirs["output"] or _overrides(ours["context"]) != _overrides(theirs["context"]):
            differences.append(
                (name, ours["output"], theirs["output"], _overrides(ours["context"]), _overrides(theirs["context"]))
            )
    assert differences == [], f"{len(differences)} of {len(cases)} cases differ:\n" + "\n".join(map(repr, differences))


def test_two_engines_agree_on_every_gateway_response(dev: SynthResult, velocity: Path) -> None:
    """Gateway responses are variable substitution (not VTL) on AWS; Velocity over plain references
    substitutes the same, so both engines render them, with hostile messages."""
    templates = {k: v for k, v in _templates(dev).items() if k.startswith("gateway")}
    assert len(templates) == 7
    cases = []
    for message in HOSTILE:
        context = _context()
        context["error"] = {
            "message": message,
            "messageString": json.dumps(message),
            "responseType": "BAD_REQUEST_BODY",
        }
        cases += [Case(t, "", _params(), context) for t in templates.values()]
    java = render_all(velocity, cases)
    for case, theirs in zip(cases, java, strict=True):
        ours = substitute(case.template, case.context, {})
        assert ours == theirs["output"]
        json.loads(ours)
