"""specx/cpu/attention.c: the lean decoder's attention, norm and activation kernels against their PyTorch
references, and the rule that makes speculation lossless: a row's bits never depend on the other rows or threads."""
from __future__ import annotations

import pytest
import torch

from specx.cpu import attention as A

pytestmark = pytest.mark.skipif(not A.available(), reason="attention kernels not built here")


def layer(kv=2, heads=6, dim=64, capacity=256, window=0, adjacent=False, norms=True, seed=0) -> A.Attention:
    """A layer's attention over an empty cache, rotary tables as a model has them, random q/k norms."""
    g = torch.Generator().manual_seed(seed)
    k, v = A.cache_tensors(kv, capacity, dim)
    angles = torch.arange(capacity + 8.0)[:, None] * (1 / 10_000 ** (torch.arange(0, dim, 2) / dim))
    q_norm, k_norm = (torch.rand(dim, generator=g) + 0.5, torch.rand(dim, generator=g) + 0.5) if norms else (None, None)
    return A.Attention(k[0], v[0], angles.cos().contiguous(), angles.sin().contiguous(), q_norm, k_norm, heads, 1e-6,
                       dim ** -0.5, window, adjacent)


def qkv_rows(att: A.Attention, rows: int, seed: int = 1) -> torch.Tensor:
    kv, _, dim = att.v.shape
    return torch.randn(rows, (att.heads + 2 * kv) * dim, generator=torch.Generator().manual_seed(seed))


def close(got, want):
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6 * max(1.0, float(want.abs().max())))


@pytest.mark.parametrize("kw", [{}, {"adjacent": True}, {"window": 7}, {"norms": False, "kv": 1, "heads": 4, "dim": 32},
                                {"kv": 3, "heads": 3, "dim": 24}])
def test_attention_matches_its_reference(kw):
    """Keys written to the cache and each row's attention equal the PyTorch reference (float noise), for a
    prefill, a later chunk, a chunk under a tree mask, and one whose mask also covers that chunk's cached slots."""
    fast, slow = layer(**kw), layer(**kw)
    g = torch.Generator().manual_seed(3)
    mask, grown = torch.rand(5, 5, generator=g) < 0.5, torch.rand(3, 8, generator=g) < 0.5
    for start, rows, m in ((0, 40, None), (40, 9, None), (49, 5, mask), (54, 3, grown)):
        x, pos = qkv_rows(fast, rows, start), torch.arange(start - (0 if m is None else m.shape[1] - rows), start + rows)
        close(A.attention(fast, x, start, pos, m), A.reference_attention(slow, x, start, pos, m))
        close(A.keys(fast)[:, :start + rows], A.keys(slow)[:, :start + rows])
        close(fast.v[:, :start + rows], slow.v[:, :start + rows])


@pytest.mark.parametrize("kw", [{}, {"window": 20, "adjacent": True}, {"kv": 1, "dim": 24},
                                {"kv": 3, "heads": 3, "dim": 24}])
def test_attention_rows_do_not_depend_on_the_batch_or_threads(kw):
    """Row t's output is bit-identical whether it is computed alone or among 1..16 rows, on 1 or 2 threads
    (16 rows after 200 are enough work for the kernel to split it across threads)."""
    kw = {"heads": 8, **kw}
    prefix, new = qkv_rows(layer(**kw), 200, 0), qkv_rows(layer(**kw), 16, 1)
    alone, together = layer(**kw), layer(**kw)
    A.attention(alone, prefix, 0, torch.arange(200))
    A.attention(together, prefix, 0, torch.arange(200))
    base = torch.cat([A.attention(alone, new[t:t + 1], 200 + t, torch.tensor([200 + t])) for t in range(16)])
    threads = torch.get_num_threads()
    try:
        for n_threads in (1, 2):
            torch.set_num_threads(n_threads)
            for k in (2, 5, 6, 16):
                got = torch.cat([A.attention(together, new[i:i + k], 200 + i,
                                             torch.arange(200 + i, 200 + min(i + k, 16))) for i in range(0, 16, k)])
                assert torch.equal(got, base), (n_threads, k)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("kw", [{}, {"kv": 3, "heads": 3, "dim": 24}, {"kv": 1, "heads": 7, "norms": False},
                                {"window": 7}, {"window": 215}, {"window": 216}, {"window": 300}])
def test_rows_sharing_key_reads_give_the_bits_of_rows_read_one_by_one(kw):
    """A plain causal call of several rows reads each key and value once for all of them (attend_rows; a windowed
    layer's rows each over their own window): every row equals what the row-by-row path gives, on 1 and 2
    threads, for 2 to 16 rows after 0 and 200 tokens."""
    prefix = qkv_rows(layer(**kw), 200, 0)
    threads, was = torch.get_num_threads(), A.share_rows()
    try:
        for n_threads in (1, 2):
            torch.set_num_threads(n_threads)
            for start, k in ((0, 16), (200, 2), (200, 5), (200, 7), (200, 16)):
                outs = []
                for share in (False, True):
                    att = layer(**kw)
                    A.attention(att, prefix[:start], 0, torch.arange(start))
                    A.share_rows(share)
                    new = qkv_rows(att, k, 7)
                    outs.append(A.attention(att, new, start, torch.arange(start, start + k)))
                assert torch.equal(*outs), (n_threads, start, k)
    finally:
        A.share_rows(was)
        torch.set_num_threads(threads)


@pytest.mark.parametrize("kw", [{}, {"kv": 3, "heads": 9, "dim": 32}, {"kv": 1, "heads": 4, "dim": 80},
                                {"kv": 2, "heads": 6, "dim": 48, "window": 50}])
def test_tiles_value_passes_and_thread_splits_never_change_a_rows_bits(kw):
    """A long call's rows taken a tile at a time (score rows that fit L2), 4 or 8 query vectors a pass over the
    values, and the rows cut into parts of equal work on 1-3 threads, a windowed layer's too: every row keeps the
    bits it has alone."""
    prefix, new = qkv_rows(layer(**kw), 120, 0), qkv_rows(layer(**kw), 37, 3)
    threads, was = torch.get_num_threads(), A.passes()
    try:
        for start in (0, 120):
            def run(tile, vectors, n_threads):
                att = layer(**kw)
                A.passes(0, 0)
                A.attention(att, prefix[:start], 0, torch.arange(start))
                A.passes(tile, vectors)
                torch.set_num_threads(n_threads)
                return A.attention(att, new, start, torch.arange(start, start + 37))
            base = run(1, 4, 1)   # every row a tile of its own, 4 vectors a pass, one thread
            for tile, vectors, n_threads in ((1 << 20, 0, 1), (1 << 20, 8, 2), (4096, 4, 2), (4096, 8, 3),
                                             (1, 0, 3), (20_000, 0, 2)):
                assert torch.equal(run(tile, vectors, n_threads), base), (start, tile, vectors, n_threads)
    finally:
        A.passes(*was)
        torch.set_num_threads(threads)


def test_a_windowed_call_whose_rows_are_not_at_their_slots_positions_keeps_the_row_by_row_bits():
    """The shared path cuts a window by slots; rows at other positions (the window counts positions) must not take
    it: shared or row by row, the same bits."""
    prefix = qkv_rows(layer(window=7), 40, 0)
    outs = []
    was = A.share_rows()
    try:
        for share in (False, True):
            att = layer(window=7)
            A.attention(att, prefix, 0, torch.arange(40))
            A.share_rows(share)
            outs.append(A.attention(att, qkv_rows(att, 6, 5), 40, torch.arange(40, 46) + 3))
    finally:
        A.share_rows(was)
    assert torch.equal(*outs)


def test_the_memory_plan_prices_the_score_tile_attention_c_uses():
    from specx.decoder.config import SCORE_TILE_BYTES

    was = A.passes()
    assert was[0] == SCORE_TILE_BYTES


def test_a_tree_row_equals_the_same_branch_fed_in_a_line():
    """Under a tree mask, a row that sees only its branch gets the bits of that branch decoded as a sequence."""
    prefix, new = qkv_rows(layer(), 30, 0), qkv_rows(layer(), 3, 1)
    tree, line = layer(), layer()
    for att in (tree, line):
        A.attention(att, prefix, 0, torch.arange(30))
    mask = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=torch.bool)   # a → b, a → c: b and c siblings
    out = A.attention(tree, new, 30, torch.tensor([30, 31, 31]), mask)
    straight = A.attention(line, new[[0, 2]], 30, torch.tensor([30, 31]))
    assert torch.equal(out[2], straight[1])


#   0 ─ 1 ─ 3 ─ 5
#   │   └ 4
#   └ 2 ─ 6        (node: parent)
TREE = (-1, 0, 0, 1, 1, 3, 2)
LEVELS = ((0,), (1, 2), (3, 4, 6), (5,))


def _ancestry(parents) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, n) bool: each node's ancestors; (n,) each node's depth from 0."""
    n = len(parents)
    seen, depth = torch.zeros(n, n, dtype=torch.bool), torch.zeros(n, dtype=torch.int64)
    for i, p in enumerate(parents):
        if p >= 0:
            seen[i] = seen[p]
            seen[i, p] = True
            depth[i] = depth[p] + 1
    return seen, depth


@pytest.mark.parametrize("window", [0, 1, 3])
def test_a_tree_grown_level_by_level_gives_the_bits_of_one_tree_call(window):
    """A tree forwarded a level a call, each call's mask naming its rows' ancestors among the cached earlier
    levels (at their tree positions, which the window counts, not their slots), gives each node the bits of the
    whole tree in one call, on 1 or 2 threads."""
    nodes, prefix = len(TREE), 30
    seen, depth = _ancestry(TREE)
    order = [i for lv in LEVELS for i in lv]             # slot order: level by level
    seen, depth = seen[order][:, order], depth[order]
    x, pos = qkv_rows(layer(), nodes, 1), prefix + depth
    whole, grown = layer(window=window), layer(window=window)
    for att in (whole, grown):
        A.attention(att, qkv_rows(att, prefix, 0), 0, torch.arange(prefix))
    want = A.attention(whole, x, prefix, pos, seen)
    threads = torch.get_num_threads()
    try:
        for n_threads in (1, 2):
            torch.set_num_threads(n_threads)
            done = 0
            for lv in LEVELS:
                rows = slice(done, done + len(lv))
                got = A.attention(grown, x[rows], prefix + done, pos[:rows.stop], seen[rows, :rows.stop])
                assert torch.equal(got, want[rows]), (n_threads, lv)
                done += len(lv)
    finally:
        torch.set_num_threads(threads)


def test_norm_and_activation_kernels_match_their_references():
    g = torch.Generator().manual_seed(0)
    x, a = torch.randn(7, 96, generator=g), torch.randn(7, 96, generator=g)
    w, post = torch.randn(96, generator=g), torch.randn(96, generator=g)
    close(A.rmsnorm(x, w, 1e-6), A.reference_rmsnorm(x, w, 1e-6))
    for p in (None, post):
        fast, slow = x.clone(), x.clone()
        close(A.residual_norm(fast, a, p, w, 1e-5), A.reference_residual_norm(slow, a, p, w, 1e-5))
        close(fast, slow)
    gu = torch.randn(5, 2 * 300, generator=g) * 4
    gu[0, :8] = torch.tensor([-100.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 100.0, 5.0])   # saturated and tiny inputs
    for act in A.ACTS:
        close(A.glu(gu, act), A.reference_glu(gu, act))


def test_an_activation_gives_the_same_bits_in_a_vector_lane_and_in_the_scalar_tail():
    """glu runs 16 values at a time and the row's last n mod 16 one by one: rotating a row moves values between
    the two, and each value's result stays the same bits (saturated, tiny and ordinary inputs)."""
    g = torch.Generator().manual_seed(3)
    gate = torch.cat([torch.tensor([-100.0, -87.5, -30.0, -1e-3, 0.0, 1e-3, 30.0, 88.5, 100.0]),
                      torch.randn(12, generator=g) * 4])
    up = torch.randn(21, generator=g)
    for act in A.ACTS:
        base = A.glu(torch.cat([gate, up])[None], act)[0]
        for shift in (5, 9, 16):
            rolled = A.glu(torch.cat([gate.roll(shift), up.roll(shift)])[None], act)[0]
            assert torch.equal(rolled, base.roll(shift)), (act, shift)


def test_norm_and_activation_rows_do_not_depend_on_the_batch_or_threads():
    """Enough rows for the kernels to go parallel: every row equals the row computed alone."""
    g = torch.Generator().manual_seed(0)
    x, a, w = torch.randn(80, 2048, generator=g), torch.randn(80, 2048, generator=g), torch.randn(2048, generator=g)
    gu = torch.randn(80, 2 * 2048, generator=g)
    threads = torch.get_num_threads()
    try:
        for n_threads in (1, 2):
            torch.set_num_threads(n_threads)
            for act in A.ACTS:
                alone = torch.cat([A.glu(gu[i:i + 1], act) for i in range(80)])
                assert torch.equal(A.glu(gu, act), alone)
            assert torch.equal(A.rmsnorm(x, w, 1e-6), torch.cat([A.rmsnorm(x[i:i + 1], w, 1e-6) for i in range(80)]))
            together, each = x.clone(), x.clone()
            h = A.residual_norm(together, a, w, w, 1e-6)
            each_row = [A.residual_norm(each[i:i + 1], a[i:i + 1], w, w, 1e-6) for i in range(80)]
            assert torch.equal(h, torch.cat(each_row))
    finally:
        torch.set_num_threads(threads)


def test_every_build_gives_the_same_bits():
    """The AVX-512, AVX2 and portable builds (those this CPU runs) compute the same bits."""
    builds = A.builds_here()
    if len(builds) < 2:
        pytest.skip("one build runs here")
    outputs = {}
    for name in builds:
        A._state.update(lib=A.load_build(name), why="", build=name)
        att = layer(window=11, adjacent=True)
        gu = qkv_rows(att, 4, 5)
        outputs[name] = (A.attention(att, qkv_rows(att, 40), 0, torch.arange(40)), A.glu(gu, "gelu_tanh"),
                         A.glu(gu, "silu"), A.rmsnorm(gu, gu[0], 1e-6))
    A._state.clear()
    first = outputs[builds[0]]
    for name in builds[1:]:
        assert all(torch.equal(a, b) for a, b in zip(first, outputs[name])), name


@pytest.mark.parametrize("start, positions", [(250, [250, 251, 252, 253, 254, 255, 256]), (0, [0, 1, 999])])
def test_slots_or_positions_outside_the_cache_are_refused(start, positions):
    """Checked before a byte is written: a ValueError, never a write past the cache or a read past the tables."""
    att = layer()
    with pytest.raises(ValueError):
        A.attention(att, qkv_rows(att, len(positions)), start, torch.tensor(positions))
