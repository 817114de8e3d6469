"""Running a workload pod to completion through the API: replace the last one, create, watch, clean up.

Like NVIDIA's validator, a run first deletes the previous pods of the same check on this node (label `app`,
field `spec.nodeName`; immediately, background propagation), then creates the new pod and waits until it has
`Succeeded` - at most 5 minutes (NVIDIA polls 60 times, 5 s apart; we watch the pod instead). A pod that
ends `Failed` fails the check at once. Once it has succeeded the pod is deleted; a failed pod is kept for
`kubectl logs` and replaced by the next run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from gpu_operator.agents.kube import (
    DAEMON_SETS,
    PODS,
    KubeClient,
    KubeError,
    NotFound,
    ObjectDeleted,
    WaitTimeout,
    wait_for,
)
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.workload import VALIDATOR_DAEMONSET

__all__ = ["POD_TIMEOUT", "daemonset_template", "run_to_completion"]

_log = logging.getLogger(__name__)

Object = dict[str, Any]
#: How long a workload pod may take to succeed (NVIDIA: 60 checks, 5 s apart).
POD_TIMEOUT = 300.0


def daemonset_template(client: KubeClient, namespace: str) -> tuple[list[Object], list[Object]]:
    """The validator DaemonSet's pod tolerations and its ownerReferences, which the workload pods copy."""
    try:
        daemonset = client.get(DAEMON_SETS, VALIDATOR_DAEMONSET, namespace)
    except KubeError as error:
        raise ValidationFailed(f"unable to retrieve the operator validator daemonset: {error}") from error
    tolerations = daemonset.get("spec", {}).get("template", {}).get("spec", {}).get("tolerations") or []
    owners = daemonset.get("metadata", {}).get("ownerReferences") or []
    return list(tolerations), list(owners)


def _succeeded(pod: Mapping[str, Any]) -> bool:
    phase = pod.get("status", {}).get("phase")
    if phase == "Failed":
        reason = pod.get("status", {}).get("reason") or pod.get("status", {}).get("message") or "no reason given"
        raise ValidationFailed(f"pod {pod['metadata']['name']} failed: {reason}")
    if phase != "Succeeded":
        _log.info("pod %s is currently in %s phase", pod["metadata"]["name"], phase)
    return phase == "Succeeded"


def _delete(client: KubeClient, name: str, namespace: str) -> None:
    try:
        client.delete(PODS, name, namespace, grace_period_seconds=0, propagation_policy="Background")
    except NotFound:
        return


def _remove_previous(client: KubeClient, app: str, namespace: str, node: str) -> None:
    previous = client.list(PODS, namespace, labels={"app": app}, fields={"spec.nodeName": node})
    for pod in previous:
        _log.info("deleting the previous validation pod %s", pod["metadata"]["name"])
        _delete(client, pod["metadata"]["name"], namespace)


def run_to_completion(
    client: KubeClient,
    pod: Mapping[str, Any],
    *,
    timeout: float = POD_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Run the pod until it succeeds; returns its name. Raises ValidationFailed otherwise."""
    metadata, spec = pod["metadata"], pod["spec"]
    namespace, app, node = metadata["namespace"], metadata["labels"]["app"], spec["nodeName"]
    try:
        _remove_previous(client, app, namespace, node)
        name = client.create(PODS, pod, namespace)["metadata"]["name"]
    except KubeError as error:
        raise ValidationFailed(f"failed to create the {app} pod: {error}") from error
    _log.info("created pod %s/%s on node %s", namespace, name, node)
    try:
        wait_for(client, PODS, name, namespace, _succeeded, timeout=timeout, clock=clock)
    except WaitTimeout as timeout_error:
        phase = timeout_error.last.get("status", {}).get("phase")
        raise ValidationFailed(f"gave up waiting for pod {name} to succeed (phase {phase})") from timeout_error
    except (ObjectDeleted, KubeError) as error:
        raise ValidationFailed(f"lost track of pod {name}: {error}") from error
    _log.info("pod %s has run successfully", name)
    try:
        _delete(client, name, namespace)
    except KubeError as error:
        _log.warning("could not delete the finished pod %s: %s", name, error)
    return name
