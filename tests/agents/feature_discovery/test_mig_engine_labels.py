"""Each MIG engine label reads its own engine count: copy, decoder, encoder, JPEG and OFA.

The expected counts are NVIDIA's per-profile facts (MIG user guide, "Supported MIG Profiles"; `nvidia-smi mig
-lgip` on the GPU), written out here by hand. The nodes are chosen so that for every pair of engine labels some
node has different counts for the two (the last test checks that), so a label that reads another engine's count
fails here whichever pair is swapped. Ampere alone cannot do this: on an A100 1g.10gb every engine but copy is 0.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from dataclasses import astuple, dataclass, fields
from pathlib import Path

import pytest

from gpu_operator.agents.feature_discovery import (
    LabelPolicy,
    MigStrategy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.nvml import open_nvml

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Engines:
    copy: int
    decoder: int
    encoder: int
    jpeg: int
    ofa: int


#: (GPU, profile) -> engine counts. Hopper: one NVDEC and one NVJPG per slice (7 on 7g), no NVENC, an OFA only
#: on +me and 7g, 8 copy engines on 7g. Ampere: no NVENC, NVDECs 0/1/2/2/5, JPEG and OFA only on +me and 7g.
ENGINES: dict[tuple[str, str], Engines] = {
    ("H100", "1g.10gb"): Engines(copy=1, decoder=1, encoder=0, jpeg=1, ofa=0),
    ("H100", "1g.10gb+me"): Engines(copy=1, decoder=1, encoder=0, jpeg=1, ofa=1),
    ("H100", "3g.40gb"): Engines(copy=3, decoder=3, encoder=0, jpeg=3, ofa=0),
    ("H100", "7g.80gb"): Engines(copy=8, decoder=7, encoder=0, jpeg=7, ofa=1),
    ("A100", "1g.10gb"): Engines(copy=1, decoder=0, encoder=0, jpeg=0, ofa=0),
    ("A100", "2g.20gb"): Engines(copy=2, decoder=1, encoder=0, jpeg=0, ofa=0),
}

_GPU = "{{model: H100-SXM5-80GB, uuid: {uuid}, serial: '{serial}', busId: '{bus}', minor: {minor}, mig: {mig}}}"
_UUIDS = (
    "GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9",
    "GPU-8cf99590-08ac-440e-8673-9766b19169a2",
)

# Nodes derived from the shipped H100 MIG node, as the MIG layouts of their GPUs: one GPU as a single 7g.80gb
# (valid for the single strategy), and for the mixed strategy a 7g.80gb GPU next to one holding 3g.40gb,
# 2g.20gb and 1g.10gb+me.
H100_7G = ("{current: true, devices: [{profile: 7g.80gb, gpuInstance: 0}]}",)
H100_MIXED = (
    "{current: true, devices: [{profile: 7g.80gb, gpuInstance: 0}]}",
    (
        "{current: true, devices: [{profile: 3g.40gb, gpuInstance: 2}, {profile: 2g.20gb, gpuInstance: 3},"
        " {profile: 1g.10gb+me, gpuInstance: 9}]}"
    ),
)


def _write(directory: Path, name: str, layouts: tuple[str, ...]) -> str:
    gpus = [
        _GPU.format(
            uuid=_UUIDS[i],
            serial=f"77881374890{i:02d}",
            bus=f"00000000:{0x18 + i:02X}:00.0",
            minor=i,
            mig=mig,
        )
        for i, mig in enumerate(layouts)
    ]
    path = directory / f"{name}.yaml"
    path.write_text("extends: h100-8x-mig\ngpus:\n" + "".join(f"  - {gpu}\n" for gpu in gpus))
    return f"fake:{path}"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("profiles")
    return {
        "h100-8x-mig": "fake:h100-8x-mig",
        "a100-8x-mig": "fake:a100-8x-mig",
        "a100-4x-mixed-mig": "fake:a100-4x-mixed-mig",
        "h100-1x-7g": _write(directory, "h100-1x-7g", H100_7G),
        "h100-2x-mixed": _write(directory, "h100-2x-mixed", H100_MIXED),
    }


#: (node, strategy, resource whose labels are read, the (GPU, profile) it is).
CASES = [
    ("h100-8x-mig", MigStrategy.SINGLE, "nvidia.com/gpu", ("H100", "1g.10gb")),
    ("h100-8x-mig", MigStrategy.MIXED, "nvidia.com/mig-1g.10gb", ("H100", "1g.10gb")),
    ("h100-1x-7g", MigStrategy.SINGLE, "nvidia.com/gpu", ("H100", "7g.80gb")),
    ("h100-2x-mixed", MigStrategy.MIXED, "nvidia.com/mig-7g.80gb", ("H100", "7g.80gb")),
    ("h100-2x-mixed", MigStrategy.MIXED, "nvidia.com/mig-3g.40gb", ("H100", "3g.40gb")),
    (
        "h100-2x-mixed",
        MigStrategy.MIXED,
        "nvidia.com/mig-1g.10gb.me",
        ("H100", "1g.10gb+me"),
    ),
    ("a100-8x-mig", MigStrategy.SINGLE, "nvidia.com/gpu", ("A100", "1g.10gb")),
    (
        "a100-4x-mixed-mig",
        MigStrategy.MIXED,
        "nvidia.com/mig-2g.20gb",
        ("A100", "2g.20gb"),
    ),
]


def _engine_labels(labels: dict[str, str], resource: str) -> Engines:
    return Engines(**{f.name: int(labels[f"{resource}.engines.{f.name}"]) for f in fields(Engines)})


@pytest.mark.parametrize(
    ("node", "strategy", "resource", "facts"),
    CASES,
    ids=lambda v: getattr(v, "value", v),
)
def test_engine_labels_match_nvidias_profile_facts(
    nodes: dict[str, str],
    node: str,
    strategy: MigStrategy,
    resource: str,
    facts: tuple[str, str],
) -> None:
    labels = node_labels(
        take_snapshot(open_nvml(nodes[node])),
        LabelPolicy(mig_strategy=strategy),
        None,
        None,
    )
    assert _engine_labels(labels, resource) == ENGINES[facts]


def test_the_agent_process_labels_h100_mig_engines() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_operator.agents.cli",
            "feature-discovery",
            "--nvml",
            "fake:h100-8x-mig",
            "--mig-strategy",
            "single",
            "--oneshot",
            "--output-file",
            "",
            "--use-node-feature-api=false",
            "--no-timestamp",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    labels = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    assert _engine_labels(labels, "nvidia.com/gpu") == ENGINES[("H100", "1g.10gb")]


def test_the_cases_tell_every_pair_of_engine_labels_apart() -> None:
    names = [f.name for f in fields(Engines)]
    checked = [astuple(ENGINES[facts]) for *_, facts in CASES]
    for (i, first), (j, second) in itertools.combinations(enumerate(names), 2):
        assert any(counts[i] != counts[j] for counts in checked), f"no case tells {first} from {second}"


def test_hopper_and_ampere_slices_of_the_same_name_differ() -> None:
    h100 = open_nvml("fake:h100-8x-mig").devices()[0].mig_devices[0].attributes
    a100 = open_nvml("fake:a100-8x-mig").devices()[0].mig_devices[0].attributes
    assert h100 is not None and a100 is not None
    assert (h100.decoders, h100.jpegs, h100.multiprocessors) == (1, 1, 16)
    assert (a100.decoders, a100.jpegs, a100.multiprocessors) == (0, 0, 14)
