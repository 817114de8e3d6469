"""Bad and tricky inputs to `gpu-operator`: each one a clear error, exit status 2, no traceback, nothing written.

One row per case: its name, the files it creates in a scratch directory (the working directory of the run), the
command line, and a piece of the expected error. File-level, YAML-level, config-level, stack-file, output and
command-line problems are all here; the config models' own errors are included as the CLI reports them.
"""

from __future__ import annotations

import codecs
import shlex
from pathlib import Path
from typing import Any

import pytest

from gpu_operator.cli import main
from gpu_operator.config.yaml_reader import MAX_FILE_BYTES
from tests.cli.support import create_files, snapshot

AKS = "aks: {resourceGroup: rg, clusterName: c, kubernetesVersion: '1.34'}\n"
H100 = "Standard_ND96isr_H100_v5"
T4 = "Standard_NC4as_T4_v3"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)
)
MERGE_BOMB = "m0: &m0 {k: 1}\n" + "".join(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}]}}\n" for i in range(1, 40))
ALIAS_CHAIN = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 120))
DEEP_FLOW = "operator: " + "[" * 500 + "]" * 500 + "\n"
DEEP_BLOCK = "".join("  " * depth + f"k{depth}:\n" for depth in range(150)) + "  " * 150 + "end\n"
CLUSTER_POLICY = "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"


def case(name: str, files: dict[str, str | bytes], command: str, expected: str) -> Any:
    return pytest.param(files, shlex.split(command), expected, id=name)


CASES = [
    # --- files --------------------------------------------------------------------------------------------------
    case("missing file", {}, "render -f nope.yaml", "nope.yaml: no such file; check the path"),
    case("missing directory", {}, "render -f no/such/c.yaml -o out", "the directory no/such does not exist either"),
    case("file is a directory", {"configs/a.yaml": "{}"}, "render -f configs",
         "configs: is a directory; give the path of a YAML file such as configs/a.yaml"),
    case("file is a device", {}, "render -f /dev/null -o out", "/dev/null: is not a regular file"),
    case("latin-1 bytes", {"c.yaml": "namespace: gpu\noperator: {}  # café\n".encode("latin-1")},
         "render -f c.yaml -o out", "byte 0xe9 at byte offset 34 (line 2) is not valid UTF-8"),
    case("utf-16 file", {"c.yaml": codecs.BOM_UTF16_LE + "namespace: x\n".encode("utf-16-le")},
         "render -f c.yaml", "is UTF-16 text (byte-order mark at byte offset 0); save the file as UTF-8"),
    case("binary file", {"c.yaml": b"\x7fELF\x02\x01\x01\x00"}, "render -f c.yaml", "is binary, not text"),
    case("file too large", {"c.yaml": "#" * (MAX_FILE_BYTES + 1)}, "render -f c.yaml", "is larger than 2 MiB"),
    case("top level is a list", {"c.yaml": "- operator\n- pools\n"}, "render -f c.yaml -o out",
         "c.yaml: must hold a mapping of settings (key: value lines), but holds a list"),
    case("top level is a string", {"c.yaml": "operator\n"}, "render -f c.yaml", "but holds a string"),
    case("top level is a number", {"c.yaml": "42\n"}, "render -f c.yaml", "but holds a number"),
    case("two documents", {"c.yaml": "namespace: a\n---\nnamespace: b\n"}, "render -f c.yaml -o out",
         "holds 2 YAML documents (separated by '---'); this file must hold one"),
    case("file name too long", {}, f"render -f {'x' * 300}.yaml", "cannot be read: File name too long"),
    case("symbolic link loop", {"a.yaml@": "b.yaml", "b.yaml@": "a.yaml"}, "render -f a.yaml",
         "a.yaml: cannot be read: Too many levels of symbolic links"),
    case("empty -f", {}, "render -f ''", "argument -f/--file: an empty path (an unset variable?); give a path"),
    # --- YAML -------------------------------------------------------------------------------------------------------
    case("duplicate top-level key", {"c.yaml": "namespace: a\noperator: {}\nnamespace: b\n"}, "render -f c.yaml",
         "namespace: duplicate key (lines 1 and 3)"),
    case("duplicate nested key", {"c.yaml": "operator:\n  driver:\n    version: '1'\n    enabled: true\n"
                                            "    version: '2'\n"}, "render -f c.yaml -o out",
         "operator.driver.version: duplicate key (lines 3 and 5)"),
    case("duplicate key in a list item", {"c.yaml": AKS + f"pools:\n  - name: a\n    vmSize: {H100}\n    name: b\n"},
         "render -f c.yaml", "pools[0].name: duplicate key (lines 3 and 5)"),
    case("duplicate key spelled two ways", {"c.yaml": "nfd:\n  enabled: true\n  'enabled': false\n"},
         "render -f c.yaml", "nfd.enabled: duplicate key (lines 2 and 3)"),
    case("duplicate boolean key", {"c.yaml": "operator:\n  daemonsets:\n    labels: {true: a, True: b}\n"},
         "render -f c.yaml", "duplicate key (lines 3 and 3)"),
    case("tab indentation", {"c.yaml": "operator:\n\tdriver: {}\n"}, "render -f c.yaml",
         "line 2, column 1: found character '\\t' that cannot start any token; indent with spaces"),
    case("unquoted colon", {"c.yaml": "namespace: gpu: operator\n"}, "render -f c.yaml",
         "line 1, column 15: mapping values are not allowed here; quote a value that contains ': '"),
    case("unclosed bracket", {"c.yaml": "pools: [a, b\nnamespace: x\n"}, "render -f c.yaml",
         "(while parsing a flow sequence at line 1)"),
    case("unclosed quote", {"c.yaml": "namespace: \"gpu\noperator: {}\n"}, "render -f c.yaml",
         "found unexpected end of stream (while scanning a quoted scalar at line 1)"),
    case("undefined alias", {"c.yaml": "operator: *defaults\n"}, "render -f c.yaml",
         "found undefined alias 'defaults'; define the anchor (&name) before the alias"),
    case("duplicate anchor", {"c.yaml": "a: &x 1\nb: &x 2\n"}, "render -f c.yaml",
         "found duplicate anchor 'x'; first occurrence at line 1); give each anchor (&name) a name of its own"),
    case("python tag", {"c.yaml": "operator: !!python/object/apply:os.system [ls]\n"}, "render -f c.yaml -o out",
         "could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'"),
    case("complex key", {"c.yaml": "? [a, b]\n: 1\n"}, "render -f c.yaml", "found unhashable key"),
    case("control character", {"c.yaml": "namespace: gpu\x1b[0m\n"}, "render -f c.yaml",
         "line 1: control character U+001B is not allowed in YAML text"),
    case("deep flow nesting", {"c.yaml": DEEP_FLOW}, "render -f c.yaml", "nested deeper than 100 levels"),
    case("deep block nesting", {"c.yaml": DEEP_BLOCK}, "render -f c.yaml", "nested deeper than 100 levels"),
    case("alias bomb", {"c.yaml": BOMB}, "render -f c.yaml -o out",
         "aliases (*name) expand this value to more than 8,388,608 nodes and characters (a YAML alias bomb?)"),
    case("merge-key bomb", {"c.yaml": MERGE_BOMB}, "render -f c.yaml", "a YAML alias bomb?"),
    case("recursive alias", {"c.yaml": "operator: &o {driver: *o}\n"}, "render -f c.yaml",
         "operator.driver: line 1: an alias refers to the collection that contains it"),
    case("aliases nest too deep", {"c.yaml": ALIAS_CHAIN}, "render -f c.yaml",
         "aliases nest this value deeper than 100 levels"),
    case("binary scalar", {"c.yaml": "operator: !!binary aGVsbG8=\n"}, "render -f c.yaml",
         "operator: must be a mapping"),
    case("date where a version goes", {"c.yaml": "operator: {driver: {version: 2024-01-01}}\n"}, "render -f c.yaml",
         "operator.driver.version: must be a string"),
    case("float where a version goes", {"c.yaml": "operator: {driver: {version: 1.20}}\n"}, "render -f c.yaml",
         "operator.driver.version: must be a string, got 1.2"),
    case("yes where a name goes", {"c.yaml": "namespace: yes\n"}, "render -f c.yaml",
         "namespace: line 1: yes is true to this reader (YAML 1.1) but not to YAML 1.2 readers such as Pulumi's"),
    case("number as a key", {"c.yaml": "1: operator\n"}, "render -f c.yaml",
         "c.yaml: 1: the key 1 is read as a number, not a string; quote it ('1')"),
    case("boolean as a label key", {"c.yaml": "operator: {daemonsets: {labels: {yes: x}}}\n"}, "render -f c.yaml",
         "operator.daemonsets.labels.true: the key true is read as a boolean, not a string"),
    # --- config -----------------------------------------------------------------------------------------------------
    case("unknown top-level key", {"c.yaml": "operater: {}\n"}, "render -f c.yaml -o out",
         "operater: unknown key; did you mean 'operator'? the top level takes: namespace, cluster,"),
    case("unknown nested key", {"c.yaml": "operator: {devicePlugin: {enabledd: true}}\n"}, "render -f c.yaml",
         "operator.devicePlugin.enabledd: unknown key"),
    case("wrong type: chart version", {"c.yaml": "nfd: {chartVersion: 3}\n"}, "render -f c.yaml",
         "nfd.chartVersion: must be a string, got 3"),
    case("wrong type: boolean", {"c.yaml": "operator: {driver: {enabled: sometimes}}\n"}, "render -f c.yaml",
         "operator.driver.enabled: must be a boolean (true or false, unquoted), got 'sometimes'"),
    case("wrong type: section is a list", {"c.yaml": "operator: []\n"}, "render -f c.yaml",
         "operator: must be a mapping, got a list"),
    case("wrong type: env is a mapping", {"c.yaml": "operator: {driver: {env: {A: b}}}\n"}, "render -f c.yaml",
         "operator.driver.env: must be a list, got a mapping"),
    case("wrong type: hostPort", {"c.yaml": "operator: {dcgm: {hostPort: x}}\n"}, "render -f c.yaml",
         "operator.dcgm.hostPort: must be a whole number, unquoted, got 'x'"),
    case("mig strategy", {"c.yaml": "operator: {mig: {strategy: maybe}}\n"}, "render -f c.yaml -o out",
         "operator.mig.strategy: Input should be 'none', 'single' or 'mixed' (got 'maybe')"),
    case("container runtime", {"c.yaml": "cluster: {containerRuntime: rkt}\n"}, "render -f c.yaml",
         "cluster.containerRuntime: Input should be 'containerd', 'crio' or 'docker' (got 'rkt')"),
    case("image pull policy", {"c.yaml": "operator: {driver: {imagePullPolicy: Sometimes}}\n"}, "render -f c.yaml",
         "operator.driver.imagePullPolicy: Input should be 'Always', 'IfNotPresent' or 'Never'"),
    case("kernel module type", {"c.yaml": "operator: {driver: {kernelModuleType: closedish}}\n"}, "render -f c.yaml",
         "operator.driver.kernelModuleType: Input should be 'auto', 'open' or 'proprietary'"),
    case("toleration operator", {"c.yaml": "operator: {daemonsets: {tolerations: [{operator: Maybe}]}}\n"},
         "render -f c.yaml", "operator.daemonsets.tolerations[0].operator: Input should be 'Exists' or 'Equal'"),
    case("sandbox mode", {"c.yaml": "operator: {sandboxWorkloads: {enabled: true, mode: vmware}}\n"},
         "render -f c.yaml", "operator.sandboxWorkloads.mode: Input should be 'kubevirt' or 'kata'"),
    case("agents implementation", {"c.yaml": "agents: {implementation: both}\n"}, "render -f c.yaml",
         "agents.implementation: Input should be 'agents' or 'nvidia' (got 'both')"),
    case("agent without an image", {"c.yaml": "agents: {overrides: {driverManager: agents}}\n"}, "render -f c.yaml",
         "agents (overrides.driverManager) needs the agents image, which nobody publishes for you"),
    case("controller without an image", {"c.yaml": "controller: {enabled: true}\n"}, "render -f c.yaml",
         "controller.enabled: the operator controller runs from the agents image"),
    case("digest without sha256", {"c.yaml": f"operator: {{toolkit: {{version: '{'0123456789abcdef' * 4}'}}}}\n"},
         "render -f c.yaml -o out", "looks like a digest without the 'sha256:' prefix; write 'sha256:<64 hex digits>'"),
    case("agents digest", {"c.yaml": "agents: {image: {repository: r.io/agents, digest: abc}}\n"}, "render -f c.yaml",
         "agents.image.digest: digest 'abc' must be 'sha256:' followed by 64 lower-case hex digits"),
    case("time-slicing replicas < 2", {"c.yaml": "configs: {devicePlugin: {a: {sharing: {timeSlicing: {resources: "
                                                 "[{name: nvidia.com/gpu, replicas: 1}]}}}}}\n"},
         "render -f c.yaml", "resources[0].replicas: replicas must be at least 2 (got 1)"),
    case("MPS with mixed MIG", {"c.yaml": "operator: {mig: {strategy: mixed}, devicePlugin: {config: {name: dp}}}\n"
                                          "configs: {devicePlugin: {m: {sharing: {mps: {resources: "
                                          "[{name: nvidia.com/gpu, replicas: 2}]}}}}}\n"},
         "render -f c.yaml", "configs.devicePlugin.m.sharing.mps: MPS cannot be used with the 'mixed' MIG strategy"),
    case("driver image NVIDIA does not publish", {"c.yaml": "cluster: {operatingSystems: [{id: sles, versionId: '15.6'}]}\n"},
         "render -f c.yaml", "cluster.operatingSystems[0].id: NVIDIA publishes no driver image for sles"),
    case("device-plugin config as bad YAML text", {"c.yaml": "configs: {devicePlugin: {a: 'a: b: c'}}\n"},
         "render -f c.yaml", "configs.devicePlugin: not valid YAML: line 1, column 5: mapping values are not allowed"),
    case("device-plugin config as runaway YAML text",
         {"c.yaml": "configs:\n  devicePlugin:\n    a: '" + "[" * 3000 + "'\n"},
         "render -f c.yaml", "nested deeper than 100 levels"),
    case("Helm device-plugin data nested too deep",
         {"v.yaml": "devicePlugin:\n  config:\n    name: dp\n    create: true\n    data:\n      a: '"
                    + "[" * 3000 + "'\n"},
         "import-values v.yaml", "devicePlugin.config.data.a: line 1, column 101: nested deeper than 100 levels"),
    case("Helm device-plugin data with a duplicate key",
         {"v.yaml": "devicePlugin:\n  config:\n    name: dp\n    create: true\n    data:\n"
                    "      a: 'version: v1\n\n        version: v1'\n"},
         "import-values v.yaml", "duplicate key"),
    case("device-plugin configs without a name", {"c.yaml": "configs: {devicePlugin: {a: {version: v1}}}\n"},
         "render -f c.yaml", "operator.devicePlugin.config.name: required when configs.devicePlugin is set"),
    case("mig-parted config without all-disabled",
         {"c.yaml": "operator: {migManager: {config: {name: mig}}}\n"
                    "configs: {migManager: {version: v1, mig-configs: {x: [{devices: all, mig-enabled: false}]}}}\n"},
         "render -f c.yaml", "configs.migManager.mig-configs: must define 'all-disabled'"),
    case("namespace not a DNS label", {"c.yaml": "namespace: GPU_Operator\n"}, "render -f c.yaml",
         "namespace: 'GPU_Operator' is not a DNS-1123 label"),
    case("resource quantity", {"c.yaml": "operator: {driver: {resources: {limits: {cpu: lots}}}}\n"},
         "render -f c.yaml", "operator.driver.resources.limits.cpu: 'lots' is not a Kubernetes quantity"),
    case("resource quantity the API server would store as another number",
         {"c.yaml": "operator: {dcgmExporter: {resources: {limits: {memory: 1000E}}}}\n"}, "render -f c.yaml",
         "operator.dcgmExporter.resources.limits.memory: '1000E' is not a Kubernetes quantity: the value needs a "
         "suffix above E"),
    case("relative host path", {"c.yaml": "operator: {hostPaths: {rootFS: relative/path}}\n"}, "render -f c.yaml",
         "operator.hostPaths: rootFS 'relative/path' must be an absolute host path"),
    case("pool naming an unknown driver",
         {"c.yaml": "drivers: {training: {version: '580.105.08'}}\naks: {resourceGroup: rg, clusterName: aks, "
                    "kubernetesVersion: '1.34'}\npools: [{name: t4, vmSize: Standard_NC4as_T4_v3, driver: trainng}]\n"},
         "render -f c.yaml", "pools[0].driver: 'trainng' is not a drivers entry (drivers: training)"),
    case("Kata manager", {"c.yaml": "operator: {kataManager: {enabled: true}}\n"}, "render -f c.yaml",
         "operator.kataManager.enabled: the Kata manager is never deployed since GPU Operator v26"),
    case("ServiceMonitor without Prometheus Operator",
         {"c.yaml": "cluster: {prometheusOperator: false}\n"
                    "operator: {dcgmExporter: {serviceMonitor: {enabled: true}}}\n"},
         "render -f c.yaml", "a ServiceMonitor needs the Prometheus Operator's CRDs"),
    case("invalid image repository", {"c.yaml": "operator: {driver: {repository: NVCR.io/Nvidia, image: driver, "
                                                "version: '1'}}\n"},
         "render -f c.yaml -o out", "operator.driver.repository: 'NVCR.io/Nvidia' is not a valid image repository"),
    case("invalid image name", {"c.yaml": "operator: {toolkit: {image: container toolkit}}\n"}, "render -f c.yaml",
         "operator.toolkit.image: 'container toolkit' is not a valid image"),
    case("template syntax in a tag", {"c.yaml": "operator: {driver: {version: '${driver_version}'}}\n"},
         "render -f c.yaml", "operator.driver.version: '${driver_version}' is not a valid image tag"),
    case("unsupported node OS", {"c.yaml": "cluster: {operatingSystems: [{id: windows, versionId: '2022'}]}\n"},
         "render -f c.yaml", "cluster.operatingSystems[0].id: 'windows' is not an OS that NVIDIA's driver image"),
    case("several problems at once", {"c.yaml": "operator: {mig: {strategy: maybe}, psa: {enabled: perhaps}}\n"},
         "render -f c.yaml -o out", "c.yaml: 2 problems:\n  - operator.mig.strategy: "),
    # --- AKS pools ------------------------------------------------------------------------------------------------
    case("pool name upper case", {"c.yaml": AKS + f"pools: [{{name: H100-Pool, vmSize: {H100}}}]\n"},
         "render -f c.yaml -o out", "pools[0].name: 'H100-Pool' is not an AKS pool name"),
    case("pool name 13 characters", {"c.yaml": AKS + f"pools: [{{name: abcdefghijklm, vmSize: {H100}}}]\n"},
         "render -f c.yaml", "1 to 12 lower-case letters and digits, starting with a letter"),
    case("pool defined twice", {"c.yaml": AKS + f"pools: [{{name: t4, vmSize: {T4}}}, {{name: t4, vmSize: {T4}}}]\n"},
         "render -f c.yaml", "pools[1].name: pool 't4' is defined twice"),
    case("pools without aks", {"c.yaml": f"pools: [{{name: h100, vmSize: {H100}}}]\n"}, "render -f c.yaml",
         "aks: pools are AKS agent pools: set aks.resourceGroup and aks.clusterName"),
    case("unknown VM size", {"c.yaml": AKS + "pools: [{name: x, vmSize: Standard_Foo}]\n"}, "render -f c.yaml",
         "pools[0].vmSize: 'Standard_Foo' is not in the GPU VM size catalog. For a GPU size the catalog lacks, declare "
         "its GPUs under pools[0].gpu"),
    case("MIG on a T4", {"c.yaml": AKS + f"pools: [{{name: t4, vmSize: {T4}, migConfig: all-1g.5gb}}]\n"},
         "render -f c.yaml", "pools[0].migConfig: Tesla T4 GPUs do not support MIG"),
    case("autoscale min > max", {"c.yaml": AKS + f"pools: [{{name: t4, vmSize: {T4}, "
                                                 "autoscale: {minCount: 3, maxCount: 2}}]\n"},
         "render -f c.yaml", "pools[0].autoscale: minCount (3) is greater than maxCount (2)"),
    case("negative count", {"c.yaml": AKS + f"pools: [{{name: t4, vmSize: {T4}, count: -1}}]\n"}, "render -f c.yaml",
         "pools[0].count: Input should be greater than or equal to 0 (got -1)"),
    case("AKS driver with the operator's driver", {"c.yaml": AKS + f"pools: [{{name: t4, vmSize: {T4}, "
                                                                   "gpuDriver: aks}]\n"},
         "render -f c.yaml", "operator.driver.enabled: must be false while pools use the AKS-managed driver"),
    case("taint without effect", {"c.yaml": AKS + f"pools: [{{name: t4, vmSize: {T4}, taints: [bad]}}]\n"},
         "render -f c.yaml", "pools[0].taints: taint 'bad' must end in ':NoSchedule'"),
    case("Kubernetes version", {"c.yaml": "aks: {resourceGroup: rg, clusterName: c, kubernetesVersion: banana}\n"},
         "render -f c.yaml", "aks.kubernetesVersion: 'banana' is not a Kubernetes version"),
    # --- chart sources ----------------------------------------------------------------------------------------------
    case("chart: two sources", {"c.yaml": "nfd:\n  chart: {oci: 'oci://m.example.com/c', path: c.tgz}\n"},
         "render -f c.yaml", "nfd.chart: sets oci and path: give exactly one source (repository, oci or path)"),
    case("chart: a bare URL", {"c.yaml": "network:\n  chart: oci://m.example.com/c\n"}, "check -f c.yaml",
         "network.chart: must be a mapping that names the kind of source: write {oci: oci://m.example.com/c}"),
    case("chart: plain HTTP repository", {"c.yaml": "dra:\n  chart: {repository: 'http://m.example.com/c'}\n"},
         "render -f c.yaml -o out", "dra.chart.repository: 'http://m.example.com/c' is plain HTTP"),
    case("chart: OCI path with the chart's name", {"c.yaml": "nfd:\n  chart: {oci: 'oci://m.example.com/c/"
                                                             "node-feature-discovery'}\n"},
         "render -f c.yaml", "give the path the chart is under, oci://m.example.com/c"),
    case("chart: missing local chart", {"c.yaml": "nfd:\n  chart: {path: charts/nfd.tgz}\n"}, "check -f c.yaml",
         "nfd.chart.path: 'charts/nfd.tgz' does not exist; a relative path is read against the working directory"),
    case("chart: relative to the config's directory", {"stacks/c.yaml": "nfd:\n  chart: {path: charts/nfd}\n",
                                                       "charts/nfd/Chart.yaml": "name: node-feature-discovery\n"
                                                                                "version: 0.19.0\n"},
         "render -f stacks/c.yaml", "'charts/nfd' does not exist; a relative path is read against stacks"),
    case("chart: another chart", {"c.yaml": "nfd:\n  chart: {path: charts/nfd}\n",
                                  "charts/nfd/Chart.yaml": "name: nfd\nversion: 0.19.0\n"},
         "render -f c.yaml -o out", "nfd.chart.path: 'charts/nfd' holds the chart 'nfd', not node-feature-discovery"),
    case("chart: another version", {"c.yaml": "network:\n  chart: {path: net}\n",
                                    "net/Chart.yaml": "name: network-operator\nversion: 26.1.0\n"},
         "render -f c.yaml", "network.chartVersion is 26.4.1: give the path of the 26.4.1 chart, or set "
                             "network.chartVersion: '26.1.0' to install this one on purpose"),
    case("chart: not a chart archive", {"c.yaml": "dra:\n  chart: {path: dra.tgz}\n", "dra.tgz": b"PK\x03\x04"},
         "render -f c.yaml", "dra.chart.path: 'dra.tgz' is not a packaged chart, a gzipped tar"),
    # --- Pulumi stack files -------------------------------------------------------------------------------------------
    case("stack: secret config", {"Pulumi.s.yaml": "config:\n  gpu-operator:config:\n    secure: v1:abc\n"},
         "render -f Pulumi.s.yaml -o out",
         "config.gpu-operator:config: is a secret value (secure:); it is encrypted with the stack's secrets provider "
         "and cannot be decrypted offline"),
    case("stack: secret leaf", {"Pulumi.s.yaml": "config:\n  gpu-operator:config:\n    aks:\n      tags:\n"
                                                 "        owner: {secure: v1:abc}\n"},
         "render -f Pulumi.s.yaml", "Pulumi.s.yaml (gpu-operator:config): aks.tags.owner: is a secret value"),
    case("stack: string that is not JSON", {"Pulumi.s.yaml": "config:\n  gpu-operator:config: 'operator: {}'\n"},
         "render -f Pulumi.s.yaml", "is a string that is not JSON"),
    case("stack: config problem", {"Pulumi.s.yaml": "config:\n  gpu-operator:config:\n    operator:\n"
                                                    "      mig: {strategy: maybe}\n"},
         "render -f Pulumi.s.yaml -o out", "Pulumi.s.yaml (gpu-operator:config): operator.mig.strategy:"),
    case("stack: config given twice", {"Pulumi.s.yaml": "config:\n  gpu-operator:config: {}\n  config: {}\n"},
         "render -f Pulumi.s.yaml", "is given twice, also as the bare key `config`"),
    case("stack: duplicate key", {"Pulumi.s.yaml": "config:\n  gpu-operator:config: {}\n  gpu-operator:config: {}\n"},
         "render -f Pulumi.s.yaml", "config.gpu-operator:config: duplicate key (lines 2 and 3)"),
    # --- output directory ---------------------------------------------------------------------------------------------
    case("-o is a file", {"out": "notes"}, "render -o out",
         "out: is a file, not a directory; name a directory for the output"),
    case("-o under a file", {"notes.txt": "x"}, "render -o notes.txt/rendered",
         "notes.txt is a file, so no directory can be created under it"),
    case("-o has a file where azure/ goes", {"out/azure": "x"}, "render -o out",
         "out/azure is a file where the output needs a directory"),
    case("-o has a directory where a manifest goes", {"out/0001-namespace-network-operator.yaml/": ""}, "render -o out",
         "0001-namespace-network-operator.yaml is a directory where the output writes a file"),
    case("-o name too long", {}, f"render -o {'x' * 300}", "cannot be used: File name too long"),
    case("-o is a dangling link", {"out@": "nowhere"}, "render -o out/rendered",
         "out is a symbolic link that leads nowhere (broken, or a loop)"),
    case("empty -o", {}, "render -o ''", "argument -o/--output: an empty path"),
    case("-o with a bad config", {"c.yaml": "operator: {mig: {strategy: maybe}}\n", "out/keep.txt": "mine"},
         "render -f c.yaml -o out/new", "operator.mig.strategy"),
    # --- command line -------------------------------------------------------------------------------------------------
    case("no command", {}, "", "error: gpu-operator: the following arguments are required"),
    case("unknown command", {}, "deploy -f c.yaml",
         "invalid choice: 'deploy' (choose from 'render', 'import-values', 'dashboard', "),
    case("unknown flag", {}, "render --dry-run", "error: gpu-operator: unrecognized arguments: --dry-run"),
    case("flag without its value", {}, "render -f", "error: gpu-operator render: argument -f/--file: expected one"),
    case("extra argument", {"c.yaml": "{}"}, "render c.yaml", "unrecognized arguments: c.yaml"),
    case("import-values without a file", {}, "import-values", "the following arguments are required: values"),
    case("import-values unknown flag", {"v.yaml": "{}"}, "import-values v.yaml --chart-version 1", "unrecognized"),
    # --- import-values --------------------------------------------------------------------------------------------
    case("import: missing file", {}, "import-values values.yaml", "values.yaml: no such file"),
    case("import: empty path", {}, "import-values ''", "argument values: an empty path"),
    case("import: directory", {"chart/": ""}, "import-values chart", "chart: is a directory"),
    case("import: latin-1", {"v.yaml": "driver:\n  version: \xe9\n".encode("latin-1")}, "import-values v.yaml",
         "byte 0xe9 at byte offset 19 (line 2)"),
    case("import: list", {"v.yaml": "- driver\n"}, "import-values v.yaml",
         "v.yaml: must hold a mapping (Helm values) or a manifest, but holds a list"),
    case("import: a number", {"v.yaml": "42\n"}, "import-values v.yaml", "but holds a number"),
    case("import: list among documents", {"v.yaml": CLUSTER_POLICY + "---\n- x\n"}, "import-values v.yaml",
         "but holds a list"),
    case("import: two values documents", {"v.yaml": "driver: {}\n---\ntoolkit: {}\n"}, "import-values v.yaml",
         "expected one Helm values document or one ClusterPolicy manifest, found 2 documents"),
    case("import: duplicate key", {"v.yaml": "driver:\n  enabled: true\n  enabled: false\n"}, "import-values v.yaml",
         "driver.enabled: duplicate key (lines 2 and 3)"),
    case("import: alias bomb", {"v.yaml": BOMB}, "import-values v.yaml", "a YAML alias bomb?"),
    case("import: deep nesting", {"v.yaml": DEEP_FLOW}, "import-values v.yaml", "nested deeper than 100 levels"),
    case("import: unknown value", {"v.yaml": "driver:\n  enabledd: true\n"}, "import-values v.yaml",
         "driver.enabledd: unknown key"),
    case("import: bad runtime", {"v.yaml": "operator:\n  defaultRuntime: rkt\n"}, "import-values v.yaml",
         "operator.defaultRuntime: 'rkt' is not a container runtime"),
    case("import: bad namespace", {"v.yaml": "{}\n"}, "import-values v.yaml -n Bad_NS",
         "namespace: 'Bad_NS' is not a DNS-1123 label"),
    case("import: envsubst variable", {"v.yaml": "driver:\n  version: ${driver_version}\n"}, "import-values v.yaml",
         "driver.version: '${driver_version}' is a shell or envsubst variable, left unrendered"),
    case("import: Helm expression", {"cp.yaml": CLUSTER_POLICY + "spec:\n  driver: {version: '{{ .Values.v }}'}\n"},
         "import-values cp.yaml", "spec.driver.version: '{{ .Values.v }}' is a Go/Helm template expression"),
    case("import: Go's <no value>", {"v.yaml": "toolkit:\n  repository: <no value>\n"}, "import-values v.yaml",
         "toolkit.repository: '<no value>' is what a Go template writes for a missing value"),
    case("import: invalid image repository", {"v.yaml": "driver:\n  repository: NVCR.io/Nvidia\n"},
         "import-values v.yaml", "driver.repository: 'NVCR.io/Nvidia' is not a valid image repository"),
    case("import: umbrella chart values", {"v.yaml": "gpu-operator:\n  driver: {enabled: false}\n"},
         "import-values v.yaml", "gpu-operator: these are a parent chart's values: import the gpu-operator subtree"),
    case("import: key moved since", {"v.yaml": "gfd:\n  migStrategy: single\n"}, "import-values v.yaml",
         "gfd.migStrategy: not a value of the GPU Operator v26.7.0 chart: moved to mig.strategy"),
    case("import: bad ClusterPolicy", {"cp.yaml": CLUSTER_POLICY + "spec:\n  mig: {strategy: maybe}\n"},
         "import-values cp.yaml", "spec.mig.strategy: Input should be 'none', 'single' or 'mixed'"),
]


def test_the_table_has_at_least_60_cases() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("files", "argv", "expected"), CASES)
def test_bad_input_is_a_clear_error_and_writes_nothing(
    files: dict[str, str | bytes],
    argv: list[str],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)

    status = main(argv)

    out, err = capsys.readouterr()
    assert expected in err, err
    assert status == 2, err
    assert err.startswith("error: ")
    assert "Traceback" not in err and "internal error" not in err
    assert out == ""
    assert snapshot(tmp_path) == before
