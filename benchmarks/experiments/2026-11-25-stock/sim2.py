import json, numpy as np, sys
tf=json.load(open('/tmp/d20/tf.json'))
xs=[1,2,8,17,33,49,65]; ys=[1,1.06,1.54,2.28,3.65,4.73,6.88]
ver=lambda n: float(np.interp(n,xs,ys))
C=36/234; BATCH=1.1; CAP=16; STOP=0.4; E=2
def chain_len_from(d,i,ans):
    # drafted tokens, accepted
    n=0;a=0;ok=True
    for j in range(i,min(i+CAP,len(ans))):
        n+=1
        if ok and d['i'][j][0]==ans[j]: a+=1
        else:
            ok=False; n+=E-1 if d['p'][j][0]>=STOP else 0; break
        if d['p'][j][0]<STOP: break
    return min(n,CAP),a
def run(d,tree,tau):
    ans=d['ans'];i=0;t=0.0;rounds=0
    while i<len(ans):
        n,a=chain_len_from(d,i,ans)
        steps=n; rows=n+1; gained=a+1
        if tree:
            # fork at first position f in [i, i+n) with p1<tau
            f=next((j for j in range(i,min(i+n,len(ans))) if d['p'][j][0]<tau),None)
            if f is not None and f-i<=a:   # the chain matched up to f
                # branch drafted from f (top2) and continued
                if f-i==a and d['i'][f][1]==ans[f]:   # chain misses at f, branch right
                    bn,ba=chain_len_from(d,f+1,ans) if f+1<len(ans) else (0,0)
                    bn=min(bn,CAP-(f-i)-1); ba=min(ba,bn)
                    gained=(f-i)+1+ba+1; blen=1+bn
                else:
                    blen=1+E   # the branch is wrong: a few wasted nodes
                rows+=blen; steps=max(n,(f-i)+blen); t+=C*(BATCH-1)*min(blen,n-(f-i))
        t+=C*steps+ver(rows); i+=gained; rounds+=1
    return len(ans)/t, rounds
for cat,d in tf.items():
    ch=run(d,False,0); res=[f'{cat:14s} chain {ch[0]:.2f}x ({ch[1]} rounds)']
    for tau in (0.6,0.8,0.9):
        tr=run(d,True,tau); res.append(f'tree tau{tau} {tr[0]:.2f}x ({tr[1]})')
    print(' | '.join(res))
