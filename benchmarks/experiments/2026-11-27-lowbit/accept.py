"""Offline (issue 36): teacher-forced acceptance of a lower-bit copy of Qwen2.5-Coder-1.5B's own layers as its drafter.

python accept.py [FORMAT ...]   (FORMATS below; default all). The target's greedy answers (128 tokens, 10 bench
prompts; --quant none: float32 activations, as the F32 drafter runs) are computed once into answers.json; per format, every layer matrix is fake-quantized (fakequant.py)
and held as float32, a second Decoder runs prompt + answer teacher-forced, and per answer token we record whether
its argmax is the target's token (over the drafter's trimmed head: the first 32,768 ids + specials + the
context's ids, as vocabtrim.DraftHead; and over all ids) and its softmax maximum. Results: accept.json.gz."""
import gc, gzip, json, sys, time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

import fakequant
from specx.cpu.qweight import BLOCKS, QWeight, dequantize
from specx.decoder import lm as lean, vocabtrim
from specx.decoder.model import Decoder

HERE = Path(__file__).parent
PATH = Path("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser()
FORMATS = {"F32": ("F32", "F32"),  # (attention's format, the MLP's): F32 = the target's values (plumbing check)
           "Q4_0": ("Q4_0", "Q4_0"), "Q3_K": ("Q3_K", "Q3_K"), "Q2_K": ("Q2_K", "Q2_K"),
           "Q4_0 attn + Q3_K mlp": ("Q4_0", "Q3_K")}
SKIPPED = (7, 9, 11, 13, 15, 17, 19)   # the self-draft's layers left out in 2026-11-26-self-gate (21 of 28 kept)
CHUNK = 32


def answers(files):
    out = HERE / "answers.json"
    if not out.exists():
        sys.path.insert(0, str(HERE.parents[1]))
        from specx import load
        from specx.api import prompt_ids
        from specx.bench import suite
        from self_spec import run
        plain = load(str(PATH), "none", quant="none")   # float32 activations: exact, as the drafter here
        rows = [{"category": p.category, "name": p.name, "prompt": prompt_ids(files.tokenizer, p.text),
                 "answer": run(plain, p.text, 128)[0]} for p in suite.calibration(suite.bundled(), 2)]
        out.write_text(json.dumps(rows))
        del plain
    return json.loads(out.read_text())


def f32(a):
    return QWeight(BLOCKS["F32"][0], np.ascontiguousarray(a, np.float32).view(np.uint8).reshape(-1), *a.shape)


def lowbit(weights, attn, mlp):
    """The weights with every layer matrix fake-quantized (attention's qkv/o to `attn`, the MLP's to `mlp`)."""
    def q(ws, fmt):
        return [f32(fakequant.fake(dequantize(w), fmt)) for w in ws]
    return replace(weights, layers=[replace(l, qkv=q(l.qkv, attn), o=q(l.o, attn), gate_up=q(l.gate_up, mlp),
                                            down=q(l.down, mlp)) for l in weights.layers])


def teacher_forced(dec, prompt, answer, base):
    """Per answer token: (hit over the trimmed head, hit over all ids, the trimmed head's softmax max)."""
    cache, seq = dec.new_cache(), prompt + answer
    dec.forward(cache, seq[:len(prompt) - 1], last_only=True)
    logits = torch.cat([dec.forward(cache, seq[s:min(s + CHUNK, len(seq) - 1)])
                        for s in range(len(prompt) - 1, len(seq) - 1, CHUNK)])
    allowed = base.clone()
    allowed[torch.tensor(prompt)] = True
    out = []
    for row, tok in zip(logits, answer):
        p = torch.softmax(row.masked_fill(~allowed, float("-inf")), -1)
        conf, idx = p.max(-1)
        out.append((int(idx) == tok, int(row.argmax()) == tok, float(conf)))
        allowed[tok] = True
    return out


def nbytes(weights, layers, per_value=None):
    ms = [w for i in layers for w in (*weights.layers[i].qkv, *weights.layers[i].o,
                                      *weights.layers[i].gate_up, *weights.layers[i].down)]
    return sum(w.nbytes if per_value is None else w.rows * w.cols * per_value(w) for w in ms)


def main(names):
    files = lean.read(PATH)
    cfg, w = files.config, files.weights
    usable = min(len(files.tokenizer), cfg.vocab_size)
    keep = vocabtrim.keep_ids(files.tokenizer, usable, vocabtrim.DEFAULT_KEEP)
    base = torch.zeros(cfg.vocab_size, dtype=torch.bool)
    base[keep] = True
    rows = answers(files)
    out_path = HERE / "accept.json.gz"
    res = json.load(gzip.open(out_path)) if out_path.exists() else {}
    every = range(cfg.num_hidden_layers)
    res["bytes"] = {"layers": nbytes(w, every), "head": w.output.nbytes, "trimmed head": len(keep) * (w.output.nbytes // w.output.rows),
                    "skip layers": nbytes(w, [i for i in every if i not in SKIPPED])}
    for name in names:
        attn, mlp = FORMATS[name]
        attn_ids = {id(m) for l in w.layers for m in (*l.qkv, *l.o)}
        res["bytes"][name] = nbytes(w, every, lambda m: fakequant.BYTES_PER_VALUE[attn if id(m) in attn_ids else mlp])
        t = time.time()
        dec = Decoder(cfg, lowbit(w, attn, mlp), context=4096)
        print(name, f"quantized in {time.time() - t:.0f}s", flush=True)
        res[name] = []
        for r in rows:
            hits = teacher_forced(dec, r["prompt"], r["answer"], base)
            res[name].append({"category": r["category"], "name": r["name"], "hits": [h[0] for h in hits],
                              "hits_full": [h[1] for h in hits], "conf": [h[2] for h in hits]})
            print(f"  {r['category']:12s} {len(hits):4d} tokens, acceptance {np.mean([h[0] for h in hits]):.3f}", flush=True)
        del dec
        gc.collect()
        with gzip.open(out_path, "wt") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main(sys.argv[1:] or list(FORMATS))
