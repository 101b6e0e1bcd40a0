set -euo pipefail
M=$HOME/.cache/specx-fixture-models; T=$M/qwen2.5-coder-1.5b.gguf; D=$M/qwen2.5-coder-0.5b.gguf
out=/tmp/out12
cp /tmp/out10/heldout.toml $out/
SPECX_KERNELS=rowgemm specx bench "$T" --quant fp16 --prompts "$out/heldout.toml" -n 64 -r 5 \
  -c drafter=$D,k=8,policy=confidence,confidence=0.7 -c drafter=$D,k=8,policy=confidence,confidence=0.5 \
  --json "$out/pick.json" > "$out/pick.txt" 2> "$out/pick.log"
