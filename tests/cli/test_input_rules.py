"""The input rules of issue 22, one table per category, through `gpu-operator` in-process.

Every row is refused input: the run exits 2, the message names the key and the fix, no traceback or internal
error is printed, nothing reaches stdout and the scratch directory (where `-o out` would write) is unchanged.
Where a rule follows NVIDIA, the row's comment names the upstream file and function it follows.
"""

from __future__ import annotations

import io
import shlex
from pathlib import Path
from typing import Any

import pytest

from gpu_operator.cli import main
from tests.cli.support import create_files, snapshot

AKS = "aks: {resourceGroup: rg, clusterName: c, kubernetesVersion: '1.34'}\n"
DEVICE_PLUGIN = "operator: {devicePlugin: {config: {name: sharing, default: a}}}\n"
METRICS = "operator: {dcgmExporter: {config: {name: metrics}}}\n"
DRA = AKS + "pools: [{name: h100, vmSize: Standard_ND96isr_H100_v5, gpuAllocation: dra}]\n"


def row(name: str, config: str, expected: list[str], command: str = "render -f c.yaml -o out",
        files: dict[str, str] | None = None, stdin: str | None = None) -> Any:
    created = {"c.yaml": config} if config else {}
    return pytest.param({**created, **(files or {})}, shlex.split(command), expected, stdin, id=name)


def sharing(block: str) -> str:
    return DEVICE_PLUGIN + f"configs: {{devicePlugin: {{a: {{version: v1, sharing: {block}}}}}}}\n"


CHART_VALUES = [
    row("nfd worker tolerations as a map", "nfd: {values: {worker: {tolerations: {key: a}}}}\n",
        ["nfd.values.worker.tolerations: must be a list of tolerations, got a mapping", "write them as a list"]),
    row("nfd tolerations as taint strings", "nfd: {values: {worker: {tolerations: ['sku=gpu:NoSchedule']}}}\n",
        ["nfd.values.worker.tolerations[0]: 'sku=gpu:NoSchedule' is a string",
         'write {key: sku, operator: Equal, value: "gpu", effect: NoSchedule}']),
    row("nfd toleration with a bad operator", "nfd: {values: {worker: {tolerations: [{key: a, operator: In}]}}}\n",
        ["nfd.values.worker.tolerations[0].operator:"]),
    row("nfd master config as a string", "nfd: {values: {master: {config: 'extraLabelNs: [x]'}}}\n",
        ["nfd.values.master.config: must be a mapping, got a string"]),
    row("nfd worker as a list", "nfd: {values: {worker: [a]}}\n", ["nfd.values.worker: must be a mapping, got a list"]),
    row("nfd nodeSelector value a number", "nfd: {values: {master: {nodeSelector: {pool: 1}}}}\n",
        ["nfd.values.master.nodeSelector.pool: must be a string, got a number; quote it"]),
    row("nfd resources of the wrong shape", "nfd: {values: {gc: {resources: {limits: {cpu: lots}}}}}\n",
        ["nfd.values.gc.resources.limits.cpu:", "is not a Kubernetes quantity"]),
    row("nfd image as a string", "nfd: {values: {image: nfd:latest}}\n",
        ["nfd.values.image: must be a mapping, got a string", "{repository: ..., tag: ..., pullPolicy: IfNotPresent}"]),
    row("network operator tolerations as a map", "network: {values: {operator: {tolerations: {key: a}}}}\n",
        ["network.values.operator.tolerations: must be a list of tolerations"]),
    row("network NFD worker tolerations strings",
        "network: {values: {node-feature-discovery: {worker: {tolerations: [a:NoSchedule]}}}}\n",
        ["network.values.node-feature-discovery.worker.tolerations[0]: 'a:NoSchedule' is a string",
         "write {key: a, operator: Exists, effect: NoSchedule}"]),
    row("network operator affinity unknown field", "network: {values: {operator: {affinity: {nodeAfinity: {}}}}}\n",
        ["network.values.operator.affinity.nodeAfinity: is not a field of a pod's affinity"]),
    row("dra kubelet plugin tolerations as a map", DRA + "dra: {values: {kubeletPlugin: {tolerations: {key: a}}}}\n",
        ["dra.values.kubeletPlugin.tolerations: must be a list of tolerations"]),
    row("dra unknown top-level key", DRA + "dra: {values: {kubeletPlugins: {}}}\n",
        ["dra.values.kubeletPlugins: not a value of the dra-driver-nvidia-gpu chart"]),
    row("dra gpus switch as a string", DRA + "dra: {values: {resources: {gpus: {enabled: 'no'}}}}\n",
        ["dra.values.resources.gpus.enabled: must be a boolean, got a string; write true or false"]),
]

BOUNDS = [
    # NVIDIA/k8s-device-plugin cmd/mps-control-daemon/mps/device.go (mpsDevice.assertReplicas, maxClients): 48
    row("time-slicing replicas too many", sharing("{timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1000}]}}"),
        ["configs.devicePlugin.a.sharing.timeSlicing.resources[0].replicas: must be at most 250",
         "AKS runs at most 250 pods on a node"]),
    row("mps replicas over the MPS server's clients", sharing("{mps: {resources: [{name: nvidia.com/gpu, replicas: 49}]}}"),
        ["configs.devicePlugin.a.sharing: mps: nvidia.com/gpu replicas must be at most 48", "or use timeSlicing"]),
    # NVIDIA/k8s-device-plugin api/config/v1/sharing.go (Sharing.SharingStrategy: MPS wins over time-slicing)
    row("time-slicing and mps together",
        sharing("{timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}, "
                "mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}"),
        ["configs.devicePlugin.a.sharing: timeSlicing and mps are both set", "would use mps only",
         "keep one of them"]),
]

CSV_FIELDS = [
    # NVIDIA/dcgm-exporter internal/pkg/counters/counter_config.go (ExtractCounters: dcgm.GetFieldID, else error)
    row("a field DCGM does not have", METRICS + "configs: {dcgmExporter: 'DCGM_FI_DEV_GPU_TEMPERATURE, gauge, t'}\n",
        ["configs.dcgmExporter: line 1: 'DCGM_FI_DEV_GPU_TEMPERATURE' is not a DCGM field",
         "did you mean DCGM_FI_DEV_GPU_TEMP"]),
    row("NVIDIA's exporter too", "agents: {implementation: nvidia}\n" + METRICS
        + "configs: {dcgmExporter: [{field: DCGM_FI_PROF_SM_ACTIV, type: gauge}]}\n",
        ["'DCGM_FI_PROF_SM_ACTIV' is not a DCGM field", "did you mean DCGM_FI_PROF_SM_ACTIVE"]),
]

NAMESPACES = [
    row("kube-system", "namespace: kube-system\n",
        ["namespace: 'kube-system' is a namespace of the cluster itself", "e.g. gpu-operator"]),
    row("default", "namespace: default\n", ["namespace: 'default' is a namespace of the cluster itself"]),
    row("kube-public", "namespace: kube-public\n", ["namespace: 'kube-public'"]),
    row("network in kube-system", "network: {enabled: true, namespace: kube-system, vfDeviceIds: ['101e']}\n",
        ["network.namespace: 'kube-system' is a namespace of the cluster itself", "e.g. network-operator"]),
    row("import into kube-system", "", ["namespace: 'kube-system' is a namespace of the cluster itself"],
        command="import-values v.yaml -n kube-system", files={"v.yaml": "{}\n"}),
]

STACK_FILES = [
    row("a misspelt gpu-operator key", "", ["config.gpu-operator:confg: is not a setting stacks/__main__.py reads",
                                            "did you mean gpu-operator:config?"],
        command="render -f Pulumi.dev.yaml -o out", files={"Pulumi.dev.yaml": "config:\n  gpu-operator:confg: {}\n"}),
    row("another project's config", "", ["config.myproject:config: is another project's setting",
                                         "reads its document from gpu-operator:config; rename the key"],
        command="render -f Pulumi.dev.yaml -o out",
        files={"Pulumi.dev.yaml": "config:\n  myproject:config: {namespace: gpu}\n"}),
    row("a misspelt setting", "", ["config.gpu-operator:waitForDaemonset: is not a setting",
                                   "did you mean gpu-operator:waitForDaemonsets?"],
        command="check -f Pulumi.dev.yaml",
        files={"Pulumi.dev.yaml": "config:\n  gpu-operator:waitForDaemonset: true\n  gpu-operator:config: {}\n"}),
]

STDIN = [
    row("a bad document on stdin", "", ["error: standard input: namespace: must be a string, got 1"],
        command="render -f - -o out", stdin="namespace: 1\n"),
    row("invalid YAML on stdin", "", ["error: standard input: not valid YAML"], command="check -f -",
        stdin="operator: [\n"),
    row("a list on stdin", "", ["standard input: must hold a mapping of settings"], command="dashboard -f -",
        stdin="- a\n"),
    row("import-values says it does not read stdin", "", ["import-values reads a file, not standard input"],
        command="import-values -", stdin="{}\n"),
]

EXIT_CODES = [
    row("a quoted boolean", "nfd: {enabled: 'false'}\n", ["nfd.enabled: must be a boolean (true or false, unquoted), got 'false'"]),
    row("yes is not a boolean", "nfd: {enabled: 'yes'}\n", ["nfd.enabled: must be a boolean (true or false, unquoted), got 'yes'"]),
    row("a number for a boolean", "operator: {driver: {enabled: 1}}\n",
        ["operator.driver.enabled: must be a boolean (true or false, unquoted), got 1"]),
    row("a quoted whole number", AKS + "pools: [{name: t4, vmSize: Standard_NC4as_T4_v3, count: '2'}]\n",
        ["pools[0].count: must be a whole number, unquoted, got '2'"]),
    row("a number for a string", "operator: {driver: {version: 550}}\n",
        ["operator.driver.version: must be a string, got 550"]),
    row("chart values that used to crash the render", "nfd: {values: {worker: {tolerations: {a: b}}}}\n",
        ["nfd.values.worker.tolerations: must be a list"], command="check -f c.yaml"),
]

CASES = [*CHART_VALUES, *BOUNDS, *CSV_FIELDS, *NAMESPACES, *STACK_FILES, *STDIN, *EXIT_CODES]


@pytest.mark.parametrize(("files", "argv", "expected", "stdin"), CASES)
def test_refused_input_exits_2_naming_the_key_and_the_fix_and_writes_nothing(
    files: dict[str, str], argv: list[str], expected: list[str], stdin: str | None, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    create_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    before = snapshot(tmp_path)

    status = main(argv)

    out, err = capsys.readouterr()
    assert status == 2, err
    assert err.startswith("error: "), err
    for text in expected:
        assert text in err, err
    assert "Traceback" not in err and "internal error" not in err
    assert out == ""
    assert snapshot(tmp_path) == before


def test_a_document_on_standard_input_renders_like_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = "namespace: gpu\noperator: {mig: {strategy: mixed}}\n"
    (tmp_path / "c.yaml").write_text(document)
    assert main(["render", "-f", str(tmp_path / "c.yaml")]) == 0
    from_file = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(document.encode())))
    assert main(["render", "-f", "-"]) == 0
    assert capsys.readouterr().out == from_file


def test_a_terminal_on_standard_input_is_refused_rather_than_waited_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal(io.BytesIO(b"")))
    assert main(["render", "-f", "-"]) == 2
    assert "standard input: is a terminal, not a document: pipe the document in" in capsys.readouterr().err
