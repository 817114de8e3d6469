"""The validator's checks as init containers, and `driver-validation`, which two DaemonSets share.

The validator program runs one check per container, chosen by `COMPONENT` (driver, toolkit, cuda, plugin),
and records success as a status file under `/run/nvidia/validations`. `driver-validation` runs first in the
container-toolkit DaemonSet and in the operator validator: it waits (`WITH_WAIT=true`) until a host driver or the
driver container answers `nvidia-smi`, writes `driver-ready` with the driver root paths, and creates the
`/dev/char` symlinks for the NVIDIA devices (so it mounts the host root, the driver install dir and `/dev/char`).
Finding an operator-managed driver DaemonSet needs the pod's namespace, hence `OPERATOR_NAMESPACE`.

NVIDIA runs the checks as `sh -c nvidia-validator` from its validator image; with our agent they run as
`gpu-operator-agent validator`, reading the same env; `driver-validation` stays privileged either way. The image
itself is filled in by the shared validation transform (`finalize_daemonset`), which gives every `*validation*`
init container the validator's image.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object, env, env_field, mount, privileged
from gpu_operator.render.operands.agent_security import secure_check
from gpu_operator.render.operands.common import SHELL, VALIDATIONS_DIR
from gpu_operator.render.transforms import merge_env

__all__ = ["SECTION", "OPERATOR_NAMESPACE", "validator_program", "driver_validation_init"]

#: The agent section whose implementation runs the checks.
SECTION = "validator"
OPERATOR_NAMESPACE = env_field("OPERATOR_NAMESPACE", "metadata.namespace")


def validator_program(ctx: RenderContext) -> Object:
    """`command`/`args` of a validation container: our agent, or NVIDIA's `sh -c nvidia-validator`."""
    if ctx.uses_agent(SECTION):
        return {"command": ctx.agent_command(SECTION)}
    return {"command": SHELL, "args": ["nvidia-validator"]}


def driver_validation_init(ctx: RenderContext) -> Object:
    """`driver-validation`, with the user's `validator.driver.env` merged last.

    The pod must define the volumes `host-root` (/), `driver-install-dir` (/run/nvidia/driver),
    `run-nvidia-validations` (/run/nvidia/validations) and `host-dev-char` (/dev/char).
    """
    container: Object = {
        "name": "driver-validation",
        "image": "",
        **validator_program(ctx),
        "env": [env("WITH_WAIT", True), env("COMPONENT", "driver"), OPERATOR_NAMESPACE],
        "securityContext": privileged(seLinuxOptions={"level": "s0"}),
        "volumeMounts": [
            mount("host-root", "/host", read_only=True, propagation="HostToContainer"),
            mount("driver-install-dir", "/run/nvidia/driver", propagation="HostToContainer"),
            mount("run-nvidia-validations", VALIDATIONS_DIR, propagation="Bidirectional"),
            mount("host-dev-char", "/host-dev-char"),
        ],
    }
    merge_env(container, ctx.spec.validator.driver.env)
    secure_check(ctx, "driver", container)
    return container
