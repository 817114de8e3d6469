"""AgentsImage under Pulumi mocks: the Dockerfile built and pushed, AcrPull for the kubelet, DaemonSets by digest."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
import pytest
import yaml
from gpu_operator.components import AgentsImage, GpuCluster, GpuOperator
from gpu_operator.components.agents_image import (
    ACR_PULL_ROLE,
    acr_pull_role_definition_id,
    build_context,
    dockerfile_sources,
    kubelet_object_id,
    substitute,
)
from gpu_operator.components.component_args import ComponentArgsError
from gpu_operator.components.feature_registration import FeatureWait

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.agents import AgentsBuild
from tests.support.agents import AGENTS_IMAGE, with_agents
from tests.support.azure_mocks import AzureMocks, run_azure_program
from tests.support.pulumi_mocks import Recording, run_program
from tests.support.reference import REPO_ROOT
from tests.support.stack_programs import run_program_file

IMAGE = "docker-build:index:Image"
REGISTRY = "azure-native:containerregistry:Registry"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SUBSCRIPTION = "/subscriptions/00000000-0000-0000-0000-0000000000aa"
EXISTING_ID = f"{SUBSCRIPTION}/resourceGroups/rg-acr/providers/Microsoft.ContainerRegistry/registries/acrGpu01"
CREATED_ID = f"{SUBSCRIPTION}/resourceGroups/rg-acr/providers/Microsoft.ContainerRegistry/registries/acrnew01"
KUBELET_OBJECT_ID = "11111111-2222-3333-4444-555555555555"
DIGEST = "sha256:" + "ab" * 32
BUILD = {"registry": {"resourceGroup": "rg-acr", "name": "acrGpu01"}}
BY_DIGEST = f"acrgpu01.azurecr.io/gpu-operator-agents@{DIGEST}"
BY_TAG = "acrgpu01.azurecr.io/gpu-operator-agents:0.1.0"
DOCUMENT = {
    "aks": {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"},
    "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 2}],
    "agents": {"build": BUILD},
}


class RegistryMocks(AzureMocks):
    """AzureMocks that also know the registry, its admin credentials, the cluster's kubelet and the build."""

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        if args.token == "azure-native:containerregistry:getRegistry":
            self.calls.append(args)
            return {"id": EXISTING_ID, "loginServer": f"{args.args['registryName'].lower()}.azurecr.io",
                    "name": args.args["registryName"]}
        if args.token == "azure-native:containerregistry:listRegistryCredentials":
            self.calls.append(args)
            return {"username": args.args["registryName"], "passwords": [{"name": "password", "value": "s3cret"}]}
        if args.token == "azure-native:containerservice:getManagedCluster":
            self.calls.append(args)
            return {"identityProfile": {"kubeletidentity": {
                "objectId": KUBELET_OBJECT_ID, "clientId": "c", "resourceId": "/subscriptions/x/identity"}}}
        return super().call(args)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if self.preview:
            return resource_id, state
        if args.typ == IMAGE:
            state = {**state, "digest": DIGEST, "ref": f"{state['tags'][0]}@{DIGEST}"}
        if args.typ == REGISTRY:
            name = args.inputs["registryName"]
            state = {**state, "name": name, "loginServer": f"{name.lower()}.azurecr.io"}
            resource_id = CREATED_ID
        return resource_id, state


def _image_program(build: dict[str, Any], outputs: dict[str, Any], **extra: Any):
    def program() -> pulumi.Output[Any]:
        image = AgentsImage("agents", {"build": build, "azure_provider": azure_native.Provider("azure"), **extra})
        return image.image_ref.apply(lambda ref: outputs.update(image_ref=ref, tag=image.tag_reference))
    return program


@pytest.fixture(scope="module")
def existing() -> tuple[Recording, dict[str, Any], RegistryMocks]:
    outputs: dict[str, Any] = {}
    mocks = RegistryMocks()
    recording = run_azure_program(_image_program(BUILD, outputs, kubelet_object_id=KUBELET_OBJECT_ID), mocks=mocks)
    return recording, outputs, mocks


def test_the_dockerfile_is_built_for_amd64_and_pushed(existing: tuple[Recording, dict[str, Any], Any]) -> None:
    recording, _, _ = existing
    [image] = recording.of_type(IMAGE)
    assert image.inputs["push"] is True
    assert image.inputs["platforms"] == ["linux/amd64"]
    assert image.inputs["context"] == {"location": str(REPO_ROOT)}
    assert image.inputs["dockerfile"] == {"location": str(REPO_ROOT / "Dockerfile")}
    assert image.inputs["tags"] == [BY_TAG]
    assert image.inputs["buildArgs"] == {"VERSION": "0.1.0"}
    [registry] = image.inputs["registries"]
    assert (registry["address"], registry["username"]) == ("acrgpu01.azurecr.io", "acrGpu01")
    # the admin password stays a secret in state
    assert registry["password"]["value"] == "s3cret" and "4dabf18193072939515e22adb298388d" in registry["password"]


def test_an_existing_registry_is_looked_up_not_created(existing: tuple[Recording, dict[str, Any], Any]) -> None:
    recording, _, mocks = existing
    assert recording.of_type(REGISTRY) == []
    lookups = {call.token: call.args for call in mocks.calls if "containerregistry" in call.token}
    assert lookups["azure-native:containerregistry:getRegistry"] == {
        "registryName": "acrGpu01", "resourceGroupName": "rg-acr"}
    assert lookups["azure-native:containerregistry:listRegistryCredentials"] == {
        "registryName": "acrGpu01", "resourceGroupName": "rg-acr"}


def test_the_kubelet_identity_gets_acr_pull_on_the_registry(existing: tuple[Recording, dict[str, Any], Any]) -> None:
    recording, _, _ = existing
    [grant] = recording.of_type(ROLE_ASSIGNMENT)
    assert grant.inputs["principalId"] == KUBELET_OBJECT_ID
    assert grant.inputs["principalType"] == "ServicePrincipal"
    assert grant.inputs["scope"] == EXISTING_ID
    assert grant.inputs["roleDefinitionId"] == (
        f"{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/7f951dda-4ed3-4680-a7ca-43fe172d538d"
    )
    assert "pulumi:providers:azure-native::azure::" in grant.provider


def test_the_image_is_exposed_by_digest(existing: tuple[Recording, dict[str, Any], Any]) -> None:
    _, outputs, _ = existing
    assert outputs == {"image_ref": BY_DIGEST, "tag": BY_TAG}


def test_a_created_registry_has_its_admin_user_for_the_push() -> None:
    build = {"registry": {"resourceGroup": "rg-acr", "name": "acrNew01", "create": True, "sku": "Standard",
                          "location": "westeurope"}, "repository": "gpu/agents", "tag": "1.2.3"}
    outputs: dict[str, Any] = {}
    mocks = RegistryMocks()
    recording = run_azure_program(_image_program(build, outputs, kubelet_object_id=KUBELET_OBJECT_ID), mocks=mocks)
    [registry] = recording.of_type(REGISTRY)
    wanted = {"resourceGroupName": "rg-acr", "registryName": "acrNew01", "sku": {"name": "Standard"},
              "adminUserEnabled": True, "location": "westeurope"}
    assert {key: registry.inputs.get(key) for key in wanted} == wanted
    assert "azure-native:containerregistry:getRegistry" not in {call.token for call in mocks.calls}
    [grant] = recording.of_type(ROLE_ASSIGNMENT)
    assert grant.inputs["scope"] == CREATED_ID
    [image] = recording.of_type(IMAGE)
    assert image.inputs["tags"] == ["acrnew01.azurecr.io/gpu/agents:1.2.3"]
    assert outputs["image_ref"] == f"acrnew01.azurecr.io/gpu/agents@{DIGEST}"


def test_without_a_kubelet_identity_no_role_is_assigned() -> None:
    outputs: dict[str, Any] = {}
    recording = run_azure_program(_image_program(BUILD, outputs), mocks=RegistryMocks())
    assert recording.of_type(ROLE_ASSIGNMENT) == []
    assert outputs["image_ref"] == BY_DIGEST


# --- GpuCluster: build before the operator, DaemonSets by digest -------------------------------------------------


def _cluster_program(document: dict[str, Any]):
    def program() -> None:
        GpuCluster("gpu", {"config": document, "azure_provider": azure_native.Provider("azure"),
                           "feature_wait": FeatureWait(timeout_seconds=60, interval_seconds=0)})
    return program


@pytest.fixture(scope="module")
def cluster() -> tuple[Recording, RegistryMocks]:
    mocks = RegistryMocks()
    return run_azure_program(_cluster_program(DOCUMENT), mocks=mocks), mocks


def _images(daemonset: Any) -> dict[str, str]:
    pod = daemonset.inputs["spec"]["template"]["spec"]
    return {c["name"]: c["image"] for c in [*pod.get("initContainers", []), *pod["containers"]]}


def test_the_cluster_builds_the_image_and_its_daemonsets_run_it_by_digest(cluster: tuple[Recording, Any]) -> None:
    recording, mocks = cluster
    [image] = recording.of_type("gpu-operator:index:AgentsImage")
    assert image.parent == recording.of_type("gpu-operator:index:GpuCluster")[0].urn
    daemonsets = {d.inputs["metadata"]["name"]: _images(d) for d in recording.of_type(DAEMONSET)}
    assert daemonsets["gpu-feature-discovery"]["gpu-feature-discovery"] == BY_DIGEST
    assert daemonsets["nvidia-dcgm-exporter"]["nvidia-dcgm-exporter"] == BY_DIGEST
    assert daemonsets["nvidia-operator-validator"]["driver-validation"] == BY_DIGEST
    every = [ref for images in daemonsets.values() for ref in images.values()]
    assert BY_TAG not in every  # nothing is left on the tag the render used
    assert daemonsets["nvidia-device-plugin-daemonset"]["nvidia-device-plugin"] == BY_DIGEST
    assert daemonsets["nvidia-driver-daemonset"]["k8s-driver-manager"] == BY_DIGEST
    assert daemonsets["nvidia-driver-daemonset"]["nvidia-driver-ctr"].startswith("nvcr.io/nvidia/")  # NVIDIA's driver
    [controller] = [d for d in recording.of_type("kubernetes:apps/v1:Deployment")
                    if d.inputs["metadata"]["name"] == "gpu-operator"]
    assert controller.inputs["spec"]["template"]["spec"]["containers"][0]["image"] == BY_DIGEST
    lookup = next(c for c in mocks.calls if c.token == "azure-native:containerservice:getManagedCluster")
    assert lookup.args == {"resourceGroupName": "rg-gpu", "resourceName": "aks-gpu"}
    [grant] = recording.of_type(ROLE_ASSIGNMENT)
    assert grant.inputs["principalId"] == KUBELET_OBJECT_ID


def test_the_daemonsets_wait_for_the_pushed_image(cluster: tuple[Recording, Any]) -> None:
    recording, _ = cluster
    [image] = recording.of_type(IMAGE)
    gfd = next(d for d in recording.of_type(DAEMONSET) if d.inputs["metadata"]["name"] == "gpu-feature-discovery")
    assert image.urn in gfd.dependencies
    assert recording.position("resolved", image.name) < recording.position("register", gfd.name)


def test_a_cluster_without_a_build_builds_nothing() -> None:
    document = {**DOCUMENT, "agents": {}}
    recording = run_azure_program(_cluster_program(document), mocks=RegistryMocks())
    assert recording.of_type(IMAGE) == recording.of_type(ROLE_ASSIGNMENT) == []


def test_a_build_without_its_source_tree_creates_nothing(tmp_path: Path) -> None:
    document = {**DOCUMENT, "agents": {"build": {**BUILD, "context": str(tmp_path)}}}
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_azure_program(_cluster_program(document), recording=recording, mocks=RegistryMocks())
    [problem] = error.value.problems
    assert problem.path == "agents.build.context" and "no Dockerfile" in problem.message
    assert [r for r in recording.registrations if not r.type.startswith("pulumi:providers:")] == []


# --- GpuOperator's agents_image -----------------------------------------------------------------------------------


def _operator_program(config: dict[str, Any], **extra: Any):
    def program() -> None:
        GpuOperator("gpu", {"provider": k8s.Provider("cluster", kubeconfig="{}"), "config": config, **extra})
    return program


def test_the_operator_runs_the_given_agents_image() -> None:
    digest_ref = f"registry.example.com/gpu/agents@{DIGEST}"
    recording = run_program(_operator_program(with_agents(), agents_image=digest_ref))
    gfd = next(d for d in recording.of_type(DAEMONSET) if d.inputs["metadata"]["name"] == "gpu-feature-discovery")
    assert _images(gfd)["gpu-feature-discovery"] == digest_ref
    plain = run_program(_operator_program(with_agents()))
    gfd = next(d for d in plain.of_type(DAEMONSET) if d.inputs["metadata"]["name"] == "gpu-feature-discovery")
    assert _images(gfd)["gpu-feature-discovery"] == AGENTS_IMAGE


def test_an_agents_image_for_a_config_without_agents_is_refused() -> None:
    recording = Recording()
    with pytest.raises(ComponentArgsError, match=r"agents_image.*set agents.image or agents.build"):
        run_program(_operator_program({}, agents_image="registry.example.com/a@" + DIGEST), recording=recording)
    assert [r for r in recording.registrations if r.type.startswith("gpu-operator:")] == []


def test_the_operator_alone_does_not_ignore_a_build() -> None:
    with pytest.raises(ConfigError) as error:
        run_program(_operator_program({"agents": {"build": BUILD}}))
    [problem] = error.value.problems
    assert problem.path == "agents.build" and "AgentsImage" in problem.message and "GpuCluster" in problem.message


# --- the pure helpers ---------------------------------------------------------------------------------------------


def test_substitute_replaces_whole_strings_everywhere_and_changes_nothing_in_place() -> None:
    new = object()
    value = {"image": "a:1", "env": [{"name": "X", "value": "a:1"}, {"name": "Y", "value": "a:10"}],
             "args": ("a:1", "b"), "n": 3, "other": {"k": "v"}}
    original = copy.deepcopy(value)
    result = substitute(value, "a:1", new)
    assert result["image"] is new and result["env"][0]["value"] is new and result["args"] == (new, "b")
    assert result["env"][1]["value"] == "a:10"  # only whole strings
    assert result["other"] is value["other"]  # untouched parts are shared, not copied
    assert value == original
    assert substitute(value, "absent", new) is value


def test_dockerfile_sources_are_what_the_build_stage_copies() -> None:
    assert dockerfile_sources(REPO_ROOT / "Dockerfile") == [
        "pyproject.toml", "setup.py", "README.md", "requirements-agents.txt", "gpu_operator/", "components/",
    ]


def test_build_context_names_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch AS b\nCOPY a.txt \\\n  dir/ /src/\nCOPY --from=b /x /y\n")
    (tmp_path / "a.txt").write_text("")
    build = AgentsBuild.model_validate({**BUILD, "context": str(tmp_path)})
    with pytest.raises(ConfigError) as error:
        build_context(build)
    [problem] = error.value.problems
    assert problem.path == "agents.build.context" and "copies dir/" in problem.message
    (tmp_path / "dir").mkdir()
    assert build_context(build) == tmp_path
    assert build_context(AgentsBuild.model_validate(BUILD)) == REPO_ROOT


def test_acr_pull_role_and_kubelet_identity() -> None:
    assert acr_pull_role_definition_id(EXISTING_ID).endswith(f"/roleDefinitions/{ACR_PULL_ROLE}")
    assert acr_pull_role_definition_id(EXISTING_ID).startswith(f"{SUBSCRIPTION}/providers/")
    with pytest.raises(ValueError, match="not an Azure resource id"):
        acr_pull_role_definition_id("acrgpu01")
    assert kubelet_object_id({"kubeletidentity": {"objectId": "oid"}}) == "oid"
    with pytest.raises(ValueError, match="no kubelet identity"):
        kubelet_object_id({})


def test_the_build_config_references_the_image_by_tag() -> None:
    assert parse_config({"agents": {"build": BUILD}}).agents.image.reference == BY_TAG


# --- the project's program ----------------------------------------------------------------------------------------


def test_the_program_builds_only_where_it_can_grant_pull_access(tmp_path: Path) -> None:
    """Without `aks` nobody can grant the nodes AcrPull: the program refuses a build instead of pushing an image
    the nodes cannot pull."""
    stack_file = tmp_path / "Pulumi.plain.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {
        "gpu-operator:config": {"agents": {"build": BUILD}},
        "gpu-operator:kubeconfig": "{}",
    }}))
    with pytest.raises(ConfigError) as error:
        run_program_file(REPO_ROOT / "stacks" / "__main__.py", stack_file, project="gpu-operator",
                         mocks=RegistryMocks())
    [problem] = error.value.problems
    assert problem.path == "agents.build" and "aks section" in problem.message and "agents.image" in problem.message


def test_the_program_builds_the_image_with_aks(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.built.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-operator:config": DOCUMENT}}))
    run = run_program_file(REPO_ROOT / "stacks" / "__main__.py", stack_file, project="gpu-operator",
                           mocks=RegistryMocks())
    [image] = run.recording.of_type(IMAGE)
    assert image.inputs["push"] is True
    gfd = next(d for d in run.recording.of_type(DAEMONSET) if d.inputs["metadata"]["name"] == "gpu-feature-discovery")
    assert _images(gfd)["gpu-feature-discovery"] == BY_DIGEST
