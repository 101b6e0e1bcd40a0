"""`--drafter auto`: downloaded, same tokenizer, ≤ ¼ (else ≤ ½) of the target, fits in memory; else ngram."""
from __future__ import annotations

import contextlib

import pytest

from cli_helpers import make_folder
from fakehub import FakeHub, Repo

SIZES = {"target": 8, "small": 1, "mid": 2, "big": 6, "renamed": 1}   # layers; params grow with them


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("auto")
    return {name: make_folder(root / name, layers=layers, seed=i,
                              rename={7: "seven"} if name == "renamed" else None)
            for i, (name, layers) in enumerate(SIZES.items())}


@contextlib.contextmanager
def serve(folders, tmp_path, monkeypatch):
    """A fake Hub holding every tiny repo as `t/NAME`, with huggingface_hub pointed at it."""
    from huggingface_hub import constants

    with FakeHub() as fake:
        for name, folder in folders.items():
            fake.repos[f"t/{name}"] = Repo.from_folder(folder)
        monkeypatch.setattr(constants, "ENDPOINT", fake.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", fake.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
        yield fake


@pytest.fixture
def pulled(folders, tmp_path, monkeypatch, isolated_home):
    """Every tiny repo pulled into a private HF cache through the real client and a fake Hub."""
    from huggingface_hub import constants

    from specx import presets
    from specx.models import hub as hubmod

    with serve(folders, tmp_path, monkeypatch):
        for name in folders:
            hubmod.pull(hubmod.HubRef(f"t/{name}"), f"t/{name}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)   # from here on, nothing may be fetched
    presets.user_dir().mkdir(parents=True)
    return presets.user_dir()


def write_presets(folder, drafters: list[str], extra: tuple[str, ...] = ()) -> None:
    """The target's preset naming `drafters`, and one preset per named candidate (plus `extra`)."""
    names = ["target", *extra] + [d.removeprefix("x-") for d in drafters if d != "ngram"]
    for name in names:
        drafts = drafters if name == "target" else ["ngram"]
        (folder / f"{name}.toml").write_text(
            f'name = "x-{name}"\ndescription = "d"\nfamily = "tiny"\n'
            f'drafters = [{", ".join(repr(d) for d in drafts)}]\n'
            f'[target]\nrepo = "t/{name}"\nsource = "https://example.org/{name}"\n'.replace("'", '"'))


def choose(memory: int | None = None):
    from specx.drafters import auto as autodraft
    from specx.models import resolve as models

    return autodraft.pick(models.resolve("x-target"), memory=memory)


def test_prefers_the_largest_quarter_size_compatible_downloaded_drafter(pulled):
    """Among absent, incompatible, too-large, half-size and quarter-size: the quarter-size one, with reasons."""
    write_presets(pulled, ["x-absent", "x-renamed", "x-big", "x-mid", "x-small", "ngram"])
    name, why = choose()
    assert name == "x-small"
    assert "at most ¼" in why and "x-absent (not downloaded)" in why and "x-renamed (different tokenizer)" in why


def test_accepts_half_size_when_nothing_smaller_is_compatible(pulled):
    """Without the quarter-size drafter, the half-size one is taken and the sentence says so."""
    write_presets(pulled, ["x-renamed", "x-big", "x-mid", "ngram"])
    name, why = choose()
    assert name == "x-mid" and "at most ½" in why


def test_falls_back_to_ngram_and_says_why(pulled):
    """Only unusable candidates: ngram, naming each reason and the pull that would help."""
    write_presets(pulled, ["x-absent", "x-renamed", "x-big", "ngram"])
    name, why = choose()
    assert name == "ngram"
    assert "x-big (too large" in why and "different tokenizer" in why and "`specx pull x-absent`" in why


def test_a_drafter_that_does_not_fit_in_memory_is_skipped(pulled):
    """With almost no memory free, no model drafter is chosen."""
    write_presets(pulled, ["x-small", "ngram"])
    name, why = choose(memory=1000)
    assert name == "ngram" and "x-small (does not fit in memory)" in why


def test_same_family_downloads_are_candidates_too(pulled):
    """A downloaded preset of the same family counts even when the target's list does not name it."""
    write_presets(pulled, ["ngram"], extra=("small",))
    name, _ = choose()
    assert name == "x-small"


def test_prepare_explains_the_auto_choice(pulled):
    """`prepare(drafter="auto")` loads the chosen drafter, which also copies from the context, and its
    sentence states the ratio, the copying and the rule."""
    from specx import load as prepare
    from specx.drafters.hybrid import HybridDrafter

    write_presets(pulled, ["x-small", "ngram"])
    pair = prepare("x-target", "auto")
    assert isinstance(pair.drafter, HybridDrafter) and pair.drafter.model.name == "x-small"
    assert (pair.draft_tokens("auto"), pair.draft_tokens("fixed")) == (16, 4)   # as `specx run` without -k
    assert pair.explanation.startswith("drafter: x-small+ngram (same tokenizer, ") and "× smaller than x-target" in pair.explanation
    assert "copies from the context" in pair.explanation and "auto: at most ¼ of the target" in pair.explanation


@pytest.fixture
def online(folders, tmp_path, monkeypatch, isolated_home):
    """The fake Hub stays up; only the target is pulled."""
    from specx import presets
    from specx.models import hub as hubmod

    with serve(folders, tmp_path, monkeypatch) as fake:
        hubmod.pull(hubmod.HubRef("t/target"), "t/target")
        presets.user_dir().mkdir(parents=True)
        yield fake


def test_downloadable_candidates_are_judged_by_config_and_tokenizer_only(online, isolated_home):
    """Online, a candidate not yet downloaded is checked from its config and tokenizer; its weights
    come only when it is chosen and loaded."""
    from specx import presets
    from specx import load as prepare

    write_presets(presets.user_dir(), ["x-absent", "x-renamed", "x-small", "ngram"])
    name, why = choose()
    assert name == "x-small" and "fetching it now" in why and "x-renamed (different tokenizer)" in why
    assert "x-absent (t/absent was not found on the Hub" in why
    weights = [p for _, p, _ in online.requests("GET", ".safetensors")]
    assert weights == ["/t/target/resolve/" + "a" * 40 + "/model.safetensors"]
    pair = prepare("x-target", "auto")
    assert pair.drafter.name == "x-small+ngram" and "fetching it now" in pair.explanation
    assert any("/t/small/" in p for _, p, _ in online.requests("GET", "model.safetensors"))
