"""One 8960x1536 float32 layer through kernel variants built from C files in the current folder, alternating:
time per call (median of 9) and GFLOPS for 1..128 rows, and whether every variant gives the same bits.

    python kernel_variants.py base,v1t1,avx512_64 [N K]   (names containing avx512 get -mavx512f -mavx512vl)

Variants measured (their sources were the session's scratch copies of rowgemm.c): base = 3d79b8c's kernel;
v1t1 = base + prefetching the thread's next weights into L2 (_MM_HINT_T1); avx512_64 = v1t1 built with
AVX-512VL and blocks of 6 rows x 4 outputs (the kernel now in specx/kernels/rowgemm.c).
"""
import ctypes, torch, time, sys, subprocess
libs={}
for name in sys.argv[1].split(','):
    extra = ['-mavx512f','-mavx512vl'] if 'avx512' in name else []
    subprocess.check_call(['gcc','-O3','-mavx2','-mfma','-mf16c','-fopenmp','-ffp-contract=off','-shared','-fPIC',*extra,f'{name}.c','-o',f'{name}.so'])
    lib=ctypes.CDLL(f'./{name}.so'); p,i64=ctypes.c_void_p,ctypes.c_int64
    lib.spx_linear.argtypes=[p,i64,i64,p,i64,p,p,ctypes.c_int]; libs[name]=lib
N=int(sys.argv[2]) if len(sys.argv)>2 else 8960; K=int(sys.argv[3]) if len(sys.argv)>3 else 1536
torch.manual_seed(0); w=torch.randn(N,K)
def call(lib,x):
    out=torch.empty(x.shape[0],N); lib.spx_linear(x.data_ptr(),x.shape[0],K,w.data_ptr(),N,None,out.data_ptr(),2); return out
for M in (1,2,4,5,8,9,16,17,24,33,64,128):
    x=torch.randn(M,K); ref=None; res=[]
    outs={n:call(l,x) for n,l in libs.items()}
    ts={n:[] for n in libs}
    for _ in range(9):
        for n,l in libs.items():
            t=time.perf_counter(); call(l,x); ts[n].append(time.perf_counter()-t)
    b=list(outs.values())[0]
    row1=[ (call(l,x[:1])==o[:1]).all().item() for n,l in libs.items() for o in [outs[n]]]
    print(M, ' '.join(f"{n} {sorted(v)[4]*1e3:.2f}ms/{M*2*N*K/sorted(v)[4]/1e9:.0f}GF" for n,v in ts.items()), 'same' if all((o==b).all() for o in outs.values()) else 'DIFF', row1)
