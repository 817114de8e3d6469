"""What a render says about a config besides its objects: one list of notes for every place that renders.

`gpu-operator render` prints them on stderr and the stack program (stacks/__main__.py) logs them as warnings at
`pulumi preview` and `pulumi up`, so a setting that does nothing, or an alert left out, is told the same way
whichever path deploys the config:

* settings of components this config does not deploy (:mod:`gpu_operator.config.unused_settings`);
* without the operator controller, that GPU fault remediation and driver upgrades are off, and how to turn them
  on (:func:`gpu_operator.render.operands.operator_controller.controller_notes`);
* how a driver change reaches the nodes when no controller upgrades them: the DaemonSet rolls it, or (with
  `autoUpgrade: false`) nothing does (:func:`gpu_operator.render.operands.driver_update.driver_update_notes`), and
  the drivers whose nodes only the controller labels
  (:func:`gpu_operator.config.driver_groups.unlabelled_driver_notes`);
* the node OS assumed when neither pools nor the cluster facts give one (:mod:`gpu_operator.render.assumed_os`);
* what an InfiniBand pool adds to the stack (:mod:`gpu_operator.render.aks.infiniband`);
* the alerts left out of the PrometheusRule, and what brings each back (:mod:`gpu_operator.render.monitoring`).
"""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.driver_groups import unlabelled_driver_notes
from gpu_operator.config.unused_settings import unused_setting_notes
from gpu_operator.render.aks.infiniband import infiniband_notes
from gpu_operator.render.assumed_os import assumed_os_notes
from gpu_operator.render.monitoring.left_out import monitoring_notes
from gpu_operator.render.operands.driver_update import driver_update_notes
from gpu_operator.render.operands.operator_controller import controller_notes

__all__ = ["render_notes"]


def render_notes(config: GpuStackConfig) -> list[str]:
    """Every note about `config`, in the order `gpu-operator render` prints them."""
    return [*unused_setting_notes(config), *controller_notes(config), *driver_update_notes(config),
            *unlabelled_driver_notes(config), *assumed_os_notes(config), *infiniband_notes(config),
            *monitoring_notes(config)]
