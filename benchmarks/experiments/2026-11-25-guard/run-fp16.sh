# bash run-fp16.sh rowgemm|fbgemm — the fp16 bench of one kernel (a fresh SPECX_HOME; OUT: where results go)
set -euo pipefail
kernel=${1:?rowgemm or fbgemm}
cd "$(dirname "$0")/../../.."   # the repository root
M=$HOME/.cache/specx-fixture-models; T=$M/qwen2.5-coder-1.5b.gguf; D=$M/qwen2.5-coder-0.5b.gguf
out=${OUT:-/tmp/out}; mkdir -p "$out"
python - <<PY
from specx.runtime import tuned
from specx.runtime.fastpath import choose
from specx.runtime.tuned import TunedSetting
key = tuned.make_key("$T", "$D", "auto", 0.0, choose("fp16", "target"))
tuned.record(key, TunedSetting("$D", 8, "confidence", 0.7, tok_s=4.08, baseline_tok_s=3.28, speedup=1.15,
             tuned_at="2026-11-25T00:00:00Z"), [], {"target": "$T", "drafter": "$D"})
print(key)
PY
env $([ "$kernel" = rowgemm ] && echo SPECX_KERNELS=rowgemm) specx bench "$T" --quant fp16 \
  --prompts benchmarks/data/heldout.toml -n 64 -r 5 -c tuned \
  -c drafter=$D+ngram,policy=auto -c drafter=ngram,policy=auto \
  --json "$out/fp16-$kernel.json" > "$out/fp16-$kernel.txt" 2> "$out/fp16-$kernel.log"
