"""state-dcgm-exporter: `nvidia-dcgm-exporter`, GPU metrics for Prometheus on port 9400.

The exporter reads GPU telemetry through DCGM (its embedded host engine, or the standalone `nvidia-dcgm` Service
when `dcgm.enabled`) and maps GPUs to the pods using them through the kubelet's pod-resources socket, which lives
under `hostPaths.kubeletRootDir`. It starts once the validator has written `toolkit-ready`.

Switches:

* `dcgmExporter.config.name`: the metrics CSV (key `dcgm-metrics.csv`) is mounted at
  `/etc/dcgm-exporter/dcgm-metrics.csv` and collected instead of the image's `dcp-metrics-included.csv`; with
  `configs.dcgmExporter` set we also create that ConfigMap (what the Helm chart's `config.create` does). Like
  NVIDIA we only mount it: `DCGM_EXPORTER_CONFIGMAP_DATA` would make NVIDIA's exporter read the ConfigMap through
  the API instead (and exit when it has no `metrics` key), so it is set only when the user sets it.
* `enablePodLabels` / `enablePodUID` (or the same exporter env set by hand): pod labels and UIDs on every series,
  which needs the ClusterRole `nvidia-dcgm-exporter-read-pods` and a mounted ServiceAccount token. The token is
  mounted only when the exporter reads the API (pod metadata, or a user-set `DCGM_EXPORTER_CONFIGMAP_DATA`), as
  NVIDIA does.
* `hpcJobMapping`: job ids from a host directory the workload manager writes; `hostPID`; `annotations` (pod).
* `KUBERNETES_VIRTUAL_GPUS=true` in `env` (or `--kubernetes-virtual-gpus` in `args`): one series per pod sharing a
  GPU, each with its own share of utilisation and memory found from the GPU's processes, so the pod gets the
  host's PID namespace (`hostPID`, only in this mode) to read their cgroups, and reads pods (their UIDs) as with
  `enablePodUID`.
* `service.type` / `service.internalTrafficPolicy` on Service `nvidia-dcgm-exporter`. The ServiceMonitor
  follows `serviceMonitor`, merged over the chart's defaults (interval 15s, scrapeTimeout 10s, honorLabels
  false) as Helm merges values. NVIDIA creates it where the ServiceMonitor CRD exists; we create it when
  `cluster.prometheusOperator` says the CRDs are installed, unless `serviceMonitor.enabled` is false (asking
  for one on a cluster without them is a config error).

Resources: requests and limits sized by the fleet's largest GPU node (:mod:`exporter_sizing`), where NVIDIA sets
none and users hit the chart's 512 MiB OOM-kill; `dcgmExporter.resources` replaces them.

With our agent the container runs `gpu-operator-agent metrics-exporter` with the same env, mounts and probes,
unprivileged: root with CAP_SYS_ADMIN only, GPUs through the runtime (see `agent_security`).
Upstream's Role also grants OpenShift's `privileged` SCC; that rule grants nothing elsewhere and is left out,
keeping the ConfigMap read rule. Our agent reads the mounted metrics file, never the ConfigMap through the API,
and only lists the node's pods: with it there is no Role, and `nvidia-dcgm-exporter-read-pods` grants `pods list`.
"""

from __future__ import annotations

import posixpath

from gpu_operator.config.clusterpolicy.monitoring import DcgmExporterSpec
from gpu_operator.config.clusterpolicy.runtime import ServiceMonitorConfig
from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import operand_image
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    config_map,
    config_map_volume,
    daemonset,
    deploy_selector,
    env,
    host_path,
    metadata,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service,
    service_account,
)
from gpu_operator.render.operands import dcgm
from gpu_operator.render.operands.agent_security import secure_agent
from gpu_operator.render.operands.exporter_sizing import exporter_resources
from gpu_operator.render.operands.common import apply_runtime_class, node_name_env, toolkit_validation_init
from gpu_operator.render.transforms import finalize_daemonset

__all__ = [
    "STATE",
    "KEY",
    "NAME",
    "READ_PODS",
    "PORT",
    "METRICS_FILE",
    "DEFAULT_COLLECTORS",
    "CUSTOM_COLLECTORS",
    "SERVICE_MONITOR_DEFAULTS",
    "reads_pods",
    "virtual_gpus",
    "service_monitor_settings",
    "render",
]

STATE = "state-dcgm-exporter"
KEY = "dcgm_exporter"
SECTION = "dcgmExporter"
NAME = "nvidia-dcgm-exporter"
READ_PODS = "nvidia-dcgm-exporter-read-pods"
PORT = 9400
METRICS_FILE = "dcgm-metrics.csv"
DEFAULT_COLLECTORS = "/etc/dcgm-exporter/dcp-metrics-included.csv"
CUSTOM_COLLECTORS = f"/etc/dcgm-exporter/{METRICS_FILE}"
POD_RESOURCES = "/var/lib/kubelet/pod-resources"
LABELS = {"app": NAME}

_POD_METADATA_ENV = ("DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID")
_CONFIGMAP_DATA = "DCGM_EXPORTER_CONFIGMAP_DATA"
_VIRTUAL_GPUS_ENV = "KUBERNETES_VIRTUAL_GPUS"
_VIRTUAL_GPUS_FLAG = "--kubernetes-virtual-gpus"
_REMOTE_HOSTENGINE = "DCGM_REMOTE_HOSTENGINE_INFO"
_NO_CONFIGMAP = ("", "none")
#: The chart's `dcgmExporter.serviceMonitor` values (v26.7.0), under a user's block as Helm merges them.
SERVICE_MONITOR_DEFAULTS: dict[str, object] = {"interval": "15s", "scrape_timeout": "10s", "honor_labels": False}


def _user_env(spec: DcgmExporterSpec) -> dict[str, str]:
    return {var.name: var.value or "" for var in spec.env}


def virtual_gpus(spec: DcgmExporterSpec) -> bool:
    """Shared GPUs are split per pod (`KUBERNETES_VIRTUAL_GPUS` in env, or the flag in args)."""
    flag = any(a in (_VIRTUAL_GPUS_FLAG, f"{_VIRTUAL_GPUS_FLAG}=true") for a in spec.args or ())
    return flag or _user_env(spec).get(_VIRTUAL_GPUS_ENV, "").lower() == "true"


def reads_pods(spec: DcgmExporterSpec) -> bool:
    """Pod labels or UIDs are on (by field or by the exporter's own env), or shared GPUs are split per pod: the
    exporter must read pods."""
    user = _user_env(spec)
    by_env = any(user.get(name, "").lower() == "true" for name in _POD_METADATA_ENV)
    return spec.enable_pod_labels or spec.enable_pod_uid or by_env or virtual_gpus(spec)


def service_monitor_settings(spec: DcgmExporterSpec) -> ServiceMonitorConfig:
    """`serviceMonitor` with every field the user left out taken from the chart's defaults."""
    settings = spec.service_monitor
    missing = {key: value for key, value in SERVICE_MONITOR_DEFAULTS.items() if getattr(settings, key) is None}
    return settings.model_copy(update=missing)


def _reads_api(ctx: RenderContext) -> bool:
    spec = ctx.spec.dcgm_exporter
    configmap = _user_env(spec).get(_CONFIGMAP_DATA, "")
    return reads_pods(spec) or configmap not in _NO_CONFIGMAP


def _env(ctx: RenderContext) -> list[Object]:
    spec = ctx.spec.dcgm_exporter
    variables = [
        env("DCGM_EXPORTER_LISTEN", f":{PORT}"),
        env("DCGM_EXPORTER_KUBERNETES", True),
        env("DCGM_EXPORTER_COLLECTORS", CUSTOM_COLLECTORS if spec.config.name else DEFAULT_COLLECTORS),
        node_name_env(),
    ]
    if ctx.spec.dcgm.enabled:
        variables.append(env(_REMOTE_HOSTENGINE, f"{dcgm.NAME}:{dcgm.PORT}"))
    if spec.hpc_job_mapping is not None and spec.hpc_job_mapping.enabled:
        variables.append(env("DCGM_HPC_JOB_MAPPING_DIR", spec.hpc_job_mapping.directory))
    if spec.enable_pod_labels:
        variables.append(env("DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", True))
    if spec.enable_pod_uid:
        variables.append(env("DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", True))
    if spec.pod_label_allowlist_regex:
        allowlist = ",".join(spec.pod_label_allowlist_regex)
        variables.append(env("DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", allowlist))
    return variables


def _storage(ctx: RenderContext) -> tuple[list[Object], list[Object]]:
    """(volumes, main container mounts)."""
    spec = ctx.spec.dcgm_exporter
    kubelet_root = ctx.spec.host_paths.kubelet_root_dir
    volumes = [
        host_path("pod-gpu-resources", posixpath.join(kubelet_root, "pod-resources")),
        host_path("run-nvidia", "/run/nvidia"),
    ]
    mounts = [mount("pod-gpu-resources", POD_RESOURCES, read_only=True)]
    if spec.config.name:
        volumes.append(config_map_volume("metrics-config", spec.config.name, items=[(METRICS_FILE, METRICS_FILE)]))
        mounts.append(mount("metrics-config", CUSTOM_COLLECTORS, read_only=True, sub_path=METRICS_FILE))
    if spec.hpc_job_mapping is not None and spec.hpc_job_mapping.enabled:
        directory = spec.hpc_job_mapping.directory
        volumes.append(host_path("hpc-job-mapping", directory, "DirectoryOrCreate"))
        mounts.append(mount("hpc-job-mapping", directory, read_only=True))
    return volumes, mounts


def _health_probe(**extra: int) -> Object:
    return {"httpGet": {"port": PORT, "path": "/health"}, "initialDelaySeconds": 45, **extra}


def _container(ctx: RenderContext, mounts: list[Object]) -> Object:
    program = {"command": ctx.agent_command(SECTION)} if ctx.uses_agent(SECTION) else {}
    return {
        "name": NAME,
        "image": operand_image(ctx, SECTION, ctx.spec.dcgm_exporter),
        **program,
        "env": _env(ctx),
        "ports": [{"name": "metrics", "containerPort": PORT}],
        "livenessProbe": _health_probe(periodSeconds=5),
        "readinessProbe": _health_probe(),
        "volumeMounts": mounts,
        "resources": exporter_resources(ctx.config, "agents" if ctx.uses_agent(SECTION) else "nvidia"),
        "securityContext": privileged(),
    }


def _uses_host_dcgm(ctx: RenderContext) -> bool:
    """A user-set `DCGM_REMOTE_HOSTENGINE_INFO=localhost:...` means DCGM on the host (DGX OS): host network."""
    remote = _user_env(ctx.spec.dcgm_exporter).get(_REMOTE_HOSTENGINE, "")
    return not ctx.spec.dcgm.enabled and remote.startswith("localhost")


def _daemonset(ctx: RenderContext) -> Object:
    spec = ctx.spec.dcgm_exporter
    volumes, mounts = _storage(ctx)
    pod: Object = {
        "nodeSelector": deploy_selector("dcgm-exporter"),
        "serviceAccountName": NAME,
        "automountServiceAccountToken": _reads_api(ctx),
        "initContainers": [toolkit_validation_init("run-nvidia", "/run/nvidia")],
        "containers": [_container(ctx, mounts)],
        "volumes": volumes,
    }
    if spec.host_pid or virtual_gpus(spec):
        pod["hostPID"] = True
    if _uses_host_dcgm(ctx):
        pod.update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
    ds = daemonset(ctx, NAME, labels=LABELS, pod_spec=pod, pod_annotations=spec.annotations)
    apply_runtime_class(ctx, pod, ds["spec"]["template"]["metadata"])
    secure_agent(ctx, SECTION, pod["containers"][0], spec.env)
    return finalize_daemonset(ctx, ds, section=SECTION, spec=spec, main_container=NAME)


def _service(ctx: RenderContext) -> Object:
    settings = ctx.spec.dcgm_exporter.service
    extra = {"type": settings.type, "internalTrafficPolicy": settings.internal_traffic_policy}
    return service(
        ctx,
        NAME,
        labels=LABELS,
        selector=LABELS,
        annotations={"prometheus.io/scrape": "true"},
        ports=[{"name": "gpu-metrics", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        **{key: value for key, value in extra.items() if value is not None},
    )


def _service_monitor(ctx: RenderContext) -> Object:
    settings = service_monitor_settings(ctx.spec.dcgm_exporter)
    endpoint: Object = {"port": "gpu-metrics", "path": "/metrics"}
    optional = {
        "interval": settings.interval,
        "scrapeTimeout": settings.scrape_timeout,
        "honorLabels": settings.honor_labels,
    }
    endpoint.update({key: value for key, value in optional.items() if value is not None})
    if settings.relabelings:
        endpoint["relabelings"] = [
            r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in settings.relabelings
        ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        # labelled for the Prometheus serviceMonitorSelector (monitoring.prometheusRelease); NVIDIA's
        # additionalLabels win
        "metadata": metadata(NAME, ctx.namespace, {**LABELS, **ctx.config.monitoring.monitor_object_labels(),
                                                   **(settings.additional_labels or {})}),
        "spec": {
            "jobLabel": "app",
            "namespaceSelector": {"matchNames": [ctx.namespace]},
            "selector": {"matchLabels": dict(LABELS)},
            "endpoints": [endpoint],
        },
    }


def _wants_service_monitor(ctx: RenderContext) -> bool:
    # an explicit true without the CRDs never gets here: the config check refuses it
    enabled = ctx.spec.dcgm_exporter.service_monitor.enabled
    return ctx.config.cluster.prometheus_operator if enabled is None else enabled


def _rbac(ctx: RenderContext) -> list[Object]:
    """NVIDIA's exporter may read its metrics ConfigMap through the API (`DCGM_EXPORTER_CONFIGMAP_DATA`) and gets,
    lists and watches pods; our agent reads the mounted file and lists the node's pods, nothing more."""
    spec, agent = ctx.spec.dcgm_exporter, ctx.uses_agent(SECTION)
    objects = [] if agent else [role(ctx, NAME, [rule([""], ["configmaps"], ["get", "list"])])]
    if reads_pods(spec):
        objects.append(cluster_role(READ_PODS, [rule([""], ["pods"], ["list"] if agent else ["get", "list", "watch"])]))
    if not agent:
        objects.append(role_binding(ctx, NAME))
    if reads_pods(spec):
        objects.append(cluster_role_binding(ctx, READ_PODS, account=NAME))
    return objects


def render(ctx: RenderContext) -> list[Object]:
    spec = ctx.spec.dcgm_exporter
    if not spec.enabled:
        return []
    objects = [service_account(ctx, NAME), *_rbac(ctx)]
    if ctx.config.configs.dcgm_exporter is not None:
        metrics = {METRICS_FILE: ctx.config.configs.dcgm_exporter}
        objects.append(config_map(ctx, spec.config.name, metrics, LABELS))
    if _wants_service_monitor(ctx):
        objects.append(_service_monitor(ctx))
    objects += [_service(ctx), _daemonset(ctx)]
    return objects
