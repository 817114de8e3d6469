"""The apply order of a rendered stack, as a graph: what waits for what when `pulumi up` creates it.

The components register the render's pieces with these dependencies (components/cluster_software.py and each
component's module say why), and `gpu-operator render --graph` prints them as a Mermaid flowchart:

* the GPU pools (with `aks`) come first: the Kubernetes provider depends on them, so every object waits;
* `NetworkOperator` (InfiniBand pools): its namespace, then the chart, the NodeFeatureRule, the NicClusterPolicy;
  after the policy, the wait for MOFED (`network.waitForMofed`), the IPPool CRD wait and the IPoIB objects, each
  after the ones before it;
* `GpuOperator`, after the whole Network Operator: the pre-requisites operand first, Node Feature Discovery's chart
  after it, then every other operand after both (side by side; with `waitForDaemonsets`, each after the one
  before it, in NVIDIA's state order, and the chart);
* `DraDriver` (namespace, chart, claim templates) and `GpuMonitoring`, each after the whole GPU operator.

A step is one Pulumi resource or one operand component; an edge `(a, b)` means `b` is created once `a` is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.dra import render_dra
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import render_network
from gpu_operator.render.nfd import nfd_chart
from gpu_operator.render.registry import RenderedOperand, render_operands

__all__ = ["ApplyGraph", "Step", "apply_graph", "mermaid"]


@dataclass(frozen=True)
class Step:
    """One thing created: its id in the graph, what it is, and the component that creates it."""

    id: str
    label: str
    component: str


@dataclass
class ApplyGraph:
    """Steps in registration order and the edges between them (`before` → `after`)."""

    steps: list[Step] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)

    def add(self, step: Step, after: list[str] | tuple[str, ...] = ()) -> str:
        self.steps.append(step)
        self.edges += [(before, step.id) for before in after]
        return step.id

    def of(self, component: str) -> list[str]:
        return [step.id for step in self.steps if step.component == component]


def _object(obj: dict) -> str:
    return f"{obj['kind']} {obj['metadata']['name']}"


def _network(graph: ApplyGraph, config: GpuStackConfig, before: list[str]) -> None:
    rendered = render_network(config)
    if rendered is None:
        return
    component = "NetworkOperator"
    namespace = graph.add(Step("network-namespace", _object(rendered.namespace), component), before)
    chart = graph.add(Step("network-chart", f"Helm chart {rendered.chart.name} {rendered.chart.version}",
                           component), [namespace])
    rule = graph.add(Step("network-rule", _object(rendered.node_feature_rule), component), [chart])
    policy = graph.add(Step("network-policy", _object(rendered.nic_cluster_policy), component), [rule])
    if config.network.wait_for_mofed:
        graph.add(Step("network-mofed", "MofedReadiness: MOFED loaded on every InfiniBand node", component),
                  [policy])
    crd = None
    if any(obj["kind"] == "IPPool" for obj in rendered.ipoib):
        crd = graph.add(Step("network-ippool-crd", "CrdEstablished ippools.nv-ipam.nvidia.com", component), [policy])
    previous: list[str] = []
    for index, obj in enumerate(rendered.ipoib):
        after = [policy, *previous, *([crd] if crd is not None and obj["kind"] == "IPPool" else [])]
        previous.append(graph.add(Step(f"network-ipoib-{index}", _object(obj), component), after))


def _operand_label(operand: RenderedOperand) -> str:
    daemonsets = [obj["metadata"]["name"] for obj in operand.objects if obj["kind"] == "DaemonSet"]
    count = len(operand.objects)
    what = f"{count} object{'s' if count != 1 else ''}" + (f"; DaemonSet {', '.join(daemonsets)}" if daemonsets else "")
    return f"{operand.state}: {what}"


def _operator(graph: ApplyGraph, config: GpuStackConfig, before: list[str], wait_for_daemonsets: bool) -> None:
    component = "GpuOperator"
    chart = nfd_chart(config)
    nfd: list[str] = []
    for operand in render_operands(config):
        step = graph.add(Step(f"operand-{operand.key}", _operand_label(operand), component), before)
        if operand.key == "prerequisites" and chart is not None:
            nfd = [graph.add(Step("nfd-chart", f"Helm chart {chart.name} {chart.version}", component), [step])]
        if operand.key == "prerequisites" or wait_for_daemonsets:
            before = [step, *nfd]


def _after_operator(graph: ApplyGraph, config: GpuStackConfig, operator: list[str]) -> None:
    dra = render_dra(config)
    if dra is not None:
        namespace = graph.add(Step("dra-namespace", _object(dra.namespace), "DraDriver"), operator)
        chart = graph.add(Step("dra-chart", f"Helm chart {dra.chart.name} {dra.chart.version}", "DraDriver"),
                          [namespace])
        namespaces = [graph.add(Step(f"dra-claim-namespace-{index}", _object(obj), "DraDriver"), operator)
                      for index, obj in enumerate(dra.claim_namespaces)]
        for index, obj in enumerate(dra.claim_templates):
            graph.add(Step(f"dra-claim-{index}", _object(obj), "DraDriver"), [chart, *namespaces])
    objects = monitoring_objects(config)
    if objects:
        graph.add(Step("monitoring", ", ".join(_object(obj) for obj in objects), "GpuMonitoring"), operator)


def apply_graph(config: GpuStackConfig, *, wait_for_daemonsets: bool = False) -> ApplyGraph:
    """What the components create for `config`, and in which order."""
    graph = ApplyGraph()
    before: list[str] = []
    if config.aks is not None and config.pools:
        pools = ", ".join(pool.name for pool in config.pools)
        before = [graph.add(Step("pools", f"AKS GPU pools: {pools}", "GpuNodePool"))]
    _network(graph, config, before)
    network = graph.of("NetworkOperator")
    _operator(graph, config, [*before, *network] if network else before, wait_for_daemonsets)
    _after_operator(graph, config, graph.of("GpuOperator"))
    return graph


def _quoted(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def mermaid(graph: ApplyGraph) -> str:
    """The graph as a Mermaid flowchart, one subgraph per component; edges into a component from every step of
    another are drawn once, between the subgraphs."""
    lines = ["flowchart TD"]
    components = list(dict.fromkeys(step.component for step in graph.steps))
    for component in components:
        lines.append(f"  subgraph {component}")
        lines += [f"    {step.id}[{_quoted(step.label)}]" for step in graph.steps if step.component == component]
        lines.append("  end")
    owner = {step.id: step.component for step in graph.steps}
    drawn: set[tuple[str, str]] = set()
    for before, after in graph.edges:
        source = before
        whole = graph.of(owner[before])
        if owner[before] != owner[after] and all((s, after) in graph.edges for s in whole) and len(whole) > 1:
            source = owner[before]
        if (source, after) not in drawn:
            drawn.add((source, after))
            lines.append(f"  {source} --> {after}")
    return "\n".join(lines) + "\n"
