"""specx tune: the sweep, the choice, the tuned store (locked, atomic), and `specx run` using it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from cli_helpers import ROOT, cli_models, invoke, make_folder, one_thread, run_specx, specx_env  # noqa: F401
from specx.bench.tune import candidates, choose
from specx.policy import tuned
from specx.state import machine
from specx.policy.policy import AUTO_K_MAX, draft_cap
from specx.policy.tuned import TunedKey, TunedSetting

KEY = TunedKey("sha256:aa", "ngram", "cpu: test, 1 threads", "float32")


def trial(label, k, speedup, policy="fixed", baseline=False):
    return {"label": label, "drafter": "none" if baseline else "ngram", "k": k, "policy": policy, "confidence": 0.4,
            "baseline": baseline, "tok_s": 10 * speedup, "speedup": speedup}


def test_draft_cap_widens_only_an_unchosen_auto_k():
    assert draft_cap(4, "auto", False) == AUTO_K_MAX and draft_cap(4, "auto", True) == 4
    assert draft_cap(4, "fixed", False) == 4 and draft_cap(0, "auto", False) == 0
    assert draft_cap(32, "auto", False) == 32


def test_candidates_sweep_k_1_to_8_and_the_policies():
    model = candidates("./draft.gguf")
    assert AUTO_K_MAX in {c.k for c in model if c.policy == "auto"}   # what `specx run` does untuned
    assert sorted(c.k for c in model if c.policy == "fixed") == list(range(1, 9))
    assert {c.policy for c in model} == {"fixed", "heuristic", "auto", "confidence"}
    assert len({c.confidence for c in model if c.policy == "confidence"}) >= 3
    assert "confidence" not in {c.policy for c in candidates("ngram")}   # no probabilities to threshold
    assert candidates("none") == []


def test_candidates_include_token_trees_and_the_chosen_width_is_saved():
    """Tune tries auto at its cap with trees of 8 nodes and sized by measured costs beside chains; a tree row
    that wins is saved with its width, described and read back; a width out of range is not read."""
    trees = {c.tree for c in candidates("./draft.gguf") if c.policy == "auto" and c.k == AUTO_K_MAX}
    assert trees == {0, 8, -1} and {c.tree for c in candidates("ngram")} == {0, 8, -1}
    assert all(not c.tree for c in candidates("ngram") if c.policy != "auto")
    found = [dict(trial("k=16 auto tree auto", AUTO_K_MAX, 1.5, "auto"), tree=-1), trial("k=2", 2, 1.2),
             trial("none", 0, 1.0, baseline=True)]
    best = choose(found, "ngram")
    assert best.tree == -1 and "trees sized by measured costs" in best.describe()
    assert choose(found[1:], "ngram").tree == 0
    tuned.record(KEY, best, [])
    assert tuned.lookup_tuned(KEY).tree == -1
    with pytest.raises(ValueError):
        TunedSetting.from_dict({"drafter": "ngram", "k": 4, "tree": 99})


def test_choose_picks_the_fastest_and_turns_speculation_off_when_nothing_beats_the_baseline():
    found = [trial("k=5", 5, 1.4), trial("k=2", 2, 1.2), trial("none", 0, 1.0, baseline=True)]
    best = choose(found, "ngram")
    assert (best.drafter, best.k, best.speedup, best.baseline_tok_s) == ("ngram", 5, 1.4, 10.0)
    off = choose([trial("k=5", 5, 0.97), trial("none", 0, 1.0, baseline=True)], "ngram")
    assert off.off and off.drafter == "none" and "speculation off" in off.describe()
    assert choose([trial("k=5", 5, 1.5)], "ngram") is None   # no baseline measured: no claim


def test_describe_names_k_and_the_date():
    s = TunedSetting("ngram", 5, tuned_at="2026-11-23T04:00:00Z", speedup=1.31)
    assert s.describe().startswith("k=5 fixed with drafter ngram, tuned 2026-11-23")
    assert "interrupted" in replace(s, complete=False).describe()


def test_record_then_lookup_by_key_and_any_drafter_picks_the_fastest():
    tuned.record(KEY, TunedSetting("ngram", 5, speedup=1.3), [])
    model_key = replace(KEY, drafter="sha256:bb")
    tuned.record(model_key, TunedSetting("/m/draft.gguf", 3, speedup=1.6), [])
    assert tuned.lookup_tuned(KEY).k == 5
    assert tuned.lookup_tuned(replace(KEY, drafter=None)).k == 3
    for other in (replace(KEY, device="cuda:0: X"), replace(KEY, dtype="bfloat16"), replace(KEY, mode="sampling"),
                  replace(KEY, target="sha256:cc")):
        assert tuned.lookup_tuned(other) is None
    tuned.record(KEY, TunedSetting("ngram", 7, speedup=1.2), [])   # replaces, does not duplicate
    assert tuned.lookup_tuned(KEY).k == 7 and len(tuned.load_entries()) == 2
    assert tuned.reset("sha256:zz") == 0 and tuned.reset() == 2 and tuned.load_entries() == []


def test_a_damaged_tuned_file_reads_as_empty():
    tuned.path().parent.mkdir(parents=True, exist_ok=True)
    tuned.path().write_text('{"version": 1, "entries": [')
    assert tuned.lookup_tuned(KEY) is None


WRITER = """
import sys
from specx.policy.tuned import TunedKey, TunedSetting, record
who = sys.argv[1]
for i in range(40):
    record(TunedKey(f"{who}-{i}", "ngram", "cpu", "float32"), TunedSetting("ngram", 4), [])
"""


def test_two_processes_recording_at_once_lose_nothing(isolated_home):
    env = {**os.environ, "SPECX_HOME": str(isolated_home), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, who], env=env) for who in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    targets = {e["key"]["target"] for e in tuned.load_entries()}
    assert targets == {f"{w}-{i}" for w in "ab" for i in range(40)}
    assert [p.name for p in tuned.path().parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.fixture
def prompts_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[[prompt]]\ncategory = "a"\ntext = "w5 w9 w5 w9 w5"\n[[prompt]]\ncategory = "b"\n'
                    'text = "w7 w8 w7 w8"\n')
    return str(path)


def test_two_concurrent_tunes_both_land(cli_models, prompts_file, isolated_home, tmp_path):
    target, draft = cli_models["target"], make_folder(tmp_path / "draft", layers=1, seed=5)
    env = specx_env(SPECX_HOME=str(isolated_home))
    args = ("-n", "4", "-r", "1", "--prompts", prompts_file)
    procs = [subprocess.Popen([sys.executable, "-m", "specx", "tune", str(target), "-d", d, *args], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for d in ("ngram", str(draft))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    drafters = {e["names"]["drafter"] for e in tuned.load_entries()}
    assert drafters == {"ngram", str(draft.resolve())}
    assert all(e["setting"] and e["trials"] for e in tuned.load_entries())


def unwritable_home(tmp_path) -> str:
    """A SPECX_HOME whose config dir cannot be written (root ignores permissions: use sysfs then)."""
    if os.geteuid() == 0:
        return "/sys/fs/specx-test-readonly"
    home = tmp_path / "ro-home"
    (home / "config").mkdir(parents=True)
    (home / "config").chmod(0o555)
    return str(home)


def test_read_only_config_dir_fails_tune_clearly_but_run_works(cli_models, prompts_file, tmp_path):
    env = specx_env(SPECX_HOME=unwritable_home(tmp_path))
    target = str(cli_models["target"])
    bad = run_specx("tune", target, "-d", "ngram", "--prompts", prompts_file, "-n", "4", env=env)
    assert bad.returncode == 1, bad.stderr
    lines = bad.stderr.splitlines()
    assert lines[0].startswith("error: cannot save tuned settings in") and lines[1].startswith("hint:")
    assert "Traceback" not in bad.stderr and len(lines) == 2   # it fails before loading any model
    ok = run_specx("run", target, "w5 w9", "-n", "4", "--raw", env=env)
    assert ok.returncode == 0, ok.stderr
    assert len(ok.stdout.split()) == 4


def run_k(*args) -> tuple[dict, str]:
    result = invoke("run", *args, "w5 w9 w5 w9 w5", "--raw", "-n", "8", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])["stats"], result.stderr


@pytest.mark.usefixtures("one_thread")
def test_run_uses_the_tuned_setting_and_flags_override_it(cli_models):
    target = str(cli_models["target"])
    key = tuned.make_key(target, "ngram")
    tuned.record(key, TunedSetting("ngram", 3, "fixed", tuned_at="2026-11-23T04:00:00Z", speedup=1.5), [])
    stats, err = run_k(target)
    assert (stats["k"], stats["drafter"], stats["draft_policy"]) == (3, "ngram", "fixed")
    assert "tuned: k=3 fixed with drafter ngram, tuned 2026-11-23" in err
    stats, err = run_k(target, "-k", "2")
    assert stats["k"] == 2 and "-k from the command line overrides it" in err
    stats, err = run_k(target, "--drafter", "none")
    assert stats["k"] == 0 and "tuned:" not in err
    tuned.record(key, TunedSetting("none", 0, tuned_at="2026-11-23T04:00:00Z"), [])
    stats, err = run_k(target)
    assert (stats["k"], stats["drafter"]) == (0, "none") and "speculation off (tuned 2026-11-23" in err


@pytest.mark.usefixtures("one_thread")
def test_a_run_takes_the_tuned_tree_width_unless_tree_was_given(cli_models):
    """The tuned layer sets --tree as it sets k and the policy; a --tree the user gave wins."""
    from specx.options import resolve

    target = str(cli_models["target"])
    tuned.record(tuned.make_key(target, "ngram"), TunedSetting("ngram", 4, "auto", speedup=1.4, tree=8), [])
    assert resolve({"model": target, "drafter": "ngram"}).run.tree == 8
    assert resolve({"model": target, "drafter": "ngram", "tree": 0}).run.tree == 0


@pytest.mark.usefixtures("one_thread")
def test_a_tuned_policy_runs_guarded_unless_the_user_chose_the_policy(cli_models, monkeypatch):
    """What `auto` takes from the tune may still turn speculation off (policy.Guarded); a policy
    given by flag is run as given."""
    from specx.policy import policy as policies
    from specx.policy.guarded import Guarded

    made, real = [], policies.make

    def recording(*args, **kwargs):
        policy = real(*args, **kwargs)
        made.append(isinstance(policy, Guarded))
        return policy

    monkeypatch.setattr(policies, "make", recording)
    target = str(cli_models["target"])
    tuned.record(tuned.make_key(target, "ngram"),
                 TunedSetting("ngram", 3, "confidence", 0.6, tuned_at="2026-11-23T04:00:00Z", speedup=1.5), [])
    assert run_k(target)[0]["draft_policy"] == "confidence" and made[-1] is True
    assert run_k(target, "--draft-policy", "confidence")[0]["draft_policy"] == "confidence" and made[-1] is False
    assert run_k(target, "--draft-policy", "auto")[0]["draft_policy"] == "auto"


def test_a_setting_tuned_for_one_weight_precision_does_not_apply_to_another(cli_models):
    target = str(cli_models["target"])
    tuned.record(tuned.make_key(target, "ngram", quant="fp16"),
                 TunedSetting("ngram", 3, "fixed", tuned_at="2026-11-23T04:00:00Z", speedup=1.5), [])
    stats, err = run_k(target)
    assert "tuned:" not in err and stats["k"] == AUTO_K_MAX
    stats, err = run_k(target, "--quant", "fp16")
    assert stats["k"] == 3 and "tuned: k=3 fixed" in err


def test_auto_drafts_up_to_its_cap_unless_k_is_set(cli_models):
    """Untuned, `auto` may draft up to AUTO_K_MAX; -k (flag or environment) or another policy keeps k."""
    target = str(cli_models["target"])
    assert run_k(target)[0]["k"] == AUTO_K_MAX
    assert run_k(target, "-k", "4")[0]["k"] == 4
    assert run_k(target, "--draft-policy", "fixed")[0]["k"] == 4
    assert run_k(target, "--draft-policy", "auto", "-k", "0")[0]["k"] == 0


@pytest.mark.usefixtures("one_thread")
def test_tune_then_run_end_to_end_and_show_and_reset(cli_models, prompts_file):
    target = str(cli_models["target"])
    result = invoke("tune", target, "-d", "ngram", "--prompts", prompts_file, "-n", "6", "-r", "1")
    assert result.exit_code == 0, result.stderr
    assert "ngram k=8 fixed" in result.stdout and "tuned: " in result.stderr
    setting = tuned.lookup_tuned(tuned.make_key(target, "ngram"))
    assert setting is not None and setting.complete
    stats, err = run_k(target)
    assert stats["k"] == setting.k and f"tuned: {setting.describe()}" in err
    shown = invoke("tune", "--show")
    assert shown.exit_code == 0 and target in shown.stdout
    gone = invoke("tune", target, "--reset")
    assert gone.exit_code == 0 and "removed 1 tuned setting" in gone.stderr and tuned.load_entries() == []


@pytest.mark.usefixtures("one_thread")
def test_ctrl_c_keeps_finished_trials_and_leaves_a_whole_file(cli_models, prompts_file, monkeypatch):
    from specx.cli import bench as bench_cli

    calls, rows = {"n": 0}, len(candidates("ngram")) + 1   # the baseline too
    original = bench_cli.ProgressBar.advance

    def interrupting(self, label, sample):
        original(self, label, sample)
        calls["n"] += 1
        if calls["n"] == rows + rows + 3:   # warm-ups, one complete prompt, part of the next
            raise KeyboardInterrupt
    monkeypatch.setattr(bench_cli.ProgressBar, "advance", interrupting)
    result = invoke("tune", str(cli_models["target"]), "-d", "ngram", "--prompts", prompts_file, "-n", "4", "-r", "1")
    assert result.exit_code == 130, result.stderr
    assert "interrupted: the setting comes from 1 finished comparisons" in result.stderr
    entry = json.loads(tuned.path().read_text())["entries"][0]
    assert entry["setting"]["complete"] is False and len(entry["trials"]) == rows
    assert all(t["samples"] == 1 for t in entry["trials"])
    assert sorted(p.name for p in tuned.path().parent.iterdir()) == ["tuned.json", "tuned.json.lock"]


def test_a_setting_tuned_on_one_vector_unit_does_not_apply_to_another(monkeypatch):
    """Same CPU name, AVX2 vs AVX-512: the kernels' speeds differ, so the keys do."""
    import torch

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    avx2 = machine.identity()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert avx2 != machine.identity() and "(AVX512)" in machine.identity()
