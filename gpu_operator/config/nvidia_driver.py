"""A driver of its own: the spec of NVIDIA's `NVIDIADriver` (nvidia.com/v1alpha1), field for field.

NVIDIA's operator runs one driver per `NVIDIADriver` custom resource, each on the GPU nodes its `nodeSelector`
matches (`default: true` for the nodes no other one matches). Here such a spec is written under `drivers.<name>`
or a pool's `driver` (:mod:`gpu_operator.config.driver_groups`), with NVIDIADriver's field names and value rules
(`api/nvidia/v1alpha1/nvidiadriver_types.go` and the CRD, gpu-operator v26.7.0). Where a field is the same as the
ClusterPolicy driver's, its model is the same (:mod:`gpu_operator.config.clusterpolicy.driver`).

A spec written here says what differs from the cluster's driver: what it leaves out is the cluster's
(`operator.driver`, its `gds` and `gdrcopy` sections, and the `daemonsets` tolerations, labels, annotations,
priority class and pod security context). A sub-spec (`rdma`, `gds`, `gdrcopy`, `manager`, `upgradePolicy`, the
probes, the ConfigMap references) is merged key by key, as Helm merges values; anything else (a list, a map of
labels or node selector terms, a scalar) replaces the cluster's whole, so `labels: {}` means none. That base is the cluster driver in NVIDIADriver form, the mapping NVIDIA's chart writes into its default
NVIDIADriver (`templates/nvidiadriver.yaml`): `repoConfig.configMapName` becomes `repoConfig.name`,
`licensingConfig.configMapName` `licensingConfig.name`, `virtualTopology.config` `virtualTopologyConfig.name`,
`daemonsets.tolerations` the driver's `tolerations`.

Besides NVIDIADriver's fields a spec may name the `uid` of the NVIDIADriver it replaces: NVIDIA names each driver
DaemonSet after a hash of that uid, so an imported driver keeps its DaemonSets' names.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, field_validator, model_serializer, \
    model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import NamedConfigRef, check_image_version
from gpu_operator.config.clusterpolicy.driver import (
    CertConfig,
    ContainerProbe,
    DriverManagerSpec,
    DriverUpgradePolicy,
    KernelModuleConfig,
    KernelModuleType,
    RdmaSpec,
)
from gpu_operator.config.clusterpolicy.image_reference import check_path, check_reference, check_repository
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec
from gpu_operator.config.clusterpolicy.storage import GdrcopySpec, GdsSpec
from gpu_operator.config.kube import (
    AnnotationMap,
    DnsSubdomain,
    EnvList,
    ImagePullPolicy,
    LabelMap,
    ObjectName,
    PodSecurityContext,
    ResourceRequirements,
    Toleration,
)
from gpu_operator.config.node_affinity import NodeAffinity
from gpu_operator.config.node_metadata import DRIVER_OWNER_LABEL

__all__ = [
    "DRIVER_OWNER_LABEL",
    "MERGED_KEYS",
    "DriverType",
    "LicensingConfigRef",
    "NvidiaDriverSpec",
    "cluster_driver_document",
    "full_document",
    "merge_documents",
    "merged_spec",
]

DriverType = Literal["gpu", "vgpu", "vgpu-host-manager"]
#: The serialization context under which a spec is dumped with every field, not only the written ones.
_EVERY_FIELD = "nvidiaDriverEveryField"


class LicensingConfigRef(ConfigModel):
    """vGPU licensing: the Secret (or, deprecated, ConfigMap) with `gridd.conf` and the NLS client token."""

    secret_name: ObjectName = ""
    name: ObjectName = Field(default="", description="deprecated: a ConfigMap; use secretName")
    nls_enabled: bool = True


class NvidiaDriverSpec(ConfigModel):
    """The NVIDIADriver spec (every field optional here: what is left out is the cluster driver's)."""

    default: bool = Field(default=False, description="the driver of every GPU node no other driver selects")
    driver_type: DriverType = "gpu"
    use_precompiled: bool = False
    use_open_kernel_modules: bool | None = Field(default=None, description="deprecated, no effect: kernelModuleType")
    kernel_module_type: KernelModuleType = "auto"
    startup_probe: ContainerProbe | None = None
    liveness_probe: ContainerProbe | None = None
    readiness_probe: ContainerProbe | None = None
    rdma: RdmaSpec = RdmaSpec()
    gds: GdsSpec = GdsSpec()
    gdrcopy: GdrcopySpec = GdrcopySpec()
    repository: str = ""
    image: str = "nvcr.io/nvidia/driver"
    version: str = ""
    image_pull_policy: ImagePullPolicy = "IfNotPresent"
    image_pull_secrets: tuple[DnsSubdomain, ...] = ()
    manager: DriverManagerSpec = DriverManagerSpec()
    resources: ResourceRequirements | None = None
    args: tuple[str, ...] = ()
    env: EnvList = ()
    repo_config: NamedConfigRef = NamedConfigRef()
    cert_config: CertConfig = CertConfig()
    licensing_config: LicensingConfigRef = LicensingConfigRef()
    virtual_topology_config: NamedConfigRef = NamedConfigRef()
    kernel_module_config: KernelModuleConfig = KernelModuleConfig()
    secret_env: ObjectName = ""
    upgrade_policy: DriverUpgradePolicy = DriverUpgradePolicy()
    node_selector: LabelMap = {}
    node_affinity: NodeAffinity | None = None
    labels: LabelMap = {}
    annotations: AnnotationMap = {}
    tolerations: tuple[Toleration, ...] = ()
    priority_class_name: ObjectName = ""
    pod_security_context: PodSecurityContext | None = None
    host_network: bool = False
    uid: str | None = Field(default=None, description="metadata.uid of the NVIDIADriver this driver replaces")

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        if value:
            check_repository(value)
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        # a path below repository, or a full reference on its own: which one shows only once merged
        if value and not ("/" in value or ":" in value or "@" in value):
            check_path(value)
        elif value:
            check_reference(value)
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        return check_image_version(value)

    @field_validator("uid")
    @classmethod
    def _uid(cls, value: str | None) -> str | None:
        if value is not None and (not value or len(value) > 128 or any(c.isspace() for c in value)):
            raise ValueError(f"{value!r} is not an object uid such as 'bfac7359-6033-45ce-88d6-53db0078526e'")
        return value

    @field_validator("node_selector")
    @classmethod
    def _selector(cls, value: dict[str, str]) -> dict[str, str]:
        # NVIDIADriver.ValidateNodeSelector: the owner label is the operator's routing, not a selector
        if DRIVER_OWNER_LABEL in value:
            raise ValueError(f"{DRIVER_OWNER_LABEL} is the label the operator routes nodes to a driver with; select "
                             "nodes by their own labels")
        return value

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        # What a spec leaves out is the cluster driver's, so its document is what was written: a dumped default
        # would read back as an override of the cluster's setting.
        if isinstance(info.context, dict) and info.context.get(_EVERY_FIELD):
            return handler(self)
        return self.__pydantic_serializer__.to_python(
            self, mode=info.mode, by_alias=info.by_alias, exclude_unset=True, exclude_none=info.exclude_none,
            context={_EVERY_FIELD: True})

    @model_validator(mode="after")
    def _default_selects_no_nodes(self) -> Self:
        # the CRD's CEL rule: "default NVIDIADriver must not use nodeSelector"
        if self.default and self.node_selector:
            raise ValueError("default NVIDIADriver must not use nodeSelector: it serves every GPU node no other "
                             "driver selects; remove nodeSelector or default")
        return self


def cluster_driver_document(spec: ClusterPolicySpec) -> dict[str, Any]:
    """The cluster driver (`operator.driver` and what goes with it) in NVIDIADriver form, as NVIDIA's chart writes
    its default NVIDIADriver (templates/nvidiadriver.yaml), with the daemonsets' priority class and pod security
    context, which ClusterPolicy applies to the driver too."""
    driver, daemonsets = spec.driver, spec.daemonsets
    licensing = driver.licensing_config
    return full_document(NvidiaDriverSpec(
        driver_type="gpu",
        use_precompiled=driver.use_precompiled,
        kernel_module_type=driver.kernel_module_type,
        startup_probe=driver.startup_probe,
        liveness_probe=driver.liveness_probe,
        readiness_probe=driver.readiness_probe,
        rdma=driver.rdma,
        gds=spec.gds,
        gdrcopy=spec.gdrcopy,
        repository=driver.repository,
        image=driver.image,
        version=driver.version,
        image_pull_policy=driver.image_pull_policy,
        image_pull_secrets=driver.image_pull_secrets,
        manager=driver.manager,
        resources=driver.resources,
        args=driver.args,
        env=driver.env,
        repo_config=NamedConfigRef(name=driver.repo_config.config_map_name),
        cert_config=driver.cert_config,
        licensing_config=LicensingConfigRef(secret_name=licensing.secret_name, name=licensing.config_map_name,
                                            nls_enabled=licensing.nls_enabled),
        virtual_topology_config=NamedConfigRef(name=driver.virtual_topology.config),
        kernel_module_config=driver.kernel_module_config,
        secret_env=driver.secret_env,
        upgrade_policy=driver.upgrade_policy,
        labels=daemonsets.labels,
        annotations=daemonsets.annotations,
        tolerations=daemonsets.tolerations,
        priority_class_name=daemonsets.priority_class_name,
        pod_security_context=daemonsets.pod_security_context,
        host_network=driver.host_network,
    ))


def full_document(spec: NvidiaDriverSpec) -> dict[str, Any]:
    """The spec with every field, the defaults of those not written included (its plain dump is what was written)."""
    return spec.model_dump(mode="json", by_alias=True, context={_EVERY_FIELD: True})


#: The spec's sub-specs, merged key by key (everything else is replaced whole).
MERGED_KEYS = frozenset({
    "startupProbe", "livenessProbe", "readinessProbe", "rdma", "gds", "gdrcopy", "manager", "repoConfig",
    "certConfig", "licensingConfig", "virtualTopologyConfig", "kernelModuleConfig", "upgradePolicy",
})


def _merge(base: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in written.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both else value
    return merged


def merge_documents(base: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    """`written` over `base`: the sub-specs (:data:`MERGED_KEYS`) key by key, anything else replaced whole."""
    merged = dict(base)
    for key, value in written.items():
        both = key in MERGED_KEYS and isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both else value
    return merged


def merged_spec(spec: ClusterPolicySpec, written: NvidiaDriverSpec) -> NvidiaDriverSpec:
    """A written driver spec completed with the cluster driver's settings (ValueError when they do not fit)."""
    document = merge_documents(cluster_driver_document(spec), written.model_dump(mode="json", by_alias=True,
                                                                                 exclude_unset=True))
    return NvidiaDriverSpec.model_validate(document)
