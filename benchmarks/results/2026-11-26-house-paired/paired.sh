#!/bin/bash
# issue 34 before/after: the transformers path (--dtype float32) of smollm2 with the ngram drafter, policy auto
source /work/main/.venv/bin/activate
export SPECX_MODEL_CACHE=/tmp/p34-cache HF_HUB_OFFLINE=1
mkdir -p /tmp/p34-cache/embedded; cp ~/.cache/specx-fixture-models/smollm2-135m.gguf /tmp/p34-cache/embedded/smollm2.gguf 2>/dev/null
python3 - <<'PY' > /tmp/p34-prompts.txt
import tomllib
seen = {}
for p in tomllib.load(open("/work/main/specx/bench/prompts.toml", "rb"))["prompt"]:
    seen.setdefault(p["category"], p["text"])
for c, t in seen.items(): print(c + "\t" + t.replace("\n", " "))
PY
for rep in 1 2 3; do
 while IFS=$'\t' read -r cat text; do
  for tree in before34 main; do
   dir=/work/wt-$tree; [ $tree = main ] && dir=/work/main
   (cd $dir && SPECX_HOME=/tmp/p34-home-$tree PYTHONPATH=$dir python -m specx run smollm2 --dtype float32 --drafter ngram --draft-policy auto -n 128 --json "$text" 2>/dev/null </dev/null | python3 -c "
import json,sys,hashlib
lines=[json.loads(l) for l in sys.stdin if l.strip()]
text=''.join(l.get('text','') for l in lines if l.get('type')=='round' or 'text' in l and l.get('type')!='done')
s=[l for l in lines if 'stats' in l][-1]['stats']
print('$rep', '$cat', '$tree', round(s['decode_tok_s'],2), round(s['end_to_end_tok_s'],2), s['new_tokens'], hashlib.sha1(text.encode()).hexdigest()[:10])")
  done
 done < /tmp/p34-prompts.txt
done
