"""The payment and carrier providers: the real ones over HTTPS (always in prod), else the sandbox functions.

:class:`OrderProviders` owns how a function reaches a provider: :meth:`OrderProviders.connect_payment`
and :meth:`OrderProviders.connect_carrier` set the environment variables the function's settings
read (``order_domain.env``) and grant exactly what that needs (the secret, or invoking the sandbox).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

import order_domain.env as env
from constructs_lib.function import PipelineFunction
from constructs_lib.logical_ids import TransparentScope
from constructs_lib.providers import HttpsProvider, HttpsProviderProps, ProviderEndpoint
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import grant_items


@dataclass(frozen=True)
class OrderProvidersProps:
    """Props for :class:`OrderProviders`: either both endpoints, or the sandbox (ledger table and defaults).

    Attributes:
        functions: the order functions' defaults (for the sandbox functions).
        payment_api, carrier_api: the real providers; default none (then the sandbox).
        ledger_table: the sandbox providers' table; required without endpoints, refused with them.
    """

    functions: OrderFunctionDefaults
    payment_api: ProviderEndpoint | None = None
    carrier_api: ProviderEndpoint | None = None
    ledger_table: dynamodb.ITable | None = None

    def __post_init__(self) -> None:
        errors = []
        if (self.payment_api is None) != (self.carrier_api is None):
            errors.append("payment_api and carrier_api go together (both real providers, or the sandbox)")
        if self.payment_api is not None and self.ledger_table is not None:
            errors.append("ledger_table is the sandbox's: not with real provider endpoints")
        if self.payment_api is None and self.carrier_api is None and self.ledger_table is None:
            errors.append("the sandbox providers need ledger_table")
        if errors:
            raise ValueError("; ".join(errors))

    @property
    def sandbox(self) -> bool:
        return self.payment_api is None


class OrderProviders(TransparentScope):
    """The real providers (:class:`constructs_lib.providers.HttpsProvider`, no resources of their own),
    or the sandbox payment and carrier functions on the ledger table.

    The payment sandbox settles refunds in a transaction and counts requests (Query); the carrier
    only puts and reads its own records: it cannot rewrite payment ones.

    Attributes:
        payment_api, carrier_api: the HTTPS providers, or None (sandbox).
        payment_provider, carrier: the sandbox functions, or None (real providers).
        functions: the sandbox functions created here (empty with real providers).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderProvidersProps) -> None:
        super().__init__(scope, construct_id)
        self.payment_api: HttpsProvider | None = None
        self.carrier_api: HttpsProvider | None = None
        self.payment_provider: PipelineFunction | None = None
        self.carrier: PipelineFunction | None = None
        if props.payment_api is not None and props.carrier_api is not None:
            self.payment_api = HttpsProvider(
                self,
                "PaymentApi",
                props=HttpsProviderProps(endpoint=props.payment_api, env_prefix=env.PAYMENT_API_PREFIX),
            )
            self.carrier_api = HttpsProvider(
                self,
                "CarrierApi",
                props=HttpsProviderProps(endpoint=props.carrier_api, env_prefix=env.CARRIER_API_PREFIX),
            )
        else:
            ledger = props.ledger_table
            assert ledger is not None  # OrderProvidersProps' rule
            ledger_env = {env.LEDGER_TABLE_NAME: ledger.table_name}
            self.payment_provider = props.functions.create(
                self, "SandboxPayment", "sandbox_payment", ledger_env, idempotency_metrics=False
            )
            self.carrier = props.functions.create(
                self, "SandboxCarrier", "sandbox_carrier", ledger_env, idempotency_metrics=False
            )
            payment_actions = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query")
            grant_items(ledger, self.payment_provider.function, *payment_actions)
            grant_items(ledger, self.carrier.function, "dynamodb:GetItem", "dynamodb:PutItem")
        self.functions = tuple(f for f in (self.payment_provider, self.carrier) if f is not None)

    def connect_payment(self, function: PipelineFunction) -> None:
        """Point ``function`` at the payment provider and grant it the call."""
        self._connect(function, self.payment_api, self.payment_provider, env.PAYMENT_PROVIDER_FUNCTION)

    def connect_carrier(self, function: PipelineFunction) -> None:
        """Point ``function`` at the carrier and grant it the call."""
        self._connect(function, self.carrier_api, self.carrier, env.CARRIER_FUNCTION)

    @staticmethod
    def _connect(
        function: PipelineFunction, api: HttpsProvider | None, sandbox: PipelineFunction | None, variable: str
    ) -> None:
        if api is not None:
            api.grant_to(function.function)
        elif sandbox is not None:
            function.function.add_environment(variable, sandbox.function.function_name)
            sandbox.grant_invoke_to(function.function)
