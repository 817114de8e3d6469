"""The device plugin's resource names, as NVIDIA's plugin reads them (k8s-device-plugin api/config/v1 resources.go,
`NewResourceName`; consts.go).

A shared resource's `name` and `rename` in the plugin's config file are both read this way, by the plugin on the
node and by config before anything is deployed:

* `nvidia.com/` is put in front of a name that does not start with it (`gpu` is `nvidia.com/gpu`);
* the whole name is at most 63 characters;
* the part after the first `/` is a DNS-1123 subdomain, so `gpu.shared` is taken, and a name under another
  domain (`example.com/gpu` becomes `nvidia.com/example.com/gpu`) or with capitals or `_` is refused.
"""

from __future__ import annotations

from gpu_operator.facts.kube_names import is_dns_subdomain

__all__ = ["MAX_RESOURCE_NAME_LENGTH", "RESOURCE_DOMAIN", "qualified_resource_name", "resource_name_problem"]

#: The domain of every resource the plugin advertises (`ResourceNamePrefix`).
RESOURCE_DOMAIN = "nvidia.com"
#: `MaxResourceNameLength`: the fully qualified name, domain included.
MAX_RESOURCE_NAME_LENGTH = 63


def _qualified(value: str) -> str:
    return value if value.startswith(f"{RESOURCE_DOMAIN}/") else f"{RESOURCE_DOMAIN}/{value}"


def resource_name_problem(value: str) -> str | None:
    """Why the plugin would refuse `value` as a resource name, with the rule; None when it takes it."""
    qualified = _qualified(value)
    if len(qualified) <= MAX_RESOURCE_NAME_LENGTH and is_dns_subdomain(qualified.partition("/")[2]):
        return None
    return (f"{value!r} is not a device-plugin resource name: {RESOURCE_DOMAIN}/ and lower-case letters, digits, '-' "
            f"and '.' (such as 'nvidia.com/gpu' or 'gpu.shared'), at most {MAX_RESOURCE_NAME_LENGTH} characters in "
            "all")


def qualified_resource_name(value: str) -> str:
    """`value` with `nvidia.com/` in front where it lacks it; ValueError, naming the rule, for a name the plugin
    refuses."""
    problem = resource_name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return _qualified(value)
