"""The travel booking app: ``cdk synth`` (cdk.json runs ``python cdk_app.py``), with ResilienceChecks on every stack."""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Aspects

from constructs_lib.checks import ResilienceChecks
from travel_booking.stack import TravelBookingStack

STACK_NAME = "TravelBooking"


# --8<-- [start:app]
def build_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> App:
    app = App(context=context, outdir=outdir)
    stack = TravelBookingStack(app, STACK_NAME)
    Aspects.of(stack).add(ResilienceChecks())
    return app


# --8<-- [end:app]


if __name__ == "__main__":
    build_app().synth()
