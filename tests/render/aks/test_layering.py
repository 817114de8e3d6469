"""The AKS facts, pool config and AKS rendering stay pure: importing them loads no Pulumi SDK."""

from __future__ import annotations

import subprocess
import sys

MODULES = ("gpu_operator.aks", "gpu_operator.config.effective", "gpu_operator.config.pool_checks",
           "gpu_operator.render.aks", "gpu_operator.render.aks.documents", "gpu_operator.render.aks.summary")


def test_no_pulumi_import() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {module}\n" for module in MODULES)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_azure_native', "
        "'pulumi_kubernetes')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
