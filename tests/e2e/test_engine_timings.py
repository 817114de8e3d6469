"""What the engine costs: preview, up, a no-change preview and destroy of the stack, beside server-side apply (and
delete) of the same objects, at one node image and at twenty, in the same run. Reported, never asserted.

Our operands are the cluster's, not a pool's: what grows with the pools of a fleet is one driver DaemonSet (and its
ConfigMap) per node image's kernel, with precompiled drivers. So the two sizes are the default stack with one
kernel listed and with twenty (twenty pools on twenty node images). NFD's chart is off in both, so the engine and
the baseline handle exactly the objects of :func:`gpu_operator.render.stack.stack_objects`.

The baseline applies those objects with server-side apply, one request each, in render order (what `kubectl apply
--server-side` of the rendered files does), then deletes the namespace and the cluster-scoped objects and waits
until they are gone. Timings land in the e2e report (the closing note's table comes from there).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace

from gpu_operator.config import parse_config
from gpu_operator.render.stack import stack_objects
from tests.e2e.apply import KindTable, server_side_apply
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import Engine
from tests.e2e.engine_fleet import POOL_TAINT, cluster, engine, exists, live_kinds, plane  # noqa: F401 - fixtures
from tests.e2e.render_diff import object_key
from tests.e2e.report import note
from tests.e2e.waiting import wait_until
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

SIZES = (1, 20)


def document(kernels: int) -> dict[str, Any]:
    return {
        "namespace": "gpu-operator",
        "nfd": {"enabled": False},
        "cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04",
                                          "kernelVersions": [f"5.15.0-{1000 + k}-azure" for k in range(kernels)]}]},
        "operator": {"driver": {"usePrecompiled": True, "version": "570"},
                     "daemonsets": {"tolerations": [POOL_TAINT]}},
    }


def _baseline(client: Client, objects: list[dict[str, Any]]) -> tuple[float, float]:
    """Seconds to server-side apply the objects, and to delete them (namespace and cluster-scoped) until gone."""
    kinds = KindTable()
    kinds.learn(objects)
    started = time.monotonic()
    failures = server_side_apply(client, objects, kinds, dry_run=False, field_manager="baseline")
    applied = time.monotonic() - started
    assert not failures, failures
    started = time.monotonic()
    cluster_scoped = [obj for obj in objects if not obj["metadata"].get("namespace") and obj["kind"] != "Namespace"]
    for obj in [*cluster_scoped, *[o for o in objects if o["kind"] == "Namespace"]]:
        try:
            client.delete(kinds.resource(obj), obj["metadata"]["name"])
        except ApiError as error:
            if error.status.code != 404:
                raise
    table = live_kinds(client)
    wait_until(lambda: not any(exists(client, object_key(obj), table) for obj in cluster_scoped)
               and not _namespace_exists(client, "gpu-operator"), timeout=300, what="the baseline's objects to go")
    return applied, time.monotonic() - started


def _namespace_exists(client: Client, name: str) -> bool:
    try:
        client.get(Namespace, name)
    except ApiError as error:
        if error.status.code == 404:
            return False
        raise
    return True


@pytest.mark.parametrize("kernels", SIZES)
def test_engine_beside_server_side_apply(kernels: int, engine: Engine, plane: ControlPlane,  # noqa: F811
                                         cluster: Client) -> None:  # noqa: F811
    doc = document(kernels)
    objects = stack_objects(parse_config(doc))
    project = engine.project("gpu-operator", REPO_ROOT / "stacks")
    stack = engine.stack(project, f"timings-{kernels}", {"gpu-operator:kubeconfig": plane.admin_kubeconfig.read_text(),
                                                        "gpu-operator:config": doc})
    preview = stack.preview()
    up = stack.up()
    quiet = stack.preview(expect_no_changes=True)
    destroy = stack.destroy()
    assert not destroy.errors, destroy.errors
    applied, deleted = _baseline(cluster, objects)
    note(f"engine timing, {kernels} kernel(s), {len(objects)} objects ({len(up.steps)} resources): "
         f"preview {preview.seconds:.1f} s, up {up.seconds:.1f} s, no-change preview {quiet.seconds:.1f} s, "
         f"destroy {destroy.seconds:.1f} s | server-side apply {applied:.2f} s, delete {deleted:.1f} s | "
         f"up / apply = {up.seconds / applied:.1f}x; slowest deletes: "
         + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in destroy.slowest(3)))
