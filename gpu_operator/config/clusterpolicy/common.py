"""Fields shared by the operand sections of a ClusterPolicy spec, and the image reference rule.

Most ClusterPolicy sections describe one operand container: where its image lives (`repository`, `image`,
`version`), how it is pulled, its resources, extra `args`/`env`, and whether the pod uses the host network.
NVIDIA resolves an image from those three fields with one rule (`ImagePath`): all three set gives
`repository/image:version` (or `repository/image@sha256:...` when the version is a digest), `image` alone is a
full reference used verbatim, and anything in between is an error. We apply the same rule at config time so a
half-specified image fails before anything is created, and check each part against the image reference grammar
(:mod:`.image_reference`) so that a reference no registry can parse is refused under the key that holds it. An
operand that is switched off renders no image, so its parts may stay incomplete (a mirror's `repository` set
on a disabled `vgpuManager` whose version only the user can supply); they are still checked for syntax.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import ValidationInfo, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.image_reference import (
    MAX_NAME_LENGTH,
    check_path,
    check_reference,
    check_repository,
    check_tag_or_digest,
)
from gpu_operator.config.kube import DnsSubdomain, EnvList, ImagePullPolicy, ObjectName, ResourceRequirements

__all__ = [
    "ImageFields",
    "OperandSpec",
    "ContainerOperandSpec",
    "NamedConfigRef",
    "EnvOnly",
    "check_image_version",
    "DIGEST_PATTERN",
]

DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}\Z")
_BARE_DIGEST = re.compile(r"^@?(sha256[:@])?[0-9a-fA-F]{64}\Z")


def check_image_version(version: str) -> str:
    """Reject a version that is neither a tag nor a `sha256:` digest; return it unchanged otherwise."""
    if not version.startswith("sha256:") and _BARE_DIGEST.match(version):
        raise ValueError(
            f"{version!r} looks like a digest without the 'sha256:' prefix; write 'sha256:<64 hex digits>'"
        )
    if version:
        check_tag_or_digest(version)
    return version


class ImageFields(ConfigModel):
    """Where an operand's image comes from and how it is pulled."""

    repository: str = ""
    image: str = ""
    version: str = ""
    image_pull_policy: ImagePullPolicy = "IfNotPresent"
    image_pull_secrets: tuple[DnsSubdomain, ...] = ()

    @field_validator("repository")
    @classmethod
    def _repository_is_a_name(cls, repository: str) -> str:
        if repository:
            check_repository(repository)
        return repository

    @field_validator("image")
    @classmethod
    def _image_is_a_path_or_reference(cls, image: str, info: ValidationInfo) -> str:
        if not image:
            return image
        if info.data.get("repository"):
            try:
                check_path(image)
            except ValueError as error:
                if ":" in image or "@" in image:
                    raise ValueError(
                        f"{error}; for a full reference in image, set repository and version to ''"
                    ) from None
                raise
        else:
            # without a repository, `image` is a full reference used verbatim (or incomplete, reported below)
            check_reference(image)
        return image

    @field_validator("version")
    @classmethod
    def _version_is_tag_or_digest(cls, version: str) -> str:
        return check_image_version(version)

    @model_validator(mode="after")
    def _image_reference_is_complete(self) -> Self:
        parts = {"repository": self.repository, "image": self.image, "version": self.version}
        set_parts = {k for k, v in parts.items() if v}
        if self.repository and self.image and len(f"{self.repository}/{self.image}") > MAX_NAME_LENGTH:
            raise ValueError(f"repository/image is longer than {MAX_NAME_LENGTH} characters, which registries refuse")
        if getattr(self, "enabled", True) is False:
            return self
        if set_parts and set_parts not in ({"repository", "image", "version"}, {"image"}):
            missing = sorted(parts.keys() - set_parts)
            raise ValueError(
                f"image reference is incomplete ({', '.join(missing)} empty): set repository, image and version "
                "together, or only image to a full reference such as 'registry/name@sha256:...'"
            )
        return self

    @property
    def has_image(self) -> bool:
        return bool(self.image)


class OperandSpec(ImageFields):
    """The fields nearly every operand section carries."""

    enabled: bool = True
    args: tuple[str, ...] = ()
    env: EnvList = ()
    resources: ResourceRequirements | None = None
    host_network: bool = False


class ContainerOperandSpec(ImageFields):
    """An operand section without `resources`/`hostNetwork` (GDS, GDRCopy run as driver sidecars)."""

    enabled: bool = False
    args: tuple[str, ...] = ()
    env: EnvList = ()


class NamedConfigRef(ConfigModel):
    """A reference to a ConfigMap by name (`{name: ...}`)."""

    name: ObjectName = ""


class EnvOnly(ConfigModel):
    """A section that only carries extra environment variables."""

    env: EnvList = ()

