"""Q4_0, Q4_K and Q6_K matrices packed 16 rows together (cpu/packing.py, cpu/quant_packed.h): the layout holds the file's bytes,
the AVX-512 and AVX2 builds' q8 kernels on it give the unpacked matrix's bits in every call, the readers of rows
unpack, other builds and modes refuse it, and a packed fixture model computes the file's logits (which matrices
loading packs: tests/decoder/test_resident.py)."""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from specx.cpu import packing, quant, quant_ref
from specx.cpu.qweight import Q4_0_P16, Q4_K_P16, Q6_K_P16, QWeight, dequantize

needs_kernels = pytest.mark.skipif(not quant.available(), reason=f"quant not built here: {quant.why_not()}")
FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()


def packs_here() -> bool:
    return quant.available() and packing.builds(quant._default())


def runs_packed(lib, name: str, groups: bool) -> bool:
    """Whether `lib` has a packed kernel for `name` with q8 per 256 values (groups) or per 32: Q4_K with groups,
    Q4_0 per 32 (which `groups` leaves as it is), Q6_K with groups, and on AVX-512 per 32 too."""
    return name in packing.types(lib) and (groups or name == "Q4_0" or (lib.name == "avx512" and name == "Q6_K"))


def avx2_builds() -> list:
    """The AVX2 builds this CPU runs, with and without VNNI where it has AVX-VNNI."""
    if not quant.available() or "avx2" not in quant.variants():
        return []
    vnni = quant.VNNI_FLAGS["avx2"][0] in quant.cpu_flags()
    out = []
    for v in (True, False) if vnni else (False,):
        try:
            out.append(quant.load("avx2", vnni=v))
        except OSError:   # e.g. a compiler without -mavxvnni
            pass
    return out


needs_packed_kernel = pytest.mark.skipif(not packs_here(), reason="no AVX-512 or AVX2 build here")
SHAPES = [(16, 256), (48, 1536), (32, 2304)]
TYPES = ["Q4_0", "Q4_K", "Q6_K"]
# Q4_0 rows of any whole number of blocks: a last group of 5 blocks (160), 3.5 groups (896, the 0.5B drafter's)
CASES = [(n, r, c) for n in TYPES for r, c in SHAPES] + [("Q4_0", 16, 160), ("Q4_0", 32, 896)]


def packed(w: QWeight) -> QWeight:
    return packing.pack(quant._default(), w, np.empty(w.nbytes, np.uint8))


@needs_packed_kernel
@pytest.mark.parametrize("name, fill", [("Q4_K", 0xFF), ("Q6_K", 0x00), ("Q6_K", 0xFF)])
def test_a_packed_lanes_largest_sums_are_exact(name, fill):
    """A packed Q4_K or Q6_K lane's sum over its values is held in 16 bits (quant_packed.h; without VNNI the AVX2
    build adds its products as int16 before that: quant_packed_avx2.h): at the largest weights (Q4_K q = 15; Q6_K
    q − 32 = −32 and 31) against activations at ±127 (constant rows, and signs alternating every 4 and every 8
    values) the packed kernels of every build here still give the file layout's bits and quant_ref's, AMX's rows
    included."""
    rng = np.random.default_rng(9)
    w = quant_ref.random_weight(name, 32, 512, rng, extreme=False)
    blocks = w.data.reshape(-1, 144 if name == "Q4_K" else 210).copy()
    if name == "Q4_K":   # the values: Q4_K's qs, Q6_K's ql and qh
        blocks[:, 16:144] = fill
    else:
        blocks[:, 0:192] = fill
    w = QWeight(w.type, blocks.reshape(-1), w.rows, w.cols)
    p = packed(w)
    signs = [np.ones(512), -np.ones(512), np.repeat([1.0, -1.0], 4)[np.arange(512) % 8],
             np.repeat([1.0, -1.0], 8)[np.arange(512) % 16]]
    for lib in [quant._default()] + avx2_builds():
        for m in (1, 5, 40):
            x = torch.from_numpy(np.stack([signs[i % 4] for i in range(m)]).astype(np.float32))
            for groups in [g for g in (False, True) if runs_packed(lib, name, g)]:
                want = lib.matmul(x, [w], "q8", groups=groups).numpy()
                assert np.array_equal(want, quant_ref.reference_q8(x.numpy(), [w], groups))
                assert np.array_equal(lib.matmul(x, [p], "q8", groups=groups).numpy(), want), (lib.describe(), m, groups)


@needs_packed_kernel
def test_packed_activations_are_the_same_quantized_straight_or_from_the_files_layout():
    """A call whose per-256 weights are all packed quantizes X straight into the packed activations; one that also
    holds an unpacked one (24 rows: no whole tiles) makes them from the file layout's quantized rows. Both give
    each matrix's results alone, NaN rows included."""
    rng = np.random.default_rng(11)
    a, b = (quant_ref.random_weight(n, 32, 1536, rng) for n in ("Q4_K", "Q6_K"))
    odd = quant_ref.random_weight("Q4_K", 24, 1536, rng)
    lib = quant._default()
    for m in (1, 5, 40):
        x = torch.from_numpy(rng.standard_normal((m, 1536)).astype(np.float32))
        x[m // 2, 100] = float("nan")
        alone = [lib.matmul(x, [w], "q8").numpy() for w in (a, b, odd)]
        straight = lib.matmul(x, [packed(a), packed(b)], "q8").numpy()
        mixed = lib.matmul(x, [packed(a), odd, packed(b)], "q8").numpy()
        assert np.array_equal(straight, np.concatenate([alone[0], alone[1]], 1), equal_nan=True), m
        assert np.array_equal(mixed, np.concatenate([alone[0], alone[2], alone[1]], 1), equal_nan=True), m


@needs_kernels
@pytest.mark.parametrize("name, rows, cols", CASES)
def test_packing_in_c_then_unpacking_in_numpy_gives_back_the_files_bytes(name, rows, cols):
    """The C packing and the numpy unpacking (the layouts' reference) are inverses, scales and mins included."""
    for extreme in (False, True):
        w = quant_ref.random_weight(name, rows, cols, np.random.default_rng(rows + cols), extreme=extreme)
        p = packed(w)
        assert p.type == {"Q4_0": Q4_0_P16, "Q4_K": Q4_K_P16, "Q6_K": Q6_K_P16}[name]
        assert p.nbytes == w.nbytes and p.name == name
        assert not np.array_equal(p.data, w.data)
        assert np.array_equal(packing.unpack(p).data, w.data)


@needs_packed_kernel
@pytest.mark.parametrize("name, rows, cols", CASES)
def test_a_packed_matrix_gives_the_unpacked_ones_bits_in_any_call(name, rows, cols):
    """The default build's packed kernels give the file layout's bits (assert_packed_bits)."""
    if not any(runs_packed(quant._default(), name, g) for g in (False, True)):
        pytest.skip(f"no packed {name} kernel in {quant._default().describe()}")
    assert_packed_bits(quant._default(), name, rows, cols)


@pytest.mark.skipif(not quant.available() or "avx2" not in quant.variants(), reason="no AVX2 build here")
@pytest.mark.parametrize("name, rows, cols", CASES)
def test_the_avx2_builds_packed_kernels_give_the_unpacked_bits(name, rows, cols):
    """The AVX2 builds' packed kernels (with and without VNNI: quant_packed_avx2.h), as the default build's are
    held: the file layout's and quant_ref's bits in any call."""
    for lib in avx2_builds():
        assert_packed_bits(lib, name, rows, cols)


def assert_packed_bits(lib, name: str, rows: int, cols: int) -> None:
    """q8 results on the packed layout equal the file layout's and quant_ref's bit for bit, for 1 to 40 rows, alone
    or in a batch, with 1 or 2 threads, and in a fused group beside other types; a row with a NaN comes out NaN
    as it does unpacked. Q4_0 and Q6_K both ways (Q4_0 per 32 values in both, Q6_K per 32 values and with groups),
    Q4_K with groups (its only kernel)."""
    rng = np.random.default_rng(5)
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=True)
    other = quant_ref.random_weight("Q5_0" if cols % 32 == 0 else "Q8_0", 16, cols, rng)
    p = packed(w)
    threads = torch.get_num_threads()
    try:
        for m, groups in itertools.product((1, 2, 3, 5, 8, 9, 16, 40), [g for g in (False, True) if runs_packed(lib, name, g)]):
            x = torch.from_numpy(rng.standard_normal((m, cols)).astype(np.float32) * 3)
            if m >= 9:
                x[4, 7] = float("nan")
            want = lib.matmul(x, [w], "q8", groups=groups).numpy()
            assert np.array_equal(want, quant_ref.reference_q8(x.numpy(), [w], groups), equal_nan=True)
            for n in (1, 2):
                torch.set_num_threads(n)
                assert np.array_equal(lib.matmul(x, [p], "q8", groups=groups).numpy(), want, equal_nan=True), (m, n)
                alone = torch.cat([lib.matmul(x[i:i + 1].contiguous(), [p], "q8", groups=groups) for i in range(m)])
                assert np.array_equal(alone.numpy(), want, equal_nan=True), (m, n, groups)
            fused = lib.matmul(x, [p, other, p], "q8", groups=groups).numpy()
            unfused = lib.matmul(x, [w, other, w], "q8", groups=groups).numpy()
            assert np.array_equal(fused, unfused, equal_nan=True), (m, groups)
    finally:
        torch.set_num_threads(threads)


@needs_kernels
@pytest.mark.parametrize("name", TYPES)
def test_rows_of_a_packed_matrix_read_as_the_files(name):
    """Embedding rows (the self-draft copies' reader) and the dequantized values come from the unpacked blocks."""
    w = quant_ref.random_weight(name, 48, 512, np.random.default_rng(7))
    p = packed(w)
    ids = torch.tensor([0, 15, 16, 47, 30])
    assert torch.equal(quant.embed(p, ids), quant.embed(w, ids))
    assert np.array_equal(dequantize(p), dequantize(w))


@needs_kernels
def test_a_packed_weight_holds_whole_tiles():
    """A packed QWeight whose rows are not a multiple of 16 is refused before any kernel runs, and a matrix with
    such rows is not packable."""
    w = quant_ref.random_weight("Q4_K", 17, 256, np.random.default_rng(9))
    assert not packing.packable(w)
    with pytest.raises(ValueError, match="multiple of 16"):
        QWeight(Q4_K_P16, np.zeros(w.nbytes, np.uint8), 17, 256)
    with pytest.raises(ValueError, match="cannot pack"):
        packed(w)


@needs_kernels
def test_kernels_that_cannot_read_the_layout_refuse_it():
    """The f32 mode, the builds without packed kernels and the AVX2 ones for the types and modes they lack refuse a
    packed matrix (an error, never wrong numbers)."""
    w = quant_ref.random_weight("Q4_K", 16, 256, np.random.default_rng(11))
    p, x = packed(w), torch.randn(2, 256)
    with pytest.raises(ValueError, match="refused"):
        quant._default().matmul(x, [p], "f32")
    with pytest.raises(ValueError, match="refused"):
        quant.load("portable").matmul(x, [p], "q8")
    assert not packing.builds(quant.load("portable"))
    q6 = packed(quant_ref.random_weight("Q6_K", 16, 256, np.random.default_rng(12)))
    for lib in avx2_builds():   # its packed kernels: Q4_K and Q6_K with groups only, Q4_0
        assert packing.types(lib) == ("Q4_0", "Q4_K", "Q6_K")
        for w in (q6, p):
            with pytest.raises(ValueError, match="refused"):
                lib.matmul(x, [w], "q8", groups=False)


@needs_kernels
def test_specx_pack_0_keeps_the_files_layout(monkeypatch):
    monkeypatch.setenv(packing.ENV, "0")
    assert not packing.builds(quant._default())


@pytest.mark.slow
@needs_packed_kernel
def test_the_packed_fixture_target_gives_the_files_logits_bit_for_bit(monkeypatch):
    """The 1.5B Q4_K_M fixture loaded with its Q4_K and Q6_K layers packed and with the file's layout: a prompt pass,
    a 5-token verify-sized forward and cached 1-token steps give the same logits bit for bit."""
    from specx.decoder import resident
    from specx.decoder.lm import load

    path = FIXTURES / "qwen2.5-coder-1.5b.gguf"
    if not path.is_file():
        pytest.skip(f"fixture missing: {path}")
    monkeypatch.setattr(resident, "wanted", lambda: True)
    lms = {"packed": load(path, mode="q8")}
    monkeypatch.setenv(packing.ENV, "0")
    lms["file"] = load(path, mode="q8")
    assert "packed 16 rows" in lms["packed"].kernels and "packed" not in lms["file"].kernels
    assert_same_steps(lms, verify=5)


@pytest.mark.slow
@pytest.mark.skipif(not quant.available() or "avx2" not in quant.variants(), reason="no AVX2 build here")
def test_the_avx2_builds_packed_fixture_target_gives_the_default_builds_logits(monkeypatch):
    """The 1.5B fixture on each AVX2 build here, packed, and on the default build: the same logits bit for bit (q8's
    arithmetic is every build's; an AVX2-only CPU runs the first of these)."""
    from specx.decoder import resident
    from specx.decoder.lm import load

    path = FIXTURES / "qwen2.5-coder-1.5b.gguf"
    if not path.is_file():
        pytest.skip(f"fixture missing: {path}")
    monkeypatch.setattr(resident, "wanted", lambda: True)
    default = quant._default()
    for lib in avx2_builds():
        monkeypatch.setitem(quant._state, "lib", lib)
        lms = {"packed": load(path, mode="q8")}
        assert "packed 16 rows" in lms["packed"].kernels
        monkeypatch.setitem(quant._state, "lib", default)
        lms["file"] = load(path, mode="q8")
        monkeypatch.setitem(quant._state, "lib", lib)
        assert_same_steps(lms, verify=5, libs={"packed": lib, "file": default})


@pytest.mark.slow
@needs_packed_kernel
def test_the_packed_fixture_drafter_gives_the_files_logits_bit_for_bit(monkeypatch):
    """The 0.5B drafter fixture as a drafter loads it (its wider layers re-encoded to Q4_0, rows of 896 values, a
    VocabTrim head), its Q4_0 layers packed and in the file's layout: a prompt pass, a 9-token catch-up and cached
    1-token steps give the same logits bit for bit."""
    from specx.decoder import resident
    from specx.decoder.lm import load

    path = FIXTURES / "qwen2.5-coder-0.5b.gguf"
    if not path.is_file():
        pytest.skip(f"fixture missing: {path}")
    monkeypatch.setattr(resident, "wanted", lambda: True)
    if "Q4_0" not in packing.types(quant._default()):
        pytest.skip(f"no packed Q4_0 kernel in {quant._default().describe()}")
    lms = {"packed": load(path, mode="q4", draft_vocab=32768)}
    monkeypatch.setenv(packing.ENV, "0")
    lms["file"] = load(path, mode="q4", draft_vocab=32768)
    assert "Q4_0/Q4_K layers packed" in lms["packed"].kernels and "packed" not in lms["file"].kernels
    assert_same_steps(lms, verify=9)


def assert_same_steps(lms: dict, verify: int, libs: dict | None = None) -> None:
    """Both loads of a model give the same logits bit for bit: a 40-token prompt pass, a forward of `verify` tokens,
    then (cropped back) cached 1-token steps (each on its build in `libs`, if given)."""
    ids = torch.randint(100, 20000, (40 + verify,), generator=torch.Generator().manual_seed(verify)).tolist()
    got = {}
    for name, lm in lms.items():
        if libs:
            quant._state["lib"] = libs[name]
        lm.reset()
        steps = [lm.forward(ids[:40]), lm.forward(ids[40:])]
        lm.crop(40)
        steps += [lm.forward([t]) for t in ids[40:45]]
        got[name] = steps
    for a, b in zip(got["packed"], got["file"]):
        assert torch.equal(a, b)
