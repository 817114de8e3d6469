"""One way for tests to configure our agents: an explicit agents image, since the defaults run NVIDIA's images.

Nobody publishes the agents image, so a config runs our agents only with `agents.image` (or `agents.build`).
Tests of agent wiring add the image with :func:`with_agents` and compare against :data:`AGENTS_IMAGE`.
"""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Mapping

__all__ = ["AGENTS_REPOSITORY", "AGENTS_TAG", "AGENTS_IMAGE", "with_agents"]

AGENTS_REPOSITORY = "registry.example.com/gpu/agents"
AGENTS_TAG = "0.1.0"
#: The reference every agent container gets from :func:`with_agents`.
AGENTS_IMAGE = f"{AGENTS_REPOSITORY}:{AGENTS_TAG}"


def with_agents(document: Mapping[str, Any] | None = None, **agents: Any) -> dict[str, Any]:
    """`document` with the agents image configured; keyword arguments are more `agents` keys (camelCase).

    The document's own `agents` keys win over the defaults here and are kept (its `image` keys merged over
    ours, so `{"agents": {"image": {"pullSecrets": [...]}}}` keeps the repository).
    """
    result = copy.deepcopy(dict(document or {}))
    given = {**result.get("agents", {}), **agents}
    image = {"repository": AGENTS_REPOSITORY, "tag": AGENTS_TAG, **given.pop("image", {})}
    result["agents"] = {"image": image, **given}
    return result
