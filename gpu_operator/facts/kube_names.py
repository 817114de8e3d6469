"""Kubernetes' rules for names and labels, as apimachinery's `pkg/util/validation` states them.

Every object name, label key and label value we render is read again by the API server, which refuses what these
rules refuse. Config checks them up front, the label selector parser checks the keys and values it reads, and
each caller words the message for its own field:

* a label key is a *qualified name*: an optional DNS-subdomain prefix and `/`, then a name of at most 63
  letters, digits, `-`, `_` and `.` that starts and ends with a letter or digit (`IsQualifiedName`);
* a label value is empty or such a name (`IsValidLabelValue`);
* a DNS-1123 label (namespaces, most names a volume or container takes) is at most 63 lower-case letters,
  digits and `-`, starting and ending with a letter or digit (`IsDNS1123Label`);
* a DNS-1123 subdomain (ConfigMap, Secret and most other object names) is at most 253 characters of such labels
  joined by `.` (`IsDNS1123Subdomain`).
"""

from __future__ import annotations

import re

__all__ = [
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "QUALIFIED_NAME_MAX_LENGTH",
    "is_dns_label",
    "is_dns_subdomain",
    "is_label_value",
    "is_qualified_name",
    "label_value_problem",
    "qualified_name_problem",
]

QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def is_dns_label(text: str) -> bool:
    """`IsDNS1123Label`."""
    return len(text) <= DNS1123_LABEL_MAX_LENGTH and _DNS_LABEL.match(text) is not None


def is_dns_subdomain(text: str) -> bool:
    """`IsDNS1123Subdomain`."""
    return len(text) <= DNS1123_SUBDOMAIN_MAX_LENGTH and _DNS_SUBDOMAIN.match(text) is not None


def is_qualified_name(text: str) -> bool:
    """`IsQualifiedName`: `[prefix/]name`; a `/` demands a non-empty prefix, and only one `/` is allowed."""
    prefix, slash, name = text.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return len(name) <= QUALIFIED_NAME_MAX_LENGTH and _NAME.match(name) is not None


def is_label_value(text: str) -> bool:
    """`IsValidLabelValue`: empty, or a name of at most 63 characters."""
    return text == "" or (len(text) <= LABEL_VALUE_MAX_LENGTH and _NAME.match(text) is not None)


_NAME_RULE = "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


def qualified_name_problem(text: str, what: str = "label key") -> str | None:
    """`'x y' is not a label key such as ...` with the rule, or None for a qualified name."""
    if is_qualified_name(text):
        return None
    return (f"{text!r} is not a {what} such as 'team' or 'example.com/team' ({_NAME_RULE}, after an optional "
            "DNS-subdomain prefix and '/')")


def label_value_problem(text: str) -> str | None:
    """`'a b' is not a label value (...)` with the rule, or None for a label value."""
    return None if is_label_value(text) else f"{text!r} is not a label value ({_NAME_RULE})"
