"""The dense decoder on a GGUF's blocks (decoder/dense.py with gpu/qmatmul.BlockMatrix): tiny files whose
matrices are Q4_K, Q6_K, Q8_0, Q5_0 and Q3_K (no planes: dense) blocks, as a Q4_K_M file mixes types. Off a GPU a
block matrix computes gguf's values in float32, so the decoder equals the dense float32 one bit for bit and the
CPU lean decoder within float noise; the engine's speculation on it equals plain decoding. On a GPU:
tests/gpu/test_qmatmul_gpu.py."""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch

import test_decoder_gguf
from test_decoder import ids, near, plain_and_ngram
from test_decoder_gguf import gguf_model, write_gguf
from specx.cpu.quant_ref import SCALES, random_weight
from specx.cpu.qweight import BLOCKS, dequantize
from specx.decoder.dense_lm import load
from specx.decoder.lm import load as load_lean
from specx.gpu.qmatmul import BlockMatrix

# cycled through the matrices (embedding, q, k, v, o, gate, up, down, …, head): every fused group mixes types
BLOCK_TYPES = ("Q4_K", "Q6_K", "Q8_0", "Q4_K", "Q5_0", "Q3_K", "Q6_K", "Q4_1")
WIDE = dict(hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, head_dim=64)


def blocks_like(data: np.ndarray, kind) -> np.ndarray:
    """Random valid blocks of `kind` whose values have the data's spread (gguf cannot quantize K types): the file
    holds a model of its own, which is all these tests compare specx's decoders on."""
    name = kind.name
    if name not in SCALES:
        return test_decoder_gguf.quantize(data, kind)
    rows, cols = data.shape
    rng = np.random.default_rng(rows * 7919 + cols)
    q = random_weight(name, rows, cols, rng, extreme=False)
    factor = float(data.std()) / max(float(dequantize(q).std()), 1e-30)
    raw = q.data.reshape(-1, BLOCKS[name][2]).copy()
    for off in SCALES[name]:
        half = raw[:, off:off + 2].copy().view(np.float16)
        raw[:, off:off + 2] = (half.astype(np.float32) * factor).astype(np.float16).view(np.uint8)
    return raw.reshape(rows, -1)


def block_gguf(path, family: str = "qwen2", types=BLOCK_TYPES):
    """A tiny GGUF (hidden 256, so K-quant rows are whole blocks) with its matrices in `types`, cycled."""
    model = gguf_model(family)
    cfg = type(model.config)(**{**model.config.to_dict(), **WIDE})
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            spread = 0.3 if "norm" in name else 1.5 / p.shape[-1] ** 0.5
            p.copy_(torch.randn_like(p) * spread + (1.0 if "norm" in name else 0.0))
    with mock.patch.object(test_decoder_gguf, "quantize", blocks_like):
        return write_gguf(model, family, path, matrix_types=types)


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def gguf(request, tmp_path_factory):
    return block_gguf(tmp_path_factory.mktemp(request.param) / f"{request.param}.gguf", request.param)


def test_block_matrices_keep_the_files_types(gguf):
    """Every matrix is a BlockMatrix whose parts keep their file types; Q3_K (no planes) runs dense; the
    kernels sentence names both."""
    lm = load(gguf, "cpu", "float32", blocks=True)
    w = lm.model.weights
    assert all(isinstance(m, BlockMatrix) for m in w.matrices())
    assert {"Q4_K", "Q6_K", "Q8_0", "Q5_0", "Q3_K", "Q4_1"} <= w.formats()
    assert any(isinstance(p, torch.Tensor) for m in w.matrices() for p in m.parts)   # the Q3_K parts
    assert "Q3_K dequantized once" in lm.kernels and "Q4_K" in lm.kernels
    assert lm.model.precision.endswith("blocks") and lm.model.weight_bytes == w.nbytes


def test_blocks_give_the_dense_float32_decoders_logits_bit_for_bit(gguf):
    """Off a GPU a block matrix is gguf's float32 values times x: the same logits as the decoder that
    dequantized the file once, through prefill, decode and a crop."""
    tokens = ids(3)
    out = []
    for blocks in (True, False):
        lm = load(gguf, "cpu", "float32", blocks=blocks)
        lm.reset()
        rows = [lm.forward(tokens[:20])] + [lm.forward([t]) for t in tokens[20:30]]
        lm.crop(24)
        rows.append(lm.forward(tokens[24:32]))
        out.append(torch.cat(rows))
    assert torch.equal(out[0], out[1])


def test_blocks_match_the_cpu_lean_decoder(gguf):
    """Within float noise of the lean CPU decoder (exact float32 activations) on the same file."""
    lean = load_lean(gguf, mode="f32")
    lm = load(gguf, "cpu", "float32", blocks=True)
    tokens = ids(4)
    lean.reset(), lm.reset()
    near(torch.cat([lm.forward(tokens[:25])] + [lm.forward([t]) for t in tokens[25:]]),
         torch.cat([lean.forward(tokens[:25])] + [lean.forward([t]) for t in tokens[25:]]))


def test_speculation_on_blocks_equals_plain_decoding(gguf):
    plain, drafted = plain_and_ngram(load(gguf, "cpu", "float32", blocks=True))
    assert plain == drafted and len(plain) == 24


def test_a_trimmed_drafter_head_keeps_its_blocks(gguf):
    """draft_vocab keeps a drafter's first rows of the output layer, still blocks, its logits those rows'."""
    full = load(gguf, "cpu", "float32", blocks=True)
    trimmed = load(gguf, "cpu", "float32", blocks=True, draft_vocab=40)
    assert isinstance(trimmed.model.weights.output, BlockMatrix) and trimmed.model.weights.output.rows == 40
    tokens = ids(5, 12)
    full.reset(), trimmed.reset()
    keep = torch.as_tensor(trimmed.trim)
    near(trimmed.forward(tokens), full.forward(tokens)[:, keep])
