"""`gpu_operator.components.testing`: the docs' program under GpuMocks (docs/tasks/components.md) runs as written, and a mock that leaves
a lookup unanswered is reported by the call's name instead of `TypeError: 'NoneType' object is not iterable`."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pytest

from gpu_operator.components import AksCluster
from gpu_operator.components.aks_cluster import MissingLookupAnswer
from gpu_operator.components.feature_registration import FeatureWait
from gpu_operator.components.testing import ADMIN_CREDENTIALS, FEATURE_LOOKUP, USER_CREDENTIALS, GpuMocks
from tests.support.pulumi_mocks import RecordingMocks, run_program
from tests.support.reference import REPO_ROOT

COMPONENTS_PAGE = REPO_ROOT / "docs" / "tasks" / "components.md"
EXISTING = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu"}
NO_WAIT = FeatureWait(timeout_seconds=5, interval_seconds=0)


def _docs_program() -> str:
    section = COMPONENTS_PAGE.read_text(encoding="utf-8").split("### Testing a program under mocks", 1)[1]
    match = re.search(r"^cat > test_fleet.py <<'PY'\n(.*?)^PY$", section, re.DOTALL | re.MULTILINE)
    assert match, "the components page's mocks section lost its example"
    return match.group(1)


def test_the_docs_example_runs_as_a_test(tmp_path: Any) -> None:
    """The components page's example, saved as a test module and run by pytest in a fresh interpreter, passes."""
    (tmp_path / "test_docs_example.py").write_text(_docs_program(), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 passed" in run.stdout


class _AllBut(RecordingMocks):
    """GpuMocks' answers, except for one call, answered with no fields."""

    def __init__(self, unanswered: str) -> None:
        self.unanswered = unanswered
        self.answers = GpuMocks()

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {} if args.token == self.unanswered else self.answers.call(args)


def _aks(aks: dict[str, Any]):
    def program() -> pulumi.Output[Any]:
        cluster = AksCluster("aks", {"aks": aks, "azure_provider": azure_native.Provider("azure"),
                                     "feature_wait": NO_WAIT})
        return pulumi.Output.all(cluster.kubeconfig, cluster.provider_kubeconfig, cluster.cluster_name)
    return program


@pytest.mark.parametrize(("aks", "token"), [
    (EXISTING, USER_CREDENTIALS),
    ({**EXISTING, "credentials": "admin"}, ADMIN_CREDENTIALS),
    ({**EXISTING, "registerInfinibandFeature": True}, FEATURE_LOOKUP),
])
def test_an_unanswered_lookup_is_named(aks: dict[str, Any], token: str) -> None:
    """Mocks that answer every call but `token` with no fields (as `pulumi.runtime.Mocks` does): the component
    names the call it needed an answer from (before the fix: `TypeError: 'NoneType' object is not iterable`)."""
    with pytest.raises(MissingLookupAnswer, match=re.escape(token)) as raised:
        run_program(_aks(aks), mocks=_AllBut(token))
    assert "GpuMocks" in str(raised.value)


@pytest.mark.parametrize("aks", [EXISTING, {**EXISTING, "credentials": "admin"},
                                 {**EXISTING, "registerInfinibandFeature": True}])
def test_gpu_mocks_answer_every_lookup(aks: dict[str, Any]) -> None:
    mocks = GpuMocks()
    recording = run_program(_aks(aks), mocks=mocks)
    assert recording.of_type("gpu-operator:index:AksCluster")
    assert {call.token for call in mocks.calls} >= {USER_CREDENTIALS}
