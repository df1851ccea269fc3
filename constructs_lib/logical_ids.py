"""Grouping constructs that leave their children's CloudFormation logical IDs unchanged.

Moving resources into a new construct changes their path and so, by default, their logical IDs:
CloudFormation then replaces them on the next deploy (a table or queue replaced is its data lost).
A :class:`TransparentScope` groups constructs without that cost: a :class:`StableLogicalIdStack`
allocates each element's logical ID from its path with every transparent scope left out, so a
resource grouped later keeps the ID it had at the stack's top level (construct paths, e.g. in
``aws:cdk:path`` metadata, do show the group).

The allocation is CDK's own (``makeUniqueId`` in aws-cdk-lib ``core/lib/private/uniqueid.ts``,
used by ``Stack.allocateLogicalId``, the documented hook for custom logical IDs:
https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.Stack.html#allocatewbrlogicalwbridcfnelement),
applied to the shortened path; an element outside any transparent scope gets CDK's ID unchanged.

Limits: IDs that CDK derives from a construct's *path* (``Names.node_unique_id``, e.g. the id of
the ``AWS::Lambda::Permission`` an EventBridge target adds) still see the group;
:func:`keep_path_derived_id` keeps those (``ResilientQueue`` calls it for its event source
mapping). Two resources that would get one logical ID (the same id under two transparent scopes)
fail synth: CDK refuses a template section holding an ID twice.
"""

from __future__ import annotations

import hashlib
import re

from aws_cdk import CfnElement, CfnResource, Names, Stack
from constructs import Construct, IConstruct

#: CDK's limits and hidden ids (``uniqueid.ts``).
_HIDDEN_ID = "Default"
_HIDDEN_FROM_HUMAN_ID = "Resource"
_MAX_HUMAN_LEN = 240
_MAX_ID_LEN = 255
_HASH_LEN = 8
_NON_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


class TransparentScope(Construct):
    """A construct whose id is left out of its descendants' logical IDs (in a :class:`StableLogicalIdStack`)."""


def make_unique_id(components: list[str]) -> str:
    """CDK's ``makeUniqueId``: the human-readable path plus an 8-character hash of the full path."""
    components = [c for c in components if c != _HIDDEN_ID]
    if not components:
        raise ValueError("unable to calculate a unique id for an empty set of components")
    if len(components) == 1:
        candidate = _NON_ALPHANUMERIC.sub("", components[0])
        if len(candidate) <= _MAX_ID_LEN:
            return candidate
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()[:_HASH_LEN].upper()
    deduped: list[str] = []
    for component in components:
        if not deduped or not deduped[-1].endswith(component):
            deduped.append(component)
    human = "".join(_NON_ALPHANUMERIC.sub("", c) for c in deduped if c != _HIDDEN_FROM_HUMAN_ID)
    return human[:_MAX_HUMAN_LEN] + digest


class StableLogicalIdStack(Stack):
    """A stack whose logical IDs ignore :class:`TransparentScope` levels (see the module docstring)."""

    def _allocate_logical_id(self, cfn_element: CfnElement) -> str:
        scopes = cfn_element.node.scopes
        below = scopes[scopes.index(self) + 1 :]
        if not any(isinstance(scope, TransparentScope) for scope in below):
            return super()._allocate_logical_id(cfn_element)
        return make_unique_id([scope.node.id for scope in below if not isinstance(scope, TransparentScope)])


def stable_node_unique_id(construct: IConstruct) -> str:
    """``Names.node_unique_id(construct.node)`` as if no transparent scope held it."""
    return make_unique_id([s.node.id for s in construct.node.scopes[1:] if not isinstance(s, TransparentScope)])


def keep_path_derived_id(owner: IConstruct, prefix: str, target: IConstruct) -> None:
    """Keep the logical ID of ``owner``'s child ``<prefix><Names.node_unique_id(target)>`` when a
    transparent scope holds ``target``.

    CDK names some resources after another construct's path, which shows every scope, transparent
    or not: an ``SqsEventSource`` names its mapping ``SqsEventSource:<queue's unique id>`` under the
    function; an EventBridge ``LambdaFunction`` target names its permission
    ``AllowEventRule<function's unique id>`` under the rule. The child's logical ID is set to the one
    it would have without transparent scopes. A changed mapping ID would fail the deploy: Lambda
    refuses a second mapping of the same queue and function while CloudFormation replaces the first
    (``ResourceConflictException``). A no-op when nothing differs or there is no such child.
    """
    current = f"{prefix}{Names.node_unique_id(target.node)}"
    stable = f"{prefix}{stable_node_unique_id(target)}"
    child = owner.node.try_find_child(current)
    if current == stable or child is None:
        return
    resource = child if isinstance(child, CfnResource) else child.node.default_child
    if not isinstance(resource, CfnResource):
        return
    scopes = resource.node.scopes
    below = scopes[scopes.index(Stack.of(resource)) + 1 :]
    path = child.node.path  # jsii may hand out another proxy of the same construct: compare paths
    components = [stable if s.node.path == path else s.node.id for s in below if not isinstance(s, TransparentScope)]
    resource.override_logical_id(make_unique_id(components))


def keep_sqs_event_source_id(function: IConstruct, queue: IConstruct) -> None:
    """:func:`keep_path_derived_id` of the SQS event source mapping of ``queue`` on ``function``."""
    keep_path_derived_id(function, "SqsEventSource:", queue)


def keep_rule_permission_id(rule: IConstruct, function: IConstruct) -> None:
    """:func:`keep_path_derived_id` of the permission an EventBridge ``LambdaFunction`` target adds."""
    keep_path_derived_id(rule, "AllowEventRule", function)
