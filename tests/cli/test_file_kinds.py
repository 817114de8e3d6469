"""The wrong kind of file gets one message saying what it is and what to give instead, not a key-by-key list.

`render` and `check` take a config document; `import-values` takes the GPU Operator chart's values or a
ClusterPolicy (or NicClusterPolicy) manifest. The upstream values files in ../shared/reference/data are handed to
`render` as a newcomer would hand them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.cli import main
from tests.support.reference import reference_file

CHART_YAML = "apiVersion: v2\nname: gpu-operator\nversion: v26.7.0\ndescription: NVIDIA GPU Operator\ntype: application\n"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
RENDER_CASES = [
    ("Chart.yaml", CHART_YAML,
     "error: Chart.yaml: is a Helm chart's Chart.yaml (chart 'gpu-operator' 'v26.7.0': its name and version), not a "
     "config document (see examples/configs): to start from the chart's settings, convert its values.yaml (beside "
     "it) with `gpu-operator import-values values.yaml`"),
    ("cp.yaml", "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\nspec: {}\n",
     "error: cp.yaml: is a ClusterPolicy manifest, not a config document (see examples/configs): convert it with "
     "`gpu-operator import-values cp.yaml`, then render what that prints"),
    ("kubeconfig.yaml", KUBECONFIG,
     "error: kubeconfig.yaml: is a kubeconfig (cluster credentials), not a config document (see examples/configs)"),
    ("ds.yaml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\n",
     "error: ds.yaml: is a Kubernetes manifest (kind DaemonSet), not a config document"),
    ("Pulumi.yaml", "name: gpu\nruntime: python\nmain: stacks/\n",
     "error: Pulumi.yaml: is a Pulumi project file (Pulumi.yaml), not a config document (see examples/configs): give "
     "a stack file, Pulumi.<stack>.yaml"),
    ("values.yaml", "driver: {enabled: true}\ndevicePlugin: {enabled: true}\ntoolkit: {enabled: true}\n",
     "error: values.yaml: looks like the GPU Operator chart's values (devicePlugin, driver, toolkit at the top level), "
     "not a config document (see examples/configs): convert it with `gpu-operator import-values values.yaml`, then "
     "render what that prints (or move those sections under operator:)"),
]


@pytest.mark.parametrize(("name", "text", "expected"), RENDER_CASES, ids=[case[0] for case in RENDER_CASES])
@pytest.mark.parametrize("command", ["render", "check"])
def test_render_and_check_say_what_the_file_is(command: str, name: str, text: str, expected: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, encoding="utf-8")
    assert main([command, "-f", name]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == expected or err.startswith(expected), err


@pytest.mark.parametrize(("relative", "words"), [
    ("helm-values/gpu-operator-v26.7.0-values.yaml", "looks like the GPU Operator chart's values"),
    ("helm-values/network-operator-v26.4.1-values.yaml", "looks like the Network Operator chart's values"),
    ("helm-values/dra-driver-nvidia-gpu-v0.4.1-values.yaml", "looks like the DRA driver chart's values"),
    ("helm-values/aks-rdma-infiniband/nicclusterpolicy/base-nic.yaml", "is a NicClusterPolicy manifest"),
])
def test_upstream_files_given_to_render_are_recognised(relative: str, words: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = reference_file(relative)
    assert main(["render", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("Chart.yaml", CHART_YAML,
     "error: Chart.yaml: is a Helm chart's Chart.yaml (chart 'gpu-operator' 'v26.7.0': its name and version), not "
     "the GPU Operator chart's values or a ClusterPolicy manifest: give the chart's values.yaml beside it (`helm show "
     "values nvidia/gpu-operator`)"),
    ("doc.yaml", "aks: {resourceGroup: rg, clusterName: c}\npools: []\n",
     "error: doc.yaml: is already a config document (aks, pools), not the GPU Operator chart's values or a "
     "ClusterPolicy manifest: render it with `gpu-operator render -f doc.yaml`"),
    ("kubeconfig.yaml", KUBECONFIG,
     "error: kubeconfig.yaml: is a kubeconfig (cluster credentials), not the GPU Operator chart's values or a "
     "ClusterPolicy manifest"),
])
def test_import_values_says_what_the_file_is(name: str, text: str, expected: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, encoding="utf-8")
    assert main(["import-values", name]) == 2
    assert capsys.readouterr().err.strip() == expected


def test_the_files_import_values_takes_still_import(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import-values", str(reference_file("helm-values/gpu-operator-v26.7.0-values.yaml"))]) == 0
    assert main(["import-values", str(reference_file(
        "helm-values/aks-rdma-infiniband/nicclusterpolicy/base-nic.yaml"))]) == 0
