"""The planned steady-state footprint against the RSS a fresh process actually gains (fixture models)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import fixture_model

CONTEXT, K = 512, 4
HERE = Path(__file__).resolve().parents[1]   # tests/, where memory_measure.py lives


def measure(*paths: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(HERE / "memory_measure.py"), str(CONTEXT), str(K), *map(str, paths)],
                         capture_output=True, text=True, env=env, timeout=1800, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def planned(target: Path, drafter: Path | None):
    from specx.memory import plan_for
    from specx.models.resolve import resolve

    return plan_for(resolve(str(target)), resolve(str(drafter)) if drafter else None, CONTEXT, K,
                    {"gpu": 0, "cpu": 64 << 30, "disk": 64 << 30}, "float32")


@pytest.mark.slow
def test_qwen_pair_within_15_percent():
    """The drafter as a run loads it: int8dyn where fbgemm exists (planned so too), else float32."""
    from specx.cpu.fastpath import choose

    target, drafter = fixture_model("qwen2.5-coder-1.5b"), fixture_model("qwen2.5-coder-0.5b")
    plan, got = planned(target, drafter), measure(target, f"{drafter}={choose('auto', 'drafter')}")
    grew = got["after"] - got["before"]
    print(f"\nplanned {plan.steady_bytes() / 2**20:.0f} MiB, measured {grew / 2**20:.0f} MiB, "
          f"load peak planned {plan.load_peak_bytes / 2**20:.0f} MiB, measured {(got['peak'] - got['before']) / 2**20:.0f} MiB")
    assert got["cached"] == [CONTEXT, CONTEXT]
    assert abs(plan.steady_bytes() - grew) <= 0.15 * grew


@pytest.mark.slow
def test_smollm2_within_150_mb():
    target = fixture_model("smollm2-135m")
    plan, got = planned(target, None), measure(target)
    grew = got["after"] - got["before"]
    print(f"\nplanned {plan.steady_bytes() / 2**20:.0f} MiB, measured {grew / 2**20:.0f} MiB, "
          f"load peak planned {plan.load_peak_bytes / 2**20:.0f} MiB, measured {(got['peak'] - got['before']) / 2**20:.0f} MiB")
    assert got["cached"] == [CONTEXT]
    assert abs(plan.steady_bytes() - grew) <= 150e6
