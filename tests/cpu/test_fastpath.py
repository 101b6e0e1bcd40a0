"""The float32 fast paths (specx rowgemm, oneDNN): same results as the reference linear, rows independent
of each other, speculative output equal to plain output."""
from __future__ import annotations

import pytest
import torch

from specx.cpu import fastpath

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="no oneDNN in this torch")


def test_prepacked_linear_matches_reference_and_is_row_independent():
    """Prepacked and plain linear agree within float32 noise; a row's result barely depends on its batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256, bias=False))
    x = torch.randn(9, 512)
    with torch.inference_mode():
        reference = model(x)
        assert fastpath.prepack_linears(model) == 2
        fast = model(x)
        assert torch.allclose(fast, reference, atol=1e-5, rtol=1e-5)
        alone = model(x[:1])
        for rows in (2, 5, 9):
            assert (model(x[:rows])[0] - alone[0]).abs().max() < 1e-5


@pytest.mark.parametrize("kernels", ["onednn", "rowgemm"])
def test_fast_path_keeps_speculative_greedy_equal_to_plain(make_lm, kernels):
    """On a float32 tiny model with either fast path, speculative greedy equals plain greedy."""
    from specx.drafters.model import ModelDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    target, draft = make_lm("qwen2", seed=3), make_lm("qwen2", seed=4, layers=1)
    for lm in (target, draft):
        lm.model.float()
    outs = []
    if kernels == "rowgemm" and not fastpath.row_kernel():
        pytest.skip("rowgemm not built here")
    swap = fastpath.prepack_linears if kernels == "onednn" else fastpath.row_linears
    for fast in (False, True):
        if fast:
            assert swap(target.model) and swap(draft.model)
        for k, drafter in ((0, ModelDrafter(draft, 96, 96)), (4, ModelDrafter(draft, 96, 96))):
            gen = Generation(target, drafter, [0, 5, 9, 12], k=k, max_tokens=20, sampling=Sampling())
            outs.append([t for e in gen if isinstance(e, Round) for t in e.token_ids])
    assert outs[0] == outs[1] == outs[2] == outs[3]


def test_reference_kernels_can_be_forced(monkeypatch):
    """SPECX_KERNELS=reference turns the fast path off."""
    model = torch.nn.Linear(4, 4)
    assert fastpath.available(model)
    monkeypatch.setenv("SPECX_KERNELS", "reference")
    assert not fastpath.available(model)
