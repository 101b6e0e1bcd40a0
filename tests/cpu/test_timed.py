"""Machine-dependent kernel choices (cpu/timed.py): rowgemm's prefetching never changes a result; a
choice is timed once per machine, saved, reused, and overridden by the environment."""
from __future__ import annotations

import json
import time

import pytest
import torch

from specx.cpu import rowgemm, timed
from specx.cpu import fastpath

needs_kernel = pytest.mark.skipif(not rowgemm.available(), reason=f"rowgemm not built here: {rowgemm.why_not()}")


@needs_kernel
@pytest.mark.parametrize("half", [False, True])
def test_prefetching_never_changes_a_bit(half):
    """The same outputs with and without it, for every block shape and for a weight long enough that
    each thread prefetches many groups ahead."""
    lib = rowgemm._library()
    torch.manual_seed(3)
    w, b = torch.randn(389, 517), torch.randn(389)
    w = w.half() if half else w
    run = lib.spx_linear_f16 if half else lib.spx_linear
    for m in (1, 2, 3, 4, 5, 6, 7, 9, 17, 70):
        x = torch.randn(m, 517)
        outs = []
        for on in (1, 0):
            out = torch.empty(m, 389)
            assert run(x.data_ptr(), m, 517, w.data_ptr(), 389, b.data_ptr(), out.data_ptr(), 2, on) == 0
            outs.append(out)
        assert torch.equal(*outs), m


def _options(slow: str, calls: list) -> dict[str, timed.Make]:
    """Two options, "a" (the incumbent) and "b"; `slow` sleeps 4 ms a call, the other 1 ms."""
    def make(name: str) -> timed.Make:
        def run(x):
            calls.append(name)
            time.sleep(0.004 if name == slow else 0.001)
        return lambda w: run
    return {"a": make("a"), "b": make("b")}


def test_the_faster_option_is_chosen_saved_and_reused(tmp_path):
    saved_at, calls = tmp_path / "choice.json", []
    first = timed.choose("way", saved_at, _options("a", calls))
    assert first.pick == "b" and first.source == "timed" and first.ms["a"] > first.ms["b"]
    assert calls.count("a") == calls.count("b") == len(timed.ROWS) * (timed.REPS + 1)
    saved = json.loads(saved_at.read_text())
    assert saved["pick"] == "b" and saved["machine"] == timed.machine()
    again = timed.choose("way", saved_at, _options("a", calls := []))
    assert not calls and again.source == "saved" and again.pick == "b"
    assert "way b, as timed on this machine before" in again.sentence()


def test_the_incumbent_stays_when_it_is_faster(tmp_path):
    choice = timed.choose("way", tmp_path / "choice.json", _options("b", []))
    assert choice.pick == "a" and "way a, timed on this machine" in choice.sentence()


def test_another_machine_or_a_damaged_file_times_it_again(tmp_path):
    saved_at = tmp_path / "choice.json"
    for text in (json.dumps({"pick": "a", "ms": {"a": 1, "b": 2}, "machine": "another cpu"}), "{not json",
                 json.dumps({"pick": "c", "ms": {}, "machine": timed.machine()})):
        saved_at.write_text(text)
        calls = []
        assert timed.choose("way", saved_at, _options("a", calls)).pick == "b"
        assert calls, text


def test_a_read_only_cache_still_chooses(tmp_path):
    saved_at = tmp_path / "no-such-dir" / "choice.json"
    (tmp_path / "no-such-dir").write_text("a file where the folder should be")
    assert timed.choose("way", saved_at, _options("a", [])).pick == "b"


def test_a_forced_choice_is_not_timed(tmp_path):
    calls = []
    choice = timed.choose("way", tmp_path / "choice.json", _options("b", calls), forced=("b", "SOME_ENV=1"))
    assert choice.pick == "b" and not calls and choice.sentence() == "way b (SOME_ENV=1)"
    assert not (tmp_path / "choice.json").exists()


@needs_kernel
@pytest.mark.parametrize("value,pick", [("0", "off"), ("1", "on")])
def test_the_environment_decides_prefetching(tmp_path, monkeypatch, value, pick):
    monkeypatch.setenv(rowgemm.PREFETCH_ENV, value)
    choice = rowgemm.prefetch_choice(rowgemm._library(), tmp_path / "rowgemm-abc.so")
    assert choice.pick == pick and choice.source == rowgemm.PREFETCH_ENV
    assert not (tmp_path / "rowgemm-abc.prefetch.json").exists()


@needs_kernel
def test_the_build_id_says_whether_it_prefetches():
    assert rowgemm.build_id().endswith("+prefetch") is rowgemm.prefetches()
    assert rowgemm.prefetches() is (rowgemm.prefetching().pick == "on")


@pytest.mark.parametrize("kernel", ["rowgemm", "fbgemm"])
def test_specx_kernels_decides_where_fp16_runs(monkeypatch, kernel):
    monkeypatch.setenv(fastpath.DISABLE_ENV, kernel)
    choice = fastpath.fp16_choice()
    if choice is None:
        pytest.skip("rowgemm or fbgemm is missing here")
    assert choice.pick == kernel and choice.source == f"{fastpath.DISABLE_ENV}={kernel}"
    assert fastpath.fp16_on_rowgemm() is (kernel == "rowgemm")
