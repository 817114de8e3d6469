"""NVIDIADriver manifests import as drivers of their own, and render the DaemonSets NVIDIA's controller made.

NVIDIA's side, read from gpu-operator v26.7.0: `internal/state/driver.go` (`getDriverAppName`: the DaemonSet
`nvidia-<driverType>-driver-<osTag>-<hash of uid[-kernel]>`; `getDriverName`: the ServiceAccount
`nvidia-<driverType>-driver-<cr>-<osTag>`; `getDefaultStartupProbe`), `internal/state/nodepool.go` (`getNodePools`:
the CR's nodeSelector, `nvidia.com/gpu.present`, the owner label and the NFD OS and kernel labels),
`manifests/state-driver/0500_daemonset.yaml` (labels, selector, the template's `nvidia.com/gpu.deploy.driver`),
`api/nvidia/v1alpha1/nvidiadriver_types.go` (`GetNodeSelector`, the CRD defaults).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.importers import load_import
from gpu_operator.render import render
from gpu_operator.render.operands.nvidia_driver_names import string_hash
from tests.support.agents import with_agents

UID = "bfac7359-6033-45ce-88d6-53db0078526e"  # NVIDIA's TestGetDriverAppName uid
OTHER_UID = "0f5c1e2a-6b1d-4c2e-9f3a-5d6e7f8a9b0c"
OWNER = "nvidia.com/gpu-operator.driver.owner"
POLICY = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
          "spec": {"driver": {"useNvidiaDriverCRD": True}, "mig": {"strategy": "single"}}}


def nvidia_driver(name: str, uid: str | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": "42"}
    if uid is not None:
        metadata["uid"] = uid
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": metadata,
            "spec": {"driverType": "gpu", "image": "driver", "repository": "nvcr.io/nvidia", **spec},
            "status": {"state": "ready"}}


#: the chart's default NVIDIADriver (templates/nvidiadriver.yaml) and a precompiled one for the nodes of a team
DEFAULT = nvidia_driver("default", OTHER_UID, default=True, version="580.105.08", kernelModuleType="open")
PRECOMPILED = nvidia_driver("inference", UID, version="580", usePrecompiled=True, nodeSelector={"team": "inference"})
KERNEL = "5.15.0-70-generic"
#: the nodes' OS and kernel, which NVIDIA's controller reads from NFD's labels
UBUNTU_2004 = {"operatingSystems": [{"id": "ubuntu", "versionId": "20.04", "kernelVersions": [KERNEL]}]}


def write(tmp_path: Path, name: str, *documents: object) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents))
    return path


def _daemonsets(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    config = parse_config(with_agents({**document, "cluster": UBUNTU_2004}))
    return {o["metadata"]["name"]: o for o in render(config) if o["kind"] == "DaemonSet"
            and o["metadata"]["labels"].get("app.kubernetes.io/component") == "nvidia-driver"}


def test_an_nvidiadriver_install_renders_the_daemonsets_nvidias_controller_made(tmp_path: Path) -> None:
    document = load_import(write(tmp_path, "install.yaml", POLICY, DEFAULT, PRECOMPILED))
    assert document["operator"]["driver"]["useNvidiaDriverCRD"] is True
    assert document["drivers"]["inference"]["uid"] == UID
    sets = _daemonsets(document)
    # NVIDIA's own vector for this uid and kernel (driver_test.go TestGetDriverAppName): ...-59b779bcc5
    precompiled = sets["nvidia-gpu-driver-ubuntu20.04-59b779bcc5"]
    labels = {"app": "nvidia-gpu-driver-ubuntu20.04-59b779bcc5", "nvidia.com/node.os-version": "ubuntu20.04",
              "nvidia.com/precompiled": "true", "nvidia.com/precompiled.kernel-version": KERNEL,
              "app.kubernetes.io/component": "nvidia-driver"}
    assert precompiled["spec"]["template"]["metadata"]["labels"] == labels
    assert precompiled["spec"]["selector"] == {"matchLabels": {"app": labels["app"]}}
    assert {k: v for k, v in precompiled["metadata"]["labels"].items() if k in labels} == labels
    pod = precompiled["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true", "team": "inference", "nvidia.com/gpu.present": "true",
        OWNER: "inference", "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "20.04",
        "feature.node.kubernetes.io/kernel-version.full": KERNEL,
    }
    assert pod["serviceAccountName"] == "nvidia-gpu-driver-inference-ubuntu20.04"
    main_container = pod["containers"][0]
    assert main_container["image"] == f"nvcr.io/nvidia/driver:580-{KERNEL}-ubuntu20.04"
    assert main_container["startupProbe"]["initialDelaySeconds"] == 5  # getDefaultStartupProbe, precompiled
    # the default NVIDIADriver: its own uid, every GPU node no other one selects
    default = sets[f"nvidia-gpu-driver-ubuntu20.04-{string_hash(OTHER_UID)}"]
    assert default["spec"]["template"]["spec"]["nodeSelector"][OWNER] == "default"
    assert default["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "nvcr.io/nvidia/driver:580.105.08-ubuntu20.04"
    assert "nvidia-driver-daemonset" not in sets


def test_values_and_a_file_of_nvidiadrivers(tmp_path: Path) -> None:
    values = write(tmp_path, "values.yaml", {"driver": {"nvidiaDriverCRD": {"enabled": True}}})
    drivers = write(tmp_path, "drivers.yaml", DEFAULT, PRECOMPILED)
    document = load_import(values, drivers=[drivers])
    assert set(document["drivers"]) == {"default", "inference"}
    with pytest.raises(ConfigError, match="no NVIDIADriver manifest"):
        load_import(values, drivers=[values])


def test_an_entry_says_only_what_differs_from_the_cluster_driver(tmp_path: Path) -> None:
    """The chart's default NVIDIADriver repeats the driver values: nothing of it differs but what NVIDIA's
    controller defaults otherwise (licensing NLS on, the tolerations it was given)."""
    values = {"driver": {"nvidiaDriverCRD": {"enabled": True}, "version": "580.105.08"}}
    same = nvidia_driver("default", OTHER_UID, default=True, version="580.105.08", kernelModuleType="auto",
                         usePrecompiled=False, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists",
                                                            "effect": "NoSchedule"}],
                         startupProbe={"initialDelaySeconds": 60, "periodSeconds": 10, "timeoutSeconds": 60,
                                       "failureThreshold": 120})
    document = load_import(write(tmp_path, "values.yaml", values), drivers=[write(tmp_path, "d.yaml", same)])
    assert document["drivers"]["default"] == {"default": True, "uid": OTHER_UID}


def test_a_non_default_nvidiadriver_without_a_selector_selects_every_gpu_node(tmp_path: Path) -> None:
    document = load_import(write(tmp_path, "install.yaml", POLICY, nvidia_driver("all", version="580.105.08")))
    assert document["drivers"]["all"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}  # GetNodeSelector


@pytest.mark.parametrize(("manifests", "path"), [
    ([nvidia_driver("a", default=True), nvidia_driver("b", default=True)], "b.default"),
    ([nvidia_driver("a", nodeSelector={"team": "a"}), nvidia_driver("b", nodeSelector={"gpu": "h100"})],
     "b.nodeSelector"),
    ([nvidia_driver("a", kernelModuleType="closed")], "a.spec.kernelModuleType"),
    ([nvidia_driver("a"), nvidia_driver("a")], "a.metadata.name"),
    ([{**nvidia_driver("a"), "apiVersion": "nvidia.com/v1"}], "[0].apiVersion"),
])
def test_what_nvidias_operator_refuses_is_refused(tmp_path: Path, manifests: list[Any], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_import(write(tmp_path, "install.yaml", POLICY, *manifests))
    assert path in [problem.path for problem in caught.value.problems]


def test_import_values_says_how_drivers_change_and_what_the_document_still_needs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "install.yaml", POLICY, DEFAULT, PRECOMPILED)
    assert main(["import-values", str(path)]) == 0
    captured = capsys.readouterr()
    assert yaml.safe_load(captured.out)["drivers"]["inference"]["usePrecompiled"] is True
    # a precompiled driver needs its kernels listed, which no manifest says: named, with the fix
    assert "before it renders, the imported document needs: cluster.operatingSystems" in captured.err
    plain = write(tmp_path, "values.yaml", {"driver": {"version": "580.105.08"}})
    assert main(["import-values", str(plain)]) == 0
    assert "driver upgrades without the operator controller: a driver change rolls out by the DaemonSet itself" \
        in capsys.readouterr().err
    hand_written = write(tmp_path, "cp.yaml", {**POLICY, "spec": {"mig": {"strategy": "single"}}})
    assert main(["import-values", str(hand_written)]) == 0  # no upgradePolicy: the CRD's autoUpgrade false
    assert "a driver change reaches no node by itself" in capsys.readouterr().err
