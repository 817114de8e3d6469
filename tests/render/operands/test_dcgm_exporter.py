"""state-dcgm-exporter against reference/gpu-operator.md §3.7, agents.md §3.1 and network-aks.md §5.2."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError
from gpu_operator.render.operands import dcgm_exporter
from tests.render.operands.helpers import (
    assert_valid,
    container,
    env_of,
    find,
    init_names,
    mounts,
    pod_of,
    render_operand,
    volume_paths,
)
from tests.support.agents import AGENTS_IMAGE as AGENTS_REFERENCE
from tests.support.agents import with_agents

NVIDIA: dict[str, Any] = {"agents": {"implementation": "nvidia"}}
CSV = (
    "# temperature\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
    "DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n"
)
ACCOUNT = {"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}


def _render(operator: dict[str, Any] | None = None, **document: Any) -> list[dict[str, Any]]:
    return render_operand(dcgm_exporter.render, {**NVIDIA, "operator": {"dcgmExporter": operator or {}}, **document})


def _exporter(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return container(find(objects, "DaemonSet"), "nvidia-dcgm-exporter")


def test_disabled_renders_nothing() -> None:
    assert _render({"enabled": False}) == []


def test_objects_in_upstream_order() -> None:
    objects = _render(cluster={"prometheusOperator": True})
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-dcgm-exporter"),
        ("Role", "nvidia-dcgm-exporter"),
        ("RoleBinding", "nvidia-dcgm-exporter"),
        ("ServiceMonitor", "nvidia-dcgm-exporter"),
        ("Service", "nvidia-dcgm-exporter"),
        ("DaemonSet", "nvidia-dcgm-exporter"),
    ]
    assert_valid(objects)


def test_role_reads_configmaps_only() -> None:
    objects = _render()
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
    ]
    binding = find(objects, "RoleBinding")
    assert binding["roleRef"]["name"] == "nvidia-dcgm-exporter"
    assert binding["subjects"] == [ACCOUNT]


def test_daemonset_matches_upstream() -> None:
    ds = find(_render(), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}
    assert pod["serviceAccountName"] == "nvidia-dcgm-exporter"
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["automountServiceAccountToken"] is False
    assert "hostPID" not in pod and "hostNetwork" not in pod
    assert init_names(ds) == ["toolkit-validation"]
    assert container(ds, "toolkit-validation")["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    exporter = _exporter([ds])
    assert exporter["image"] == "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
    assert "command" not in exporter
    assert exporter["securityContext"] == {"privileged": True}
    assert env_of(exporter) == {
        "DCGM_EXPORTER_LISTEN": ":9400",
        "DCGM_EXPORTER_KUBERNETES": "true",
        "DCGM_EXPORTER_COLLECTORS": "/etc/dcgm-exporter/dcp-metrics-included.csv",
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
    }
    assert exporter["ports"] == [{"name": "metrics", "containerPort": 9400}]
    health = {"httpGet": {"port": 9400, "path": "/health"}, "initialDelaySeconds": 45}
    assert exporter["livenessProbe"] == {**health, "periodSeconds": 5}
    assert exporter["readinessProbe"] == health
    assert mounts(exporter) == {"pod-gpu-resources": "/var/lib/kubelet/pod-resources"}
    assert exporter["volumeMounts"][0]["readOnly"] is True
    assert volume_paths(ds) == {"pod-gpu-resources": "/var/lib/kubelet/pod-resources", "run-nvidia": "/run/nvidia"}


def test_agent_runs_the_metrics_exporter_with_the_same_env_and_mounts() -> None:
    agent = render_operand(dcgm_exporter.render, with_agents())
    nvidia = _render()
    ours, theirs = _exporter(agent), _exporter(nvidia)
    assert ours["command"] == ["gpu-operator-agent", "metrics-exporter"]
    assert ours["image"] == AGENTS_REFERENCE
    # NVIDIA's exporter image asks the runtime for every GPU in its ENV; the agents image asks for none. NVIDIA's
    # privileged exporter sees GPU instances anyway; ours asks for the MIG monitor capability instead, without
    # which NVML refuses GPU and compute instance queries (NO_PERMISSION).
    assert env_of(ours) == {
        **env_of(theirs), "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_MIG_MONITOR_DEVICES": "all"
    }
    assert ours["volumeMounts"] == theirs["volumeMounts"]
    assert ours["livenessProbe"] == theirs["livenessProbe"]
    assert_valid(agent)


def test_agent_is_unprivileged_root_with_sys_admin_for_profiling() -> None:
    ours, theirs = _exporter(render_operand(dcgm_exporter.render, with_agents())), _exporter(_render())
    assert theirs["securityContext"] == {"privileged": True}
    assert ours["securityContext"] == {
        "runAsUser": 0,
        "runAsGroup": 0,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_agent_mig_monitor_request_comes_with_the_sys_admin_the_runtime_honours_it_for() -> None:
    # The NVIDIA runtime gives MIG monitor devices only to containers holding CAP_SYS_ADMIN: the least privilege
    # that lets an exporter read GPU instances is that capability plus the request, not `privileged`.
    exporter = _exporter(render_operand(dcgm_exporter.render, with_agents()))
    assert env_of(exporter)["NVIDIA_MIG_MONITOR_DEVICES"] == "all"
    assert exporter["securityContext"]["capabilities"]["add"] == ["SYS_ADMIN"]
    assert exporter["securityContext"]["privileged"] is False


def test_agent_gpu_request_yields_to_the_users_env() -> None:
    document = {"operator": {"dcgmExporter": {"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,1"}]}}}
    exporter = _exporter(render_operand(dcgm_exporter.render, with_agents(document)))
    assert exporter["command"] == ["gpu-operator-agent", "metrics-exporter"]
    assert [e["value"] for e in exporter["env"] if e["name"] == "NVIDIA_VISIBLE_DEVICES"] == ["0,1"]


def test_agent_for_other_sections_keeps_nvidia_exporter() -> None:
    objects = render_operand(dcgm_exporter.render, with_agents(overrides={"dcgmExporter": "nvidia"}))
    assert "command" not in _exporter(objects)
    assert _exporter(objects)["image"].startswith("nvcr.io/nvidia/k8s/dcgm-exporter:")


def test_service_matches_upstream() -> None:
    svc = find(_render(), "Service")
    assert svc["metadata"]["labels"]["app"] == "nvidia-dcgm-exporter"
    assert svc["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    assert svc["spec"]["selector"] == {"app": "nvidia-dcgm-exporter"}
    assert svc["spec"]["ports"] == [{"name": "gpu-metrics", "port": 9400, "targetPort": 9400, "protocol": "TCP"}]
    assert svc["spec"]["internalTrafficPolicy"] == "Cluster"
    assert "type" not in svc["spec"]


def test_service_type_and_traffic_policy() -> None:
    objects = _render({"service": {"type": "NodePort", "internalTrafficPolicy": "Local"}})
    svc = find(objects, "Service")
    assert svc["spec"]["type"] == "NodePort"
    assert svc["spec"]["internalTrafficPolicy"] == "Local"
    assert_valid(objects)


def test_service_monitor_defaults() -> None:
    monitor = find(_render(cluster={"prometheusOperator": True}), "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == "gpu-operator"
    assert monitor["spec"] == {
        "jobLabel": "app",
        "namespaceSelector": {"matchNames": ["gpu-operator"]},
        "selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
        "endpoints": [
            {"port": "gpu-metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s", "honorLabels": False}
        ],
    }


def test_service_monitor_settings_pass_the_crd_schema() -> None:
    objects = _render(
        {"serviceMonitor": {
            "enabled": True, "interval": "30s", "honorLabels": True, "additionalLabels": {"release": "kube-prometheus"},
            "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "instance",
                             "regex": "(.*)", "replacement": "$1", "action": "replace"}],
        }},
        namespace="monitoring-gpu",
        cluster={"prometheusOperator": True},
    )
    monitor = find(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    assert monitor["metadata"]["labels"]["app"] == "nvidia-dcgm-exporter"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["monitoring-gpu"]}
    assert monitor["spec"]["endpoints"] == [{
        "port": "gpu-metrics", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s", "honorLabels": True,
        "relabelings": [{"action": "replace", "regex": "(.*)", "replacement": "$1",
                         "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "instance"}],
    }]
    assert_valid(objects)


@pytest.mark.parametrize("document", [
    {"operator": {"dcgmExporter": {"serviceMonitor": {"enabled": False}}}},
    {"cluster": {"prometheusOperator": False}},
])
def test_no_service_monitor_when_off_or_without_prometheus_operator(document: dict[str, Any]) -> None:
    objects = render_operand(dcgm_exporter.render, {**NVIDIA, **document})
    assert [o for o in objects if o["kind"] == "ServiceMonitor"] == []
    assert find(objects, "Service")


def test_custom_metrics_csv_configmap_is_mounted() -> None:
    objects = _render({"config": {"name": "custom-dcgm-metrics"}}, configs={"dcgmExporter": CSV})
    metrics = find(objects, "ConfigMap", "custom-dcgm-metrics")
    assert metrics["data"] == {"dcgm-metrics.csv": CSV}
    assert metrics["metadata"]["namespace"] == "gpu-operator"
    assert [o["kind"] for o in objects].index("ConfigMap") < [o["kind"] for o in objects].index("DaemonSet")
    ds = find(objects, "DaemonSet")
    exporter = _exporter(objects)
    assert env_of(exporter)["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/dcgm-metrics.csv"
    assert {"name": "metrics-config", "mountPath": "/etc/dcgm-exporter/dcgm-metrics.csv", "readOnly": True,
            "subPath": "dcgm-metrics.csv"} in exporter["volumeMounts"]
    assert {"name": "metrics-config", "configMap": {"name": "custom-dcgm-metrics",
            "items": [{"key": "dcgm-metrics.csv", "path": "dcgm-metrics.csv"}]}} in pod_of(ds)["volumes"]
    assert pod_of(ds)["automountServiceAccountToken"] is False
    assert_valid(objects)


def test_existing_metrics_configmap_is_mounted_not_created() -> None:
    objects = _render({"config": {"name": "their-metrics"}})
    assert [o for o in objects if o["kind"] == "ConfigMap"] == []
    assert env_of(_exporter(objects))["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/dcgm-metrics.csv"


@pytest.mark.parametrize("switch,env_name", [
    ("enablePodLabels", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS"),
    ("enablePodUID", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID"),
])
def test_pod_metadata_grants_pod_reads(switch: str, env_name: str) -> None:
    objects = _render({switch: True, "podLabelAllowlistRegex": ["^app$", "^team$"]})
    assert [(o["kind"], o["metadata"]["name"]) for o in objects][2:5] == [
        ("ClusterRole", "nvidia-dcgm-exporter-read-pods"),
        ("RoleBinding", "nvidia-dcgm-exporter"),
        ("ClusterRoleBinding", "nvidia-dcgm-exporter-read-pods"),
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    binding = find(objects, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "nvidia-dcgm-exporter-read-pods"
    assert binding["subjects"] == [ACCOUNT]
    variables = env_of(_exporter(objects))
    assert variables[env_name] == "true"
    assert variables["DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX"] == "^app$,^team$"
    assert pod_of(find(objects, "DaemonSet"))["automountServiceAccountToken"] is True
    assert_valid(objects)


def test_pod_metadata_enabled_by_env_also_grants_pod_reads() -> None:
    objects = _render({"env": [{"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "value": "true"}]})
    assert find(objects, "ClusterRole", "nvidia-dcgm-exporter-read-pods")
    assert pod_of(find(objects, "DaemonSet"))["automountServiceAccountToken"] is True


@pytest.mark.parametrize("settings", [
    {"env": [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]},
    {"args": ["--kubernetes-virtual-gpus"]},
])
def test_virtual_gpus_get_the_host_pid_namespace_and_pod_reads(settings: dict[str, Any]) -> None:
    objects = _render(settings)
    pod = pod_of(find(objects, "DaemonSet"))
    assert pod["hostPID"] is True
    assert pod["automountServiceAccountToken"] is True
    assert find(objects, "ClusterRole", "nvidia-dcgm-exporter-read-pods")
    assert_valid(objects)
    plain = pod_of(find(_render({"env": [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "false"}]}), "DaemonSet"))
    assert "hostPID" not in plain


def test_no_pod_reads_without_pod_metadata() -> None:
    objects = _render({"podLabelAllowlistRegex": ["^app$"]})
    assert {o["kind"] for o in objects}.isdisjoint({"ClusterRole", "ClusterRoleBinding"})


def test_standalone_dcgm_is_the_remote_host_engine() -> None:
    objects = render_operand(dcgm_exporter.render, {**NVIDIA, "operator": {"dcgm": {"enabled": True}}})
    assert env_of(_exporter(objects))["DCGM_REMOTE_HOSTENGINE_INFO"] == "nvidia-dcgm:5555"
    assert "hostNetwork" not in pod_of(find(objects, "DaemonSet"))


def test_host_dcgm_on_localhost_uses_the_host_network() -> None:
    objects = _render({"env": [{"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": "localhost:5555"}]})
    pod = pod_of(find(objects, "DaemonSet"))
    assert pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert env_of(_exporter(objects))["DCGM_REMOTE_HOSTENGINE_INFO"] == "localhost:5555"


def test_pod_resources_follow_kubelet_root_dir() -> None:
    document = {**NVIDIA, "operator": {"hostPaths": {"kubeletRootDir": "/var/lib/k0s/kubelet/"}}}
    objects = render_operand(dcgm_exporter.render, document)
    ds = find(objects, "DaemonSet")
    assert volume_paths(ds)["pod-gpu-resources"] == "/var/lib/k0s/kubelet/pod-resources"
    assert mounts(_exporter(objects))["pod-gpu-resources"] == "/var/lib/kubelet/pod-resources"


def test_hpc_job_mapping_mounts_the_job_directory() -> None:
    objects = _render({"hpcJobMapping": {"enabled": True, "directory": "/var/run/slurm-jobs"}})
    ds = find(objects, "DaemonSet")
    exporter = _exporter(objects)
    assert env_of(exporter)["DCGM_HPC_JOB_MAPPING_DIR"] == "/var/run/slurm-jobs"
    assert {"name": "hpc-job-mapping", "hostPath": {"path": "/var/run/slurm-jobs", "type": "DirectoryOrCreate"}} in (
        pod_of(ds)["volumes"]
    )
    job_mount = {"name": "hpc-job-mapping", "mountPath": "/var/run/slurm-jobs", "readOnly": True}
    assert job_mount in exporter["volumeMounts"]
    assert_valid(objects)


def test_host_pid_annotations_and_user_settings() -> None:
    objects = _render({
        "hostPID": True, "annotations": {"example.com/team": "ml"}, "args": ["-c", "5000"],
        "env": [
            {"name": "DCGM_EXPORTER_INTERVAL", "value": "5000"},
            {"name": "DCGM_EXPORTER_LISTEN", "value": ":9500"},
        ],
        "resources": {"limits": {"memory": "1Gi"}}, "imagePullPolicy": "Always",
    })
    ds = find(objects, "DaemonSet")
    exporter = _exporter(objects)
    assert pod_of(ds)["hostPID"] is True
    assert ds["spec"]["template"]["metadata"]["annotations"] == {"example.com/team": "ml"}
    assert exporter["args"] == ["-c", "5000"]
    assert env_of(exporter)["DCGM_EXPORTER_INTERVAL"] == "5000"
    assert env_of(exporter)["DCGM_EXPORTER_LISTEN"] == ":9500"
    assert exporter["resources"] == {"limits": {"memory": "1Gi"}}
    assert exporter["imagePullPolicy"] == "Always"
    assert_valid(objects)


def test_nri_plugin_annotates_instead_of_runtime_class() -> None:
    objects = render_operand(dcgm_exporter.render, {**NVIDIA, "operator": {"cdi": {"nriPluginEnabled": True}}})
    ds = find(objects, "DaemonSet")
    assert "runtimeClassName" not in pod_of(ds)
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.nvidia-dcgm-exporter": "management.nvidia.com/gpu=all"
    }


# --- regressions against NVIDIA v26.7.0 ------------------------------------------------------------------------

PROMETHEUS = {"cluster": {"prometheusOperator": True}}
AGENTS_IMAGE = {"repository": "registry.example.com/gpu/agents", "tag": "0.1.0"}
IMPLEMENTATIONS = {
    "nvidia": {"implementation": "nvidia"},
    "agents": {"implementation": "agents", "image": AGENTS_IMAGE},
}


@pytest.mark.parametrize("implementation", ["nvidia", "agents"])
def test_metrics_configmap_is_only_mounted_never_read_through_the_api(implementation: str) -> None:
    """NVIDIA's `TransformDCGMExporter` (controllers/object_controls.go) mounts the `dcgm-metrics.csv` key and points
    `DCGM_EXPORTER_COLLECTORS` at it; it never sets `DCGM_EXPORTER_CONFIGMAP_DATA`, which would make the exporter
    read the ConfigMap through the API (and exit on a ConfigMap without a `metrics` key). Our agent reads the
    mounted file too, so neither implementation sets it, and the token stays unmounted."""
    agents = {"agents": IMPLEMENTATIONS[implementation]}
    for config in ({}, {"operator": {"dcgmExporter": {"config": {"name": "m"}}}}):
        objects = render_operand(dcgm_exporter.render, {**agents, **config})
        exporter = _exporter(objects)
        assert "DCGM_EXPORTER_CONFIGMAP_DATA" not in env_of(exporter)
        assert pod_of(find(objects, "DaemonSet"))["automountServiceAccountToken"] is False
    assert env_of(exporter)["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/dcgm-metrics.csv"
    assert mounts(exporter)["metrics-config"] == "/etc/dcgm-exporter/dcgm-metrics.csv"


def test_configmap_data_set_by_the_user_still_mounts_the_token() -> None:
    """NVIDIA's `dcgmExporterEnvRequiresAPIAccess`: a user-set `DCGM_EXPORTER_CONFIGMAP_DATA` other than `none`
    makes the exporter read the API, so the token is mounted."""
    objects = _render({"env": [{"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": "gpu-operator:m"}]})
    assert env_of(_exporter(objects))["DCGM_EXPORTER_CONFIGMAP_DATA"] == "gpu-operator:m"
    assert pod_of(find(objects, "DaemonSet"))["automountServiceAccountToken"] is True


@pytest.mark.parametrize(("block", "endpoint"), [
    ({"enabled": True}, {"interval": "15s", "scrapeTimeout": "10s", "honorLabels": False}),
    ({"interval": "30s"}, {"interval": "30s", "scrapeTimeout": "10s", "honorLabels": False}),
    ({"honorLabels": True, "scrapeTimeout": "5s"}, {"interval": "15s", "scrapeTimeout": "5s", "honorLabels": True}),
])
def test_service_monitor_block_is_merged_over_the_chart_defaults(
    block: dict[str, Any], endpoint: dict[str, Any]
) -> None:
    """NVIDIA's chart (deployments/gpu-operator/values.yaml) gives `dcgmExporter.serviceMonitor` interval 15s,
    scrapeTimeout 10s and honorLabels false, and Helm merges a user's block over them; the ServiceMonitor
    (assets/state-dcgm-exporter/0500_service_monitor.yaml, `TransformDCGMExporterServiceMonitor`) carries them."""
    objects = render_operand(dcgm_exporter.render, {**NVIDIA, **PROMETHEUS, "operator": {"dcgmExporter": {
        "serviceMonitor": block}}})
    monitor = find(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"] == [{"port": "gpu-metrics", "path": "/metrics", **endpoint}]
    assert_valid(objects)


def test_no_prometheus_operator_by_default_so_plain_aks_gets_no_service_monitor() -> None:
    """NVIDIA's controller creates the ServiceMonitor only when the `servicemonitors.monitoring.coreos.com` CRD
    exists (controllers/object_controls.go, `ServiceMonitor`); plain AKS has none, so `cluster.prometheusOperator`
    defaults to false and the chart's default `serviceMonitor.enabled: true` yields no ServiceMonitor."""
    objects = render_operand(dcgm_exporter.render, NVIDIA)
    assert [o for o in objects if o["kind"] == "ServiceMonitor"] == []
    assert find(objects, "Service")
    assert find(render_operand(dcgm_exporter.render, {**NVIDIA, **PROMETHEUS}), "ServiceMonitor")


@pytest.mark.parametrize("block", [{"enabled": True}, {"enabled": True, "interval": "30s"}])
def test_asking_for_a_service_monitor_without_prometheus_operator_is_an_error(block: dict[str, Any]) -> None:
    """A ServiceMonitor the user asked for (`enabled: true`) is never dropped silently: without the CRDs (which
    NVIDIA would detect) it is a config error naming both fields and the fix."""
    with pytest.raises(ConfigError) as error:
        render_operand(dcgm_exporter.render, {**NVIDIA, "operator": {"dcgmExporter": {"serviceMonitor": block}}})
    [problem] = error.value.problems
    assert problem.path == "operator.dcgmExporter.serviceMonitor.enabled"
    assert "cluster.prometheusOperator: true" in problem.message and "unset or false" in problem.message


def test_unset_switch_follows_the_prometheus_operator_fact() -> None:
    """The chart's `enabled: true` means "where the ServiceMonitor CRD exists"; unset, our switch follows
    `cluster.prometheusOperator`, and the settings apply when it is true."""
    block = {"operator": {"dcgmExporter": {"serviceMonitor": {"interval": "30s"}}}}
    assert "ServiceMonitor" not in [o["kind"] for o in render_operand(dcgm_exporter.render, {**NVIDIA, **block})]
    monitor = find(render_operand(dcgm_exporter.render, {**NVIDIA, **block, **PROMETHEUS}), "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["interval"] == "30s"


@pytest.mark.parametrize("document", [
    {"operator": {"dcgmExporter": {"serviceMonitor": {"enabled": False, "interval": "30s"}}}},
    {"operator": {"dcgmExporter": {"enabled": False, "serviceMonitor": {"enabled": True}}}},
])
def test_a_switched_off_service_monitor_or_exporter_needs_no_prometheus_operator(document: dict[str, Any]) -> None:
    objects = render_operand(dcgm_exporter.render, {**NVIDIA, **document})
    assert [o for o in objects if o["kind"] == "ServiceMonitor"] == []


AKS = {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}


@pytest.mark.parametrize(("agents", "pools", "requests", "limit"), [
    (NVIDIA, [H100, T4], "512Mi", "1Gi"),  # the largest node: 8 GPUs; 512 Mi is the reported working set
    (NVIDIA, [T4], "288Mi", "576Mi"),
    (NVIDIA, None, "512Mi", "1Gi"),  # no pools (not our cluster): 8 GPUs assumed
    (with_agents(), [H100], "96Mi", "192Mi"),  # our exporter: 57.5 MiB measured on 8 GPUs
])
def test_resources_are_sized_by_the_fleets_largest_gpu_node(
    agents: dict[str, Any], pools: list[dict[str, Any]] | None, requests: str, limit: str
) -> None:
    document: dict[str, Any] = {**agents, **({"aks": AKS, "pools": pools, "network": {"enabled": False}}
                                             if pools else {})}
    resources = _exporter(render_operand(dcgm_exporter.render, document))["resources"]
    assert resources["requests"]["memory"] == requests
    assert resources["limits"] == {"memory": limit}  # no CPU limit: throttling a scrape helps nobody
    assert "cpu" in resources["requests"]


def test_the_users_resources_replace_the_sizing() -> None:
    mine = {"requests": {"memory": "700Mi"}, "limits": {"memory": "2Gi"}}
    objects = _render({"resources": mine})
    assert _exporter(objects)["resources"] == mine
    assert_valid(objects)
