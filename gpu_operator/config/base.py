"""The base of every config model: camelCase keys, unknown keys rejected, immutable once built.

Config documents are written by people (YAML stack config, Helm values, ClusterPolicy manifests), so every model
speaks the camelCase of the Kubernetes API on the outside while the Python side keeps snake_case attributes.
A typo is an error, never a silently ignored key, and a validated config cannot be changed afterwards.

Scalars follow one rule: a value is taken as the type YAML (or JSON) gives it, never converted between strings,
numbers and booleans. A number where a string belongs is refused (quote it: `version: "550"`), and so is a string
where a boolean or a whole number belongs (`enabled: "false"`, `enabled: yes` in YAML 1.2 terms, `count: "2"`):
write `true`/`false` and numbers unquoted. Fields declared `bool` or `int` (optionally `| None`) are made strict
when their model class is created, so every model follows the rule without spelling it per field. A whole number
must also fit the 64-bit integer Kubernetes stores (an `int64`, Go's `int`): the API server refuses a larger one,
so `timeoutSeconds: 99999999999999999999` is refused here, naming the key.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Strict
from pydantic.alias_generators import to_camel

__all__ = ["INT32_MAX", "INT64_MAX", "ConfigModel", "Int32"]

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def _fits(bits: int, maximum: int) -> AfterValidator:
    def check(value: int) -> int:
        if not -maximum - 1 <= value <= maximum:
            bound = f"at most {maximum}" if value > 0 else f"at least {-maximum - 1}"
            raise ValueError(f"{value} does not fit the {bits}-bit integer Kubernetes stores here: give {bound}")
        return value
    return AfterValidator(check)


_INT64 = Annotated[int, Strict(), _fits(64, INT64_MAX)]
#: A whole number Kubernetes keeps in 32 bits (probe timings, ports): `Int32` or `Int32 | None` in a model.
Int32 = Annotated[int, Strict(), _fits(32, INT32_MAX)]


#: Annotations (as written under `from __future__ import annotations`) → their strict form: no string or number
#: converted to a boolean, no string, float or boolean to a whole number, and no whole number beyond int64.
_STRICT_SCALARS: dict[str, Any] = {
    "bool": Annotated[bool, Strict()],
    "bool | None": Optional[Annotated[bool, Strict()]],  # noqa: UP045 - a runtime object, not an annotation
    "int": _INT64,
    "int | None": Optional[_INT64],  # noqa: UP045
    "int | str": Union[_INT64, str],  # noqa: UP007
    "tuple[int, ...]": tuple[_INT64, ...],
    "tuple[int, ...] | None": Optional[tuple[_INT64, ...]],  # noqa: UP045
}


class ConfigModel(BaseModel):
    """Frozen pydantic model with camelCase aliases that forbids unknown keys and converts no scalar."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # runs before pydantic reads the class's fields: their bool/int annotations become strict ones
        annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - the dict itself, to rewrite it
        for name, annotation in list(annotations.items()):
            if isinstance(annotation, str) and annotation in _STRICT_SCALARS:
                annotations[name] = _STRICT_SCALARS[annotation]
            elif annotation is bool or annotation is int:
                annotations[name] = _STRICT_SCALARS[annotation.__name__]
        super().__init_subclass__(**kwargs)

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=False,
        use_enum_values=True,
    )

    def to_document(self, *, exclude_defaults: bool = False) -> dict[str, Any]:
        """The model as a plain camelCase document (what a user would write)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=exclude_defaults, exclude_none=True)
