"""CUDA graphs of the dense decoder's forward (dense.py): one graph per (rows T, attention span, layers left
out, cached tree nodes the rows see), captured on first use and replayed after, so a forward costs one graph launch instead of hundreds of kernel launches from
Python (the transformers path decoded the 1.5B at 17.7 tok/s on an H100, bound by launches: issue 38).

A graph reads its inputs from static device buffers (ids, positions and the cache length in one int64 buffer,
the tree mask) and writes the logits into a static output, both shared by the graphs of one T; the host fills
the inputs with one copy from pinned memory. Graphs of one decoder share a memory pool: they run one at a
time, and only their outputs (held here) outlive a replay. Capture follows the PyTorch docs: warm up on a
side stream, then capture on it.

A self-draft (drafters/self.py) runs the target with some layers left out: each skip set gets graphs of its
own, so a partial forward costs a graph launch as the full one does (eagerly, a partial forward of the 1.5B
costs more launches' time than the full graph's whole forward). The search tries many skip sets: graphs of
at most MAX_SHAPES of them are kept, the least recently used dropped first."""
from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from .dense import DenseCache, DenseDecoder, check_room, tree_mask

MIN_SPAN = 256    # the smallest attention span: shorter contexts share one graph per T
WARMUPS = 2       # eager runs before a capture (cuBLAS picks and allocates for a new shape)
MAX_ROWS = 17     # rows a graph is captured for (decode: 1; verify: k + 1 with k ≤ 16); longer calls run eagerly
MAX_SHAPES = 4    # skip sets (besides the full model) whose graphs are kept: the drafting shape, the search's
                  # candidate, and room for the two it alternates between


def span(end: int, cache: DenseCache) -> int:
    """Cache slots attention reads for a call ending at slot `end`: the next power of two (at least MIN_SPAN),
    at most the capacity. Attention costs at most twice what the filled slots need, in few distinct shapes."""
    return min(cache.capacity, max(MIN_SPAN, 1 << max(end - 1, 0).bit_length()))


class _Rows:
    """The static buffers of one T over m cached tree nodes (m = 0 but for a tree level a drafter runs over
    its earlier levels): inputs [ids (T) | positions (m + T) | start] (device and pinned host), the (T, m + T)
    tree mask, logits."""

    def __init__(self, rows: int, past: int, vocab: int, decoder: DenseDecoder):
        dev = decoder.device
        self.past = past
        self.inputs = torch.zeros(2 * rows + past + 1, dtype=torch.int64, device=dev)
        self.host = torch.zeros(2 * rows + past + 1, dtype=torch.int64).pin_memory()
        self.copied = torch.cuda.Event()
        self.tree = tree_mask(rows, None, dev) if not past else torch.zeros(rows, past + rows, dtype=torch.bool,
                                                                            device=dev)
        self.default_tree = not past
        self.logits = torch.empty(rows, vocab, dtype=decoder.dtype, device=dev)


class Graphs:
    """Captured forwards of `decoder` on `cache`; `forward` replays (capturing first when new)."""

    def __init__(self, decoder: DenseDecoder, cache: DenseCache):
        self.decoder, self.cache = decoder, cache
        self.pool = torch.cuda.graph_pool_handle()
        self.stream = torch.cuda.Stream(decoder.device)
        self.rows: dict[tuple[int, int], _Rows] = {}   # by (T, m cached tree nodes)
        # by (T, attention span, skip set, m cached tree nodes)
        self.graphs: dict[tuple[int, int, frozenset[int], int], torch.cuda.CUDAGraph] = {}
        self.shapes: list[frozenset[int]] = []   # skip sets with graphs, least recently used first
        self.timed: list | None = None   # a list: each replay appends its (start, end) CUDA events (benchmarks)

    @property
    def captured(self) -> list[int]:
        """The row counts T captured so far, in order."""
        return sorted({key[0] for key in self.graphs})

    @torch.inference_mode()
    def forward(self, ids: Sequence[int], positions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, skip: Collection[int] = ()) -> torch.Tensor:
        """Logits (T, vocab) of `ids` appended to the cache, as DenseDecoder.forward gives them (`skip`: the
        layers left out). The tensor is a static output: read or copy it before the next forward of the same T."""
        d, cache, rows = self.decoder, self.cache, len(ids)
        past = 0 if mask is None else mask.shape[1] - rows   # cached tree nodes the rows may see
        if not 0 < rows <= MAX_ROWS or past > MAX_ROWS:
            return d.forward(cache, ids, positions, mask, skip)
        check_room(d, cache, rows)
        start = cache.length
        buf = self.rows.get((rows, past)) or self.rows.setdefault(
            (rows, past), _Rows(rows, past, d.weights.output.shape[0], d))
        buf.copied.synchronize()   # the previous copy out of the pinned buffer is done before it is refilled
        pos = range(start, start + rows) if positions is None else positions.tolist()
        buf.host.copy_(torch.tensor([*ids, *pos, start], dtype=torch.int64))
        buf.inputs.copy_(buf.host, non_blocking=True)
        buf.copied.record()
        if mask is not None or not buf.default_tree:
            buf.tree.copy_(tree_mask(rows, mask, d.device))
            buf.default_tree = mask is None
        key = (rows, span(start + rows, cache), self._shape(frozenset(skip)), past)
        graph = self.graphs.get(key)
        if graph is None:
            self.graphs[key] = self._capture(buf, *key[:3])
        elif self.timed is None:
            graph.replay()
        else:
            events = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            events[0].record()
            graph.replay()
            events[1].record()
            self.timed.append(events)
        cache.length = start + rows
        return buf.logits

    def _shape(self, skip: frozenset[int]) -> frozenset[int]:
        """Mark `skip` as just used; past MAX_SHAPES skip sets, drop the graphs of the least recently used."""
        if skip:
            if skip in self.shapes:
                self.shapes.remove(skip)
            self.shapes.append(skip)
            if len(self.shapes) > MAX_SHAPES:
                old = self.shapes.pop(0)
                self.graphs = {key: g for key, g in self.graphs.items() if key[2] != old}
        return skip

    def _step(self, buf: _Rows, rows: int, slots: int, skip: frozenset[int] = frozenset()):
        """The forward a graph holds: from the static inputs of T = rows into its static logits."""
        end = 2 * rows + buf.past
        ids, positions, start = buf.inputs[:rows], buf.inputs[rows:end], buf.inputs[end:]

        def step():
            buf.logits.copy_(self.decoder.step(self.cache, ids, positions, start, buf.tree, slots, skip))

        return step

    def _capture(self, buf: _Rows, rows: int, slots: int, skip: frozenset[int] = frozenset()) -> torch.cuda.CUDAGraph:
        """Warm up on the side stream (which computes this call's logits: a step
        writes the same cache slots and logits each time), then capture the same call."""
        step = self._step(buf, rows, slots, skip)
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            for _ in range(WARMUPS):
                step()
        torch.cuda.current_stream().wait_stream(self.stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool, stream=self.stream):
            step()
        return graph
