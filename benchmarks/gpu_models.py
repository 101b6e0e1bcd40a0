"""Random-weight model folders built from real configs, for GPU speed checks without real weights.

    python benchmarks/gpu_models.py OUT --tokenizer TOKENIZER_DIR \
        --target target.config.json --drafter drafter.config.json [--truncate 4] [--device cuda]

Writes OUT/target, OUT/drafter and OUT/target-first<N> (the target's first N layers with its own
embeddings and output layer: a self-drafter whose agreement with the target is measured, not assumed),
each as bfloat16 safetensors with the tokenizer. The end-of-sequence rows of every output layer are
zeroed, so a random model never ends a run early and every row decodes the same number of tokens.
Timings on such models are real (the shapes are the real models'); acceptance rates are not those of
trained models.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def build(config_path: Path, out: Path, tokenizer: Path, device: str, seed: int, keep_layers: int | None = None):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = json.loads(config_path.read_text())
    raw.pop("_name_or_path", None)
    config = AutoConfig.for_model(**raw)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    eos = config.eos_token_id if isinstance(config.eos_token_id, list) else [config.eos_token_id]
    ends = set(eos) | {i for i in (151643, 151645) if i < config.vocab_size}   # Qwen's two end tokens
    with torch.no_grad():
        for i in ends:
            model.lm_head.weight[i] = 0.0
    save(model, out, tokenizer)
    if keep_layers:
        model.model.layers = model.model.layers[:keep_layers]
        short = model.config.to_dict()
        short["num_hidden_layers"] = keep_layers
        if short.get("layer_types"):
            short["layer_types"] = short["layer_types"][:keep_layers]
        model.config = AutoConfig.for_model(**short)
        save(model, out.parent / f"{out.name}-first{keep_layers}", tokenizer)
    del model


def save(model, out: Path, tokenizer: Path) -> None:
    model.save_pretrained(out, safe_serialization=True)
    for f in tokenizer.iterdir():
        shutil.copy(f, out / f.name)
    size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    print(f"{out}: {model.config.num_hidden_layers} layers, {size / 2**30:.2f} GiB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tokenizer", type=Path, required=True)
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--drafter", type=Path)
    ap.add_argument("--truncate", type=int, default=4)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    build(args.target, args.out / "target", args.tokenizer, args.device, 0, args.truncate)
    if args.drafter:
        build(args.drafter, args.out / "drafter", args.tokenizer, args.device, 1)


if __name__ == "__main__":
    main()
