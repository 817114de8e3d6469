"""Rules about the `remediation` section that a single field cannot see.

* A per-pool override names a pool of the document's `pools` (when it has any: a document without pools may
  describe a cluster whose pools it does not create, and the controller reads a node's pool from its label).
* A class the health monitor sets no Node condition for (`application`, `informational`) can only be observed,
  and a `reimage` needs the cloud (`cloud.provider: azure`, `cloud.reimage` not false): the remediation's own
  rule (:func:`gpu_operator.remediation.policy.rule_problems`), applied to every rule, the pools' too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import Problem
from gpu_operator.remediation import CloudSpec
from gpu_operator.remediation.policy import rule_problems

__all__ = ["REMEDIATION_CHECKS"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]


def _pools_exist(doc: GpuStackConfig) -> Iterator[Problem]:
    names = [pool.name for pool in doc.pools]
    if not names:
        return
    for name in doc.remediation.pools:
        if name not in names:
            yield Problem(f"remediation.pools.{name}", f"no pool named {name!r} in pools ({', '.join(names)})")


def _rules_can_act(doc: GpuStackConfig) -> Iterator[Problem]:
    section = doc.remediation
    cloud = CloudSpec(section.cloud.provider, section.cloud.reimage, section.cloud.aks_auto_repair)
    scopes = [("remediation.", section.rules)] + [
        (f"remediation.pools.{pool}.", override.rules) for pool, override in section.pools.items()]
    for where, rules in scopes:
        for name, rule in rules.items():
            if rule.actions is None:
                continue
            for problem in rule_problems(name, rule.actions, cloud):
                yield Problem(f"{where}rules.{name}.actions", problem)


REMEDIATION_CHECKS: tuple[Check, ...] = (_pools_exist, _rules_can_act)
