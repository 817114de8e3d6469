"""The CrossGuard pack under the real engine: `pulumi preview --policy-pack policy-pack` of `stacks/`.

The engine starts the pack as users do (the Python language host, the pack's own virtualenv that
`policy-pack/PulumiPolicy.yaml` names), with the fleet facts as CrossGuard policy config (one entry per policy,
from `PolicyContext.from_config(...).describe()`, as `gpu-operator check` derives them). The stack of the base
document passes: the pack reports only its advisories, the same `gpu-operator check` reports. Each broken config
of the table passes config validation, and `gpu-operator check` finds a mandatory violation in it (exit 3); the
engine's preview fails with every one of those messages, and nothing is created in the cluster.

Before the pack named its virtualenv (issue 19, defect 4), the engine ran it with the system python and could not
start it; `pulumi preview --policy-pack` of a copy of the pack with `runtime: python` alone printed, on 2026-11-26:

    <the system python3>: Error while finding module specification for 'pulumi.policy'
    (ModuleNotFoundError: No module named 'pulumi')
    error: policy pack not started: could not read policy pack port: io: read/write on closed pipe

The first test asserts the pack starts (none of that) and reports under its name. The CrossGuard policy config
reaches the pack as JSON numbers, i.e. floats (`maxInfinibandNics: 8` arrives as 8.0); the pack turns the counts back
into integers, so its messages are `gpu-operator check`'s word for word (every case compares them).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Namespace

from gpu_operator.cli import _charts, _expanded_charts
from gpu_operator.config import GpuStackConfig, parse_config
from gpu_operator.policy import POLICIES, Enforcement, Finding, PolicyContext, check
from gpu_operator.policy.model import chart_object
from gpu_operator.render import render_operands
from gpu_operator.render.helm_chart import merge_values
from gpu_operator.render.stack import stack_objects
from tests.e2e.control_plane import ControlPlane
from tests.e2e.engine import Engine, EngineError, EngineStack, Operation
from tests.e2e.engine_fleet import (  # noqa: F401 - module fixtures
    base_document,
    chart_file,
    cluster,
    engine,
    install_prometheus_operator_crds,
    plane,
)
from tests.e2e.report import note
from tests.e2e.tools import E2eTools
from tests.support.reference import REPO_ROOT

pytestmark = pytest.mark.e2e

PACK = REPO_ROOT / "policy-pack"
PACK_NAME = "pulumi-gpu-operator"
STACK = "policies"
NETWORK = {"enabled": True, "vfDeviceIds": ["101e"], "chart": {"path": chart_file("network-operator-26.4.1.tgz")}}

#: (policy, overrides of the base document): each passes config validation, and `gpu-operator check` finds a
#: mandatory violation of `policy` in it.
BROKEN: list[tuple[str, dict[str, Any]]] = [
    ("scrape-timeout-within-interval",
     {"cluster": {"prometheusOperator": True},
      "operator": {"dcgmExporter": {"serviceMonitor": {"enabled": True, "interval": "5s"}}}}),
    ("ofed-memory-fits-the-compile",
     {"network": {**NETWORK, "ofedDriver": {"resources": {"limits": {"memory": "50Mi"}}}}, "nfd": {"enabled": False}}),
    ("exporter-memory-fits-the-gpus",
     {"agents": {"implementation": "nvidia"}, "operator": {"dcgmExporter": {"resources": {"limits": {"memory": "100Mi"}}}}}),
    # the PrometheusRule gets ruleLabels, the exporter's ServiceMonitor only serviceMonitor.additionalLabels
    ("monitors-carry-prometheus-selector",
     {"cluster": {"prometheusOperator": True}, "monitoring": {"ruleLabels": {"release": "prom"}},
      "operator": {"dcgmExporter": {"serviceMonitor": {"enabled": True}}}}),
    ("image-pinned", {"operator": {"toolkit": {"version": "latest"}}}),
]
#: The namespaces the stack (and the Network Operator) would create.
NAMESPACES = ("gpu-operator", "network-operator")


def _document(overrides: dict[str, Any]) -> dict[str, Any]:
    return merge_values(base_document(), copy.deepcopy(overrides))


def _check(config: GpuStackConfig, production: bool = False) -> list[Finding]:
    """`gpu-operator check -f` on the document, in-process (gpu_operator/cli.py `_check`): the charts' values and
    the objects they expand to (with the e2e tools' Helm, `HELM` set by the module fixture), as the pack sees them."""
    charts = [chart_object(c.spec.name, c.spec.namespace, c.spec.chart, c.spec.pinned_version or "", c.spec.values)
              for c in _charts(config)]
    expanded = _expanded_charts(config, REPO_ROOT)
    return check([*charts, *expanded, *stack_objects(config, render_operands(config))],
                 PolicyContext.from_config(config, production=production))


@pytest.fixture(scope="module", autouse=True)
def _helm_of_the_e2e_tools(e2e_tools: E2eTools) -> Iterator[None]:
    """`check` expands charts with `$HELM`; a chart that cannot be expanded would leave its objects unjudged."""
    helm = e2e_tools.optional("helm")
    assert helm is not None, "helm is not built: run `make e2e-tools`"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HELM", str(helm))
        yield


def _policy_config(config: GpuStackConfig, path: Path, production: bool) -> Path:
    """The fleet facts as a CrossGuard policy-config file: the same properties for every policy, unset ones left
    out (the pack's schema wants integers, not null)."""
    context = PolicyContext.from_config(config, production=production)
    facts = {key: value for key, value in context.describe().items() if value is not None}
    path.write_text(json.dumps({policy.name: facts for policy in POLICIES}, indent=2))
    return path


class PolicyStack:
    def __init__(self, stack: EngineStack, kubeconfig: str, workdir: Path) -> None:
        self.stack, self.kubeconfig, self.workdir = stack, kubeconfig, workdir

    def preview(self, name: str, document: dict[str, Any], production: bool = False
                ) -> tuple[GpuStackConfig, Operation]:
        """Preview `document` with the pack (`production` as `check --production`); the config it was parsed to and
        the operation (raises EngineError)."""
        config = parse_config(copy.deepcopy(document))
        self.stack.set_config({"gpu-operator:kubeconfig": self.kubeconfig, "gpu-operator:config": document})
        policy_config = _policy_config(config, self.workdir / f"{name}.policy-config.json", production)
        return config, self.stack.preview(policy_packs=[PACK], policy_pack_configs=[policy_config])


@pytest.fixture(scope="module")
def policy_stack(engine: Engine, plane: ControlPlane, cluster: Client,
                 tmp_path_factory: pytest.TempPathFactory) -> PolicyStack:
    assert (PACK / ".." / ".venv-policy" / "bin" / "python").exists(), "run `make policy-venv`"
    install_prometheus_operator_crds(cluster)  # as kube-prometheus-stack would have, for the monitoring cases
    project = engine.project("gpu-operator-policies", REPO_ROOT / "stacks")
    return PolicyStack(engine.stack(project, STACK), plane.admin_kubeconfig.read_text(),
                       tmp_path_factory.mktemp("policy-config"))


def _nothing_created(client: Client) -> None:
    for namespace in NAMESPACES:
        assert not list(client.list(DaemonSet, namespace=namespace)), f"a DaemonSet exists in {namespace}"
        try:
            client.get(Namespace, namespace)
        except ApiError as error:
            assert error.status.code == 404, error
        else:
            raise AssertionError(f"namespace {namespace} was created by a preview")


def _events(operation: Operation, enforcement: str) -> list[Any]:
    return [e for e in operation.policy_events if e.enforcement_level == enforcement]


def test_the_pack_starts_under_the_engine_and_the_stack_passes(policy_stack: PolicyStack, cluster: Client) -> None:
    # as a production stack: the chart defaults raise no finding otherwise (issue 22 item 12), and the pack must be
    # seen reporting its advisories under its name
    config, preview = policy_stack.preview("base", base_document(), production=True)
    assert not preview.errors, preview.errors
    assert not _events(preview, "mandatory"), [(e.policy_name, e.message) for e in _events(preview, "mandatory")]
    # the pack started (defect 4: with the system python it failed with "No module named 'pulumi'") and ran:
    # the engine reports its advisories under the pack's name, the same ones `gpu-operator check` finds
    findings = _check(config, production=True)
    assert findings and all(f.policy.enforcement is Enforcement.ADVISORY for f in findings)
    advisories = _events(preview, "advisory")
    assert {e.policy_pack_name for e in advisories} == {PACK_NAME}, advisories
    assert PACK_NAME in preview.stdout
    assert "policy pack not started" not in preview.stdout and "No module named" not in preview.stdout
    # per policy as many violations as `check` finds (a message naming "the first privileged pod" names
    # another DaemonSet: the engine registers them in another order than the render)
    assert Counter(e.policy_name for e in advisories) == Counter(f.policy.name for f in findings), (
        sorted((e.policy_name, e.message) for e in advisories), [(f.policy.name, f.violation.message) for f in findings])
    _nothing_created(cluster)
    note(f"engine: preview --policy-pack of the base stack in {preview.seconds:.1f} s: no mandatory violation, "
         f"{len(advisories)} advisories = gpu-operator check's {len(findings)}")


@pytest.mark.parametrize("policy, overrides", BROKEN, ids=[policy for policy, _ in BROKEN])
def test_a_broken_config_is_blocked_with_its_mandatory_message(
    policy: str, overrides: dict[str, Any], policy_stack: PolicyStack, cluster: Client
) -> None:
    document = _document(overrides)
    config = parse_config(copy.deepcopy(document))  # valid: config validation lets it through
    mandatory = [f for f in _check(config) if f.policy.enforcement is Enforcement.MANDATORY]
    assert policy in {f.policy.name for f in mandatory}, "gpu-operator check finds no such violation (exit 0)"
    with pytest.raises(EngineError) as raised:
        policy_stack.preview(policy, document)
    error = raised.value
    blocked = _events(error.operation, "mandatory")
    for finding in mandatory:
        message = finding.violation.message
        assert message in error.output, (f"the engine's output lacks {finding.policy.name}'s message {message!r}",
                                         [(e.policy_name, e.message) for e in error.operation.policy_events])
        assert any(e.policy_name == finding.policy.name and e.policy_pack_name == PACK_NAME and message in e.message
                   for e in blocked), f"no mandatory policy event for {finding.policy.name}: {message!r}"
    assert {e.policy_name for e in blocked} == {f.policy.name for f in mandatory}
    _nothing_created(cluster)
    note(f"engine: preview --policy-pack blocked {policy} in {error.operation.seconds:.1f} s "
         f"({len(mandatory)} mandatory finding(s), as gpu-operator check)")
