"""The ClusterPolicy spec, section by section (see :class:`ClusterPolicySpec`)."""

from gpu_operator.config.clusterpolicy.common import ImageFields, OperandSpec
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec

__all__ = ["ClusterPolicySpec", "ImageFields", "OperandSpec"]
