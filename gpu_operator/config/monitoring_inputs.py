"""Strings of the `monitoring` section that other programs read: label maps and the runbook URL template.

`monitoring.ruleLabels` and `monitoring.monitorLabels` become labels of the PrometheusRule and of every
ServiceMonitor and PodMonitor, and the labels a Prometheus selects them by: the API server refuses a key that is
no qualified name or a value that is no label value, so they are checked here with Kubernetes' rules
(:mod:`gpu_operator.facts.kube_names`). `monitoring.runbookUrl` becomes every alert's `runbook_url` annotation,
which Alertmanager's receivers turn into a link: with the alert's name in place of `{alert}` it must be an
absolute http(s) URL with a host (not made of the alert's name), a numeric port if any, no white space, and no
user or password (the annotation travels to every chat and pager the alert reaches).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import Problem
from gpu_operator.facts.kube_names import label_value_problem, qualified_name_problem

__all__ = ["MONITORING_INPUT_CHECKS", "runbook_url_problem"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]

#: An alert name put in place of `{alert}` to read the template as the URL it becomes.
_SAMPLE_ALERT = "GpuXidError"


def _label_problems(section: str, labels: dict[str, str]) -> Iterator[Problem]:
    for key, value in labels.items():
        key_problem, value_problem = qualified_name_problem(key), label_value_problem(value)
        if key_problem is not None:
            yield Problem(f"monitoring.{section}", f"{key_problem}: the API server refuses it")
        elif value_problem is not None:
            yield Problem(f"monitoring.{section}.{key}", f"{value_problem}: the API server refuses it")


def _monitoring_labels(doc: GpuStackConfig) -> Iterator[Problem]:
    yield from _label_problems("ruleLabels", doc.monitoring.rule_labels)
    yield from _label_problems("monitorLabels", doc.monitoring.monitor_labels)


def runbook_url_problem(template: str) -> str | None:
    """What is wrong with a runbook URL template once `{alert}` is filled in, or None."""
    url = template.replace("{alert}", _SAMPLE_ALERT)
    if any(char.isspace() or not char.isprintable() for char in url):
        return "holds white space or a control character: write spaces as %20"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return "has a port that is not a number: write https://host:8443/..."
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "has no host: write an absolute URL such as https://wiki.example.com/gpu/{alert}"
    if _SAMPLE_ALERT in parts.netloc:
        return "puts {alert} in the host, so each alert would link to another server: put it in the path, e.g. " \
               "https://wiki.example.com/gpu/{alert}"
    if parts.username is not None or parts.password is not None:
        return ("carries a user or password, which every chat and pager the alert reaches would show: give the URL "
                "without them")
    return None


def _runbook_url(doc: GpuStackConfig) -> Iterator[Problem]:
    template = doc.monitoring.runbook_url
    problem = runbook_url_problem(template) if template is not None else None
    if problem is not None:
        yield Problem("monitoring.runbookUrl", f"{template!r} {problem}")


MONITORING_INPUT_CHECKS: tuple[Check, ...] = (_monitoring_labels, _runbook_url)
