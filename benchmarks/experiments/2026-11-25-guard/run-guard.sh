set -euo pipefail
cd "$(dirname "$0")/../../.."   # the repository root; SPECX_HOME: a fresh one
# run after run-fp16.sh fbgemm with the same SPECX_HOME (it holds the tuned record)
M=$HOME/.cache/specx-fixture-models; T=$M/qwen2.5-coder-1.5b.gguf; D=$M/qwen2.5-coder-0.5b.gguf
specx bench "$T" --quant fp16 --prompts benchmarks/data/heldout.toml -n 64 -r 5 -c tuned \
  -c drafter=$D,k=8,policy=confidence,confidence=0.7 \
  --json ${OUT:-/tmp/out}/guard.json > ${OUT:-/tmp/out}/guard.txt 2> ${OUT:-/tmp/out}/guard.log
