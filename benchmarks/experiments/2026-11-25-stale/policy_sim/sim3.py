"""A grid of auto variants (confidence stop, survival floor scale, trim) over data48.json + held48.json."""
import sys, json, math
import sim
from sim import Auto, Conf, Oracle, simulate, Plain
def score(data, pol):
    res={}
    for rec in data:
        sim.rec_out=rec['out']
        t,_=simulate(rec,pol); tp,_=simulate(rec,Plain())
        res.setdefault(rec['cat'],[]).append(tp/t)
    gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs))
    return {c:gm(v) for c,v in res.items()}, gm([x for v in res.values() for x in v])
data=json.load(open('data48.json'))+json.load(open('held48.json'))
cands={'hf':Conf(0.4,20),'auto':Auto(),'notrim':Auto(trim=False)}
for th in (0.4,0.5,0.6):
  for s in (1.0,1.25,1.5,2.0):
    for tr in (True,False):
      cands[f'th{th} x{s} {"trim" if tr else "notrim"}']=Auto(th=th,scale=s,trim=tr)
base=None
for name,p in cands.items():
    cat,allr=score(data,p)
    if name=='auto': base=allr
    print(f"{name:24s} {allr:.3f}", ' '.join(f"{c[:4]} {v:.2f}" for c,v in sorted(cat.items())))
