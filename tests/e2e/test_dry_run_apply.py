"""Every rendered object of every config passes a real API server's validation (server-side apply, dry run).

Schemas and mocks accept what a real API server refuses: admission (privileged pods, service accounts), defaulting
and validation beyond the OpenAPI schema (label values, port names, probe handlers, RBAC rules naming verbs),
server-side apply's own checks (list-map keys that must be unique), and custom resources checked against their
CRDs' structural schemas. Each config is rendered and each object dry-run applied after the upstream CRDs;
only the config's namespace is created for real (a dry-run Namespace does not exist for the objects in it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client

from gpu_operator.config import GpuStackConfig, load_config, parse_config
from gpu_operator.render import render
from gpu_operator.render.stack import stack_objects
from tests.e2e.apply import KindTable, ensure_namespaces, server_side_apply
from tests.e2e.nodes import FLEET_CONFIG
from tests.golden.cases import CASES
from tests.support.stack_programs import stack_files

pytestmark = pytest.mark.e2e


def _stack_config(path: Path) -> GpuStackConfig:
    document = (yaml.safe_load(path.read_text()) or {}).get("config", {}).get("gpu-operator:config", {})
    return parse_config(document, source=str(path))


CONFIGS: dict[str, Any] = {
    **{case: (lambda p=path: load_config(p)) for case, path in CASES.items()},
    **{f"stacks/{env}": (lambda p=path: _stack_config(p)) for env, path in stack_files().items()},
    "e2e-fleet": lambda: load_config(FLEET_CONFIG),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_every_rendered_object_passes_server_side_dry_run(case: str, admin: Client, kinds: KindTable) -> None:
    objects = render(CONFIGS[case]())
    assert objects, f"{case} rendered nothing"
    table = KindTable(custom=dict(kinds.custom))
    table.learn(objects)
    ensure_namespaces(admin, objects)
    failures = server_side_apply(admin, objects, table, dry_run=True, field_manager="e2e-dry-run")
    assert not failures, f"the API server refused {len(failures)} of {len(objects)} objects of {case}:\n" + "\n".join(
        map(str, failures)
    )


def test_a_misspelt_field_or_an_invalid_value_is_refused(admin: Client, kinds: KindTable) -> None:
    """The guard on the test above: the harness must see what a real API server refuses, not what it drops."""
    objects = render(CONFIGS["default"]())
    ensure_namespaces(admin, objects)
    daemonset = next(obj for obj in objects if obj["kind"] == "DaemonSet")
    misspelt = {**daemonset, "spec": {**daemonset["spec"], "updateStrategie": {"type": "OnDelete"}}}
    bad_label = {**daemonset, "metadata": {**daemonset["metadata"], "labels": {"app": "not a valid label value"}}}
    monitor = next(obj for obj in objects if obj["kind"] == "ServiceMonitor")
    # Server-side apply builds a typed object from the schema (the CRD's, for a custom resource): an undeclared
    # field fails the request whatever `fieldValidation` says, so nothing is silently pruned.
    misspelt_custom = {**monitor, "spec": {**monitor["spec"], "endpoint": []}}
    failures = server_side_apply(admin, [misspelt, bad_label, misspelt_custom], kinds, dry_run=True)
    assert len(failures) == 3, failures
    # ... reported as a failed typed patch (HTTP 500, not 400).
    assert "updateStrategie" in failures[0].message and "not declared in schema" in failures[0].message
    assert failures[1].code == 422 and "metadata.labels" in failures[1].message, failures[1]
    assert ".spec.endpoint: field not declared in schema" in failures[2].message, failures[2]


@pytest.mark.parametrize("parallel", [0, 3])
def test_the_users_max_parallel_mofed_upgrades_is_what_the_api_server_keeps(parallel: int, admin: Client,
                                                                            kinds: KindTable) -> None:
    """Issue 21 item 8: `network.ofedDriver.upgradePolicy.maxParallelUpgrades` (0 = every node at once, or N) is what
    the API server stores in the NicClusterPolicy, not the CRD's default of 1 (Mellanox/network-operator v26.4.1
    api/v1alpha1/nicclusterpolicy_types.go `DriverUpgradePolicySpec.MaxParallelUpgrades`, `+kubebuilder:default=1`,
    `omitempty`: the default applies only when the field is absent)."""
    document = {"namespace": "gpu-operator", "network": {"enabled": True, "vfDeviceIds": ["101e"], "ofedDriver": {
        "upgradePolicy": {"maxParallelUpgrades": parallel}}}}
    policy = next(o for o in stack_objects(parse_config(document)) if o["kind"] == "NicClusterPolicy")
    table = KindTable(custom=dict(kinds.custom))
    table.learn([policy])
    assert not server_side_apply(admin, [policy], table, dry_run=False, field_manager="e2e-mofed-upgrades")
    try:
        stored = admin.get(table.resource(policy), policy["metadata"]["name"])
        assert stored["spec"]["ofedDriver"]["upgradePolicy"]["maxParallelUpgrades"] == parallel
    finally:
        admin.delete(table.resource(policy), policy["metadata"]["name"])
