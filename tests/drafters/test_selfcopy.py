"""`--drafter self-q2k` (drafters/selfcopy.py, copycache.py): the Q2_K copy of the target's own layers is
the reference quantizer's bytes of the target's decoded rows, built once per model file and read back from
its cache; a cache that is not this model's or not whole is rebuilt; the spec names no file or preset."""
from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest

from specx.cpu import quant
from specx.cpu.lowbit_ref import quantize_q2_k
from specx.cpu.quant_ref import random_weight
from specx.cpu.qweight import dequantize
from specx.drafters import copycache

needs_kernels = pytest.mark.skipif(not quant.available(), reason="specx's GGUF kernels are not built here")


@pytest.fixture
def model(tmp_path, monkeypatch):
    """A stand-in model file and the weights of two layers (Q4_K, Q6_K, F32 rows) it is taken to hold."""
    monkeypatch.setenv("SPECX_COPY_CACHE", str(tmp_path / "copies"))
    rng = np.random.default_rng(0)
    def layer():
        w = lambda name, rows: random_weight(name, rows, 512, rng, extreme=False)   # noqa: E731
        return SimpleNamespace(qkv=[w("Q4_K", 8), w("Q4_K", 4), w("Q6_K", 4)], o=[w("F32", 8)],
                               gate_up=[w("Q4_K", 16), w("Q4_K", 16)], down=[w("Q6_K", 8)])
    path = tmp_path / "model.gguf"
    path.write_bytes(b"not read: only its identity counts")
    return path, SimpleNamespace(layers=[layer(), layer()])


@needs_kernels
def test_the_copy_is_the_reference_quantizers_bytes_of_the_decoded_rows(model):
    """Each matrix of the copy equals lowbit_ref's Q2_K of gguf's dequantization of the target's matrix."""
    path, weights = model
    copies, built = copycache.load_or_build(path, weights)
    assert built
    for source, copy in zip(copycache.matrices(weights), copies, strict=True):
        assert (copy.rows, copy.cols, copy.name) == (source.rows, source.cols, "Q2_K")
        assert np.array_equal(copy.data, quantize_q2_k(dequantize(source)))


@needs_kernels
def test_a_second_load_reads_the_cache_and_a_changed_model_file_builds_anew(model):
    """Same file: the cached bytes, not built again; the file touched (another mtime): a new copy."""
    path, weights = model
    first, _ = copycache.load_or_build(path, weights)
    again, built = copycache.load_or_build(path, weights)
    assert not built and all(np.array_equal(a.data, b.data) for a, b in zip(first, again))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert copycache.load_or_build(path, weights)[1]


@needs_kernels
@pytest.mark.parametrize("damage", ["truncated", "extended", "foreign header"])
def test_a_damaged_cache_file_is_rebuilt_never_read(model, damage):
    """A file cut short, grown, or whose header is not this model's is built again, and said."""
    path, weights = model
    copies = [m.data.copy() for m in copycache.load_or_build(path, weights)[0]]
    file = copycache.cache_file(path)
    data = file.read_bytes()
    file.write_bytes(data[:-1] if damage == "truncated" else data + b"\0" if damage == "extended"
                     else data.replace(b'"format": 1', b'"format": 0', 1))
    said = []
    again, built = copycache.load_or_build(path, weights, said.append)
    assert built and "stale or damaged" in said[0]
    assert all(np.array_equal(a, b.data) for a, b in zip(copies, again, strict=True))
    assert file.read_bytes() == data


def test_self_q2k_is_a_special_drafter_name_with_or_without_copies():
    """`self-q2k[+ngram]` splits like MODEL+ngram and names no model file (api.prepare resolves no source)."""
    from specx.policy.tuned import SELF_COPY, SPECIAL, split_hybrid

    assert split_hybrid("self-q2k+ngram") == (SELF_COPY, True)
    assert split_hybrid("self-q2k") == (SELF_COPY, False)
    assert SELF_COPY in SPECIAL


def test_a_target_off_the_lean_decoder_is_refused_with_a_hint():
    """transformers' model has no layer matrices in kernel formats: a UsageError that names other drafters."""
    from specx.drafters import selfcopy
    from specx.errors import UsageError

    with pytest.raises(UsageError) as e:
        selfcopy.check_target(SimpleNamespace(name="m", model=SimpleNamespace()))
    assert "--drafter self" in e.value.hint


@pytest.mark.slow
def test_self_q2k_with_copies_decodes_the_targets_greedy_output_on_a_real_model(tmp_path, monkeypatch):
    """Qwen2.5-Coder-1.5B Q4_K_M drafting with its own Q2_K copy (+ copies from the context), greedy, `auto`:
    every answer is plain decoding's token for token."""
    import specx
    from conftest import fixture_model
    from specx.options import RunOptions

    path = fixture_model("qwen2.5-coder-1.5b")
    monkeypatch.setenv("SPECX_COPY_CACHE", str(tmp_path / "copies"))
    plain, copy = specx.load(str(path), "none"), specx.load(str(path), "self-q2k+ngram")
    assert copy.explanation.startswith("drafter: self-q2k+ngram (a 2-bit copy of ")
    run = RunOptions(max_tokens=24)
    for prompt in ("def fibonacci(n):", "Repeat: the cat sat on the mat, the cat sat on the"):
        assert _text(copy, prompt, run) == _text(plain, prompt, run)


def _text(pair, prompt, run):
    from specx.api import generate

    return generate(pair, prompt, run)


@pytest.mark.slow
def test_the_memory_plan_prices_the_copy_at_its_bytes_and_its_kv_cache(tmp_path):
    """`self_copy`: speculation grows by exactly the copy's bytes (those of the Q2_K matrices it would hold)
    and its KV cache at the planned context, and a reason says so."""
    import specx
    from conftest import fixture_model
    from specx.memory import plan_for
    from specx.memory.variant import Ask, source_for

    path = fixture_model("qwen2.5-coder-1.5b")
    source = source_for(str(path), Ask("auto", "auto", None))
    without = plan_for(source, k=4, budgets="cpu=16GiB", self_draft=True)
    with_copy = plan_for(source, k=4, budgets="cpu=16GiB", self_draft=True, self_copy=True)
    weights = copycache.matrices(specx.load(str(path), "none").target.model.weights)
    copy = copycache.copy_bytes([(m.rows, m.cols) for m in weights])
    kv = with_copy.context * with_copy.target.kv_bytes_per_token
    assert with_copy.speculation_bytes - without.speculation_bytes == copy + kv
    assert any("2-bit copy" in r for r in with_copy.reasons)
