"""state-operator: the operator controller's Deployment, RBAC, settings, Service, PodDisruptionBudget and monitor.

NVIDIA's chart runs its operator as Deployment `gpu-operator` (ServiceAccount `gpu-operator`, metrics on port
`gpu-operator-metrics` 8080, probes on 8081, pods labelled `nvidia.com/gpu-driver-upgrade-drain.skip: "true"` so
an upgrade's drain never evicts them). Ours has the same names and runs `gpu-operator-agent operator` from the
agents image: it labels GPU nodes and rolls driver upgrades (see `gpu_operator.agents.controller`). Its settings
are a JSON document in ConfigMap `gpu-operator-controller`, built from the rest of the render (the deploy labels
its DaemonSets select), `operator.driver.upgradePolicy`, the drivers of their own under `driverGroups` (each
NVIDIADriver's name, the pools and node selector it serves, its DaemonSets and its upgrade policy; the cluster
driver's pools under `driver.pools`), the staged rollout's stage plan under `rollout` (`operator.driver.rollout`)
and the `remediation` section (every default spelled out, so a rule change
shows in `pulumi preview`); a checksum of it on the pod template restarts the controller when they change.

RBAC is what its code calls, and much less than NVIDIA's operator holds (which also manages CRDs, RBAC, runtime
classes and every operand object): nodes list/watch/patch, pods list and pods/eviction create cluster-wide
(a node's pods, by field selector, and their evictions), resourceclaims get (a pod holding a claim of NVIDIA's
DRA driver is a GPU pod); in the namespace, the driver and validator pods
(list/watch, delete), DaemonSets and ControllerRevisions (list/watch), its status ConfigMap (create/update; get with a staged rollout), its
Lease (get/create/update), Events there with a staged rollout (its halts and stages, on the status ConfigMap);
and Events in `default`, where a Node's events live.
"""

from __future__ import annotations

import hashlib
import json

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.clusterpolicy.driver import DriverUpgradePolicy
from gpu_operator.config.driver_groups import cluster_driver_pools, driver_groups
from gpu_operator.config.node_metadata import DRIVER_OWNER_LABEL
from gpu_operator.render.aks.node_labels import labelling_policy
from gpu_operator.render.context import RenderContext
from gpu_operator.render.operands.driver_pools import group_driver_pools
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    config_map,
    config_map_volume,
    env,
    env_field,
    metadata,
    mount,
    role,
    role_binding,
    rule,
    service,
    service_account,
)

__all__ = ["KEY", "NAME", "STATE", "controller_notes", "controller_settings", "render_with"]

STATE = "state-operator"
KEY = "operator_controller"
NAME = "gpu-operator"
SETTINGS_CONFIG_MAP = "gpu-operator-controller"
STATUS_CONFIG_MAP = "gpu-operator-status"
EVENTS_ROLE = "gpu-operator-events"
EVENT_NAMESPACE = "default"
METRICS_PORT, HEALTH_PORT = 8080, 8081
SETTINGS_FILE = "controller.json"
LABELS = {"app": NAME, "app.kubernetes.io/component": NAME}
POD_LABELS = {**LABELS, "nvidia.com/gpu-driver-upgrade-drain.skip": "true"}


def _upgrade_policy(ctx: RenderContext, upgrades: DriverUpgradePolicy) -> Object:
    """An upgrade policy in the ClusterPolicy's own spelling, as the controller reads it."""
    return {
        # NVIDIA's upgrade controller is off with sandbox workloads, and there is nothing to upgrade without a driver
        "autoUpgrade": upgrades.auto_upgrade and ctx.spec.driver.enabled and not ctx.sandbox_enabled,
        "maxParallelUpgrades": upgrades.max_parallel_upgrades,
        "maxUnavailable": upgrades.max_unavailable,
        "waitForCompletion": {"podSelector": upgrades.wait_for_completion.pod_selector,
                              "timeoutSeconds": upgrades.wait_for_completion.timeout_seconds},
        "podDeletion": {"force": upgrades.pod_deletion.force, "deleteEmptyDir": upgrades.pod_deletion.delete_empty_dir,
                        "timeoutSeconds": upgrades.pod_deletion.timeout_seconds},
        "drain": {"enable": upgrades.drain.enable, "force": upgrades.drain.force,
                  "deleteEmptyDir": upgrades.drain.delete_empty_dir, "podSelector": upgrades.drain.pod_selector,
                  "timeoutSeconds": upgrades.drain.timeout_seconds},
    }


def _driver_groups(ctx: RenderContext) -> list[Object]:
    """Each driver of its own: its NVIDIADriver name, the pools and node selector it serves (its nodes carry
    `nvidia.com/gpu-operator.driver.owner=<name>`), its DaemonSets and its own upgrade policy."""
    return [{
        "name": group.name,
        "default": group.default,
        "pools": [pool.name for pool in group.pools],
        "nodeSelector": dict(spec.node_selector),
        "daemonSets": [pool.name for pool in group_driver_pools(ctx.config, group, spec)],
        "upgradePolicy": _upgrade_policy(ctx, spec.upgrade_policy),
    } for group, spec in driver_groups(ctx.config)]


def controller_settings(ctx: RenderContext) -> Object:
    """The controller's settings document (read by `gpu_operator.agents.controller.settings`)."""
    spec = ctx.spec
    policy = labelling_policy(ctx.config)
    return {
        "labelling": {
            "sandboxEnabled": policy.sandbox_enabled, "sandboxMode": policy.sandbox_mode,
            "defaultWorkload": policy.default_workload, "migManagerEnabled": policy.mig_manager_enabled,
            "migDefaultConfig": policy.mig_default_config,
        },
        "driver": {"enabled": spec.driver.enabled, "ownerLabel": DRIVER_OWNER_LABEL,
                   "pools": [pool.name for pool in cluster_driver_pools(ctx.config)]},
        "upgradePolicy": _upgrade_policy(ctx, spec.driver.upgrade_policy),
        "driverGroups": _driver_groups(ctx),
        "validationTimeoutSeconds": ctx.config.controller.validation_timeout_seconds,
        "resyncSeconds": ctx.config.controller.resync_seconds,
        "remediation": ctx.config.remediation.settings_document(),
        **_rollout(ctx),
    }


def _rollout(ctx: RenderContext) -> Object:
    """The staged rollout's stage plan (`operator.driver.rollout`), so `pulumi preview` shows a change of it."""
    rollout = ctx.spec.driver.rollout
    return {} if rollout is None else {"rollout": rollout.settings_document()}


def controller_notes(config: GpuStackConfig) -> list[str]:
    """Without the controller, what is off and how to turn it on (one note; none when it runs).

    The controller runs from the agents image, so a stack on NVIDIA's images alone has none: GPU fault remediation
    (on by default, in observe mode) and the node-by-node driver upgrades would be silently absent. How a driver
    change rolls out instead is :func:`gpu_operator.render.operands.driver_update.driver_update_notes`' note."""
    if config.controller_enabled:
        return []
    off = "GPU fault remediation" + (" and node-by-node driver upgrades (cordon, wait for jobs, validation) are"
                                     if config.operator.driver.enabled else " is")
    if config.controller.enabled is False:
        return [f"controller.enabled is false, so no operator controller runs: {off} off (remediation.mode "
                f"{config.remediation.mode} does nothing); remove controller.enabled: false to turn them on"]
    return [f"no operator controller runs with NVIDIA's images alone (agents.image and agents.build are unset), so "
            f"{off} off; set agents.image (an image you pushed, `make image`) or agents.build (the stack "
            "builds and pushes it) to turn them on"]


def _rbac(ctx: RenderContext) -> list[Object]:
    staged = ctx.spec.driver.rollout is not None
    events_binding = role_binding(ctx, EVENTS_ROLE, account=NAME)
    events_binding["metadata"]["namespace"] = EVENT_NAMESPACE
    events_role = role(ctx, EVENTS_ROLE, [rule([""], ["events"], ["create"])])
    events_role["metadata"]["namespace"] = EVENT_NAMESPACE
    return [
        service_account(ctx, NAME, LABELS),
        cluster_role(NAME, [
            rule([""], ["nodes"], ["list", "watch", "patch"]),
            rule([""], ["pods"], ["list"]),
            rule([""], ["pods/eviction"], ["create"]),
            rule(["resource.k8s.io"], ["resourceclaims"], ["get"]),  # pods holding NVIDIA DRA claims are GPU pods
            # a partial drain reads the faulty GPU's UUID back from the claims' devices
            *([rule(["resource.k8s.io"], ["resourceslices"], ["list"])]
              if ctx.config.remediation.drains_partially(pool.name for pool in ctx.config.pools) else []),
        ], LABELS),
        cluster_role_binding(ctx, NAME, labels=LABELS),
        role(ctx, NAME, [
            rule([""], ["pods"], ["list", "watch", "delete"]),
            rule(["apps"], ["daemonsets", "controllerrevisions"], ["list", "watch"]),
            rule([""], ["configmaps"], ["create"]),
            # with a staged rollout, a new leader reads the gate's memory back from it
            {**rule([""], ["configmaps"], ["get", "update"] if staged else ["update"]),
             "resourceNames": [STATUS_CONFIG_MAP]},
            rule(["coordination.k8s.io"], ["leases"], ["create"]),
            {**rule(["coordination.k8s.io"], ["leases"], ["get", "update"]), "resourceNames": ["53822513.nvidia.com"]},
            # a staged rollout's halts and stages are Events on the status ConfigMap, in its namespace
            *([rule([""], ["events"], ["create"])] if staged else []),
        ], LABELS),
        role_binding(ctx, NAME, labels=LABELS),
        events_role,
        events_binding,
    ]


def _container(ctx: RenderContext) -> Object:
    image = ctx.config.agents.image
    probe = lambda path: {"httpGet": {"path": path, "port": HEALTH_PORT}, "periodSeconds": 10}  # noqa: E731
    return {
        "name": NAME,
        "image": image.reference,
        "imagePullPolicy": image.pull_policy,
        "command": ["gpu-operator-agent", "operator"],
        "args": [f"--metrics-bind-address=:{METRICS_PORT}", f"--health-probe-bind-address=:{HEALTH_PORT}",
                 "--leader-elect=true"],
        "env": [env_field("OPERATOR_NAMESPACE", "metadata.namespace"),
                env("GPU_OPERATOR_CONTROLLER_CONFIG", f"/etc/gpu-operator/{SETTINGS_FILE}")],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT}, {"name": "health", "containerPort": HEALTH_PORT}],
        "livenessProbe": {**probe("/healthz"), "initialDelaySeconds": 15},
        "readinessProbe": {**probe("/readyz"), "initialDelaySeconds": 5},
        "resources": ctx.config.controller.resources.model_dump(exclude_none=True),
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [mount("settings", "/etc/gpu-operator", read_only=True)],
    }


def _deployment(ctx: RenderContext, settings_text: str) -> Object:
    controller = ctx.config.controller
    checksum = hashlib.sha256(settings_text.encode()).hexdigest()
    pod: Object = {
        "serviceAccountName": NAME,
        "priorityClassName": controller.priority_class_name,
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                               "labelSelector": {"matchLabels": {"app": NAME}}}}]}},
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [_container(ctx)],
        "volumes": [config_map_volume("settings", SETTINGS_CONFIG_MAP)],
    }
    secrets = ctx.config.agents.image.pull_secrets
    if secrets:
        pod["imagePullSecrets"] = [{"name": name} for name in secrets]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(NAME, ctx.namespace, LABELS),
        "spec": {
            "replicas": controller.replicas,
            "selector": {"matchLabels": {"app": NAME}},
            "template": {"metadata": {"labels": POD_LABELS,
                                      "annotations": {"gpu-operator.pulumi.com/settings-checksum": checksum}},
                         "spec": pod},
        },
    }


def _service_monitor(ctx: RenderContext) -> Object:
    monitoring = ctx.config.monitoring
    labels = {**LABELS, **monitoring.monitor_object_labels()}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata(NAME, ctx.namespace, labels),
        "spec": {
            "jobLabel": "app",
            "namespaceSelector": {"matchNames": [ctx.namespace]},
            "selector": {"matchLabels": {"app": NAME}},
            "endpoints": [{"port": "gpu-operator-metrics", "path": "/metrics"}],
        },
    }


def render_with(ctx: RenderContext) -> list[Object]:
    """The controller's objects (its labelling follows the config: NVIDIA's whole label set per workload)."""
    if not ctx.config.controller_enabled:
        return []
    settings_text = json.dumps(controller_settings(ctx), indent=2, sort_keys=True)
    rendered = [
        *_rbac(ctx),
        config_map(ctx, SETTINGS_CONFIG_MAP, {SETTINGS_FILE: settings_text}, LABELS),
        service(ctx, NAME, labels=LABELS, selector={"app": NAME}, annotations={"prometheus.io/scrape": "true"},
                ports=[{"name": "gpu-operator-metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT,
                        "protocol": "TCP"}]),
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": metadata(NAME, ctx.namespace, LABELS),
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": NAME}}}},
        _deployment(ctx, settings_text),
    ]
    if ctx.config.cluster.prometheus_operator:
        rendered.append(_service_monitor(ctx))
    return rendered
