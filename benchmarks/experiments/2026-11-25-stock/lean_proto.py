import os, time, statistics as st, torch
import torch.nn.functional as F
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
p=api.prepare(T,D,k=16,quant='none')

class Lean:
    def __init__(self, model, cap=4096):
        cfg=model.config; self.m=model; inner=model.model
        self.H=cfg.num_attention_heads; self.KVH=cfg.num_key_value_heads
        self.Dh=getattr(cfg,'head_dim',None) or cfg.hidden_size//self.H
        self.eps=cfg.rms_norm_eps; self.layers=inner.layers; self.norm=inner.norm; self.emb=inner.embed_tokens.weight
        self.head=model.lm_head
        self.cap=cap; n=len(self.layers)
        self.k=torch.zeros(n,self.KVH,cap,self.Dh); self.v=torch.zeros(n,self.KVH,cap,self.Dh); self.len=0
        pos=torch.arange(cap)[None]
        x=torch.zeros(1,1,self.Dh)
        cos,sin=inner.rotary_emb(x,pos); self.cos=cos[0]; self.sin=sin[0]
    def rms(self,x,w): return F.rms_norm(x,(x.shape[-1],),w,self.eps)
    def rope(self,x,cos,sin):
        h=x.shape[-1]//2
        x1,x2=x[...,:h],x[...,h:]
        return x*cos+torch.cat((-x2,x1),-1)*sin
    @torch.inference_mode()
    def forward(self, ids, last_only=False):
        T=len(ids); L=self.len
        x=self.emb[torch.tensor(ids)]            # T, hidden
        cos=self.cos[L:L+T][None]; sin=self.sin[L:L+T][None]
        mask=None
        if T>1:
            mask=torch.ones(T,L+T,dtype=torch.bool).tril(L)
        for i,layer in enumerate(self.layers):
            a=layer.self_attn
            h=self.rms(x,layer.input_layernorm.weight)
            q=a.q_proj(h).view(T,self.H,self.Dh).transpose(0,1)
            k=a.k_proj(h).view(T,self.KVH,self.Dh).transpose(0,1)
            v=a.v_proj(h).view(T,self.KVH,self.Dh).transpose(0,1)
            q=self.rope(q,cos,sin); k=self.rope(k,cos,sin)
            self.k[i,:,L:L+T]=k; self.v[i,:,L:L+T]=v
            o=F.scaled_dot_product_attention(q[None],self.k[i,:,:L+T][None],self.v[i,:,:L+T][None],attn_mask=mask,enable_gqa=True)
            x=x+a.o_proj(o[0].transpose(0,1).reshape(T,self.H*self.Dh))
            h=self.rms(x,layer.post_attention_layernorm.weight)
            mlp=layer.mlp
            x=x+mlp.down_proj(F.silu(mlp.gate_proj(h))*mlp.up_proj(h))
        self.len=L+T
        if last_only: x=x[-1:]
        return self.head(self.rms(x,self.norm.weight))

for name,lm in (('drafter',p.drafter.lm),('target',p.target)):
  ln=Lean(lm.model)
  ids=list(range(1000,1300))
  lm.reset(); a=lm.forward(ids[:150]); b=ln.forward(ids[:150])
  print(name,'prefill max diff', (a-b).abs().max().item(), 'argmax agree', (a.argmax(-1)==b.argmax(-1)).float().mean().item())
  a=lm.forward(ids[150:155]); b=ln.forward(ids[150:155])
  print(name,'chunk diff', (a-b).abs().max().item(), (a.argmax(-1)==b.argmax(-1)).float().mean().item())
  base=lm.cached; lb=ln.len
  ts=[];tl=[]
  for r in range(15):
    t=time.perf_counter(); lm.forward(ids[:1], last_only=True); ts.append(time.perf_counter()-t); lm.crop(base)
    t=time.perf_counter(); ln.forward(ids[:1], last_only=True); tl.append(time.perf_counter()-t); ln.len=lb
  print(name,'1-token ms HF', round(st.median(ts)*1e3,1),'lean', round(st.median(tl)*1e3,1))
  ts=[];tl=[]
  for r in range(7):
    t=time.perf_counter(); lm.forward(ids[:17]); ts.append(time.perf_counter()-t); lm.crop(base)
    t=time.perf_counter(); ln.forward(ids[:17]); tl.append(time.perf_counter()-t); ln.len=lb
  print(name,'17-token ms HF', round(st.median(ts)*1e3,1),'lean', round(st.median(tl)*1e3,1))
