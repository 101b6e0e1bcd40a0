#!/usr/bin/env python3
"""Write a Llama-3.1-8B-shaped Q4_K_M GGUF with random but valid blocks: what an 8B file costs specx to load
and decode, next to llama.cpp on the same file, without downloading one.

    python benchmarks/gguf_8b.py OUT.gguf [--layers 32]

Shapes are the real config's (hidden 4096, 32 layers, 32 heads, 8 KV heads, MLP 14336, vocab 128256, rope
theta 500000 with llama3 scaling factors in rope_freqs.weight, context 131072). Types follow llama.cpp's
Q4_K_M recipe: Q4_K matrices, Q6_K for the output layer and for attn_v and ffn_down in half the layers
(the first and last eighth and every third layer between), F32 norms. Block scales are finite halves drawn
around 2^-7 (random bytes would give NaN and infinity); quants are uniform random bytes. The vocabulary is
synthetic (byte tokens, then fillers), so the text is noise: the file is for speed and memory only.
Writes tensor by tensor (never more than one in memory): about 4.9 GB, a minute on a dev machine.
"""
from __future__ import annotations

import argparse

import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, VOCAB, CONTEXT = 4096, 32, 32, 8, 14336, 128256, 131072
THETA = 500000.0


def q6_layer(i: int, layers: int) -> bool:
    """llama.cpp's use_more_bits(): the first and last eighth of the layers, and every third between."""
    return i < layers // 8 or i >= 7 * layers // 8 or (i - layers // 8) % 3 == 2


def random_blocks(qtype, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """rows × cols weights of a K-quant type as raw blocks: random quants, finite scales."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T

    per, size = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, (rows * cols // per, size), dtype=np.uint8)
    scales = (rng.uniform(0.5, 1.5, (blocks.shape[0], 2)) * 2.0 ** -7).astype(np.float16).view(np.uint8)
    if qtype == T.Q4_K:        # half d, half dmin first
        blocks[:, 0:4] = scales.reshape(-1, 4)
    elif qtype == T.Q6_K:      # half d last
        blocks[:, size - 2:] = scales[:, :2]
    return blocks.reshape(rows, -1)


def llama3_freqs(head_dim: int) -> np.ndarray:
    """Llama 3.1's rope scaling as llama.cpp's converter stores it (rope_freqs.weight: per-frequency divisors),
    computed by the decoder's own rule from the real config's rope_scaling."""
    from specx.decoder.config import llama3_factors

    params = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    return np.array(llama3_factors(THETA, head_dim, params), dtype=np.float32)


def main() -> None:
    import gguf
    from gguf import GGMLQuantizationType as T

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=LAYERS, help="fewer for a quick check")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    head_dim = HIDDEN // HEADS
    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("Llama-3.1-8B-shaped random Q4_K_M")
    w.add_block_count(args.layers)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(THETA)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_file_type(15)   # LLAMA_FTYPE_MOSTLY_Q4_K_M
    tokens = [f"<0x{i:02X}>" for i in range(256)] + [f"t{i}" for i in range(VOCAB - 258)] + ["<s>", "</s>"]
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * VOCAB)
    w.add_token_types([6] * 256 + [1] * (VOCAB - 258) + [3, 3])
    w.add_bos_token_id(VOCAB - 2)
    w.add_eos_token_id(VOCAB - 1)

    plan = [("token_embd.weight", T.Q4_K, VOCAB, HIDDEN), ("rope_freqs.weight", T.F32, 1, head_dim // 2)]
    for i in range(args.layers):
        more = T.Q6_K if q6_layer(i, args.layers) else T.Q4_K
        plan += [(f"blk.{i}.attn_norm.weight", T.F32, 1, HIDDEN), (f"blk.{i}.attn_q.weight", T.Q4_K, HIDDEN, HIDDEN),
                 (f"blk.{i}.attn_k.weight", T.Q4_K, KV_HEADS * head_dim, HIDDEN),
                 (f"blk.{i}.attn_v.weight", more, KV_HEADS * head_dim, HIDDEN),
                 (f"blk.{i}.attn_output.weight", T.Q4_K, HIDDEN, HIDDEN),
                 (f"blk.{i}.ffn_norm.weight", T.F32, 1, HIDDEN), (f"blk.{i}.ffn_gate.weight", T.Q4_K, FFN, HIDDEN),
                 (f"blk.{i}.ffn_up.weight", T.Q4_K, FFN, HIDDEN), (f"blk.{i}.ffn_down.weight", more, HIDDEN, FFN)]
    plan += [("output_norm.weight", T.F32, 1, HIDDEN), ("output.weight", T.Q6_K, VOCAB, HIDDEN)]

    def make(name, qtype, rows, cols):
        if qtype == T.F32:
            return llama3_freqs(head_dim) if name == "rope_freqs.weight" else np.ones(cols, dtype=np.float32)
        return random_blocks(qtype, rows, cols, rng)

    for name, qtype, rows, cols in plan:   # the table first (shapes and sizes), the data streamed after
        per, size = gguf.GGML_QUANT_SIZES[qtype]
        nbytes = rows * cols * 4 if qtype == T.F32 else rows * cols // per * size
        if qtype == T.F32:
            w.add_tensor_info(name, [rows, cols] if rows > 1 else [cols], np.dtype(np.float32), nbytes, raw_dtype=qtype)
        else:   # the writer takes a quantized tensor's shape in bytes per row
            w.add_tensor_info(name, [rows, cols // per * size], np.dtype(np.uint8), nbytes, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, qtype, rows, cols in plan:
        w.write_tensor_data(make(name, qtype, rows, cols))
    w.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
