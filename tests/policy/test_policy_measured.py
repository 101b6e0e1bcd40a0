"""Costs measured by one process start the next one's `auto` answers (measured.py)."""
from __future__ import annotations

import json

import pytest
from test_session import make_pair, tokens

from specx.policy import measured
from specx import stream
from specx.policy.costmodel import MODEL, CostModel
from specx.policy.knobs import KNOBS
from specx.policy.policy import make
from specx.engine.types import Sampling

KEY = {"target": "t|1", "drafter": "d|2|hybrid", "device": "cpu: test, 2 threads"}


def costs() -> CostModel:
    model = CostModel(verify_s={1: 0.35, 5: 0.7, 17: 1.1}, draft_step_s=0.08)
    model.calibration.add((0.95,) * 10, 9)
    model.track(MODEL).add(4, 0)
    return model


def test_a_saved_answer_comes_back_as_costs_and_calibration_without_the_texts_acceptance():
    assert measured.save(KEY, True, costs())
    back = measured.load(KEY, True)
    assert back.verify_s == {1: pytest.approx(0.35), 5: pytest.approx(0.7), 17: pytest.approx(1.1)}
    assert back.draft_step_s == pytest.approx(0.08)
    assert back.calibration.acceptance(0.95) == pytest.approx(costs().calibration.acceptance(0.95))
    assert back.acceptance == pytest.approx(CostModel().acceptance)


def test_greedy_and_sampled_answers_and_other_keys_are_kept_apart():
    measured.save(KEY, True, costs())
    assert measured.load(KEY, False) is None
    assert measured.load({**KEY, "device": "cpu: other, 2 threads"}, True) is None
    sampled = CostModel(verify_s={1: 0.5})
    measured.save(KEY, False, sampled)
    assert measured.load(KEY, True).verify_s[1] == pytest.approx(0.35)   # the greedy half survives
    assert measured.load(KEY, False).verify_s[1] == pytest.approx(0.5)


def test_nothing_is_saved_before_plain_decoding_was_measured():
    assert not measured.save(KEY, True, CostModel(draft_step_s=0.1))
    assert not measured.path().exists()


def test_the_calibration_kept_is_capped_so_later_runs_still_move_it():
    model = CostModel(verify_s={1: 0.3})
    model.calibration.add((0.95,) * 4000, 3000)
    measured.save(KEY, True, model)
    back = measured.load(KEY, True).calibration
    (judged,), (passed,) = back.judged.values(), back.passed.values()
    assert judged == pytest.approx(measured.CALIBRATION_CAP) and passed / judged == pytest.approx(0.75)


@pytest.mark.parametrize("text", ["{not json", '{"version": 99, "entries": []}',
                                  '{"version": 1, "entries": [{"key": ' + json.dumps(KEY) + ', "greedy": {"verify_s": 3}}]}'])
def test_an_unreadable_or_foreign_file_reads_as_nothing(text):
    measured.path().parent.mkdir(parents=True, exist_ok=True)
    measured.path().write_text(text)
    assert measured.load(KEY, True) is None
    assert measured.save(KEY, True, costs()) and measured.load(KEY, True) is not None   # and is replaced


def test_a_state_dir_that_cannot_be_written_skips_the_save(tmp_path, monkeypatch):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("SPECX_HOME", str(blocked))
    assert measured.save(KEY, True, costs()) is False


def test_the_oldest_pairs_are_dropped_beyond_the_limit(monkeypatch):
    monkeypatch.setattr(measured, "MAX_ENTRIES", 3)
    for i in range(5):
        measured.save({**KEY, "target": f"t|{i}"}, True, costs())
    kept = [measured.load({**KEY, "target": f"t|{i}"}, True) is not None for i in range(5)]
    assert kept == [False, False, True, True, True]


def test_a_model_file_that_changes_is_another_model(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"1234")
    before = measured.identity(model)
    model.write_bytes(b"123456")
    assert measured.identity(model) != before


def test_costs_measured_on_another_build_of_specx_kernel_are_not_used(monkeypatch):
    """A release that rebuilds rowgemm changes every forward's cost: its measurements start afresh (an
    old 6-token forward, never timed again, held every draft at 4 tokens on the faster build)."""
    from types import SimpleNamespace

    from specx.cpu import rowgemm

    lm = SimpleNamespace(model=SimpleNamespace(dtype="torch.float32"), kernels="kernels: specx rowgemm float32 linears")
    monkeypatch.setattr(rowgemm, "build_id", lambda: "aaaa")
    before = measured._kernels(lm)
    monkeypatch.setattr(rowgemm, "build_id", lambda: "bbbb")
    assert measured._kernels(lm) != before
    other = SimpleNamespace(model=lm.model, kernels="kernels: fp16 weight-only linears")
    assert "build" not in measured._kernels(other)


def test_a_new_process_drafts_from_its_first_round_and_still_equals_plain_decoding():
    first, plain = make_pair("hybrid"), make_pair("model")
    plain.k = 0
    first.measured_key, first.k = KEY, 8
    prompt = "w25 w26 w27 w25 w26"
    reference = tokens(stream(plain, prompt, max_tokens=24, draft_policy="fixed", raw=True))
    assert tokens(stream(first, prompt, max_tokens=24, draft_policy="auto", raw=True)) == reference
    later = make_pair("hybrid")          # the same models loaded again: nothing carried in memory
    later.measured_key, later.k = KEY, 8
    policy = later.policy("auto", 0.4, Sampling())
    assert policy.cost.draft_step_s is not None and policy.cost.verify_time(1) is not None
    assert policy.next_k() == later.k    # no warm-up draft (KNOBS.warmup_k) and no plain measuring round
    assert make("auto", later.k).next_k() == KNOBS.warmup_k < later.k   # what a first answer does without
    assert tokens(stream(later, prompt, max_tokens=24, draft_policy="auto", raw=True)) == reference


def test_only_auto_answers_are_saved():
    pair = make_pair("model")
    pair.measured_key = KEY
    list(stream(pair, "w25 w26", max_tokens=8, draft_policy="fixed", raw=True))
    assert measured.load(KEY, True) is None
    list(stream(pair, "w25 w26", max_tokens=8, draft_policy="auto", raw=True))
    assert measured.load(KEY, True) is not None


def test_the_answer_that_starts_from_saved_costs_says_so_once():
    measured.save(KEY, True, costs())
    pair, heard = make_pair("model"), []
    pair.measured_key = KEY
    for _ in range(2):
        list(stream(pair, "w25 w26", max_tokens=8, draft_policy="auto", raw=True, notify=heard.append))
    said = [h for h in heard if "an earlier run measured" in h]
    assert len(said) == 1 and "350 ms" in said[0] and str(measured.path()) in said[0]
