"""CloudWatch composite alarms, emulated: moto 5.2 has no ``PutCompositeAlarm`` (its client call raises
``NotImplementedError``; canary ``test_composite_alarms_moto_has_no_put_composite_alarm``), so the emulator
validates, keeps and evaluates them itself.

What AWS documents (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html):

- ``AlarmRule`` combines ``ALARM(name)``, ``OK(name)``, ``INSUFFICIENT_DATA(name)`` (TRUE when the named alarm,
  by name or ARN, quoted or not, is in that state), ``TRUE`` and ``FALSE`` with ``AND``, ``OR``, ``NOT`` and
  parentheses; it names at most 100 underlying alarms.
- "The composite alarm goes into ALARM state only if all conditions of the rule are met"; otherwise it is OK.
  "When this operation creates an alarm, the alarm state is immediately set to INSUFFICIENT_DATA. The alarm is
  then evaluated and its state is set appropriately. Any actions associated with the new state are then
  executed. For a composite alarm, this initial time after creation is the only time that the alarm can be in
  INSUFFICIENT_DATA state."
- Composites exist to send one notification for a situation: "If other alarms ... also go into the ALARM
  state, your team does not get overloaded with new notifications since the composite alarm has already
  notified them" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-combining.html).

Refused as AWS refuses them, with its error code ``ValidationError`` (CloudFormation relays the service's
message): a token the grammar does not know (``Error in AlarmRule [Unsupported token ')' at char 1]``, as
AWS answered an empty ``()``: https://github.com/aws/aws-cdk/issues/34662), a rule naming an alarm that does
not exist (``Could not save the composite alarm as alarms [...] in the alarm rule do not exist``:
https://github.com/awsdocs/aws-cloudformation-user-guide/issues/911), more than 100 underlying alarms.
Not emulated, so refused loudly rather than evaluated wrongly: ``AT_LEAST(...)`` and ``ActionsSuppressor``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: "The rule expression of a composite alarm can include as many as 100 underlying alarms" (PutCompositeAlarm).
MAX_UNDERLYING_ALARMS = 100
STATES = ("ALARM", "OK", "INSUFFICIENT_DATA")
_TOKEN = re.compile(r"\s*(?:(?P<punct>[()])|(?P<word>[A-Za-z_]+))")


class RuleError(ValueError):
    """What PutCompositeAlarm answers for a rule AWS refuses: ``code`` and ``message`` as AWS gives them."""

    def __init__(self, message: str, code: str = "ValidationError") -> None:
        super().__init__(message)
        self.code = code


class NotEmulated(RuleError):
    """A composite feature AWS accepts and the emulator does not evaluate: refused rather than ignored."""

    def __init__(self, message: str) -> None:
        super().__init__(f"not emulated by local_cloud: {message}", code="NotEmulated")


@dataclass(frozen=True)
class Rule:
    """A parsed rule: ``op`` is ``state`` (``state`` of ``alarm``), ``const``, ``not``, ``and`` or ``or``."""

    op: str
    args: tuple[Rule, ...] = ()
    state: str = ""
    alarm: str = ""
    value: bool = False

    def alarms(self) -> set[str]:
        """The names of the alarms the rule reads (an ARN's last segment: its name)."""
        own = {self.alarm} if self.op == "state" else set()
        return own.union(*(a.alarms() for a in self.args))

    def holds(self, states: Mapping[str, str]) -> bool:
        if self.op == "state":
            return states.get(self.alarm) == self.state
        if self.op == "const":
            return self.value
        if self.op == "not":
            return not self.args[0].holds(states)
        results = (a.holds(states) for a in self.args)
        return all(results) if self.op == "and" else any(results)


def alarm_name(reference: str) -> str:
    """An alarm named by name or by ARN (``arn:aws:cloudwatch:region:account:alarm:name``)."""
    parts = reference.split(":", 6)
    return parts[6] if reference.startswith("arn:") and len(parts) == 7 and parts[5] == "alarm" else reference


class _Parser:
    """Recursive descent over the rule: ``or := and (OR and)*``, ``and := not (AND not)*``,
    ``not := NOT not | atom``, ``atom := ( or ) | TRUE | FALSE | STATE ( name )``."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def unsupported(self, at: int) -> RuleError:
        shown = self.text[at : at + 1] if at < len(self.text) else "<EOF>"
        return RuleError(f"Error in AlarmRule [Unsupported token '{shown}' at char {at}]")

    def peek(self) -> tuple[str, int]:
        match = _TOKEN.match(self.text, self.at)
        if match is None:
            at = len(self.text) - len(self.text[self.at :].lstrip())
            return ("", at) if at >= len(self.text) else ("?", at)
        return match.group("punct") or match.group("word"), match.start(match.lastindex or 0)

    def take(self) -> tuple[str, int]:
        token, at = self.peek()
        if token not in ("", "?"):
            self.at = at + len(token)
        return token, at

    def parse(self) -> Rule:
        rule = self.disjunction()
        token, at = self.peek()
        if token:
            raise self.unsupported(at)
        return rule

    def disjunction(self) -> Rule:
        args = [self.conjunction()]
        while self.peek()[0] == "OR":
            self.take()
            args.append(self.conjunction())
        return args[0] if len(args) == 1 else Rule("or", tuple(args))

    def conjunction(self) -> Rule:
        args = [self.negation()]
        while self.peek()[0] == "AND":
            self.take()
            args.append(self.negation())
        return args[0] if len(args) == 1 else Rule("and", tuple(args))

    def negation(self) -> Rule:
        if self.peek()[0] == "NOT":
            self.take()
            return Rule("not", (self.negation(),))
        return self.atom()

    def atom(self) -> Rule:
        token, at = self.take()
        if token == "(":
            rule = self.disjunction()
            if self.take()[0] != ")":
                raise self.unsupported(self.peek()[1])
            return rule
        if token in ("TRUE", "FALSE"):
            return Rule("const", value=token == "TRUE")
        if token == "AT_LEAST":
            raise NotEmulated("AT_LEAST(...) in an AlarmRule")
        if token in STATES and self.peek()[0] == "(":
            self.take()
            return Rule("state", state=token, alarm=alarm_name(self.reference()))
        raise self.unsupported(at)

    def reference(self) -> str:
        """The alarm inside ``STATE(...)``: ``"quoted"`` or bare, up to the closing parenthesis."""
        rest = self.text[self.at :]
        quoted = re.match(r'\s*"([^"]+)"\s*\)', rest)
        bare = re.match(r"\s*([^()\"]+?)\s*\)", rest)
        match = quoted or bare
        if match is None:
            raise self.unsupported(self.at + len(rest) - len(rest.lstrip()))
        self.at += match.end()
        return match.group(1)


def parse_rule(text: str) -> Rule:
    """The rule, or the :class:`RuleError` PutCompositeAlarm answers."""
    return _Parser(text).parse()


def validate(name: str, props: Mapping[str, Any], existing: Iterable[str]) -> Rule:
    """PutCompositeAlarm's checks of one composite against the alarms that exist (metric and composite)."""
    if props.get("ActionsSuppressor"):
        raise NotEmulated(f"ActionsSuppressor of composite alarm {name}")
    rule = parse_rule(str(props["AlarmRule"]))
    named = rule.alarms()
    if len(named) > MAX_UNDERLYING_ALARMS:
        raise RuleError(
            f"The rule of composite alarm {name} names {len(named)} alarms; "
            f"a composite can include as many as {MAX_UNDERLYING_ALARMS} underlying alarms"
        )
    missing = sorted(named - set(existing))
    if missing:
        raise RuleError(f"Could not save the composite alarm as alarms {missing} in the alarm rule do not exist")
    return rule


class Composites:
    """The deployed composites, their rules and states; :meth:`evaluate` after any child changed."""

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]], existing: Iterable[str]) -> None:
        known = set(existing) | set(definitions)
        self.definitions = dict(definitions)
        self.rules = {name: validate(name, props, known) for name, props in definitions.items()}
        #: "the alarm state is immediately set to INSUFFICIENT_DATA" at creation.
        self.states = dict.fromkeys(definitions, "INSUFFICIENT_DATA")

    def evaluate(self, children: Mapping[str, str]) -> list[tuple[str, str, str, str]]:
        """Each composite whose rule's value changed its state: ``(name, old, new, reason)``, in order.
        Composites of composites settle in as many passes as the nesting needs."""
        changes: list[tuple[str, str, str, str]] = []
        for _ in range(len(self.rules) + 1):
            states = {**children, **self.states}
            moved = False
            for name, rule in self.rules.items():
                new = "ALARM" if rule.holds(states) else "OK"
                if new != self.states[name]:
                    triggering = sorted(a for a in rule.alarms() if states.get(a) == "ALARM")
                    reason = f"rule {'holds' if new == 'ALARM' else 'does not hold'}; alarms in ALARM: {triggering}"
                    changes.append((name, self.states[name], new, reason))
                    self.states[name] = new
                    moved = True
            if not moved:
                break
        return changes
