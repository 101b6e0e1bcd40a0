#!/usr/bin/env bash
# GPU checks on a lent CUDA machine (no Hub, no real weights): the `gpu` tests, the fast suite with CUDA
# visible, `specx run` smoke runs (bf16, bitsandbytes nf4/int8, a GPU budget that forces CPU offload) and
# a `specx bench` of random-weight models built from the fixture Qwen pair's configs.
#   .whl/  wheels the machine lacks (gguf, platformdirs, jsonschema …) or holds in another version (transformers)
#   .bnb/  bitsandbytes' wheel (44 MB: carried only by the steps that use it: smoke, lean, budgets)
#   .gpu/  tokenizer/ (the fixture Qwen tokenizer), target.config.json, drafter.config.json, prompts5.json
# All are made on the dev machine by the step `prepare` (.gitignore lists them; the device run carries them:
# carry [".whl", ".gpu"], plus ".bnb" where bitsandbytes is used; 64 MiB travel in all).
# Usage: OUT=dir bash benchmarks/gpu_check.sh [steps…]   (steps: prepare, here; there: setup tests suite models smoke suite-wait bench lean spec blocks gguf8b budgets)
# A GGUF's blocks on the GPU (issue 38): OUT=dir SWEEP=1 bash benchmarks/gpu_check.sh setup suite blocks suite-wait
#   (≤ 8 min; carry [".whl", ".gpu"])
# An 8B-shaped Q4_K_M GGUF under consumer budgets: OUT=dir bash benchmarks/gpu_check.sh setup gguf8b  (≤ 5 min)
# The dense decoder with CUDA graphs alone (issue 38): OUT=dir bash benchmarks/gpu_check.sh setup lean  (≤ 6 min)
# Self-drafting and token trees on the CUDA decoder (issue 36): OUT=dir bash benchmarks/gpu_check.sh setup spec  (≤ 6 min)
# Consumer budgets alone (issue 38, item 4): OUT=dir bash benchmarks/gpu_check.sh setup budgets  (≤ 6 min)
set -u
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
M=/tmp/gpu-models
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error HF_HUB_DISABLE_PROGRESS_BARS=1
export SPECX_HOME=/tmp/specx-home
steps=${*:-setup tests suite models smoke suite-wait bench}
t0=$(date +%s)
say() { echo; echo "=== [$(( $(date +%s) - t0 ))s] $*"; }

for step in $steps; do case $step in
prepare)   # on the dev machine, with the fixture models fetched
  # transformers as here: specx reads its GGUF internals, which moved between minor versions (the image's may be older)
  tv=$(python -c "import transformers; print(transformers.__version__)")
  for pair in ".whl platformdirs gguf jsonschema jsonschema-specifications referencing rpds-py transformers==$tv" ".bnb bitsandbytes"; do
    set -- $pair
    dest=$1; shift
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dest" "$@"
  done
  python - <<'EOF'
import json, os, tomllib
from pathlib import Path
from transformers import AutoConfig, AutoTokenizer
fx, out = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser(), Path(".gpu")
AutoTokenizer.from_pretrained(fx, gguf_file="qwen2.5-coder-1.5b.gguf").save_pretrained(out / "tokenizer")
for role, name in (("target", "qwen2.5-coder-1.5b"), ("drafter", "qwen2.5-coder-0.5b")):
    (out / f"{role}.config.json").write_text(AutoConfig.from_pretrained(fx, gguf_file=f"{name}.gguf").to_json_string())
first = {}
for p in tomllib.load(open("specx/bench/prompts.toml", "rb"))["prompt"]:
    first.setdefault(p["category"], p)
(out / "prompts5.json").write_text(json.dumps(list(first.values())))
EOF
  ;;
setup)
  say setup
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade .whl/*.whl $(ls .bnb/*.whl 2>/dev/null)
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, accelerate, triton; print('torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__, 'triton', triton.__version__)"
  specx env ;;
tests)
  say gpu tests
  python3 -m pytest -q -m gpu -p no:cacheprovider -n ${GPU_N:-6} tests 2>&1 | tail -15 ;;   # before `suite`, not beside it
suite)   # in the background: its summary is printed by the step `suite-wait`
  say "fast suite on this machine (below the gpu tier it runs on the CPU), started"
  (timeout ${SUITE_S:-300} python3 -m pytest -v -rfE -m "not slow and not gpu" -p no:cacheprovider -n ${SUITE_N:-8} tests \
      > "$OUT/suite.txt" 2>&1; echo "suite rc=$?" >> "$OUT/suite.txt") & ;;
suite-wait)
  say fast suite: waiting; wait
  grep -E "FAILED|ERROR|passed|failed|suite rc" "$OUT/suite.txt" | grep -v " PASSED " | cut -c1-220 | tail -70 ;;
models)
  say build random-weight models
  python3 benchmarks/gpu_models.py $M --tokenizer .gpu/tokenizer --target .gpu/target.config.json \
      --drafter .gpu/drafter.config.json --truncate 4 2>&1 | grep -v Writing ;;
smoke)
  P="def merge_intervals(intervals):"
  for args in "-d none" "-d $M/drafter" "-d $M/target-first4" "-d ngram" "-d none --quant nf4" \
              "-d $M/target-first4 --quant nf4" "-d none --quant int8" "-d $M/target-first4 --quant int8" \
              "-d none --mem-budget gpu=2GiB,cpu=32GiB" "-d $M/target-first4 --mem-budget gpu=2GiB,cpu=32GiB"; do
    say "specx run $args"
    SPECX_DEBUG=1 timeout 120 specx run $M/target $args -n 48 --raw --json "$P" > "$OUT/run.jsonl" 2> "$OUT/run.err"
    echo "rc=$?"; grep -v "^Loading" "$OUT/run.err" | tail -${ERR_LINES:-4}
    python3 - "$OUT/run.jsonl" <<'EOF'
import json, sys
lines = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
ids = [t for e in lines if e.get("type") == "round" for t in e["token_ids"]]
s = lines[-1].get("stats", {}) if lines else {}
print("tokens", ids[:48])
print({k: s.get(k) for k in ("decode_tok_s", "acceptance_rate", "mean_drafted", "placement", "gpu_peak_bytes", "k", "draft_policy")})
EOF
  done
  say plan
  specx plan $M/target --drafter $M/drafter --mem-budget gpu=2GiB,cpu=32GiB 2>&1 | tail -25 ;;
bench)
  say bench
  timeout ${BENCH_S:-300} specx bench $M/target --prompts .gpu/prompts5.json -n ${BENCH_N:-64} -r ${BENCH_R:-3} \
      -c drafter=$M/drafter,policy=auto -c drafter=$M/target-first4,policy=auto -c drafter=$M/target-first4,k=4,policy=fixed \
      -c drafter=ngram,policy=auto --peer hf-stock-assisted --json "$OUT/bench.json" 2>&1 | tail -60 ;;
lean)   # the dense decoder with CUDA graphs: random weights made on the GPU, report + $OUT/gpu_lean.json
  say "lean: gpu tests of the dense decoder"   # first: the benchmark's summary table ends the output
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/decoder/test_dense_gpu.py 2>&1 | tail -8
  say "lean: benchmarks/gpu_lean.py"
  timeout ${LEAN_S:-360} python3 benchmarks/gpu_lean.py --budget-s ${LEAN_BUDGET_S:-330} --json "$OUT/gpu_lean.json" 2>&1 \
      | grep -v 'Warning\|USDT' | tail -60 ;;
spec)   # self-drafting and token trees on the CUDA decoder (issue 36): gpu tests, then report + $OUT/gpu_spec.json
  say "spec: gpu tests of the dense decoder (graphs, self, trees)"
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/decoder/test_dense_gpu.py 2>&1 | tail -8
  say "spec: benchmarks/gpu_spec.py"
  timeout $(( ${SPEC_S:-150} + 60 )) python3 benchmarks/gpu_spec.py --budget-s ${SPEC_S:-150} --json "$OUT/gpu_spec.json" 2>&1 \
      | grep -v 'Warning\|USDT' | tail -45 ;;
blocks)   # a GGUF's blocks on the GPU (issue 38, items 2-3): the gpu tests of the block kernels, then their benchmark
  say "blocks: gpu tests of the block kernels and the decoder on them"
  timeout ${BLOCK_TESTS_S:-200} python3 -m pytest -q -m gpu -p no:cacheprovider -n 6 tests/gpu tests/decoder/test_dense_gpu.py \
      2>&1 | tail -15
  say "blocks: benchmarks/gpu_blocks.py"
  timeout $(( ${BLOCKS_S:-200} + 40 )) python3 benchmarks/gpu_blocks.py --budget-s ${BLOCKS_S:-200} ${SWEEP:+--sweep} \
      --json "$OUT/gpu_blocks.json" 2>&1 | grep -v 'Warning\|USDT' | tail -${BLOCKS_LINES:-45} ;;
gguf8b)   # an 8B-shaped Q4_K_M GGUF's blocks under gpu=4/6/8/12GiB: plan vs peak, tok/s plain and self-drafting
  say "gguf8b: benchmarks/gpu_budgets.py --gguf"
  timeout $(( ${GGUF_S:-200} + 60 )) python3 benchmarks/gpu_budgets.py --gguf /tmp/8b.gguf --budget-s ${GGUF_S:-200} \
      --json "$OUT/gpu_gguf8b.json" 2>&1 | grep -v 'Warning\|USDT' | tail -30 ;;
budgets)   # 8B-shaped target, 1B-shaped drafter under gpu=8/12/16/24GiB: report + $OUT/gpu_budgets.json
  say "budgets: benchmarks/gpu_budgets.py"   # its summary table ends the output
  timeout $(( ${BUDGETS_S:-300} + 30 )) python3 benchmarks/gpu_budgets.py --budget-s ${BUDGETS_S:-300} \
      --json "$OUT/gpu_budgets.json" 2>&1 | grep -v 'Warning\|USDT' | tail -80 ;;
esac; done
say done
