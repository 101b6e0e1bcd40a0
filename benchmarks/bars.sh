#!/usr/bin/env bash
# The issue-7 benchmark bars on the fixture Qwen pair (CPU): tune, then the fastest exact precision
# (fp16 target weights) and float32 against transformers' assisted generation. Greedy, 5 alternating
# repeats, held-out prompts (the second of each bundled category; tune calibrates on the first).
# Usage: bash benchmarks/bars.sh OUT_DIR   (about 90 minutes on the 2-core AVX2 dev machine, 49 on the AVX-512 one
# before the hf-stock rows; FP16_ONLY=1: ~60 and ~35; FP32_ONLY=1: the float32 half, ~35 on the AVX-512 one)
set -euo pipefail
out=${1:?output folder}; mkdir -p "$out"
models=${SPECX_FIXTURE_MODELS:-$HOME/.cache/specx-fixture-models}
T=$models/qwen2.5-coder-1.5b.gguf; D=$models/qwen2.5-coder-0.5b.gguf
here=$(dirname "$0"); prompts=$here/data/heldout.toml   # the held-out prompts, one canonical copy
python "$here/heldout.py" | cmp -s - "$prompts" || {
  echo "$prompts is stale: python $here/heldout.py > $prompts" >&2; exit 1; }
if [ -z "${FP32_ONLY:-}" ]; then   # FP32_ONLY=1: the float32 half alone (no tune, no fp16 rows)
specx tune "$T" -d "$D" --quant fp16 -n 48 -r 1 > "$out/tune.txt" 2> "$out/tune.log"
specx bench "$T" --quant fp16 --prompts "$prompts" -n 64 -r 5 -c tuned \
  -c drafter=$D,k=3 -c drafter=$D,k=4 -c drafter=$D,k=4,policy=heuristic \
  -c drafter=$D,k=4,policy=confidence -c drafter=$D,k=8,policy=confidence -c drafter=$D+ngram,policy=auto -c drafter=ngram,policy=auto \
  --json "$out/fp16.json" > "$out/fp16.txt" 2> "$out/fp16.log"
fi
[ -n "${FP16_ONLY:-}" ] && exit 0   # FP16_ONLY=1: the float32 half is unchanged by a half-float kernel change
specx bench "$T" --prompts "$prompts" -n 48 -r 5 \
  -c drafter=$D+ngram,policy=auto -c drafter=ngram,policy=auto --peer hf-assisted --peer hf-stock-generate --peer hf-stock-assisted \
  --json "$out/fp32.json" > "$out/fp32.txt" 2> "$out/fp32.log"
