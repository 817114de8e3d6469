"""pulumi-gpu-operator's CrossGuard pack: `pulumi preview --policy-pack policy-pack`.

The policies are `gpu_operator.policy`'s, read from this repository (the folder above), so the pack and
`gpu-operator check` can never disagree.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack  # noqa: E402

from gpu_operator.policy.crossguard import crossguard_policies  # noqa: E402

PolicyPack(name="pulumi-gpu-operator", policies=crossguard_policies())
