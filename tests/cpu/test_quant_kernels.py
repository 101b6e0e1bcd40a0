"""specx's GGUF block kernels (cpu/quant.c): every type in both modes against its reference, rows
bit-identical whatever shares the call, fused groups, embeddings, refused inputs, and the builds agreeing."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from specx.cpu import packing, quant, quant_build, quant_prefetch, quant_ref
from specx.cpu.qweight import BLOCKS, QWeight, dequantize, reference

needs_kernels = pytest.mark.skipif(not quant.available(), reason=f"quant not built here: {quant.why_not()}")
QUANTIZED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q4_K", "Q5_K", "Q6_K", "Q3_K", "IQ4_NL", "IQ4_XS"]
FLOATS = ["F32", "F16", "BF16"]
F32_TOL = 1e-5   # f32 mode: |y − reference| ≤ F32_TOL · Σ|x||w| per output (float32 rounding of a long sum)


def shapes(name: str) -> list[tuple[int, int]]:
    """(rows, cols): rows not a multiple of any register or thread block; one block, a partial q8 group of
    32-value blocks (9 blocks), several groups."""
    per = BLOCKS[name][1]
    if per == 1:
        return [(13, 1), (37, 77), (5, 600)]
    if per == 32:
        return [(13, 32), (37, 288), (6, 1536)]
    return [(13, 256), (37, 768)]


def inputs(m: int, cols: int, seed: int) -> torch.Tensor:
    """Rows of different sizes: normal, large, tiny, one zero row."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, cols, generator=g)
    scale = torch.tensor([1.0, 1e3, 1e-3, 0.0, 1.0])[torch.arange(m) % 5]
    return (x * scale[:, None]).contiguous()


def rows_of(lib, x: torch.Tensor, weights: list[QWeight], mode: str) -> torch.Tensor:
    """Each row computed alone (M = 1)."""
    return torch.cat([lib.matmul(x[i:i + 1].contiguous(), weights, mode) for i in range(len(x))])


@needs_kernels
@pytest.mark.parametrize("name", QUANTIZED + FLOATS)
def test_f32_mode_is_within_float_rounding_of_the_reference(name):
    """f32 mode equals gguf-dequantize + float64 matmul within F32_TOL·Σ|x||w| per output, for random valid
    blocks with zero, largest and subnormal scales, odd shapes, and M = 1..16 and 70."""
    rng = np.random.default_rng(1)
    for rows, cols in shapes(name):
        w = quant_ref.random_weight(name, rows, cols, rng)
        for m in (1, 2, 3, 5, 8, 9, 16, 70):
            x = inputs(m, cols, m)
            y = quant.matmul(x, [w]).numpy()
            bound = F32_TOL * quant_ref.error_bound(x.numpy(), [w]) + 1e-30
            err = np.abs(y.astype(np.float64) - reference(x.numpy(), [w]))
            assert (err <= bound).all(), (rows, cols, m, float((err / bound).max()))


@needs_kernels
@pytest.mark.parametrize("name", QUANTIZED)
def test_q8_mode_equals_its_numpy_reference_bit_for_bit(name):
    """q8 mode equals quant_ref.reference_q8 (X quantized per 32 values, exact integer block sums, the same
    float32 steps; Q4_K and Q6_K with groups: per 256 values, exact integer group sums) bit for bit."""
    rng = np.random.default_rng(2)
    lib = quant._default()
    for rows, cols in shapes(name):
        w = quant_ref.random_weight(name, rows, cols, rng)
        for m in (1, 3, 8, 9, 16, 70):
            x = inputs(m, cols, 100 + m)
            for groups in (False, True) if name in quant.GROUP_TYPES else (False,):
                assert np.array_equal(lib.matmul(x, [w], "q8", groups=groups).numpy(),
                                      quant_ref.reference_q8(x.numpy(), [w], groups)), (rows, cols, m, groups)


@pytest.mark.parametrize("name", QUANTIZED)
def test_weight_integers_rebuild_gguf_values_exactly(name):
    """The integer form the q8 reference (and kernels) use rebuilds gguf's dequantized values bit for bit."""
    w = quant_ref.random_weight(name, 7, 512, np.random.default_rng(3))
    assert np.array_equal(quant_ref.reconstruct(w), dequantize(w))


@needs_kernels
@pytest.mark.parametrize("mode", quant.MODES)
def test_a_row_is_bit_identical_in_any_batch_and_with_any_thread_count(mode):
    """Row r of Y is the same bits alone, among 2..16 or 70 rows, at any offset, with 1, 2 or 3 threads."""
    rng = np.random.default_rng(4)
    weights = [quant_ref.random_weight(name, 19, 512, rng) for name in QUANTIZED + FLOATS]
    x = inputs(70, 512, 5)
    threads = torch.get_num_threads()
    try:
        for w in weights:
            torch.set_num_threads(1)
            alone = rows_of(quant, x, [w], mode)
            for t in (1, 2, 3):
                torch.set_num_threads(t)
                for m in (2, 3, 5, 8, 9, 16, 17, 70):
                    assert torch.equal(quant.matmul(x[:m], [w], mode), alone[:m]), (w.name, t, m)
                assert torch.equal(quant.matmul(x[21:34], [w], mode), alone[21:34]), (w.name, t)
    finally:
        torch.set_num_threads(threads)


@needs_kernels
@pytest.mark.parametrize("mode", quant.MODES)
def test_a_fused_group_equals_its_segments_called_alone(mode):
    """Segments of different types in one call give, side by side, the bits of separate calls."""
    rng = np.random.default_rng(6)
    group = [quant_ref.random_weight(name, rows, 512, rng)
             for name, rows in (("Q4_K", 33), ("Q6_K", 7), ("Q8_0", 12), ("F16", 3), ("Q5_0", 20), ("Q2_K", 9),
                                ("Q3_K", 11), ("IQ4_XS", 10), ("IQ4_NL", 6))]
    for m in (1, 5, 17):
        x = inputs(m, 512, m)
        fused = quant.matmul(x, group, mode)
        assert torch.equal(fused, torch.cat([quant.matmul(x, [w], mode) for w in group], dim=1))
        out = torch.empty_like(fused)
        assert quant.matmul(x, group, mode, out=out) is out and torch.equal(out, fused)


@needs_kernels
@pytest.mark.parametrize("name", QUANTIZED + FLOATS)
def test_embed_returns_the_dequantized_rows(name):
    """embed(w, ids) is gguf's dequantization of rows ids, bit for bit, repeats and any order included."""
    w = quant_ref.random_weight(name, 50, 256, np.random.default_rng(7))
    ids = torch.tensor([3, 0, 49, 3, 17])
    assert np.array_equal(quant.embed(w, ids).numpy(), dequantize(w)[ids.numpy()])


@needs_kernels
def test_bad_inputs_are_refused_before_any_kernel_runs():
    """Short buffers, unknown types, mismatched columns, wrong x and wrong out raise ValueError."""
    rng = np.random.default_rng(8)
    w = quant_ref.random_weight("Q4_K", 4, 256, rng)
    with pytest.raises(ValueError, match="needs 576 bytes"):
        QWeight(BLOCKS["Q4_K"][0], w.data[:-1].copy(), 4, 256)
    with pytest.raises(ValueError, match="17"):
        QWeight(17, np.zeros(4 * 66, np.uint8), 4, 256)   # IQ2_XS: no kernel
    with pytest.raises(ValueError, match="whole blocks"):
        QWeight(BLOCKS["Q4_0"][0], np.zeros(18, np.uint8), 1, 16)
    x = torch.randn(2, 256)
    other = quant_ref.random_weight("Q8_0", 3, 512, rng)
    for bad in (lambda: quant.matmul(torch.randn(2, 512), [w]),
                lambda: quant.matmul(x, [w, other]),
                lambda: quant.matmul(torch.randn(256, 2).T, [w]),
                lambda: quant.matmul(x.double(), [w]),
                lambda: quant.matmul(x[0], [w]),
                lambda: quant.matmul(x, []),
                lambda: quant.matmul(x, [dequantize(w)]),
                lambda: quant.matmul(x, [w], "int4"),
                lambda: quant.matmul(x, [w], out=torch.empty(2, 5)),
                lambda: quant.embed(w, torch.tensor([4])),
                lambda: quant.embed(w, torch.tensor([-1]))):
        with pytest.raises(ValueError):
            bad()


def builds_here() -> list:
    """Every build this CPU runs and this compiler builds, with and without VNNI where the CPU has VNNI, and
    the AVX-512 ones with and without AMX where it has AMX (compiled two at a time)."""
    combos = [(name, vnni, amx) for name in quant.variants()
              for vnni in ((True, False) if name in quant.VNNI_FLAGS
                           and quant.VNNI_FLAGS[name][0] in quant.cpu_flags() else (False,))
              for amx in ((True, False) if name == "avx512" and quant.amx_cpu() else (False,))]

    def load(combo):
        try:
            return quant.load(*combo)
        except OSError:   # e.g. a compiler without -mavxvnni
            return None

    with ThreadPoolExecutor(2) as pool:
        return [lib for lib in pool.map(load, combos) if lib is not None]


@needs_kernels
def test_every_build_that_runs_here_agrees():
    """The AVX-512, AVX2 and portable builds (VNNI or not): q8 bit-identical (the same arithmetic in other
    lanes), f32 within float rounding of each other."""
    builds = builds_here()
    rng = np.random.default_rng(9)
    for name in QUANTIZED + FLOATS:
        w = quant_ref.random_weight(name, 21, 288 if BLOCKS[name][1] == 32 else 512, rng)
        x = inputs(11, w.cols, 10)
        ys = [lib.matmul(x, [w]).numpy().astype(np.float64) for lib in builds]
        bound = 2 * F32_TOL * quant_ref.error_bound(x.numpy(), [w]) + 1e-30
        assert all((np.abs(y - ys[-1]) <= bound).all() for y in ys), name
        for groups in ((False, True) if name in quant.GROUP_TYPES else (False,)) if name in QUANTIZED else ():
            q8 = [lib.matmul(x, [w], "q8", groups=groups) for lib in builds]
            assert all(torch.equal(q, q8[-1]) for q in q8), (name, groups, [lib.describe() for lib in builds])


@needs_kernels
def test_q8_rows_with_a_nan_or_infinity_come_out_nan_in_every_build():
    """A NaN or infinity in a row of X makes that row's q8 results NaN (its block scale is NaN); the other
    rows are untouched."""
    x = inputs(4, 512, 14)
    x[1, 7], x[2, 300] = float("nan"), float("inf")
    for name in quant.GROUP_TYPES:
        w = quant_ref.random_weight(name, 9, 512, np.random.default_rng(13))
        for groups in (False, True):
            clean = quant._default().matmul(x[[0, 3]].contiguous(), [w], "q8", groups=groups)
            for lib in builds_here():
                y = lib.matmul(x, [w], "q8", groups=groups)
                assert y[1:3].isnan().all() and torch.equal(y[[0, 3]], clean), (name, lib.describe(), groups)


@needs_kernels
def test_blocks_of_subnormal_activations_quantize_alike_in_every_build():
    """A block whose scale is so small that its inverse overflows (all |x| below about 4e-37) quantizes to 0
    in every build and in quant_ref (x·inf would be NaN for a zero x); a subnormal scale whose inverse is
    finite keeps its values. Whole groups and a partial one, bit for bit."""
    w = quant_ref.random_weight("Q4_0", 5, 288, np.random.default_rng(21))
    x = torch.zeros(3, 288)   # nothing else in the rows: the tiny blocks' terms are their results
    x[0, :32] = torch.tensor([1e-39] * 31 + [0.0])          # d subnormal, 1/d overflows
    x[1, 32:64] = torch.tensor([3e-40] * 16 + [0.0] * 16)   # likewise, half zeros
    x[2, 256:288] = torch.tensor([1e-36] * 8 + [-2e-37] * 24)   # the partial group: d subnormal, 1/d finite
    want = quant_ref.reference_q8(x.numpy(), [w])
    for lib in builds_here():
        assert np.array_equal(lib.matmul(x, [w], "q8").numpy(), want), lib.describe()


@needs_kernels
@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q5_0", "Q8_0", "IQ4_NL"])
def test_a_partial_last_group_ignores_the_next_rows_bytes_in_every_build(name):
    """q8 decodes a row's partial last group 8 blocks at a time, reading into the next row (quant.c, TAIL):
    whatever that row holds, even infinite and NaN scales, each row's results equal the row computed alone
    (from a zero-padded copy), bit for bit."""
    tid, per, size = BLOCKS[name]
    w = quant_ref.random_weight(name, 3, 9 * per, np.random.default_rng(17))
    blocks = w.data.reshape(3 * 9, size).copy()
    for off in quant_ref.SCALES[name]:   # d, and m where the type has one
        blocks[9:12, off:off + 2] = np.array([np.inf, np.nan, -np.inf], np.float16).view(np.uint8).reshape(3, 2)
    w = QWeight(tid, blocks.reshape(-1), 3, w.cols)
    x = inputs(2, w.cols, 18)
    first = QWeight(tid, blocks[:9].reshape(-1).copy(), 1, w.cols)
    for lib in builds_here():
        y = lib.matmul(x, [w], "q8")
        assert torch.equal(y[:, :1], lib.matmul(x, [first], "q8")) and y[:, 0].isfinite().all(), lib.describe()


GUARDED = """
import ctypes, mmap, sys
import numpy as np
import torch
from specx.cpu import quant, quant_ref
from specx.cpu.qweight import BLOCKS, QWeight
sys.path.insert(0, sys.argv[2])
from test_quant_kernels import builds_here
libs = builds_here()
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = mmap.PAGESIZE
for name in sys.argv[1].split(","):
    shapes = ((13, 32), (5, 64), (3, 288), (2, 1536)) if BLOCKS[name][1] == 32 else ((3, 256), (2, 1536))
    for rows, cols in shapes:
        w = quant_ref.random_weight(name, rows, cols, np.random.default_rng(rows + cols))
        size = w.data.size
        room = (size + page - 1) // page * page
        area = mmap.mmap(-1, room + page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        assert libc.mprotect(base + room, page, 0) == 0   # the page after the tensor: any read of it faults
        data = np.frombuffer(area, np.uint8, size, room - size)
        data[:] = w.data
        guarded = QWeight(w.type, data, rows, cols)
        for m in (1, 5):
            x = torch.randn(m, cols, generator=torch.Generator().manual_seed(m))
            for groups in (False, True) if name in quant.GROUP_TYPES else (False,):
                want = quant_ref.reference_q8(x.numpy(), [w], groups)
                for lib in libs:
                    got = lib.matmul(x, [guarded], "q8", groups=groups).numpy()
                    assert np.array_equal(got, want), (name, rows, cols, m, groups)
            for lib in libs:
                assert torch.equal(lib.matmul(x, [guarded]), lib.matmul(x, [w])), (name, rows, cols, m)
        del data, guarded
print("ok")
"""


@needs_kernels
def test_no_kernel_reads_past_a_tensor_that_ends_at_a_page_boundary():
    """Each type's last row ends where an unreadable page begins: every build computes the tensor in both modes
    (q8: the reference's bits) without reading past it, rows of one block included (q8 decodes a 32-value type 8
    blocks at a time and AVX-512 reads a few bytes more: where that would leave the row after, the blocks go
    through zero padding). A fault kills only the child process this runs in."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", GUARDED, ",".join(QUANTIZED), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


def with_groups(weights: dict) -> list:
    """(name, weight, groups) for each weight, GROUP_TYPES both ways (q8 per 32 values and with groups)."""
    return [(name, w, groups) for name, w in weights.items()
            for groups in ((False, True) if name in quant.GROUP_TYPES else (False,))]


@needs_kernels
def test_spans_of_groups_change_no_result_in_every_build():
    """quant.c's XSPAN (several rows over long weight rows in spans of groups, the sums kept between spans) gives
    the bits of one pass per output, in every build and for every type: spans of one group and uneven ones, more
    outputs than one pass takes (XSPAN_OUTS), and a partial last group (TAIL) on the call's last row too."""
    rng = np.random.default_rng(19)
    weights = {name: quant_ref.random_weight(name, 37, 9 * 256 + (96 if BLOCKS[name][1] == 32 else 0), rng)
               for name in QUANTIZED}
    for lib in builds_here():
        was = lib.xspan(0)
        try:
            for name, w, groups in with_groups(weights):
                for m in (2, 5, 8, 11):
                    x = inputs(m, w.cols, m)
                    lib.xspan(0)
                    whole = lib.matmul(x, [w], "q8", groups=groups)
                    for nbytes in (1, 3000, 9000):
                        lib.xspan(nbytes)
                        assert torch.equal(lib.matmul(x, [w], "q8", groups=groups), whole), \
                            (name, groups, m, nbytes, lib.describe())
        finally:
            lib.xspan(was)


@needs_kernels
def test_weights_decoded_once_for_many_rows_change_no_result_in_every_build():
    """quant.c's DECODED (a call of many rows keeps each tile of weights decoded by its first 8 rows for the
    next ones) gives the bits of decoding in every pass, for every type: several tiles, a partial last set of
    rows, a partial last group, with and without XSPAN; builds without the path say so."""
    rng = np.random.default_rng(23)
    weights = {name: quant_ref.random_weight(name, 37, 9 * 256 + (96 if BLOCKS[name][1] == 32 else 0), rng)
               for name in QUANTIZED}
    for lib in builds_here():
        has = lib.decode_once(None)
        assert has == (lib.name in ("avx512", "avx2")), lib.describe()
        was = lib.xspan(-1)
        try:
            for name, w, groups in with_groups(weights):
                for m in (24, 43):
                    x = inputs(m, w.cols, m)
                    lib.decode_once(False)
                    lib.xspan(0)
                    plain = lib.matmul(x, [w], "q8", groups=groups)
                    lib.decode_once(True)
                    for nbytes in (0, 3000):
                        lib.xspan(nbytes)
                        assert torch.equal(lib.matmul(x, [w], "q8", groups=groups), plain), \
                            (name, groups, m, nbytes, lib.describe())
        finally:
            lib.decode_once(True)
            lib.xspan(was)


def test_spans_take_half_of_the_l1_data_cache():
    """XSPAN's size follows the machine's L1 data cache (48 KiB: 24 KiB); unknown, quant.c keeps its own."""
    assert quant.xspan_bytes(48 << 10) == 24 << 10 and quant.xspan_bytes(32 << 10) == 16 << 10
    assert quant.xspan_bytes(0) == -1


@needs_kernels
def test_prefetching_changes_no_result():
    """Prefetching weights ahead (the per-machine choice) is a hint: the same bits with it and without."""
    lib = quant.load(quant.variants()[0])
    rng = np.random.default_rng(11)
    group = [quant_ref.random_weight(name, 40, 512, rng) for name in ("Q4_K", "Q8_0", "F16")]
    x = inputs(5, 512, 12)
    was = lib.prefetch(0)
    try:
        outs = []
        for nbytes, l2 in quant_prefetch.PREFETCH_WAYS.values():
            lib.prefetch(nbytes, l2)
            outs.append([lib.matmul(x, group, mode) for mode in quant.MODES])
        assert all(torch.equal(a, b) for first, other in zip(outs, outs[1:]) for a, b in zip(first, other))
    finally:
        lib.prefetch(*was)


@pytest.mark.parametrize(("value", "pick"), [("0", "off"), ("1", "into L1 and L2")])
def test_the_environment_decides_weight_prefetching(monkeypatch, value, pick):
    """SPECX_QUANT_PREFETCH=0/1 decides without timing, and its pick is one of the ways the library sets."""
    monkeypatch.setenv(quant_prefetch.PREFETCH_ENV, value)
    choice = quant_prefetch.prefetch_choice(None)
    assert choice.pick == pick and pick in quant_prefetch.PREFETCH_WAYS and choice.source == quant_prefetch.PREFETCH_ENV


@needs_kernels
def test_weight_prefetching_is_timed_on_layers_a_forward_reads(tmp_path, monkeypatch):
    """Without the environment, every prefetching way is timed on the stack of 1.5B-shaped Q4_K_M layers, the
    pick saved beside the build (its sentence naming that workload) and read back by the next process."""
    import dataclasses

    monkeypatch.delenv(quant_prefetch.PREFETCH_ENV, raising=False)
    monkeypatch.setattr(quant_prefetch, "PREFETCH_LAYERS", 1)
    lib = dataclasses.replace(quant._default(), path=tmp_path / "quant-test.so")
    was = lib.prefetch(0, False)
    try:
        choice = quant_prefetch.prefetch_choice(lib)
        again = quant_prefetch.prefetch_choice(lib)
    finally:
        lib.prefetch(*was)
    assert choice.source == "timed" and choice.pick in quant_prefetch.PREFETCH_WAYS and set(choice.ms) == set(quant_prefetch.PREFETCH_WAYS)
    assert "1 Q4_K_M layers of a 1.5B model" in choice.sentence()
    assert (again.source, again.pick, again.ms) == ("saved", choice.pick, choice.ms)
    layer = quant_prefetch.prefetch_stack(np.random.default_rng(0))[0]
    assert [(w.rows, w.cols) for w in layer] == [(2048, 1536), (1536, 1536), (17920, 1536), (1536, 8960)]


@needs_kernels
def test_the_kernels_sentence_says_which_layers_take_activations_per_256_values():
    assert quant.q8_words("Q4_K/Q8_0", True) == ("int8 activations per 32 values (per 256 into Q4_K layers: integer "
                                                 "group sums; --quant none: float32)")
    every = "int8 activations per 256 values (integer group sums; --quant none: float32)"
    assert quant.q8_words("Q4_K", True) == every and quant.q8_words("Q4_K/Q6_K", True) == every
    plain = "int8 activations per 32 values (--quant none: float32)"
    assert quant.q8_words("Q8_0/Q4_1", True) == plain and quant.q8_words("Q4_K/Q6_K", False) == plain


def test_q8_takes_groups_where_the_build_gains_by_them():
    """q8 with groups (Q4_K and Q6_K per 256 values) is the AVX-512 builds' q8, with AMX or without, and the AVX2
    builds' (their packed kernels'); the portable build keeps per 32 (each computes both when asked)."""
    for lib in builds_here():
        assert lib.q8_groups() == (lib.name in ("avx512", "avx2")), lib.describe()
        assert lib.mode_id("q8", groups=False) == 1 and lib.mode_id("q8", groups=True) == 2
        assert lib.mode_id("f32", groups=True) == 0


def test_describe_names_the_build_and_modes():
    """The kernels sentence names which build runs (and, asked for detail, what its prefetch timing measured);
    both modes exist."""
    assert quant.modes() == ("f32", "q8")
    assert any(name in quant.describe() for name in quant.BUILDS)
    assert "prefetching" in quant.describe(detail=True)


# ---------------------------------------------------------------- AMX (quant_amx.h): q8 of AMX_TYPES, many rows

def amx_library():
    """The AVX-512 build with AMX on, or None where this CPU, compiler or kernel has no AMX."""
    if not quant.amx_cpu() or "avx512" not in quant.variants():
        return None
    try:
        lib = quant.load("avx512", amx=True)
    except OSError:
        return None
    return lib if lib.amx else None


_amx = amx_library() if quant.available() else None
needs_amx = pytest.mark.skipif(_amx is None, reason="no AMX-INT8 here (CPU, compiler or kernel): the VNNI path runs")
AMX_ROWS = (0, 1, 32, 68, 224)   # M = threshold + these: the threshold, odd, 64, 100, 256


def both_ways(lib, x, weights, groups=None):
    """lib's q8 result with AMX on, then off."""
    was = lib.use_amx(True)
    try:
        on = lib.matmul(x, weights, "q8", groups=groups)
        lib.use_amx(False)
        return on, lib.matmul(x, weights, "q8", groups=groups)
    finally:
        lib.use_amx(was)


@needs_amx
@pytest.mark.parametrize("name", quant.AMX_TYPES)
def test_amx_equals_the_vnni_kernels_and_the_numpy_reference_bit_for_bit(name):
    """With AMX (rows ≥ the threshold) q8 per 32 values on the file's layout gives the VNNI kernels' and quant_ref's
    bits, for odd shapes (rows not a multiple of 16; one block, a partial group of 8 blocks, several groups) and
    M = threshold, threshold + 1, 64, 100, 256."""
    rng = np.random.default_rng(20)
    low = _amx.amx_min_rows()
    for rows, cols in shapes(name) + [(40, 1536)]:
        w = quant_ref.random_weight(name, rows, cols, rng)
        for m in (low + extra for extra in AMX_ROWS):
            x = inputs(m, cols, 200 + m)
            on, off = both_ways(_amx, x, [w], groups=False)
            assert torch.equal(on, off), (rows, cols, m)
            assert np.array_equal(on.numpy(), quant_ref.reference_q8(x.numpy(), [w])), (rows, cols, m)


@needs_amx
@pytest.mark.parametrize("name", ["Q4_K", "Q6_K"])
def test_amx_on_packed_tiles_with_groups_equals_the_vnni_kernel_and_the_numpy_reference(name):
    """Packed Q4_K and Q6_K in q8 with groups (quant_amx_packed.h): with AMX the packed VNNI kernel's and
    quant_ref's bits, for extreme and zero scales, one group to 35 (K = 8960), odd row counts (a last row tile
    alone, a partial one) and several strips a thread."""
    rng = np.random.default_rng(27)
    low = _amx.amx_min_rows()
    for rows, cols in ((16, 256), (48, 1536), (32, 8960)):
        for extreme in (False, True):
            w = quant_ref.random_weight(name, rows, cols, rng, extreme=extreme)
            p = packing.pack(_amx, w, np.empty(w.nbytes, np.uint8))
            for m in (low + extra for extra in AMX_ROWS[:4]):
                x = inputs(m, cols, 300 + m)
                on, off = both_ways(_amx, x, [p])
                assert torch.equal(on, off), (rows, cols, extreme, m)
                assert np.array_equal(on.numpy(), quant_ref.reference_q8(x.numpy(), [w], True)), (rows, cols, m)


@needs_amx
def test_amx_rows_equal_the_rows_computed_alone_with_any_thread_count():
    """Each row of a 100-row call on AMX (a fused group of Q4_K, Q8_0 and Q6_K segments and packed Q4_K and Q6_K
    ones, split between 1, 2 or 3 threads) is the bits of that row computed alone (1 row: the VNNI kernels)."""
    rng = np.random.default_rng(21)
    group = [quant_ref.random_weight(name, rows, 512, rng) for name, rows in (("Q4_K", 37), ("Q8_0", 12), ("Q6_K", 21))]
    group += [packing.pack(_amx, w, np.empty(w.nbytes, np.uint8))   # and on packed tiles, with groups
              for w in (quant_ref.random_weight(name, 48, 512, rng) for name in ("Q4_K", "Q6_K"))]
    x = inputs(100, 512, 22)
    threads = torch.get_num_threads()
    was = _amx.use_amx(True)
    try:
        torch.set_num_threads(1)
        alone = rows_of(_amx, x, group, "q8")
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            assert torch.equal(_amx.matmul(x, group, "q8"), alone), t
    finally:
        torch.set_num_threads(threads)
        _amx.use_amx(was)


@needs_amx
def test_amx_rows_with_a_nan_or_infinity_come_out_nan():
    """On AMX too, a NaN or infinity in a row makes that row's results NaN and leaves the others' bits."""
    w = quant_ref.random_weight("Q4_K", 16, 512, np.random.default_rng(23))
    x = inputs(_amx.amx_min_rows() + 3, 512, 24)
    x[1, 7], x[2, 300] = float("nan"), float("inf")
    for weights, groups in (([w], False), ([packing.pack(_amx, w, np.empty(w.nbytes, np.uint8))], None)):
        on, off = both_ways(_amx, x, weights, groups)
        assert on[1:3].isnan().all() and torch.equal(on[3:], off[3:]) and torch.equal(on[0], off[0])


@pytest.mark.skipif(not quant.available(), reason=f"quant not built here: {quant.why_not()}")
def test_a_compiler_that_refuses_the_amx_flags_gives_the_build_without_amx(monkeypatch):
    """Where the AMX build does not compile, load() takes the same build without AMX (no error), and that
    build's q8 results are quant_ref's."""
    monkeypatch.setattr(quant_build, "AMX_FLAGS", (quant.AMX_FLAGS[0], ("-mno-such-amx-flag",)))
    lib = quant.load(quant.variants()[0], amx=True)
    w = quant_ref.random_weight("Q4_K", 9, 512, np.random.default_rng(25))
    x = inputs(40, 512, 26)
    assert not lib.amx and "-amx-" not in lib.path.name
    assert np.array_equal(lib.matmul(x, [w], "q8").numpy(), quant_ref.reference_q8(x.numpy(), [w], lib.q8_groups()))


@pytest.mark.skipif(not quant.available(), reason=f"quant not built here: {quant.why_not()}")
def test_specx_amx_0_turns_amx_off(monkeypatch):
    """SPECX_AMX=0: a loaded build never runs AMX (and its kernels sentence does not name it)."""
    before = quant._default().amx_on()   # the setting is the loaded build's: restored below
    monkeypatch.setenv(quant.AMX_ENV, "0")
    lib = quant.load(quant.variants()[0])
    try:
        assert not lib.amx_on() and "AMX" not in lib.describe() and lib.prompt_note(["Q4_K"], "q8") == ""
    finally:
        quant._default().use_amx(before)


@needs_amx
def test_the_kernels_line_names_amx_for_q8_prompt_passes_of_its_types():
    """The decoder's kernels line names AMX where a q8 prompt pass of Q4_K/Q6_K runs on it, and only there."""
    from specx.decoder import linear

    if not quant._default().amx_on():
        pytest.skip(f"AMX turned off here ({quant.AMX_ENV})")
    assert "AMX" in linear.prompt_note("Q4_K/Q6_K", "q8") and "Q6_K" in linear.prompt_note("Q6_K/F32", "q8")
    assert "Q8_0/Q5_0" in linear.prompt_note("Q5_0/Q8_0/Q4_K", "q8")
    assert linear.prompt_note("Q4_K/Q6_K", "f32") == "" and linear.prompt_note("Q4_1/Q2_K", "q8") == ""


def test_the_vnni_build_gathers_with_vbmi_where_the_cpu_has_it():
    """On a CPU with AVX-512 VNNI and VBMI the VNNI build takes VBMI's byte gathers and the build without VNNI
    keeps the 16-byte loads, so test_every_build_that_runs_here_agrees holds the two gathers together."""
    flags = quant.cpu_flags()
    if "avx512" not in quant.variants() or not {"avx512_vnni", quant.VBMI_FLAGS[0]} <= flags:
        pytest.skip("no AVX-512 VNNI and VBMI here")
    assert quant.load("avx512", True, False).vbmi
    assert not quant.load("avx512", False, False).vbmi


def test_specx_quant_build_starts_from_the_build_it_names_or_says_which_exist(monkeypatch):
    """SPECX_QUANT_BUILD (benchmarks standing in for a lesser CPU) starts the builds to try at the one it names,
    VNNI off with -novnni; a name this CPU cannot run is a UsageError that lists the ones it can."""
    from specx.errors import UsageError

    monkeypatch.setattr(quant, "variants", lambda: ["avx512", "avx2", "portable"])
    monkeypatch.setenv(quant.BUILD_ENV, "")
    assert quant._choices() == [("avx512", None), ("avx2", None), ("portable", None)]
    monkeypatch.setenv(quant.BUILD_ENV, "AVX2-novnni")
    assert quant._choices() == [("avx2", False), ("portable", None)]
    monkeypatch.setenv(quant.BUILD_ENV, "portable")
    assert quant._choices() == [("portable", None)]
    for bad in ("avx3", "portable-novnni", "avx2-fast"):
        monkeypatch.setenv(quant.BUILD_ENV, bad)
        with pytest.raises(UsageError) as e:
            quant._choices()
        assert "avx512, avx2, portable" in e.value.hint
