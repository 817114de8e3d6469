"""The monitor's RBAC is exactly what it calls: every request of a full run is granted by the rendered rules, and
every rendered rule is used (as tests/render/operands/test_agent_rbac.py and the e2e fleet check for the other
agents)."""

from __future__ import annotations

from urllib.parse import parse_qs

from gpu_operator.agents.health_monitor.requests import REBOOT_REQUEST, RESET_REQUEST, RESET_RESULT
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from gpu_operator.render.operands import health_monitor
from tests.agents.health_monitor.conftest import UUIDS, Harness, Running, annotations, set_annotation, wait_until
from tests.agents.kube.fake_apiserver import FakeApiServer, RecordedRequest
from tests.render.operands.helpers import render_operand
from tests.support.agents import with_agents

Grant = tuple[str, str, str, str | None]  # (api group, resource[/subresource], verb, namespace or None)
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _grant(request: RecordedRequest) -> Grant:
    parts = request.path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[:2] == ["api", "v1"] else (parts[1], parts[3:])
    namespace = None
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = "/".join([rest[0], *rest[2:3]])
    if request.method == "GET":
        watching = request.query.get("watch") in ("true", "1")
        verb = "watch" if watching else ("get" if len(rest) > 1 else "list")
    else:
        verb = _VERBS[request.method]
    return group, resource, verb, namespace


def _granted() -> set[Grant]:
    granted: set[Grant] = set()
    for obj in render_operand(health_monitor.render, with_agents()):
        if obj["kind"] not in ("Role", "ClusterRole"):
            continue
        namespace = obj["metadata"].get("namespace") if obj["kind"] == "Role" else None
        for rule in obj["rules"]:
            granted |= {(g, r, v, namespace) for g in rule["apiGroups"] for r in rule["resources"]
                        for v in rule["verbs"]}
    return granted


def test_every_request_of_a_full_run_is_granted_and_every_rule_used(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    with Running(harness.monitor(event_interval=0.01)):
        library.inject("xid 79 on GPU 3", "dbe on GPU 1")
        wait_until(lambda: any(e["reason"] == "XID79" for e in server.objects("events", "default")), "an Event")
        library.inject("xid 79 on GPU 3")
        wait_until(lambda: any(e["count"] == 2 for e in server.objects("events", "default")), "a count patch")
        set_annotation(server, RESET_REQUEST, f"r-1:{UUIDS[1]}")
        wait_until(lambda: annotations(server).get(RESET_RESULT) == "r-1:success", "the reset")
        set_annotation(server, REBOOT_REQUEST, "boot-r1")
        wait_until(lambda: len(server.requests_to("PATCH", "/status$")) > 3, "the reboot's boot id")
    used = {_grant(r) for r in server.requests}
    assert used - _granted() == set()
    assert _granted() - used == set()
    watches = [r for r in server.requests if _grant(r)[2] == "watch"]
    assert watches and all(parse_qs(f"f={r.query.get('fieldSelector', '')}")["f"] == ["metadata.name=gpu-node-1"]
                           for r in watches)
