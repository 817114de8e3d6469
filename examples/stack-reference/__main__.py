"""A workload stack that runs on the GPU fleet of another stack, through that stack's outputs only.

The GPU fleet's stack (this repository's `stacks/`) exports the cluster's user kubeconfig (a secret, which stays
one through the StackReference), the pool names, a node selector and the tolerations per pool, the extended
resources GPUs are advertised as, and the runtime class. This project reads them with a `StackReference` and
runs NVIDIA's CUDA vector-add sample as a Job on one pool, requesting one GPU; nothing about the fleet is
repeated here.

The kubeconfig is not the cluster's admin account: on an Entra ID cluster it runs kubelogin, and this project
signs in as its own identity, with the Kubernetes role it was granted. AKS hands it out with kubelogin's
interactive `devicecode` login; `kubeloginMode` (e.g. `azurecli`, `workloadidentity` in CI) switches that.

Config (Pulumi.<stack>.yaml): `gpuStack`, the fully qualified name of the fleet's stack (`<org>/gpu-operator/<env>`),
`pool`, the GPU pool to run on, and optionally `kubeloginMode`.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.render.aks.kubeconfig import with_kubelogin_mode

SAMPLE_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"

settings = pulumi.Config()
pool = settings.require("pool")
login = settings.get("kubeloginMode")
fleet = pulumi.StackReference(settings.require("gpuStack"))

kubeconfig = fleet.require_output("kubeconfig")
if login:
    kubeconfig = kubeconfig.apply(lambda text: with_kubelogin_mode(text, login))
provider = k8s.Provider("gpu-fleet", kubeconfig=kubeconfig)
gpu_resource = fleet.require_output("gpuResourceNames").apply(lambda names: names[0])

job = k8s.batch.v1.Job(
    "cuda-vectoradd",
    metadata={"name": "cuda-vectoradd", "namespace": "default"},
    spec={
        "backoffLimit": 2,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "runtimeClassName": fleet.require_output("runtimeClassName"),
                "nodeSelector": fleet.require_output("nodeSelectorLabels").apply(lambda labels: labels[pool]),
                "tolerations": fleet.require_output("tolerations").apply(lambda tolerations: tolerations[pool]),
                "containers": [{
                    "name": "vectoradd",
                    "image": SAMPLE_IMAGE,
                    "resources": {"limits": gpu_resource.apply(lambda name: {name: "1"})},
                }],
            }
        },
    },
    opts=pulumi.ResourceOptions(provider=provider),
)

pulumi.export("job", job.metadata.apply(lambda meta: meta["name"]))
