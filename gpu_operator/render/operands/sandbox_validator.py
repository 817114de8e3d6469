"""state-sandbox-validation: `nvidia-sandbox-validator` checks the VM-workload stack of each sandbox node.

It runs on every node whose workload config is `vm-passthrough` or `vm-vgpu` whenever sandbox workloads are
enabled. Its init containers each run one validator component and leave a status file in
`/run/nvidia/validations`, in this order:

1. `cc-manager-validation` waits for the CC manager (`cc-manager-ready`); left out when `ccManager.enabled` is off;
2. `vfio-pci-validation` checks passthrough GPUs are bound to vfio-pci (`vfio-pci-ready`);
3. `vgpu-manager-validation` checks the vGPU host driver (`vgpu-manager-ready`, or `host-vgpu-manager-ready`
   for a driver installed on the host);
4. `vgpu-devices-validation` checks vGPU devices exist (`vgpu-devices-ready`).

The validator records the node's workload type in `workload-type` and only checks what that role needs; nodes
without the `nvidia.com/gpu.workload.config` label count as `sandboxWorkloads.defaultWorkload`, passed as
`DEFAULT_GPU_WORKLOAD_CONFIG`. Each check takes its own extra env from `validator.vfioPCI.env`,
`validator.vgpuManager.env` and `validator.vgpuDevices.env`. The main container then idles; its preStop hook
empties the status directory so a restarted validator re-gates the device plugins.

The checks always run `nvidia-validator` from NVIDIA's validator image: our validator agent implements the
container-stack components (driver, toolkit, CUDA, plugin, and the RDMA/storage modules), not the sandbox ones, so
this operand renders as with `agents.overrides.validator: nvidia` whatever the agents setting. NVIDIA's Role only
grants OpenShift's `privileged` SCC and is not rendered; the ClusterRole lets the validator read its Node's labels.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import operand_image
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, env, host_path, mount, privileged, rule
from gpu_operator.render.operands.agent_security import secure_agent, secure_check
from gpu_operator.render.operands.common import SHELL, VALIDATIONS_DIR
from gpu_operator.render.operands.sandbox_common import (
    VALIDATIONS_VOLUME,
    operand_rbac,
    privileged_s0,
    sandbox_operand_enabled,
    validator_init,
)
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "render"]

STATE = "state-sandbox-validation"
KEY = "sandbox_validator"
NAME = "nvidia-sandbox-validator"

_LABELS = {"app": NAME, "app.kubernetes.io/part-of": "gpu-operator"}
_CLUSTER_RULES = [rule([""], ["nodes"], ["get"])]
_CHECK_SUFFIX = "-validation"


def _validations_mount() -> Object:
    return mount(VALIDATIONS_VOLUME, VALIDATIONS_DIR, propagation="Bidirectional")


def _host_root_mount() -> Object:
    return mount("host-root", "/host", read_only=True, propagation="HostToContainer")


def _init_containers(ctx: RenderContext) -> list[Object]:
    validator = ctx.spec.validator
    workload = env("DEFAULT_GPU_WORKLOAD_CONFIG", ctx.spec.sandbox_workloads.default_workload)
    checks = [
        validator_init(
            ctx, "vfio-pci",
            mounts=[_host_root_mount(), _validations_mount()],
            security=privileged_s0(),
            extra_env=[workload, *validator.vfio_pci.env],
        ),
        validator_init(
            ctx, "vgpu-manager",
            mounts=[
                _host_root_mount(),
                mount("driver-install-path", "/run/nvidia/driver", propagation="HostToContainer"),
                _validations_mount(),
            ],
            security=privileged_s0(),
            extra_env=[workload, *validator.vgpu_manager.env],
        ),
        validator_init(
            ctx, "vgpu-devices",
            mounts=[_validations_mount()],
            security=privileged(),
            extra_env=[workload, *validator.vgpu_devices.env],
        ),
    ]
    if ctx.spec.cc_manager.enabled:
        cc_manager = validator_init(ctx, "cc-manager", mounts=[_validations_mount()], security=privileged_s0())
        checks.insert(0, cc_manager)
    for check in checks:
        secure_check(ctx, check["name"].removesuffix(_CHECK_SUFFIX), check)
    return checks


def _main_container(ctx: RenderContext) -> Object:
    validator = ctx.spec.validator
    container: Object = {
        "name": NAME,
        "image": operand_image(ctx, "validator", validator),
        "command": list(SHELL),
        "args": ["echo sandbox validations passed; exec sleep infinity"],
        "securityContext": privileged(runAsUser=0),
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", f"rm -f {VALIDATIONS_DIR}/*"]}}},
        "volumeMounts": [_validations_mount()],
    }
    secure_agent(ctx, "validator", container)
    return container


def _daemonset(ctx: RenderContext) -> Object:
    pod: Object = {
        "nodeSelector": deploy_selector("sandbox-validator"),
        "serviceAccountName": NAME,
        "initContainers": _init_containers(ctx),
        "containers": [_main_container(ctx)],
        "volumes": [
            host_path(VALIDATIONS_VOLUME, VALIDATIONS_DIR, "DirectoryOrCreate"),
            host_path("driver-install-path", "/run/nvidia/driver"),
            host_path("host-root", "/"),
        ],
    }
    ds = daemonset(ctx, NAME, labels=_LABELS, selector=_LABELS, pod_spec=pod)
    return finalize_daemonset(ctx, ds, section="validator", spec=ctx.spec.validator, main_container=NAME)


def _with_nvidia_validator(ctx: RenderContext) -> RenderContext:
    """The context with NVIDIA's validator: the sandbox components are not in our validator agent."""
    agents = ctx.config.agents
    overrides = {**agents.overrides, "validator": "nvidia"}
    config = ctx.config.model_copy(update={"agents": agents.model_copy(update={"overrides": overrides})})
    return RenderContext(config)


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, True):
        return []
    ctx = _with_nvidia_validator(ctx)
    return [*operand_rbac(ctx, NAME, role_rules=[], cluster_rules=_CLUSTER_RULES), _daemonset(ctx)]
