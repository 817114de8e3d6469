"""Azure subscription feature registrations: kept on delete, and waited for until `Registered`.

A feature registration (`AKSInfinibandSupport`) belongs to the whole subscription, not to this stack: other
clusters' InfiniBand pools rely on it too. Deleting it when the stack is destroyed, or when
`registerInfinibandFeature` is turned off, would unregister it for everyone, so the resource is created with
`retain_on_delete`: Pulumi forgets it and the registration stays.

Registering is asynchronous: the PUT returns `Registering` (or `Pending` for features that need approval) and
the state turns `Registered` minutes later. Pools created before that land without the feature. So the
registration's state is polled (`getSubscriptionFeatureRegistration`, as `az feature register` loops) until it
is `Registered`; past the timeout the deployment fails with the state and what to run, instead of creating pools
that silently lack the feature.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from collections.abc import Awaitable, Callable

__all__ = ["REGISTERED", "FeatureWait", "FeatureNotRegisteredError", "wait_until_registered"]

REGISTERED = "Registered"


@dataclass(frozen=True)
class FeatureWait:
    """How long to wait for a registration, and how often to look."""

    timeout_seconds: float = 30 * 60
    interval_seconds: float = 20.0


class FeatureNotRegisteredError(RuntimeError):
    """The feature did not reach `Registered` in time."""


async def wait_until_registered(
    lookup: Callable[[], Awaitable[str | None]],
    feature: str,
    wait: FeatureWait = FeatureWait(),
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Poll `lookup` (the registration's state) until it is `Registered`; raise with the last state on timeout."""
    namespace, _, name = feature.partition("/")
    deadline = clock() + wait.timeout_seconds
    while True:
        state = await lookup()
        if state == REGISTERED:
            return state
        if clock() >= deadline:
            raise FeatureNotRegisteredError(
                f"subscription feature {feature} is still {state or 'unknown'} after "
                f"{wait.timeout_seconds / 60:g} minutes (registration is asynchronous; features in Pending need "
                f"approval). Check it with `az feature show --namespace {namespace} --name {name}`; once it is "
                f"Registered, run `az provider register --namespace {namespace}` and `pulumi up` again"
            )
        await sleep(wait.interval_seconds)
