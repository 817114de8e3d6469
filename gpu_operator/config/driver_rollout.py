"""`operator.driver.rollout`: a driver change reaches the pools stage by stage, a canary first.

NVIDIA's ClusterPolicy has no such key (its upgrade controller rolls every node a driver DaemonSet covers at once);
this is ours, beside the ClusterPolicy's `driver` fields. Each stage names pools (`*`: every pool no earlier stage
names) and a soak time; the operator controller admits a stage's nodes to the upgrade only when every earlier
stage has every node on its newest driver, validated, none failed, and its soak passed with no GPU fault on its
nodes and none of `alerts` firing in the Prometheus at `prometheusUrl`
(:mod:`gpu_operator.upgrade.stages` is the gate). Pools no stage names (when no stage says `*`) go last.

```yaml
operator:
  driver:
    rollout:
      stages:
        - {name: canary, pools: [gpu-canary], soakSeconds: 3600}
        - {name: rest, pools: ["*"]}
      alerts: [GPUXidCritical]
      prometheusUrl: http://prometheus-operated.monitoring:9090
```

A stage's shape is checked here; what it refers to (pools that exist, a controller that runs) is checked with the
whole document (:mod:`gpu_operator.config.driver_rollout_checks`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.facts.kube_names import is_dns_label
from gpu_operator.upgrade.stages import REST

__all__ = ["ALL_OTHER_POOLS", "DriverRollout", "RolloutStageSpec"]

#: The pool pattern for every pool no earlier stage names.
ALL_OTHER_POOLS = REST


class RolloutStageSpec(ConfigModel):
    """One stage: its name, its pools, and how long it must hold after its last node is validated."""

    name: str = Field(description="the stage's name, shown by `upgrade status`, Events and the dashboard")
    pools: tuple[str, ...] = Field(min_length=1, description="pool names, or `*` for every pool no earlier stage "
                                                              "names")
    soak_seconds: int = Field(default=0, ge=0, description="the time the stage must hold, with no GPU fault and no "
                                                          "listed alert firing, before the next stage starts")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not is_dns_label(value):
            raise ValueError(f"{value!r} is not a stage name: use lower-case letters, digits and '-' (at most 63), "
                             "such as 'canary'")
        return value

    @field_validator("pools")
    @classmethod
    def _pools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not pool.strip() for pool in value):
            raise ValueError("a pool name is empty: name the pool, or `*` for every pool no earlier stage names")
        return value


class DriverRollout(ConfigModel):
    """The stages a driver change goes through, in order, and the alerts that halt it during a soak."""

    stages: tuple[RolloutStageSpec, ...] = Field(min_length=1)
    alerts: tuple[str, ...] = Field(default=(), description="alert names whose firing during a soak halts the "
                                                            "rollout")
    prometheus_url: str = Field(default="", description="where the controller reads the firing alerts "
                                                        "(`/api/v1/alerts`); needed with `alerts`")

    @field_validator("prometheus_url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if value and (parts.scheme not in ("http", "https") or not parts.netloc):
            raise ValueError(f"{value!r} is not an http(s) URL such as http://prometheus-operated.monitoring:9090")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _consistent(self) -> DriverRollout:
        problems: list[str] = []
        names = [stage.name for stage in self.stages]
        problems += [f"stage name {name!r} is used twice: give each stage its own name"
                     for name in sorted({n for n in names if names.count(n) > 1})]
        pools = [pool for stage in self.stages for pool in stage.pools]
        problems += [f"pool {pool!r} is in more than one stage: a pool upgrades in one stage only"
                     for pool in sorted({p for p in pools if pools.count(p) > 1})]
        if self.alerts and not self.prometheus_url:
            problems.append("alerts need prometheusUrl, the Prometheus the controller asks which alerts fire")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def plan_lines(self) -> list[str]:
        """The stage plan in words (render notes, docs)."""
        def pools(stage: RolloutStageSpec) -> str:
            return ", ".join("every other pool" if pool == ALL_OTHER_POOLS else pool for pool in stage.pools)
        lines = [f"{index}. {stage.name}: {pools(stage)}" + (f", then soaks {stage.soak_seconds} s"
                                                            if stage.soak_seconds else "")
                 for index, stage in enumerate(self.stages, 1)]
        if self.alerts:
            lines.append(f"a soak halts on a GPU fault or on {', '.join(self.alerts)} firing")
        return lines

    def settings_document(self) -> dict[str, object]:
        """The controller's `rollout` settings (gpu_operator.agents.controller.settings reads them back)."""
        return {"stages": [{"name": stage.name, "pools": list(stage.pools), "soakSeconds": stage.soak_seconds}
                           for stage in self.stages],
                "alerts": list(self.alerts), "prometheusUrl": self.prometheus_url}
