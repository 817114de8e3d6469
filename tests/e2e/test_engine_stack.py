"""`stacks/` under the real Pulumi engine, in kubeconfig mode, on a control plane and KWOK fleet of its own.

What a platform team does with the project, in order: preview and `up` of the default stack (with the real NFD chart
from `../shared/reference/charts/`, as a local chart source); a preview that must change nothing; an update per
example config that can run on the fleet (time-slicing, MIG mixed, monitoring with the Prometheus Operator's CRDs,
our agents image, RDMA with the real Network Operator chart, DRA with the real DRA driver chart), each planning
exactly the objects the render diff names and each followed by a preview that must change nothing; a refresh
without drift; a workload stack reading every output through a StackReference; and a plain `pulumi destroy` (no
`--run-program`) that leaves no object and no Terminating namespace.

The fleet mirrors `fleet.yaml`'s pools (their nodes carry the pools' labels and taints); the stack, which knows no
pools in kubeconfig mode, tolerates their taint through `operator.daemonsets.tolerations`, as a user's would.
"""

from __future__ import annotations

import copy
import json
from importlib import metadata
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Namespace

from gpu_operator.config import GpuStackConfig, parse_config
from gpu_operator.render.helm_chart import merge_values
from gpu_operator.render.stack import stack_objects
from tests.e2e.apply import ensure_namespaces
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import KUBERNETES_PROVIDER_VERSION, Engine, EngineStack, Operation
from tests.e2e.engine_fleet import (  # noqa: F401 - module fixtures
    base_document, chart_file, cluster, engine, exists, install_prometheus_operator_crds, live_kinds, plane,
)
from tests.e2e.render_diff import object_key, planned_diff, render_diff
from tests.e2e.report import note
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

STACK = "e2e"
EXAMPLES = REPO_ROOT / "examples" / "configs"
#: The documented outputs of stacks/__main__.py, none of which may be null.
OUTPUTS = {"kubeconfig", "resourceGroupName", "clusterName", "namespace", "runtimeClassName", "gpuResourceNames",
           "gpuNodeLabels", "poolNames", "nodeSelectorLabels", "tolerations"}
def example(name: str, **overrides: Any) -> dict[str, Any]:
    """An example config in kubeconfig mode: over the base, without its aks and pools, with `overrides`."""
    document = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    document.pop("aks", None)
    document.pop("pools", None)
    return merge_values(merge_values(base_document(), document), overrides)


#: The updates, in order: (name, document); each is applied over the stack as it stands after the one before.
UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("time-slicing", example("time-slicing", cluster={"prometheusOperator": False})),
    ("mig-mixed", example("mig-mixed")),
    ("monitoring", example("mig-mixed", cluster={"prometheusOperator": True},
                           operator={"dcgmExporter": {"serviceMonitor": {"enabled": True}},
                                     "nodeStatusExporter": {"enabled": True}})),
    ("agents-image", example("agents-image", cluster={"prometheusOperator": True})),
    ("rdma", example("rdma-gds", network={"enabled": True, "vfDeviceIds": ["101e"],
                                          "chart": {"path": chart_file("network-operator-26.4.1.tgz")}})),
    ("dra", example("dra", cluster={"prometheusOperator": True},
                    operator={"devicePlugin": {"enabled": False}},
                    dra={"enabled": True, "kubernetesVersion": "1.36",
                         "chart": {"path": chart_file("dra-driver-nvidia-gpu-0.4.1.tgz")}})),
]


class Fleet:
    """The stack as it stands: its engine stack, its config and what each operation took."""

    def __init__(self, stack: EngineStack, kubeconfig: str) -> None:
        self.stack = stack
        self.kubeconfig = kubeconfig
        self.config: GpuStackConfig | None = None
        self.timings: dict[str, float] = {}

    def configure(self, document: dict[str, Any], **settings: Any) -> GpuStackConfig:
        self.stack.set_config({"gpu-operator:kubeconfig": self.kubeconfig, "gpu-operator:config": document,
                               **{f"gpu-operator:{key}": value for key, value in settings.items()}})
        return parse_config(copy.deepcopy(document))

    def timed(self, label: str, operation: Operation) -> Operation:
        self.timings[label] = operation.seconds
        return operation


@pytest.fixture(scope="module")
def fleet(engine: Engine, plane: ControlPlane, cluster: Client, tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    kubeconfig = plane.admin_kubeconfig.read_text()
    project = engine.project("gpu-operator", REPO_ROOT / "stacks")
    return Fleet(engine.stack(project, STACK), kubeconfig)


def _assert_plan_is_the_render_diff(operation: Operation, old: GpuStackConfig | None, new: GpuStackConfig) -> None:
    expected, planned = render_diff(old, new), planned_diff(operation.steps)
    assert planned == expected, "the engine's plan is not the render diff:\n" + planned.describe(expected)


def test_the_programs_sdks_are_pinned_to_the_built_engine(engine: Engine) -> None:
    """An SDK newer than the built provider makes the engine ask for its own plugin version, which it cannot
    download here ("no resource plugin 'pulumi-resource-kubernetes' found ... 4.34.2"): `make e2e` pins both."""
    cli = engine.cli("version").stdout.strip().removeprefix("v")
    assert (metadata.version("pulumi"), metadata.version("pulumi-kubernetes")) == (cli, KUBERNETES_PROVIDER_VERSION)
    plugins = json.loads(engine.cli("plugin", "ls", "--json").stdout)
    assert [(p["name"], p["kind"], p["version"]) for p in plugins] == [("kubernetes", "resource",
                                                                        KUBERNETES_PROVIDER_VERSION)]


def test_preview_and_up_create_what_the_render_holds(fleet: Fleet, cluster: Client) -> None:
    config = fleet.configure(base_document())
    preview = fleet.timed("preview", fleet.stack.preview())
    assert not preview.errors, preview.errors
    _assert_plan_is_the_render_diff(preview, None, config)
    up = fleet.timed("up", fleet.stack.up())
    _assert_plan_is_the_render_diff(up, None, config)
    fleet.config = config
    kinds = live_kinds(cluster)
    missing = [object_key(obj) for obj in stack_objects(config) if not exists(cluster, object_key(obj), kinds)]
    assert not missing, f"objects the stack created are not in the API server: {missing}"
    chart = [step for step in up.steps if "kubernetes:helm.sh/v4:Chart" in step.parent and step.op == "create"]
    assert any(step.type.endswith(":DaemonSet") for step in chart), "the NFD chart installed no DaemonSet"
    outputs = fleet.stack.outputs()
    assert set(outputs) == OUTPUTS and all(value is not None for value in outputs.values()), outputs
    note(f"engine: default stack, preview {preview.seconds:.1f} s, up {up.seconds:.1f} s "
         f"({len(up.steps)} resources, {len(chart)} from the NFD chart at a local path)")


def test_a_second_preview_changes_nothing(fleet: Fleet) -> None:
    preview = fleet.timed("no-change preview", fleet.stack.preview(expect_no_changes=True))
    assert not preview.changed, [f"{step.op} {step.urn}" for step in preview.changed]


def test_refresh_finds_no_drift(fleet: Fleet) -> None:
    refresh = fleet.timed("refresh", fleet.stack.refresh(expect_no_changes=True))
    assert not refresh.changed, [f"{step.op} {step.urn} {step.diffs}" for step in refresh.changed]


def test_a_workload_stack_reads_every_output_through_a_stack_reference(
    engine: Engine, fleet: Fleet, cluster: Client
) -> None:
    project = engine.project("gpu-workloads", REPO_ROOT / "examples" / "stack-reference")
    consumer = engine.stack(project, "workloads", {
        "gpu-workloads:gpuStack": f"organization/gpu-operator/{STACK}",
        "gpu-workloads:kubeconfig": fleet.kubeconfig,
    })
    up = consumer.up()
    outputs = consumer.outputs()
    assert set(outputs["fleetOutputs"]) == OUTPUTS
    job = next(step for step in up.steps if step.type == "kubernetes:batch/v1:Job")
    assert job.op == "create"
    assert exists(cluster, ("batch/v1", "Job", "default", "cuda-vectoradd"))
    consumer.destroy()
    assert not exists(cluster, ("batch/v1", "Job", "default", "cuda-vectoradd"))


@pytest.mark.parametrize("name, document", UPDATES, ids=[name for name, _ in UPDATES])
def test_update_changes_exactly_the_render_diff_then_nothing(
    name: str, document: dict[str, Any], fleet: Fleet, cluster: Client
) -> None:
    assert fleet.config is not None, "the stack was not created"
    if name == "monitoring":
        install_prometheus_operator_crds(cluster)  # as kube-prometheus-stack would have
    if name == "dra":
        # the example's claim template lives in the workloads' namespace, which it declares `dra.namespaces: {ml:
        # existing}`: the user's cluster has it, and the stack neither creates nor deletes it
        ensure_namespaces(cluster, [{"kind": "Namespace", "metadata": {"name": "ml"}}])
    config = fleet.configure(document)
    preview = fleet.stack.preview()
    _assert_plan_is_the_render_diff(preview, fleet.config, config)
    up = fleet.timed(f"update {name}", fleet.stack.up())
    _assert_plan_is_the_render_diff(up, fleet.config, config)
    fleet.config = config
    again = fleet.stack.preview(expect_no_changes=True)
    assert not again.changed, [f"{step.op} {step.urn} {step.diffs}" for step in again.changed]
    note(f"engine: update {name}: {up.seconds:.1f} s, planned {planned_diff(up.steps).counts()} "
         f"(created, updated, deleted) = the render diff; {len(stack_objects(config))} objects now")


def test_refresh_after_the_updates_finds_no_drift(fleet: Fleet) -> None:
    refresh = fleet.stack.refresh(expect_no_changes=True)
    assert not refresh.changed, [f"{step.op} {step.urn} {step.diffs}" for step in refresh.changed]


def _terminating(client: Client) -> list[str]:
    return [ns.metadata.name for ns in client.list(Namespace) if ns.status and ns.status.phase == "Terminating"]


def test_a_plain_destroy_leaves_no_object_and_no_terminating_namespace(fleet: Fleet, cluster: Client) -> None:
    assert fleet.config is not None
    keys = [object_key(obj) for obj in stack_objects(fleet.config)]
    destroy = fleet.timed("destroy", fleet.stack.destroy())  # no --run-program: as `pulumi destroy --yes`
    assert not destroy.errors, destroy.errors
    kinds = live_kinds(cluster)
    left = [key for key in keys if exists(cluster, key, kinds)]
    assert not left, f"objects left after destroy: {left}"
    assert not _terminating(cluster), f"namespaces still Terminating: {_terminating(cluster)}"
    note("engine timings (s): " + ", ".join(f"{label} {seconds:.1f}" for label, seconds in fleet.timings.items()))
