#!/usr/bin/env python3
"""Write other llama.cpp file types of a GGUF (Q3_K_M, Q2_K, IQ4_XS, …) with llama.cpp's own quantizer, to run
specx and llama.cpp on the kinds of files users download without downloading them.

    python benchmarks/requant.py SOURCE.gguf OUT_DIR [--types Q3_K_M,Q2_K,IQ4_XS,IQ4_NL] [--threads 2]

Needs llama-cpp-python (a benchmark dependency, never specx's). The source is re-quantized
(`allow_requantize`): its blocks are dequantized and quantized again, so the result is lower in quality than a
file quantized from float weights, but its layout (which tensor gets which block type) is llama.cpp's own for
that file type, which is what a speed or kernel comparison needs. Writes OUT_DIR/<source stem>-<type>.gguf and
skips a file that is already there.
"""
from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path


def requantize(source: Path, out: Path, file_type: str, threads: int) -> None:
    import llama_cpp

    ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{file_type}", None)
    if ftype is None:
        sys.exit(f"error: llama.cpp has no file type {file_type}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads
    params.ftype = ftype
    params.allow_requantize = True
    tmp = out.with_suffix(".part")
    rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), ctypes.byref(params))
    if rc != 0:
        tmp.unlink(missing_ok=True)
        sys.exit(f"error: llama.cpp's quantizer failed on {file_type} (rc {rc})")
    tmp.rename(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--types", default="Q3_K_M,Q2_K,IQ4_XS,IQ4_NL")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for file_type in args.types.split(","):
        out = args.out_dir / f"{args.source.stem}-{file_type}.gguf"
        if out.exists():
            print(f"{out}: already there", file=sys.stderr)
            continue
        requantize(args.source, out, file_type, args.threads)
        print(f"{out}: {out.stat().st_size / 1e6:.0f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
