"""The Azure SDK is loaded only by a process that reaches Azure: no other agent pays for it."""

from __future__ import annotations

import subprocess
import sys

from tests.support.reference import REPO_ROOT

_PROBE = """
import sys
import gpu_operator.agents.cli, gpu_operator.agents.cloud
import gpu_operator.agents.controller.command
before = sorted(m for m in sys.modules if m == "azure" or m.startswith("azure."))
from gpu_operator.agents.cloud import AzureVmss
after = "azure.mgmt.compute" in sys.modules and "azure.identity" not in sys.modules
print(before, after, AzureVmss.__module__)
"""


def test_importing_the_agents_and_the_cloud_package_loads_no_azure_sdk() -> None:
    result = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                            cwd=REPO_ROOT, check=False)
    assert result.returncode == 0, result.stderr
    # nothing of Azure before AzureVmss is asked for; then the compute SDK, and azure-identity only when a
    # credential is made
    assert result.stdout.split() == ["[]", "True", "gpu_operator.agents.cloud.azure_vmss"]
