#!/usr/bin/env bash
# Issue-7 bars for the drafter rows (after bars.sh's tune/fixed-k rows): fp16 and float32 target
# weights, the model drafter that also copies from the context (MODEL+ngram, what --drafter auto
# loads), the n-gram drafter, and transformers' assisted generation. Greedy, 5 alternating repeats,
# held-out prompts. Usage: bash benchmarks/bars_drafters.sh OUT_DIR   (about 45 minutes on 2 cores)
set -euo pipefail
out=${1:?output folder}; mkdir -p "$out"
models=${SPECX_FIXTURE_MODELS:-$HOME/.cache/specx-fixture-models}
T=$models/qwen2.5-coder-1.5b.gguf; D=$models/qwen2.5-coder-0.5b.gguf
here=$(dirname "$0"); prompts=$here/data/heldout.toml   # the held-out prompts, one canonical copy
python "$here/heldout.py" | cmp -s - "$prompts" || {
  echo "$prompts is stale: python $here/heldout.py > $prompts" >&2; exit 1; }
# policy=auto without k: up to 16, what `specx run` does when -k is not set
specx bench "$T" --prompts "$prompts" -n 48 -r 5 \
  -c drafter=$D+ngram,policy=auto -c drafter=ngram,policy=auto \
  --peer hf-assisted --json "$out/fp32.json" > "$out/fp32.txt" 2> "$out/fp32.log"
specx bench "$T" --quant fp16 --prompts "$prompts" -n 64 -r 5 \
  -c drafter=$D+ngram,policy=auto -c drafter=ngram,policy=auto \
  --json "$out/fp16.json" > "$out/fp16.txt" 2> "$out/fp16.log"
