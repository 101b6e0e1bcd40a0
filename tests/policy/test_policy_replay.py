"""The draft policies make the decisions recorded before they became classes (tests/data/policy_replay.json)."""
from __future__ import annotations

import json

import pytest
from replay_traces import RECORD, TRACES, run

RECORDED = json.loads(RECORD.read_text())


def test_every_trace_was_recorded():
    assert sorted(RECORDED) == sorted(t.name for t in TRACES)


@pytest.mark.parametrize("trace", TRACES, ids=lambda t: t.name)
def test_a_trace_replays_the_recorded_decisions(trace):
    """Per answer and round: the copy's and the model's k, tokens drafted and accepted, tokens kept,
    the draft and verify seconds on the fake clock (so how many tokens the model drafted and how
    long each forward was), the notice; then the answer's notices, stop reason and tokens."""
    got = json.loads(json.dumps(run(trace)))   # tuples as lists, as recorded
    for answer, (now, then) in enumerate(zip(got, RECORDED[trace.name])):
        for i, (a, b) in enumerate(zip(now["rounds"], then["rounds"])):
            assert a == b, f"answer {answer}, round {i}"
        assert now == then
    assert len(got) == len(RECORDED[trace.name])
