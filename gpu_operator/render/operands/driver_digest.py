"""`DRIVER_CONFIG_DIGEST`: a fingerprint of what the driver pod installs.

The driver manager and the driver container compare it with the digest of the driver that is loaded: when they
match, the pod restarted for some other reason (a label, a probe timing, a resource limit) and the node keeps its
loaded driver instead of draining GPU pods for a reinstall; NVIDIA's upgrade controller likewise restarts the
pod without the eviction steps. NVIDIA first hashed the whole DaemonSet spec, then narrowed it to the fields
that decide the installation; this is the same idea, written for our rendered pod.
"""

from __future__ import annotations

import hashlib
import json

from gpu_operator.render.k8s import Object
from gpu_operator.render.transforms import containers_of

__all__ = ["DIGEST_ENV", "DIGESTED_CONTAINERS", "config_digest"]

DIGEST_ENV = "DRIVER_CONFIG_DIGEST"
#: The containers whose settings decide what is installed; a sidecar's presence is itself part of that.
DIGESTED_CONTAINERS = ("k8s-driver-manager", "nvidia-driver-ctr", "nvidia-peermem-ctr", "nvidia-fs-ctr", "nvidia-gdrcopy-ctr")


def _container_facts(container: Object) -> Object:
    return {
        "image": container["image"],
        "command": container.get("command", []),
        "args": container.get("args", []),
        "env": sorted(
            [item["name"], item["value"]]
            for item in container.get("env", [])
            if "value" in item and item["name"] != DIGEST_ENV
        ),
        "envFrom": sorted(source["secretRef"]["name"] for source in container.get("envFrom", []) if "secretRef" in source),
        "mounts": sorted(
            [m["name"], m["mountPath"], m.get("subPath", ""), m.get("readOnly", False)]
            for m in container.get("volumeMounts", [])
        ),
    }


def _volume_facts(volume: Object) -> list[str]:
    kind = next(key for key in volume if key != "name")
    source = volume[kind]
    return [volume["name"], kind, source.get("path") or source.get("name") or source.get("secretName") or ""]


def config_digest(pod: Object, host_root: str) -> str:
    """SHA-256 (hex) of what decides the driver installation, and nothing else.

    Hashed, for each of :data:`DIGESTED_CONTAINERS` present: image, command, args, env vars with literal values
    (sorted; `valueFrom` ones such as NODE_NAME are node facts, not configuration), secret env sources and
    volume mounts; every pod volume by name, kind and host path / ConfigMap / Secret name; and the host root.
    Not hashed: probes, resources, pull policy and pull secrets, scheduling, labels and annotations.
    """
    facts = {
        "containers": {c["name"]: _container_facts(c) for c in containers_of(pod) if c["name"] in DIGESTED_CONTAINERS},
        "volumes": sorted(_volume_facts(v) for v in pod.get("volumes", [])),
        "hostRoot": host_root,
    }
    canonical = json.dumps(facts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
