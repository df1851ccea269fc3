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
applied to the shortened path; an element outside any transparent scope gets CDK's ID unchanged. It is
computed here for every element (a test checks it against CDK's): asking CDK back over jsii cost a
synth 40% of its time.

Limits: IDs that CDK derives from a construct's *path* (``Names.node_unique_id``, e.g. the id of
the ``AWS::Lambda::Permission`` an EventBridge target adds) still see the group;
:func:`keep_path_derived_id` keeps those (``ResilientQueue`` calls it for its event source
mapping). Two resources that would get one logical ID (the same id under two transparent scopes)
fail synth: CDK refuses a template section holding an ID twice.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from aws_cdk import CfnElement, CfnResource, Names, Stack
from constructs import Construct, IConstruct

#: CDK's limits and hidden ids (``uniqueid.ts``).
_HIDDEN_ID = "Default"
_HIDDEN_FROM_HUMAN_ID = "Resource"
_MAX_HUMAN_LEN = 240
_MAX_ID_LEN = 255
_HASH_LEN = 8
_PATH_SEP = "/"
_NON_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


class TransparentScope(Construct):
    """A construct whose id is left out of its descendants' logical IDs (in a :class:`StableLogicalIdStack`)."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        if isinstance(stack, StableLogicalIdStack):
            stack.transparent_paths.add(self.node.path)


def make_unique_id(components: list[str]) -> str:
    """CDK's ``makeUniqueId``: the human-readable path plus an 8-character hash of the full path."""
    components = [c for c in components if c != _HIDDEN_ID]
    if not components:
        raise ValueError("unable to calculate a unique id for an empty set of components")
    if len(components) == 1:
        candidate = _NON_ALPHANUMERIC.sub("", components[0])
        if len(candidate) <= _MAX_ID_LEN:
            return candidate
    digest = hashlib.md5(_PATH_SEP.join(components).encode(), usedforsecurity=False).hexdigest()[:_HASH_LEN].upper()
    deduped: list[str] = []
    for component in components:
        if not deduped or not deduped[-1].endswith(component):
            deduped.append(component)
    human = "".join(_NON_ALPHANUMERIC.sub("", c) for c in deduped if c != _HIDDEN_FROM_HUMAN_ID)
    return human[:_MAX_HUMAN_LEN] + digest


class StableLogicalIdStack(Stack):
    """A stack whose logical IDs ignore :class:`TransparentScope` levels (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The paths of the transparent scopes in this stack (each adds its own when it is created).
        self.transparent_paths: set[str] = set()
        self._depth = len(self.node.path.split(_PATH_SEP))
        self._allocated: dict[str, str] = {}

    def _allocate_logical_id(self, cfn_element: CfnElement) -> str:
        # CDK calls this back for each element (thousands in a large stack), and each jsii read is a
        # round trip to node (about 0.3 ms): the element's path is read once, and the IDs are computed
        # here, as CDK computes them, from the path components (a construct id never holds the separator:
        # CDK replaces it). Reading each scope's id and calling CDK's own allocation took 40% of a synth.
        # CDK asks again at each resolution of the element's ID (about 6 times each): the answer is kept
        # by the element's jsii reference (an element's path never changes, nor what scopes hold it).
        ref = cfn_element.__jsii_ref__.ref  # type: ignore[attr-defined]  # jsii's ObjRef of every proxy
        logical_id = self._allocated.get(ref)
        if logical_id is None:
            parts = cfn_element.node.path.split(_PATH_SEP)
            logical_id = make_unique_id(
                [
                    part
                    for end, part in enumerate(parts[self._depth :], start=self._depth + 1)
                    if _PATH_SEP.join(parts[:end]) not in self.transparent_paths
                ]
            )
            self._allocated[ref] = logical_id
        return logical_id


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
