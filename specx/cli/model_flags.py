"""The model options `specx run` and `specx serve` share, defined once (each: its flag, help and completion)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from .completion import complete_drafter, complete_model

Model = Annotated[str, typer.Argument(help="A GGUF file, a Hugging Face model folder, a preset name (or preset file), or a Hub repo org/name[:quant][@revision].", autocompletion=complete_model)]
Drafter = Annotated[str, typer.Option("--drafter", "-d", help="auto (a model drafter that also copies from the context, else self+ngram on specx's own decoder, else ngram), none, ngram, self (the target drafts with some of its own layers), self-q2k (with a 2-bit copy of its own layers, built once and cached), a model (file/folder/preset), or MODEL+ngram (self+ngram too).", autocompletion=complete_drafter)]
DraftTokens = Annotated[int, typer.Option("--draft-tokens", "-k", help="Tokens drafted per round (0 = plain decoding); the most with --draft-policy auto, which drafts up to 16 unless -k is set.")]
DraftPolicy = Annotated[str, typer.Option("--draft-policy", help="auto (draft up to k while measured costs say it pays, each draft ending where the rest would likely be wasted; else plain decoding, re-probed), fixed (k every round), heuristic (+2 after a fully accepted round, -1 otherwise), confidence (up to k, stop when the drafter's top probability < --confidence).")]
Confidence = Annotated[float, typer.Option("--confidence", help="Threshold for --draft-policy confidence.")]
Tree = Annotated[int, typer.Option("--tree", help="Token trees: at most N drafted nodes per verification (several continuations checked in one forward; the lean decoder only), 0 = chains, -1 = as many as measured costs find nearly as cheap as the chain.")]
Dtype = Annotated[str, typer.Option(help="auto|float32|bfloat16|float16 (auto = float32 on CPU).")]
Quant = Annotated[str, typer.Option("--quant", help="Target weights: auto (as loaded where they fit, quantized only where they do not; a GGUF file on the CPU runs as the file holds it with int8 activations, q8), none (on a GGUF file: float32 activations, exact), q8; on CPU fp16, int8, int4; on a GPU int8, nf4, fp4 (bitsandbytes). Anything but none/auto is a faster, slightly different target (see docs/speed.md). A preset's GGUF variant by name (Q4_K_M, Q8_0, ...): without CUDA a preset takes Q4_K_M (or a smaller variant that fits) unasked.")]
MemBudget = Annotated[Optional[str], typer.Option("--mem-budget", help="Memory to plan for, e.g. gpu=6GiB,cpu=16GiB (unnamed ones are detected); see `specx plan`.")]
AllowDiskOffload = Annotated[bool, typer.Option("--allow-disk-offload", help="Let the plan keep weights on disk (slow) instead of refusing.")]
MoeOffload = Annotated[bool, typer.Option("--moe-offload", help="Keep MoE experts in CPU memory behind a cache on the compute device (on by default when they do not fit).")]
DraftDtype = Annotated[Optional[str], typer.Option("--draft-dtype", help="Drafter dtype (default: --dtype).")]
DraftQuant = Annotated[str, typer.Option("--draft-quant", help="Drafter weights on CPU: auto (a GGUF or safetensors drafter on specx's decoder: its layers wider than 4.5 bits re-encoded to Q4_0 in memory, int8 activations, q4; else int8dyn where available), q8 (the file's blocks, int8 activations), none, fp16, int8, int4, int8dyn (int8 weights and activations; drafters only). Never changes the output.")]
DraftVocab = Annotated[Optional[int], typer.Option("--draft-vocab", help="Drafter scores only the N most frequent tokens and the context's (VocabTrim; default on specx's decoder 32768 or a third of a smaller vocabulary, else all; 0 = all). Never changes the output.")]
MaxTokens = Annotated[int, typer.Option("--max-tokens", "-n", help="Most new tokens (never past the context).")]
