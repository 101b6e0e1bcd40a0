"""A preset's file for a run: its float checkpoint or one of its GGUF variants (models/variant.py), and GGUF
types priced from a config before the file is local (memory/gguf_price.py)."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from cli_helpers import make_folder
from conftest import fixture_model
from fakehub import FakeHub, Repo
from specx.errors import InsufficientResources, UsageError
from specx.presets import TargetSpec
from specx.memory.variant import FLOAT, Ask, choose

COMMIT = "1" * 40
GiB = 2**30


def preset(**kw):
    from specx.presets import parse

    text = 'name = "mine"\ndescription = "d"\n[target]\nrepo = "tiny-org/tiny-llama"\nsource = "https://x"\n'
    for name in kw.pop("quants", ("Q4_K_M", "Q8_0")):
        text += f'[quants.{name}]\nrepo = "tiny-org/tiny-GGUF"\nfile = "tiny-{name}.gguf"\nsource = "https://x"\n'
    text = "".join(f'{k} = "{v}"\n' for k, v in kw.items()) + text
    return parse(text, "mine.toml")


def pick(p, ask=Ask(), suffix="", gpu=False, budget=64 * GiB, prices=None):
    return choose(p, suffix, ask, gpu, budget, lambda q: (prices or {}).get(q))


def test_no_cuda_takes_q4_k_m_and_says_why():
    """Without CUDA and with the weights left as the file holds them, a preset with variants takes Q4_K_M."""
    v = pick(preset())
    assert v.name == "Q4_K_M" and v.why == "Q4_K_M (the preset's GGUF: no CUDA)"


def test_a_variant_asked_by_name_is_taken_whatever_its_size():
    """--quant Q8_0 (any case) or NAME:Q8_0 takes that file, also on a GPU and over the CPU budget."""
    prices = {"Q4_K_M": 1 * GiB, "Q8_0": 9 * GiB}
    assert pick(preset(), Ask("q8_0"), budget=2 * GiB, prices=prices).name == "Q8_0"
    assert pick(preset(), suffix="Q8_0", gpu=True).name == "Q8_0"
    assert pick(preset(), Ask("Q4_K_M"), gpu=True).name == "Q4_K_M"


def test_an_unknown_variant_is_a_usage_error_listing_the_presets():
    """--quant Q9_X: exit 2, and the hint lists the variants the preset has."""
    with pytest.raises(UsageError) as info:
        pick(preset(), Ask("Q9_X"))
    assert info.value.exit_code == 2 and "Q4_K_M, Q8_0" in info.value.hint
    with pytest.raises(UsageError, match="two GGUF variants"):
        pick(preset(), Ask("Q8_0"), suffix="Q4_K_M")


def test_cuda_or_a_runtime_precision_keeps_the_float_checkpoint():
    """With CUDA, a dtype, or a runtime precision other than the file's own, the float checkpoint (as before);
    a preset of GGUF files only takes one of them anyway."""
    assert pick(preset(), gpu=True) == FLOAT
    assert pick(preset(), Ask(dtype="float32")) == FLOAT
    assert pick(preset(), Ask("int8")) == FLOAT
    assert pick(preset(quants=())) == FLOAT
    gguf_only = replace(preset(), target=TargetSpec())
    assert pick(gguf_only, gpu=True).name == "Q4_K_M"
    assert pick(preset(), Ask("none")).name == pick(preset(), Ask("q8")).name == "Q4_K_M"


def test_default_quant_is_respected():
    """A preset's default_quant is a bare name's file, on any machine."""
    p = preset(default_quant="Q8_0")
    assert pick(p).name == pick(p, gpu=True).name == "Q8_0"


def test_a_smaller_variant_when_q4_k_m_does_not_fit_never_a_bigger_one():
    """Q4_K_M over the budget: the largest smaller variant that fits; none: exit 4 before any download."""
    p = preset(quants=("Q3_K_M", "Q4_0", "Q4_K_M", "Q8_0"))
    prices = {"Q3_K_M": 3 * GiB, "Q4_0": 4 * GiB, "Q4_K_M": 5 * GiB, "Q8_0": 8 * GiB}
    v = pick(p, budget=int(4.5 * GiB), prices=prices)
    assert v.name == "Q4_0" and "Q4_K_M needs about" in v.why
    assert pick(p, budget=9 * GiB, prices=prices).name == "Q4_K_M"
    with pytest.raises(InsufficientResources) as info:
        pick(p, budget=2 * GiB, prices=prices)
    assert info.value.exit_code == 4 and "Q3_K_M about" in info.value.message


def test_quant_option_accepts_variant_names_but_not_q8():
    """--quant takes GGUF type names; q8 stays the lean decoder's int8 activations, not a variant."""
    from specx.options import ModelOptions
    from specx.state.limits import is_variant_name

    assert ModelOptions("x", quant="Q4_K_M", draft_quant="Q8_0").quant == "Q4_K_M"
    assert [is_variant_name(n) for n in ("Q4_K_M", "iq4_xs", "BF16", "q8", "int8", "nf4")] == \
        [True, True, True, False, False, False]
    with pytest.raises(UsageError) as info:
        ModelOptions("x", quant="Q4K")
    assert "GGUF variant" in info.value.hint


# ---- prices before the download ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m", "gemma3-270m"])
def test_a_gguf_type_priced_from_the_config_is_within_10_percent_of_the_file(name):
    """Each fixture's file type priced from its config alone (llama.cpp's mixture, the block types' sizes)
    comes within 10% of the file's size, and names the block types the file holds."""
    from specx.decoder import support
    from specx.memory.shapes import gguf_config
    from specx.memory.gguf_price import estimate, file_type_name
    from specx.models.gguf_check import scan_gguf

    path = fixture_model(name)
    file_type = file_type_name(scan_gguf(path)["meta"]["general.file_type"])
    groups, fmt = estimate(gguf_config(path), file_type)
    size = os.path.getsize(path)
    assert abs(sum(groups.values()) - size) <= 0.10 * size
    assert set(fmt.split("/")) == set(support.inspect(path).format.split("/"))


def test_more_bits_go_to_half_the_layers():
    """llama.cpp's use_more_bits picks half of the layers (rounded) for Q6_K in the _M mixtures."""
    from specx.memory.gguf_price import use_more_bits

    for n in (24, 28, 32, 80):
        assert abs(sum(use_more_bits(i, n) for i in range(n)) - n / 2) <= 1


def test_tensor_types_follow_llama_cpp_mixtures():
    """The head takes Q6_K unless the file's type is larger; rows that are not whole 256-value blocks take a
    32-value type; only the _M mixtures give V and FFN-down more bits."""
    from specx.memory.gguf_price import tensor_type

    assert tensor_type("Q4_K_M", "head", None, 24, 1536) == "Q6_K"
    assert tensor_type("Q8_0", "head", None, 24, 1536) == "Q8_0"
    assert tensor_type("Q4_K_M", "head", None, 24, 896) == "Q8_0"
    assert tensor_type("Q4_K_M", "model.layers.0.mlp.down_proj", 0, 24, 4864) == "Q6_K"
    assert tensor_type("Q4_K_S", "model.layers.0.mlp.down_proj", 0, 24, 4864) == "Q4_K"
    assert tensor_type("Q3_K_S", "model.layers.0.mlp.down_proj", 0, 24, 4864) == "Q3_K"
    assert tensor_type("Q3_K_S", "head", None, 24, 1536) == "Q6_K"
    assert tensor_type("Q4_K_M", "model.layers.5.self_attn.q_proj", 5, 24, 896) == "Q5_0"


def test_iq4_file_types_are_priced_at_their_own_bytes():
    """IQ4_XS and IQ4_NL files are known types priced at their blocks' bytes (specx's kernels read them); the
    head takes Q6_K, and IQ4_XS rows that are not whole 256-value blocks take IQ4_NL, as llama.cpp gives them."""
    from specx.cpu.qweight import BLOCKS
    from specx.memory.gguf_price import bits_per_weight, known, tensor_type

    for name in ("IQ4_XS", "IQ4_NL"):
        _, per, size = BLOCKS[name]
        assert known(name) and bits_per_weight(name) == 8 * size / per
        assert tensor_type(name, "head", None, 24, 1536) == "Q6_K"
        assert tensor_type(name, "model.layers.0.mlp.down_proj", 0, 24, 4864) == name
    assert tensor_type("IQ4_XS", "model.layers.5.self_attn.q_proj", 5, 24, 896) == "IQ4_NL"


# ---- against a fake Hub ----------------------------------------------------------------------------

def gguf_bytes(path: Path, pad: int = 0) -> bytes:
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_block_count(1)
    w.add_string("general.name", "x" * pad or path.stem)
    w.add_tensor("token_embd.weight", np.arange(4 * 8, dtype=np.float32).reshape(4, 8))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


@pytest.fixture
def hf_here(tmp_path, monkeypatch):
    """huggingface_hub in this process pointed at a fake Hub with a float checkpoint and three GGUF variants."""
    from huggingface_hub import constants

    from specx import presets

    with FakeHub() as hub:
        hub.repos["tiny-org/tiny-llama"] = Repo.from_folder(make_folder(tmp_path / "tiny-llama", layers=1), COMMIT)
        hub.repos["tiny-org/tiny-GGUF"] = Repo({f"tiny-{q}.gguf": gguf_bytes(tmp_path / f"{q}.gguf", pad)
                                                for q, pad in (("Q4_0", 0), ("Q4_K_M", 50_000), ("Q8_0", 0))},
                                               {"main": COMMIT})
        monkeypatch.setattr(constants, "ENDPOINT", hub.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            hub.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-inproc"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        folder = presets.user_dir()
        folder.mkdir(parents=True)
        (folder / "mine.toml").write_text(
            'name = "mine"\ndescription = "d"\n[target]\nrepo = "tiny-org/tiny-llama"\nsource = "https://x"\n'
            + "".join(f'[quants.{q}]\nrepo = "tiny-org/tiny-GGUF"\nfile = "tiny-{q}.gguf"\nsource = "https://x"\n'
                      for q in ("Q4_0", "Q4_K_M", "Q8_0")))
        yield hub


def budgets(monkeypatch, gpu=None, cpu=64 * GiB):
    from specx.memory import probe

    monkeypatch.setattr(probe, "detect", lambda override=None: probe.Budgets(gpu, cpu, 100 * GiB))


def downloaded(hub) -> list[str]:
    return [p.rsplit("/", 1)[1] for _, p, _ in hub.requests("GET", "/resolve/")]


def test_a_preset_resolves_to_its_gguf_without_cuda(hf_here, monkeypatch):
    """No CUDA: `mine` is the Q4_K_M file (only it is downloaded) and the source says why; --quant Q8_0 that file."""
    from specx.memory.placement import variants
    from specx.memory.variant import source_for as resolve

    budgets(monkeypatch)
    source = resolve("mine", Ask())
    assert source.kind == "gguf" and source.path.name == "tiny-Q4_K_M.gguf"
    assert downloaded(hf_here) == ["tiny-Q4_K_M.gguf"]
    assert variants(source, None) == ["target Q4_K_M (the preset's GGUF: no CUDA)"]
    assert resolve("mine", Ask("Q8_0")).path.name == "tiny-Q8_0.gguf"
    with pytest.raises(UsageError) as info:
        resolve("mine", Ask("Q9_X"))
    assert info.value.exit_code == 2 and "Q4_0, Q4_K_M, Q8_0" in info.value.hint


def test_with_cuda_a_preset_resolves_to_its_float_checkpoint(hf_here, monkeypatch):
    """A GPU in the budget probe: the float checkpoint, as before; `--quant Q4_K_M` still asks for the GGUF."""
    from specx.memory.variant import source_for as resolve

    budgets(monkeypatch, gpu=8 * GiB)
    source = resolve("mine", Ask())
    assert source.kind == "hf" and (source.path / "config.json").is_file() and not source.variant
    assert resolve("mine", Ask("Q4_K_M")).path.name == "tiny-Q4_K_M.gguf"


def test_the_hub_listing_prices_a_variant_before_its_download(hf_here, monkeypatch):
    """Q4_K_M's listed size over the CPU budget: the smaller Q4_0 is taken, and Q4_K_M is never downloaded."""
    from specx.memory.footprint import runtime_overhead
    from specx.memory.variant import source_for as resolve

    files = hf_here.repos["tiny-org/tiny-GGUF"].files
    budgets(monkeypatch, cpu=runtime_overhead(0) + (len(files["tiny-Q4_0.gguf"]) + len(files["tiny-Q4_K_M.gguf"])) // 2)
    source = resolve("mine", Ask())
    assert source.path.name == "tiny-Q4_0.gguf" and "Q4_K_M needs about" in source.variant
    assert downloaded(hf_here) == ["tiny-Q4_0.gguf"]


def test_the_memory_sentence_names_the_variant(tmp_path):
    """`specx run`'s memory sentence ends with the variant taken and why."""
    from dataclasses import replace

    from specx.memory.placement import plan_run
    from specx.models.resolve import Source

    source = Source("hf", make_folder(tmp_path / "m", layers=1), "m")
    applied = plan_run(replace(source, variant="Q4_K_M (the preset's GGUF: no CUDA)"), None, 4, "auto", "auto", None)
    assert applied.note.startswith("memory: ") and applied.note.endswith("; target Q4_K_M (the preset's GGUF: no CUDA)")


def test_a_variant_name_for_a_file_is_a_usage_error(tmp_path):
    """--quant Q4_K_M with a model file or folder: exit 2 (only a preset lists variants)."""
    from specx.memory.variant import source_for as resolve

    with pytest.raises(UsageError) as info:
        resolve(str(make_folder(tmp_path / "m", layers=1)), Ask("Q4_K_M"))
    assert info.value.exit_code == 2 and "not a preset" in info.value.message


def test_pull_takes_the_file_a_run_would(hf_here, monkeypatch):
    """`specx pull mine` pulls the variant `specx run mine` takes: Q4_K_M without CUDA, the checkpoint with it."""
    from specx.memory.variant import entry_for

    budgets(monkeypatch)
    said = []
    assert entry_for("mine", said.append).label == "mine:Q4_K_M" and said == ["mine: Q4_K_M (the preset's GGUF: no CUDA)"]
    assert entry_for("mine:Q8_0").label == "mine:Q8_0"
    budgets(monkeypatch, gpu=8 * GiB)
    assert entry_for("mine").label == "mine"


def test_on_a_gpu_the_gguf_where_the_bfloat16_checkpoint_does_not_fit_and_its_blocks_do():
    """With CUDA (and the block kernels there): the float checkpoint while its bfloat16 copy fits the GPU budget
    (its parameters estimated from the file: 5 GiB of Q4_K at 4.5 bits ≈ 17.8 GiB in bfloat16); Q4_K_M where
    only its blocks fit, saying why; the checkpoint again where neither fits, or with no price, no kernels, or a
    dtype asked for."""
    def gpu_pick(budget, ask=Ask(), sizes={"Q4_K_M": 5 * GiB, "Q8_0": 9 * GiB}, kernels=True):
        return choose(preset(), "", ask, True, 64 * GiB, lambda q: None, budget if kernels else None,
                      lambda q: sizes.get(q))

    assert gpu_pick(24 * GiB) == FLOAT
    v = gpu_pick(8 * GiB)
    assert v.name == "Q4_K_M" and "kept in its blocks on the GPU" in v.why and "17.8 GiB" in v.why
    assert gpu_pick(5 * GiB) == FLOAT   # the blocks do not fit either: bitsandbytes' plans, as before
    assert gpu_pick(8 * GiB, sizes={}) == FLOAT
    assert gpu_pick(8 * GiB, kernels=False) == FLOAT
    assert gpu_pick(8 * GiB, Ask(dtype="float32")) == FLOAT and gpu_pick(8 * GiB, Ask("nf4")) == FLOAT
    assert gpu_pick(8 * GiB, Ask("Q8_0")).name == "Q8_0"   # asked by name: taken, as everywhere


def test_a_simulated_gpu_budget_takes_the_gguf_its_blocks_fit(hf_here, monkeypatch):
    """`--mem-budget gpu=…` (a simulated GPU, whose kernels are assumed) that a bfloat16 checkpoint of the file's
    size would not fit and its blocks do: the Q4_K_M file, priced by the Hub's listing, and only it downloaded."""
    from specx.memory.variant import source_for as resolve

    size = len(hf_here.repos["tiny-org/tiny-GGUF"].files["tiny-Q4_K_M.gguf"])
    source = resolve("mine", Ask(mem_budget=f"gpu={2 * size}B"))
    assert source.path.name == "tiny-Q4_K_M.gguf" and "kept in its blocks on the GPU" in source.variant
    assert downloaded(hf_here) == ["tiny-Q4_K_M.gguf"]
