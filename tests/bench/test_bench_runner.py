"""The runner alternates configurations, keeps finished samples on Ctrl-C; the report pairs them."""
from __future__ import annotations

import pytest

from specx.bench import report
from specx.bench.runner import BASELINE, Config, Runner, Sample
from specx.bench.suite import Prompt

PROMPTS = [Prompt("a", "code", "x"), Prompt("b", "code", "y"), Prompt("c", "chat", "z")]
CONFIGS = [Config("ngram", 2), Config("ngram", 4)]


def fake_runner(fail_after: int | None = None, speed: dict | None = None):
    """A runner whose configurations are fake generators: no models, fixed speeds, a call log."""
    runner = Runner("m", CONFIGS, PROMPTS)
    log: list[str] = []
    speed = speed or {"none": 10.0, "ngram k=2 fixed": 15.0, "ngram k=4 fixed": 20.0}

    def make(label):
        def go(prompt, max_tokens):
            if fail_after is not None and len(log) >= fail_after:
                raise KeyboardInterrupt
            log.append(label)
            drafted = 0 if label == "none" else 4
            return Sample(label, prompt.name, prompt.category, 0, 10, 10 / speed[label], 0.01, 0.0, 0.1, 2,
                          drafted, drafted // 2, [1, 1] if drafted else [], [2, 2] if drafted else [], 1, (1, 2))
        return go
    runner.calls = {c.label: make(c.label) for c in runner.configs}
    return runner, log


def test_the_baseline_is_always_included_first_and_once():
    runner = Runner("m", [Config("none", 0), *CONFIGS, Config("ngram", 4)], PROMPTS)
    assert [c.label for c in runner.configs] == ["none", "ngram k=2 fixed", "ngram k=4 fixed"]
    assert runner.configs[0] == BASELINE


def test_every_unit_runs_every_configuration_in_a_rotated_order():
    runner, log = fake_runner()
    m = runner.run(repeats=2, warmup=False)
    assert len(m.samples) == 2 * 3 * 3 and len(m.complete_units()) == 6
    firsts = [log[i] for i in range(0, len(log), 3)]
    assert len(set(firsts)) == 3   # each configuration goes first in some unit: drift cancels
    for i in range(0, len(log), 3):
        assert sorted(log[i:i + 3]) == sorted(c.label for c in runner.configs)


def test_warmup_runs_each_configuration_once_unrecorded():
    runner, log = fake_runner()
    m = runner.run(repeats=1, warmup=True)
    assert len(log) == 3 + 9 and len(m.samples) == 9


def test_ctrl_c_keeps_the_finished_samples_and_only_complete_units_are_reported():
    runner, log = fake_runner(fail_after=7)
    m = runner.run(repeats=1, warmup=False)
    assert m.interrupted and len(m.samples) == 7
    assert len(m.complete_units()) == 2
    rows = report.summarise(m)
    assert {r["samples"] for r in rows if r["category"] == "overall"} == {2}


def test_speedup_is_paired_against_the_baseline_and_rates_are_pooled():
    runner, _ = fake_runner()
    rows = report.summarise(runner.run(repeats=2, warmup=False))
    overall = {r["config"]: r for r in rows if r["category"] == "overall"}
    assert overall["none"]["speedup"]["median"] == 1.0
    assert overall["ngram k=4 fixed"]["speedup"]["median"] == pytest.approx(2.0)
    assert overall["ngram k=2 fixed"]["tok_s"]["median"] == pytest.approx(15.0)
    assert overall["ngram k=2 fixed"]["acceptance_rate"] == 0.5
    assert overall["ngram k=2 fixed"]["mean_acceptance_length"] == 2.0
    assert overall["ngram k=2 fixed"]["per_position_acceptance"] == [0.5, 0.5]
    assert overall["none"]["acceptance_rate"] is None
    assert overall["ngram k=4 fixed"]["outputs_matched"] == overall["ngram k=4 fixed"]["outputs_compared"] == 6
    assert [r["category"] for r in rows] == ["code"] * 3 + ["chat"] * 3 + ["overall"] * 3


def test_csv_has_the_documented_columns_and_one_line_per_row():
    runner, _ = fake_runner()
    rows = report.summarise(runner.run(repeats=1, warmup=False))
    lines = report.csv_text(rows).splitlines()
    assert lines[0].split(",") == list(report.CSV_COLUMNS)
    assert len(lines) == 1 + len(rows)


def test_compare_reports_the_change_per_row_and_what_else_differs():
    runner, _ = fake_runner()
    m = runner.run(repeats=1, warmup=False)
    a = report.document(m, report.summarise(m), {"repeats": 1}, {"packages": {"torch": "1"}})
    faster, _ = fake_runner(speed={"none": 10.0, "ngram k=2 fixed": 30.0, "ngram k=4 fixed": 20.0})
    m2 = faster.run(repeats=1, warmup=False)
    b = report.document(m2, report.summarise(m2), {"repeats": 1}, {"packages": {"torch": "2"}})
    diff = report.compare(a, b)
    row = next(r for r in diff["rows"] if r["config"] == "ngram k=2 fixed" and r["category"] == "overall")
    assert row["change"] == pytest.approx(1.0)
    assert diff["environment"] == [{"key": "packages.torch", "a": "1", "b": "2"}]
    assert diff["settings"] == []
