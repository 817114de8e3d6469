"""GpuLost compares the GPUs each node reports with its pool's GPU count, run through `promtool test rules`.

Upstream facts behind the series:
* dcgm-exporter `internal/pkg/collector/gpu_collector.go` `toMetric`: a blank DCGM value is skipped (a lost GPU's
  series end), and every series carries its GPU's `UUID` and `gpu` from `mi.DeviceInfo`;
  `internal/pkg/devicemonitoring/device_monitoring.go` `monitorAllGPUInstances`: a MIG instance's entity keeps
  its parent GPU's `DeviceInfo`, so the series of all instances of one GPU share its UUID and add
  `GPU_I_ID`/`GPU_I_PROFILE` (`internal/pkg/rendermetrics/render_metrics.go`);
* with pod attribution (`internal/pkg/transformation/kubernetes.go`, `KUBERNETES_VIRTUAL_GPUS`) a shared GPU has a
  series per pod, and a Service scraped both by its ServiceMonitor and by the `prometheus.io/scrape` annotation
  gives each series twice, under two `job`s;
* AKS names the nodes of agent pool `<pool>` `aks-<pool>-<id>-vmss<instance>`, and the VM size catalog gives
  Standard_ND96isr_H100_v5 8 GPUs and Standard_NC24ads_A100_v4 one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.render.monitoring.promtool_cases import (
    AKS,
    expected,
    needs_promtool,
    node,
    promtool_test,
    render_rule,
    rules_of,
    series,
)

POOLS = {"aks": AKS, "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"},
                               {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}]}
TEMP = "DCGM_FI_DEV_GPU_TEMP"
#: Five hours of a GPU reporting 40 °C once a minute.
ALWAYS = "40x300"


def _gpu(host: str, index: int, **extra: str) -> dict[str, str]:
    return {"hostname": host, "gpu": str(index), "UUID": f"GPU-{host}-{index}", **extra}


def _lost(rule: dict[str, Any], host: str, pool: str, reporting: int, pool_gpus: int) -> dict[str, Any]:
    return expected(rule, "GpuLost", {"hostname": host, "pool": pool, "pool_gpus": str(pool_gpus)},
                    value=str(reporting))


def _gpu_lost_tests(at: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"eval_time": time, "alertname": "GpuLost", "exp_alerts": alerts} for time, alerts in at.items()]


@needs_promtool
def test_promtool_a_lost_gpu_keeps_the_alert_firing_for_as_long_as_it_is_gone(tmp_path: Path) -> None:
    """GPU 3 of an 8-GPU node stops reporting at 20 minutes, and the node reboots without it at an hour: the alert
    fires after its 5 minutes and still fires hours later (compared with the node's past, it stopped at 50 min)."""
    rule = render_rule(POOLS)
    host = node("h100")
    inputs = [series(TEMP, _gpu(host, index), "40x20 stale" if index == 3 else "40x60 stale _x5 40x240")
              for index in range(8)]
    lost = [_lost(rule, host, "h100", 7, 8)]
    promtool_test(tmp_path, rule, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": _gpu_lost_tests({"15m": [], "30m": lost, "55m": lost, "2h": lost, "4h": lost}),
    }])


@needs_promtool
def test_promtool_gpus_are_counted_not_series(tmp_path: Path) -> None:
    """More series than GPUs is no reason to alert, and a lost GPU still is: 8 GPUs with 7 MIG instances each,
    every series scraped under two jobs (112 series), report 8 GPUs; on a second such node one GPU's instances all
    end, and the node reports 7. The 1-GPU node, shared by four pods (a series each), reports its one GPU."""
    rule = render_rule(POOLS)
    healthy, faulty, shared = node("h100", 0), node("h100", 1), node("a100", 0)
    inputs = []
    for host in (healthy, faulty):
        for index in range(8):
            for instance in range(1, 8):
                for job in ("nvidia-dcgm-exporter", "kubernetes-service-endpoints"):
                    labels = _gpu(host, index, GPU_I_ID=str(instance), GPU_I_PROFILE="1g.10gb", job=job)
                    gone = host == faulty and index == 5
                    inputs.append(series(TEMP, labels, "40x20 stale" if gone else ALWAYS))
    inputs += [series(TEMP, _gpu(shared, 0, exported_pod=f"trainer-{pod}"), ALWAYS) for pod in range(4)]
    promtool_test(tmp_path, rule, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": _gpu_lost_tests({"15m": [], "40m": [_lost(rule, faulty, "h100", 7, 8)],
                                            "3h": [_lost(rule, faulty, "h100", 7, 8)]}),
    }])


@needs_promtool
def test_promtool_a_node_that_reports_nothing_or_is_outside_the_pools_loses_no_gpu(tmp_path: Path) -> None:
    """A node the autoscaler removed (or AKS reimaged) stops reporting altogether; GPUs time-sliced between pods
    report a series per pod that come and go with the pods; a node of a pool the config does not describe is not
    judged; the 1-GPU pool's node that loses its one GPU reports nothing, which is no lost GPU either."""
    rule = render_rule(POOLS)
    gone, sliced, stranger, single = node("h100", 0), node("h100", 1), node("t4", 0), node("a100", 0)
    inputs = [series(TEMP, _gpu(gone, index), "40x20 stale") for index in range(8)]
    inputs += [series(TEMP, _gpu(sliced, index), ALWAYS) for index in range(8)]
    inputs += [series(TEMP, _gpu(sliced, 0, exported_pod=pod), "40x20 stale") for pod in ("a", "b")]
    inputs += [series(TEMP, _gpu(stranger, 0), ALWAYS), series(TEMP, _gpu(single, 0), "40x20 stale")]
    promtool_test(tmp_path, rule, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": _gpu_lost_tests({"15m": [], "40m": [], "4h": []}),
    }])


def test_each_pool_is_compared_with_its_own_gpu_count() -> None:
    [alert] = [item for item in rules_of(render_rule(POOLS)) if item.get("alert") == "GpuLost"]
    assert 'hostname=~"aks-h100-.+"' in alert["expr"] and "< 8" in alert["expr"]
    assert 'hostname=~"aks-a100-.+"' in alert["expr"] and "< 1" in alert["expr"]
    assert "offset" not in alert["expr"]


def test_pools_that_run_no_metrics_exporter_or_no_pools_leave_it_out() -> None:
    """GPUs handed to VMs (`workload: vm-passthrough`) have no metrics exporter on their nodes; without pools there
    is nothing to compare with, and the render says so (tests/render/monitoring/test_left_out.py)."""
    passthrough = {"aks": AKS, "pools": [{"name": "vms", "vmSize": "Standard_ND96isr_H100_v5",
                                          "workload": "vm-passthrough"}],
                   "operator": {"sandboxWorkloads": {"enabled": True}}}
    for document in (passthrough, {}):
        assert "GpuLost" not in {item.get("alert") for item in rules_of(render_rule(document))}
