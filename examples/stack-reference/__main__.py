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
`pool`, the GPU pool to run on, and optionally `kubeloginMode`. When the fleet's stack runs without `aks` (it
installs the operator on a cluster it did not create, and exports an empty `kubeconfig`), this project signs in
with its own `kubeconfig` secret instead. Without pools, `pool` may be left out: the Job then lands on any GPU node
(requesting a GPU is enough to land on a GPU node).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.render.aks.kubeconfig import with_kubelogin_mode

SAMPLE_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
#: Every output the fleet's stack documents (stacks/__main__.py); one missing fails this project's preview at once.
FLEET_OUTPUTS = ("kubeconfig", "resourceGroupName", "clusterName", "namespace", "runtimeClassName", "gpuResourceNames",
                 "gpuNodeLabels", "poolNames", "nodeSelectorLabels", "tolerations")

settings = pulumi.Config()
pool = settings.get("pool")
login = settings.get("kubeloginMode")
fleet = pulumi.StackReference(settings.require("gpuStack"))

own_kubeconfig = settings.get_secret("kubeconfig")


def _credential(fleet_kubeconfig: str, own: str | None) -> str:
    """The fleet's user kubeconfig (AKS), else this project's own: a fleet stack installed on a cluster it did not
    create (kubeconfig mode) exports an empty `kubeconfig`, having none it may hand on."""
    if fleet_kubeconfig:
        return with_kubelogin_mode(fleet_kubeconfig, login) if login else fleet_kubeconfig
    if own:
        return own
    raise pulumi.RunError(
        "the GPU fleet's stack exports no kubeconfig (it runs on a cluster it did not create): give this project "
        "its own credential with `pulumi config set --secret kubeconfig < kubeconfig.yaml`"
    )


kubeconfig = pulumi.Output.secret(pulumi.Output.all(fleet.require_output("kubeconfig"), own_kubeconfig)
                                  .apply(lambda values: _credential(values[0], values[1])))
provider = k8s.Provider("gpu-fleet", kubeconfig=kubeconfig)


def _counted_gpu(names: list[str]) -> str:
    """The first extended resource the fleet advertises GPUs as (`nvidia.com/gpu`, or a shared or MIG name)."""
    if not names:
        raise pulumi.RunError("the GPU fleet advertises no counted GPU resource (its device plugin is off: GPUs are "
                              "allocated through DRA there): request a GPU with a ResourceClaim instead "
                              "(examples/workloads/dra)")
    return names[0]


gpu_resource = fleet.require_output("gpuResourceNames").apply(_counted_gpu)


def _on_pool(by_pool: dict[str, dict[str, str]]) -> dict[str, str]:
    """The chosen pool's node selector; without pools none (requesting a GPU already lands on a GPU node)."""
    if pool is None and not by_pool:
        return {}
    if pool not in by_pool:
        raise pulumi.RunError(f"pool: the GPU fleet's pools are {', '.join(sorted(by_pool)) or 'none'}; "
                              f"set `pool` to one of them (it is {pool!r})")
    return by_pool[pool]


job = k8s.batch.v1.Job(
    "cuda-vectoradd",
    metadata={"name": "cuda-vectoradd", "namespace": "default"},
    spec={
        "backoffLimit": 2,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "runtimeClassName": fleet.require_output("runtimeClassName").apply(lambda name: name or None),
                "nodeSelector": fleet.require_output("nodeSelectorLabels").apply(_on_pool),
                "tolerations": fleet.require_output("tolerations").apply(
                    lambda tolerations: tolerations[pool] if pool else []),
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
# the fleet's contract, checked: each output read (and so present), by name; the credential stays a secret
pulumi.export("fleetOutputs", pulumi.Output.unsecret(
    pulumi.Output.all(*[fleet.require_output(name) for name in FLEET_OUTPUTS]).apply(lambda _: list(FLEET_OUTPUTS))))
