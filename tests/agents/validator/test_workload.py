"""The workload pods match NVIDIA's manifests, with the validator DaemonSet's tolerations and owners."""

from __future__ import annotations

from gpu_operator.agents.validator.workload import WorkloadImage, cuda_pod, plugin_pod

IMAGE = WorkloadImage(
    "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.0", "Always", ("ngc", "mirror"), "nvidia"
)
TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
OWNERS = [
    {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy", "uid": "u-1", "controller": True}
]


def test_cuda_pod() -> None:
    assert cuda_pod("gpu-operator", "node-a", IMAGE, TOLERATIONS, OWNERS) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "nvidia-cuda-validator-",
            "namespace": "gpu-operator",
            "labels": {"app": "nvidia-cuda-validator"},
            "annotations": {"nvidia.cdi.k8s.io/container.cuda-validation": "management.nvidia.com/gpu=all"},
            "ownerReferences": OWNERS,
        },
        "spec": {
            "nodeName": "node-a",
            "restartPolicy": "OnFailure",
            "serviceAccountName": "nvidia-operator-validator",
            "initContainers": [
                {
                    "name": "cuda-validation",
                    "image": IMAGE.image,
                    "imagePullPolicy": "Always",
                    "command": ["sh", "-c"],
                    "args": ["vectorAdd"],
                    "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                    "securityContext": {"privileged": True},
                }
            ],
            "containers": [
                {
                    "name": "nvidia-cuda-validator",
                    "image": IMAGE.image,
                    "imagePullPolicy": "Always",
                    "command": ["sh", "-c"],
                    "args": ["echo cuda workload validation is successful"],
                    "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                }
            ],
            "tolerations": TOLERATIONS,
            "imagePullSecrets": [{"name": "ngc"}, {"name": "mirror"}],
            "runtimeClassName": "nvidia",
        },
    }


def test_plugin_pod_requests_one_resource() -> None:
    pod = plugin_pod("gpu-operator", "node-a", WorkloadImage("validator:v1"), "nvidia.com/mig-1g.10gb")
    assert pod["metadata"] == {
        "generateName": "nvidia-device-plugin-validator-",
        "namespace": "gpu-operator",
        "labels": {"app": "nvidia-device-plugin-validator"},
    }
    init, main = pod["spec"]["initContainers"][0], pod["spec"]["containers"][0]
    assert init == {
        "name": "plugin-validation",
        "image": "validator:v1",
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c"],
        "args": ["vectorAdd"],
        "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}, "requests": {"nvidia.com/mig-1g.10gb": "1"}},
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    assert main["name"] == "nvidia-device-plugin-validator"
    assert main["args"] == ["echo device-plugin workload validation is successful"]
    assert main["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
    assert set(pod["spec"]) == {"nodeName", "restartPolicy", "serviceAccountName", "initContainers", "containers"}
