"""The device plugin's resource names: one rule, read by config and by the plugin agent alike.

k8s-device-plugin v0.20.0 api/config/v1 resources.go `NewResourceName` (with consts.go `ResourceNamePrefix`,
`MaxResourceNameLength`): `nvidia.com/` is put in front where missing, the whole name is at most 63 characters,
and what follows the first `/` (`ResourceName.Split`) is a DNS-1123 subdomain (`k8s.NameIsDNSSubdomain`).
"""

from __future__ import annotations

import json

import pytest

from gpu_operator.agents.plugin_config import PluginConfigError, parse_plugin_config
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.facts.resource_names import MAX_RESOURCE_NAME_LENGTH, qualified_resource_name, resource_name_problem

#: The longest short name: `nvidia.com/` (11 characters) and 52 more make 63.
AT_THE_EDGE = "g" * (MAX_RESOURCE_NAME_LENGTH - len("nvidia.com/"))
ACCEPTED = [("gpu", "nvidia.com/gpu"), ("nvidia.com/gpu.shared", "nvidia.com/gpu.shared"),
            ("a-b.c", "nvidia.com/a-b.c"), (AT_THE_EDGE, f"nvidia.com/{AT_THE_EDGE}")]
REFUSED = [AT_THE_EDGE + "g", "gpu\n", "GPU", "gpu_x", "example.com/gpu", "gpu..shared", "-gpu", "nvidia.com/", ""]


def _config(name: str) -> list[str]:
    """The problems config finds with `name` as a shared resource's name ([] when it takes it)."""
    sharing = {"timeSlicing": {"resources": [{"name": name, "replicas": 2}]}}
    try:
        parse_config({"operator": {"devicePlugin": {"config": {"name": "dp", "default": "a"}}},
                      "configs": {"devicePlugin": {"a": {"version": "v1", "sharing": sharing}}}})
    except ConfigError as error:
        return [problem.message for problem in error.problems]
    return []


def _agent(name: str) -> str | None:
    """What the plugin agent says reading a config file with `name` as a shared resource's name."""
    try:
        parse_plugin_config(f"version: v1\nsharing:\n  timeSlicing:\n    resources: [{{name: {json.dumps(name)}, replicas: 2}}]\n")
    except PluginConfigError as error:
        return str(error)
    return None


@pytest.mark.parametrize(("written", "qualified"), ACCEPTED)
def test_names_the_plugin_takes_are_qualified(written: str, qualified: str) -> None:
    assert qualified_resource_name(written) == qualified
    assert resource_name_problem(written) is None
    assert _config(written) == []
    assert _agent(written) is None


@pytest.mark.parametrize("written", REFUSED)
def test_names_the_plugin_refuses_are_refused_by_config_and_the_agent_in_one_wording(written: str) -> None:
    problem = resource_name_problem(written)
    assert problem is not None and problem.startswith(f"{written!r} is not a device-plugin resource name")
    with pytest.raises(ValueError, match="is not a device-plugin resource name"):
        qualified_resource_name(written)
    if written:  # the agent names an empty name on its own; config refuses it through the same rule
        assert _agent(written) == f"invalid resource name: {problem}"
    assert problem in _config(written)


def test_the_agent_keeps_no_copy_of_the_rule() -> None:
    """The agent reads names through the facts floor: a change of the rule there reaches it."""
    import gpu_operator.agents.plugin_config.parse as parse

    assert parse.qualified_resource_name is qualified_resource_name
    assert not any(name.startswith("_DNS") or name == "_MAX_NAME_LENGTH" for name in vars(parse))
