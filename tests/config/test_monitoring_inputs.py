"""`monitoring.ruleLabels`, `monitorLabels` and `runbookUrl`: read as the API server and Alertmanager's receivers
will read them, edge accepted and one past it refused."""

from __future__ import annotations

import pytest

from gpu_operator.config import ConfigError, parse_config


def problems(monitoring: dict[str, object]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config({"monitoring": monitoring})
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize("section", ["ruleLabels", "monitorLabels"])
@pytest.mark.parametrize(("key", "value"), [("team", "gpu"), ("k" * 63, "v" * 63), (f"{'p' * 253}/team", ""),
                                            ("example.com/Team_1.x", "A-1")])
def test_labels_kubernetes_takes_are_accepted(section: str, key: str, value: str) -> None:
    parse_config({"monitoring": {section: {key: value}}})


@pytest.mark.parametrize("section", ["ruleLabels", "monitorLabels"])
@pytest.mark.parametrize("key", ["bad key!", "k" * 64, "/team", "a/b/c", "Example.com/team"])
def test_a_label_key_the_api_server_refuses_is_refused(section: str, key: str) -> None:
    assert problems({section: {key: "v"}})[f"monitoring.{section}"].startswith(f"{key!r} is not a label key")


@pytest.mark.parametrize("section", ["ruleLabels", "monitorLabels"])
@pytest.mark.parametrize("value", ["v" * 64, "a b", "-gpu", "gpu."])
def test_a_label_value_the_api_server_refuses_is_refused(section: str, value: str) -> None:
    assert problems({section: {"team": value}})[f"monitoring.{section}.team"].startswith(
        f"{value!r} is not a label value")


@pytest.mark.parametrize("url", ["https://wiki.example.com/gpu/{alert}", "http://wiki:8080/runbooks/{alert}.md",
                                 "https://wiki.example.com/gpu?alert={alert}", "https://[2001:db8::1]/gpu/{alert}"])
def test_runbook_url_templates_that_make_links_are_accepted(url: str) -> None:
    assert parse_config({"monitoring": {"runbookUrl": url}}).monitoring.runbook_url == url


@pytest.mark.parametrize(("url", "why"), [
    ("https://{alert}", "puts {alert} in the host"),
    ("https://{alert}.wiki.example.com/", "puts {alert} in the host"),
    ("https:///gpu/{alert}", "has no host"),
    ("https:// wiki.example.com/{alert}", "holds white space"),
    ("https://wiki.example.com/gpu runbooks/{alert}", "write spaces as %20"),
    ("https://wiki:port/{alert}", "has a port that is not a number"),
    ("https://user:secret@wiki.example.com/{alert}", "carries a user or password"),
])
def test_a_runbook_url_no_receiver_can_link_is_refused(url: str, why: str) -> None:
    message = problems({"runbookUrl": url})["monitoring.runbookUrl"]
    assert message.startswith(repr(url)) and why in message
