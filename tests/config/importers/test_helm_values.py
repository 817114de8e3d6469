"""Importing GPU Operator Helm values: upstream and Azure files, the template's mapping rules, and errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from gpu_operator.config import ClusterPolicySpec, ConfigError, GpuStackConfig, parse_config
from gpu_operator.config.importers import ignored_helm_values, import_helm_values
from gpu_operator.config.importers.helm_keys import HELM_RULES
from gpu_operator.config.importers.helm_rules import Copy, Ignore
from tests.config.importers.values_files import AZURE, V25, V26, chart_values
from tests.support.schemas import crd_errors


def imported(values: dict[str, Any]) -> GpuStackConfig:
    return parse_config(import_helm_values(values))


def problems(values: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        import_helm_values(values)
    assert caught.value.source == "Helm values"
    return {p.path: p.message for p in caught.value.problems}


def _without_empty(value: Any) -> Any:
    """What Go's `omitempty` leaves of a spec (empty strings, lists and maps are not serialized)."""
    if isinstance(value, dict):
        kept = {key: _without_empty(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ("", [], {})}
    return [_without_empty(item) for item in value] if isinstance(value, list) else value


def assert_valid_clusterpolicy_spec(config: GpuStackConfig) -> None:
    manifest = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": _without_empty(config.operator.to_document()),
    }
    assert crd_errors(manifest) == []


# --- upstream and Azure values files -------------------------------------------------------------------------


def test_chart_default_values_give_our_defaults() -> None:
    document = import_helm_values(chart_values(V26))
    config = parse_config(document)
    assert config.operator == ClusterPolicySpec()
    assert config.nfd == GpuStackConfig().nfd
    assert config.configs == GpuStackConfig().configs
    assert document["namespace"] == "gpu-operator"
    assert_valid_clusterpolicy_spec(config)


def test_v25_values_carry_their_versions() -> None:
    values = chart_values(V25)
    config = imported(values)
    spec = config.operator.to_document()
    sections = [s for s, block in values.items()
                if isinstance(block, dict) and "version" in block and s in spec
                and s not in ignored_helm_values(values)]
    assert len(sections) >= 14
    for section in sections:
        assert spec[section]["version"] == str(values[section]["version"]), section
    assert config.operator.driver.version == "580.105.08"
    assert config.operator.driver.manager.version == "v0.9.1"
    assert config.operator.vfio_manager.image == "cuda"
    # the chart reads the validator version from its appVersion: ours is v26.7.0
    assert config.operator.validator.version == "v26.7.0"
    assert config.operator.dcgm_exporter.service_monitor.enabled is False
    assert (config.operator.cc_manager.enabled, config.operator.cc_manager.default_mode) == (False, "off")
    assert [e.name for e in config.operator.cc_manager.env] == ["CC_CAPABLE_DEVICE_IDS"]
    # deprecated sections that nothing reads are reported instead of imported
    assert config.operator.operator.init_container is None and config.operator.kata_manager.config is None
    assert {"operator.initContainer", "kataManager"} <= set(ignored_helm_values(values))
    assert_valid_clusterpolicy_spec(config)


def test_azure_values() -> None:
    config = imported(chart_values(AZURE))
    spec = config.operator
    assert config.nfd.enabled is False
    switched_off = (spec.mig_manager, spec.vgpu_device_manager, spec.vfio_manager, spec.sandbox_device_plugin)
    assert [operand.enabled for operand in switched_off] == [False] * 4
    assert spec.driver.rdma.enabled is True and spec.driver.rdma.use_host_mofed is False
    monitor = spec.dcgm_exporter.service_monitor
    # labelled for their kube-prometheus: NVIDIA creates it where the CRD exists, and the file says it does
    assert monitor.enabled is None and config.cluster.prometheus_operator is True
    assert monitor.additional_labels == {"release": "kube-prometheus"}
    # the rest of the chart's serviceMonitor block is merged in, as Helm does
    assert (monitor.interval, monitor.scrape_timeout, monitor.honor_labels) == ("15s", "10s", False)
    assert spec.driver.version == ClusterPolicySpec().driver.version
    assert_valid_clusterpolicy_spec(config)


def test_a_file_that_sets_one_value_keeps_every_other_chart_default() -> None:
    document = import_helm_values({"mig": {"strategy": "mixed"}})
    assert document == {"namespace": "gpu-operator", "operator": {"mig": {"strategy": "mixed"}}}
    assert parse_config(document).operator == ClusterPolicySpec(mig={"strategy": "mixed"})


def test_namespace_is_the_callers() -> None:
    assert import_helm_values({}, namespace="nvidia-gpu")["namespace"] == "nvidia-gpu"
    assert parse_config(import_helm_values({})) == GpuStackConfig()
    with pytest.raises(ConfigError) as caught:
        import_helm_values({}, namespace="Not_A_Label")
    assert [p.path for p in caught.value.problems] == ["namespace"]


# --- the template's mapping rules ------------------------------------------------------------------------------


def test_renames() -> None:
    # a problem with a copied value is reported under the values key
    assert problems({"operator": {"use_ocp_driver_toolkit": True}}).keys() == {"operator.use_ocp_driver_toolkit"}
    # nvidiaDriverCRD.enabled is the ClusterPolicy's useNvidiaDriverCRD: the chart's default NVIDIADriver
    assert import_helm_values({"driver": {"nvidiaDriverCRD": {"enabled": True}}})["operator"]["driver"][
        "useNvidiaDriverCRD"] is True


def test_upgrade_policy_is_imported_for_the_operator_controller() -> None:
    # the chart's gpuPodDeletion is the ClusterPolicy's podDeletion
    values = {"driver": {"upgradePolicy": {"autoUpgrade": False, "maxParallelUpgrades": 5, "maxUnavailable": "10%",
                                           "gpuPodDeletion": {"timeoutSeconds": 60}, "drain": {"enable": True}}}}
    assert import_helm_values(values)["operator"]["driver"]["upgradePolicy"] == {
        "autoUpgrade": False, "maxParallelUpgrades": 5, "maxUnavailable": "10%",
        "podDeletion": {"timeoutSeconds": 60}, "drain": {"enable": True}}
    # without the agents image in the imported config nothing carries it out: the note says what to add
    assert "agents.image or agents.build" in ignored_helm_values(values)["driver.upgradePolicy"]


def test_operator_image_versions_default_to_the_app_version() -> None:
    config = imported({"validator": {"version": ""}, "nodeStatusExporter": {"repository": "mirror.example.com/nvidia"}})
    assert config.operator.validator.version == "v26.7.0"
    assert config.operator.node_status_exporter.version == "v26.7.0"
    assert config.operator.node_status_exporter.repository == "mirror.example.com/nvidia"


def test_quoted_values_become_strings() -> None:
    config = imported({"gdrcopy": {"version": 2.6}, "daemonsets": {"rollingUpdate": {"maxUnavailable": 3}}})
    assert config.operator.gdrcopy.version == "2.6"
    assert config.operator.daemonsets.rolling_update.max_unavailable == "3"


def test_values_written_only_when_set_fall_back_to_the_cr_defaults() -> None:
    config = imported({"sandboxDevicePlugin": {"enabled": False}, "mig": {"strategy": ""}, "driver": {"env": []}})
    assert config.operator.sandbox_device_plugin.enabled is False
    # an empty strategy leaves MIG_STRATEGY unset upstream, which the plugin reads as none
    assert config.operator.mig.strategy == "none"
    assert config.operator.driver.env == ()


def test_maps_merge_over_the_chart_defaults_and_null_removes_a_key() -> None:
    config = imported({"driver": {"startupProbe": {"initialDelaySeconds": 30}},
                       "dcgmExporter": {"serviceMonitor": {"enabled": None, "interval": "30s"}}})
    probe = config.operator.driver.startup_probe
    timings = (probe.initial_delay_seconds, probe.period_seconds, probe.timeout_seconds, probe.failure_threshold)
    assert timings == (30, 10, 60, 120)
    monitor = config.operator.dcgm_exporter.service_monitor
    assert (monitor.enabled, monitor.interval) == (False, "30s")


def test_nfd_switches() -> None:
    config = imported({"nfd": {"enabled": False, "nodefeaturerules": True}})
    assert (config.nfd.enabled, config.nfd.node_feature_rules) == (False, True)


def test_cluster_wide_settings() -> None:
    config = imported({
        "operator": {"runtimeClass": "nvidia-cdi", "defaultRuntime": "crio"},
        "daemonsets": {"priorityClassName": "gpu-critical", "labels": {"team": "ml"},
                       "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
        "hostPaths": {"rootFS": "/host", "kubeletRootDir": "/var/lib/k0s/kubelet"},
        "cdi": {"enabled": True, "nriPluginEnabled": True},
        "psa": {"enabled": True},
        "sandboxWorkloads": {"enabled": True, "mode": "kata"},
    })
    spec = config.operator
    assert (spec.operator.runtime_class, spec.operator.default_runtime) == ("nvidia-cdi", "crio")
    assert config.cluster.container_runtime == "crio"
    assert spec.daemonsets.priority_class_name == "gpu-critical"
    assert spec.daemonsets.labels == {"team": "ml"}
    assert [t.key for t in spec.daemonsets.tolerations] == ["sku"]
    assert (spec.host_paths.root_fs, spec.host_paths.kubelet_root_dir) == ("/host", "/var/lib/k0s/kubelet")
    assert spec.cdi.nri_plugin_enabled is True and spec.psa.enabled is True
    assert (spec.sandbox_workloads.enabled, spec.sandbox_workloads.mode) == (True, "kata")


def test_operand_fields() -> None:
    config = imported({
        "dcgmExporter": {"hostPID": True, "enablePodLabels": True, "podLabelAllowlistRegex": ["^app$"],
                         "hpcJobMapping": {"enabled": True, "directory": "/var/lib/slurm-jobs"},
                         "service": {"type": "NodePort"}, "annotations": {"a": "b"}},
        "devicePlugin": {"mps": {"root": "/var/run/mps"}, "args": ["--fail-on-init-error=false"],
                         "resources": {"limits": {"memory": "512Mi"}}},
        "validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
        "vgpuDeviceManager": {"config": {"name": "vgpu-config"}},
        "migManager": {"gpuClientsConfig": {"name": "clients"}},
        "toolkit": {"installDir": "/opt/nvidia", "env": [{"name": "CONTAINERD_SOCKET", "value": "/run/k3s.sock"}]},
        "driver": {"manager": {"env": [{"name": "ENABLE_AUTO_DRAIN", "value": "true"}]},
                   "licensingConfig": {"secretName": "nls"}},
    })
    spec = config.operator
    exporter = spec.dcgm_exporter
    assert (exporter.host_pid, exporter.enable_pod_labels) == (True, True)
    assert exporter.pod_label_allowlist_regex == ("^app$",)
    assert exporter.hpc_job_mapping.directory == "/var/lib/slurm-jobs"
    assert (exporter.service.type, exporter.service.internal_traffic_policy) == ("NodePort", "Cluster")
    assert spec.device_plugin.mps.root == "/var/run/mps"
    assert spec.device_plugin.args == ("--fail-on-init-error=false",)
    assert spec.validator.plugin.env[0].name == "WITH_WORKLOAD"
    assert (spec.vgpu_device_manager.config.name, spec.vgpu_device_manager.config.default) == ("vgpu-config", "default")
    assert spec.mig_manager.gpu_clients_config.name == "clients"
    assert spec.toolkit.install_dir == "/opt/nvidia"
    assert spec.driver.manager.env[0].name == "ENABLE_AUTO_DRAIN"
    assert (spec.driver.licensing_config.secret_name, spec.driver.licensing_config.nls_enabled) == ("nls", True)


# --- ConfigMaps created by the chart ---------------------------------------------------------------------------


def test_device_plugin_config_data_is_parsed_into_configs() -> None:
    document = import_helm_values({"devicePlugin": {"config": {
        "create": True, "name": "plugin-config", "default": "any",
        "data": {
            "any": "version: v1\nflags:\n  migStrategy: none\n",
            "shared": "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
        },
    }}})
    config = parse_config(document)
    reference = config.operator.device_plugin.config
    assert (reference.name, reference.default) == ("plugin-config", "any")
    assert set(config.configs.device_plugin) == {"any", "shared"}
    assert config.configs.device_plugin["any"].flags.mig_strategy == "none"
    assert config.configs.device_plugin["shared"].sharing.time_slicing.resources[0].replicas == 4


def test_existing_device_plugin_configmap_is_named_only() -> None:
    config = imported({"devicePlugin": {"config": {"name": "existing", "default": "a"}}})
    assert config.operator.device_plugin.config.name == "existing"
    assert config.configs.device_plugin is None


def test_mig_manager_config_data_is_parsed_into_configs() -> None:
    layout = (
        "version: v1\nmig-configs:\n"
        "  all-disabled:\n  - devices: all\n    mig-enabled: false\n"
        "  half:\n  - devices: [0]\n    mig-enabled: true\n    mig-devices:\n      1g.10gb: 7\n"
    )
    data = {"config.yaml": layout}
    config = imported({"migManager": {"config": {"create": True, "name": "mig-config", "data": data}}})
    assert config.operator.mig_manager.config.name == "mig-config"
    assert config.operator.mig_manager.config.default == "all-disabled"
    assert set(config.configs.mig_manager.mig_configs) == {"all-disabled", "half"}
    # with create but no data the chart creates nothing: the name refers to an existing ConfigMap
    existing = imported({"migManager": {"config": {"create": True, "name": "mig-config"}}})
    assert existing.configs.mig_manager is None and existing.operator.mig_manager.config.name == "mig-config"


def test_dcgm_exporter_metrics_csv() -> None:
    csv = "DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\n"
    config = imported({"dcgmExporter": {"config": {"create": True, "name": "metrics", "data": csv}}})
    assert config.operator.dcgm_exporter.config.name == "metrics"
    assert config.configs.dcgm_exporter == csv


# --- errors ----------------------------------------------------------------------------------------------------


def test_every_problem_is_reported_under_its_values_key() -> None:
    found = problems({
        "driver": {"verison": "1", "startupProbe": {"periodSeconds": -5}},
        "mig": {"strategy": "maybe"},
        "toolkit": {"version": "0123456789abcdef" * 4},
        "devicePlugin": {"config": {"create": True, "name": "c", "default": "s", "data": {
            "s": "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
            "broken": "flags: [unclosed\n",
        }}},
        "platform": {"openshift": True},
    })
    assert set(found) == {
        "driver.verison",
        "driver.startupProbe.periodSeconds",
        "mig.strategy",
        "toolkit.version",
        "devicePlugin.config.data.s.sharing.timeSlicing.resources[0].replicas",
        "devicePlugin.config.data.broken",
        "platform.openshift",
    }
    assert "unknown key" in found["driver.verison"]
    assert "not valid YAML: line 2" in found["devicePlugin.config.data.broken"]
    assert "OpenShift is not supported" in found["platform.openshift"]


@pytest.mark.parametrize(
    "values, path, words",
    [
        ({"gpuCluster": {"deployCR": True}}, "gpuCluster.deployCR", "GPUCluster"),
        ({"clusterPolicy": {"deployCR": False}}, "clusterPolicy.deployCR", "always deploys"),
        ({"extraObjects": [{"kind": "ConfigMap"}]}, "extraObjects", "Pulumi program"),
        ({"draDriver": {"gpus": {"enabled": True}}}, "draDriver.gpus.enabled", "DRA driver"),
        ({"devicePlugin": {"config": {"create": True, "data": {"a": ""}}}}, "devicePlugin.config.name", "create: true"),
        ({"devicePlugin": {"config": {"create": True, "name": "c"}}}, "devicePlugin.config.data", "required"),
        ({"devicePlugin": {"config": {"name": "c", "data": {"a": ""}}}}, "devicePlugin.config.data", "only used"),
        ({"devicePlugin": {"config": {"default": "a"}}}, "devicePlugin.config.default", "config.name"),
        ({"devicePlugin": {"config": {"nmae": "c"}}}, "devicePlugin.config.nmae", "unknown key"),
        ({"migManager": {"config": {"create": True, "name": "m", "data": {"x": ""}}}}, "migManager.config.data", "one"),
        ({"dcgmExporter": {"config": {"create": True, "name": "m", "data": [1]}}}, "dcgmExporter.config.data", "CSV"),
        ({"cdi": {"enabled": False, "nriPluginEnabled": True}}, "cdi.nriPluginEnabled", "cdi.enabled"),
        ({"toolkit": {"enabled": False}, "cdi": {"nriPluginEnabled": True}}, "cdi.nriPluginEnabled", "toolkit.enabled"),
        ({"driver": {"enabled": None}}, "driver.enabled", "null"),
        ({"driver": None}, "driver", "null"),
        ({"driver": "yes"}, "driver", "mapping"),
        ({"operator": {"use_ocp_driver_toolkit": True}}, "operator.use_ocp_driver_toolkit", "OpenShift"),
        ({"kataManager": {"enabled": True}}, "kataManager.enabled", "Kata manager"),
        ({"driver": {"repository": ""}}, "driver", "incomplete"),
        ({"dcgmExporter": {"hpcJobMapping": {"enabled": True}}}, "dcgmExporter.hpcJobMapping.directory", "absolute"),
    ],
)
def test_values_we_cannot_honour(values: dict[str, Any], path: str, words: str) -> None:
    found = problems(values)
    assert path in found, found
    assert words in found[path]


def test_values_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="must be a mapping"):
        import_helm_values(["driver"])  # type: ignore[arg-type]


# --- ignored keys ----------------------------------------------------------------------------------------------


def test_keys_for_helms_own_objects_are_accepted_and_explained() -> None:
    values = {
        "operator": {"logging": {"level": "debug"}, "resources": {"limits": {"cpu": "1"}}, "upgradeCRD": True,
                     "cleanupCRD": False},
        "draDriver": {"image": "dra", "computeDomains": {"enabled": True}},
        "driver": {"nvidiaDriverCRD": {"deployDefaultCR": True, "driverType": ""}},
    }
    assert parse_config(import_helm_values(values)).operator == ClusterPolicySpec()
    assert set(ignored_helm_values(values)) == {
        "operator.logging", "operator.resources", "operator.upgradeCRD", "draDriver",
        "driver.nvidiaDriverCRD.deployDefaultCR",
    }
    assert all(ignored_helm_values(values).values())


def test_every_upstream_values_key_has_a_rule() -> None:
    # an unknown key would fail the import; the ignored ones are listed with a reason
    ignored = ignored_helm_values(chart_values(V26))
    assert {"draDriver", "operator.affinity", "operator.logging"} <= set(ignored)
    assert "node-feature-discovery" not in ignored


def test_nfd_subchart_values_are_merged_over_the_charts() -> None:
    values = {"node-feature-discovery": {"worker": {"config": {"sources": {"pci": {"deviceLabelFields": ["vendor", "class"]}}}}}}
    nfd = parse_config(import_helm_values(values)).nfd
    assert nfd.values["worker"]["config"]["sources"]["pci"]["deviceLabelFields"] == ["vendor", "class"]
    assert nfd.values["worker"]["config"]["sources"]["pci"]["deviceClassWhitelist"] == ["02", "0200", "0207", "0300", "0302"]
    assert nfd.values["master"]["config"]["extraLabelNs"] == ["nvidia.com"]


def test_every_copy_target_is_a_field_of_our_document() -> None:
    def exists(path: str) -> bool:
        model: Any = GpuStackConfig
        for part in path.split("."):
            fields = {f.alias or name: f for name, f in model.model_fields.items()}
            if part not in fields:
                return False
            model = _model_in(fields[part].annotation)
        return True

    targets = [rule.target for rule in HELM_RULES.values() if isinstance(rule, Copy)]
    assert len(targets) > 220
    assert [t for t in targets if not exists(t)] == []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def test_only_ignored_blocks_have_rules_below_them() -> None:
    # a Copy, Reject or Handle translates its whole value, so no other rule may sit under it
    nested = [(outer, inner) for outer in HELM_RULES for inner in HELM_RULES if inner.startswith(f"{outer}.")]
    assert nested and all(isinstance(HELM_RULES[outer], Ignore) for outer, _ in nested)
