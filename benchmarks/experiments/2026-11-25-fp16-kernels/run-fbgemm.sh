set -euo pipefail
M=$HOME/.cache/specx-fixture-models; T=$M/qwen2.5-coder-1.5b.gguf; D=$M/qwen2.5-coder-0.5b.gguf
out=/tmp/out10
specx bench "$T" --quant fp16 --prompts "$out/heldout.toml" -n 64 -r 5 -c tuned \
  -c drafter=$D+ngram,policy=auto -c drafter=ngram,policy=auto \
  --json "$out/fp16f.json" > "$out/fp16f.txt" 2> "$out/fp16f.log"
