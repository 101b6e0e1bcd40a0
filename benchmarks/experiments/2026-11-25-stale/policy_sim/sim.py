"""Offline simulation of model-drafter draft-length rules (greedy, chain drafts), to bound what a
policy can gain. Inputs from collect.py: the target's greedy answer per prompt and, per position,
the int8dyn 0.5B drafter's argmax and confidence teacher-forced on the target's own text (one batch
forward, so its numbers differ slightly from step-by-step drafting). A draft from position i is
accepted while argmax == the target's token. Costs: the verify curve and drafting step measured on
the AVX-512 dev machine (fast state: 1 token 147 ms, 17 tokens 344; SLOW=1: 220 / 359; drafting
step as argv[2], ms). Decode only (prompt passes left out). `auto` reuses specx's CostModel
(calibration, survival floor, worth_verifying) with every verify size known.
Usage: python sim.py data48.json 36;  SLOW=1 python sim.py held48.json 42;  python sim3.py data48.json 36
"""
import json, sys, math, statistics as st
from specx.runtime.costmodel import CostModel, Calibration
import os
V={1:147,2:161,5:171,9:246,17:344,33:602} if not os.environ.get("SLOW") else {1:220,2:238,5:240,9:293,17:359,33:640}
STEP=float(sys.argv[2]) if len(sys.argv)>2 else 36.0
def vt(n):
    ks=sorted(V)
    if n in V: return V[n]
    lo=max(k for k in ks if k<n); hi=min((k for k in ks if k>n), default=None)
    if hi is None: lo,hi=ks[-2],ks[-1]
    return V[lo]+(V[hi]-V[lo])*(n-lo)/(hi-lo)
data=json.load(open(sys.argv[1]))

def simulate(rec, policy):
    out,arg,conf=rec['out'],rec['arg'],rec['conf']; n=len(out)
    i=0; t=0.0; rounds=0; st_=policy.start()
    while i<n:
        made, sent = policy.propose(st_, arg, conf, i, n)
        acc=0
        while acc<sent and i+acc<n and arg[i+acc]==out[i+acc]: acc+=1
        t+= made*STEP + vt(sent+1); rounds+=1
        policy.observe(st_, conf[i:i+made], sent, acc)
        i+=acc+1
    return t, rounds

class Plain:
    def start(self): return None
    def propose(self, s, arg, conf, i, n): return 0,0
    def observe(self,*a): pass
class Conf:
    def __init__(self, th, K): self.th,self.K=th,K
    def start(self): return None
    def propose(self, s, arg, conf, i, n):
        m=0
        while m<self.K and i+m<n:
            m+=1
            if conf[i+m-1]<self.th: break
        return m,m
    def observe(self,*a): pass
class Oracle:
    def __init__(self,K): self.K=K
    def start(self): return None
    def propose(self, s, arg, conf, i, n):
        a=0
        while a<self.K and i+a<n and arg[i+a]==rec_out[i+a]: a+=1
        return a,a
    def observe(self,*a): pass
class Auto:
    """specx auto (model only): conf 0.4 stop + survival floor (scaled) + worth_verifying trim; calibration learned."""
    def __init__(self, K=16, th=0.4, scale=1.0, trim=True, floor=None):
        self.K,self.th,self.scale,self.trim,self.floor=K,th,scale,trim,floor
    def start(self):
        c=CostModel(); c.verify_s={k:vt(k)/1e3 for k in range(1,40)}; c.draft_step_s=STEP/1e3
        return c
    def propose(self, c, arg, conf, i, n):
        m=0; surv=1.0; survs=[]
        while m<self.K and i+m<n:
            m+=1; cf=conf[i+m-1]
            if cf<self.th: break
            surv*=c.calibration.acceptance(cf); survs.append(surv)
            fl=(self.floor(c,tuple(survs)) if self.floor else c.survival_floor(tuple(survs)))
            if fl is not None and surv<self.scale*fl: break
        sent=m
        if self.trim:
            w=c.worth_verifying(tuple(conf[i:i+m]))
            if w is not None: sent=min(m,w)
        return m,sent
    def observe(self, c, confs, sent, acc):
        c.calibration.add(tuple(confs[:min(sent,acc+1)]), acc)

def run(name, pol):
    res={}
    for rec in data:
        global rec_out; rec_out=rec['out']
        t,r=simulate(rec,pol); tp,_=simulate(rec,Plain())
        res.setdefault(rec['cat'],[]).append(tp/t)
    cats=sorted(res); gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs))
    allr=[x for c in cats for x in res[c]]
    print(f"{name:28s}", ' '.join(f"{c[:5]} {gm(res[c]):.2f}" for c in cats), f"| all {gm(allr):.3f}")
    return gm(allr)
if __name__=='__main__':
    run('conf0.4 k20 (hf)', Conf(0.4,20))
    run('conf0.4 k16', Conf(0.4,16))
    for K in (16,32): run(f'oracle K{K}', Oracle(K))
    run('auto', Auto())
    run('auto notrim', Auto(trim=False))
    for s in (0.25,0.5,0.75,1.5): run(f'auto floor x{s}', Auto(scale=s))
