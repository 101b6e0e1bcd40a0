"""CPU linear layers: weight-only fp16, int8 per channel, int4 per group of 32; and int8dyn for drafters.

Why these kernels (measured on the 2-core AVX2 dev machine, one 8960×1536 layer, 1 / 5 rows):

| kernel | 1 row | 5 rows | a row's result vs the same row alone |
|---|---|---|---|
| float32, oneDNN prepacked (fastpath.py) | 2.2 ms | 4.4 ms | 2e-6 (summation order) |
| fp16 weights, fbgemm prepacked, fp32 activations | 0.63 ms | 0.88 ms | 1e-6 relative |
| int8 weights, `aten._weight_int8pack_mm`, bf16 activations | 0.81 ms | 2.7 ms | identical |
| int4 weights, `aten._weight_int4pack_mm_for_cpu`, bf16 activations | 1.0 ms | 2.6 ms | identical |
| int8 / int4 kernels above with fp32 activations | 6.6 / 16 ms | 52 / 108 ms | identical |

PyTorch's packed int8/int4 CPU kernels are only fast with bfloat16 activations on this CPU, so those two
layers round their input to bf16 and widen the output back to fp32; the rest of the model stays fp32
(so prefill keeps fp32's speed). Dynamic int8 quantization (fbgemm's dynamic linear) is not used for a
target: it quantizes activations with one scale for all rows of a forward, so verifying k+1 tokens would
compute different numbers than decoding one, and speculative output would drift from plain output. A
drafter may take it (`int8dyn`, DynInt8Linear): its numbers only decide what is proposed.
Every target layer here keeps a row's result independent of the other rows (tests/cpu/test_qlinear.py), so the
target's speculative output equals its own plain output in each precision; what a precision changes is
the target itself, which the bench's quality guard measures against float32.
"""
from __future__ import annotations

import torch

INT4_ROWS = 16    # the packed int4 kernel takes output rows in blocks of 16
INT4_GROUP = 32   # measured on Qwen2.5-Coder-1.5B: perplexity 1.010× float32 at 32, 1.046× at 64, 1.113× at 128
WEIGHT_BYTES = {"fp16": 2.0, "int8": 1.0, "int4": 0.5 + 4 / INT4_GROUP, "int8dyn": 1.0}   # int4: + bf16 scale, zero


class PackedLinear(torch.nn.Module):
    """Base: holds the bias and shapes; subclasses pack the weight and implement `forward`."""

    precision = ""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bias = None if linear.bias is None else linear.bias.detach().float().clone()

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, weights={self.precision}"

    @property
    def weight_bytes(self) -> int:
        """The packed weight's size and the bias's (neither is a parameter); per-row scales aside."""
        bias = 0 if self.bias is None else 4 * self.out_features
        return int(self.in_features * self.out_features * WEIGHT_BYTES[self.precision]) + bias

    def _flat(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1, self.in_features)

    def _shaped(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        y = y.to(x.dtype)
        if self.bias is not None:
            y = y + self.bias.to(x.dtype)
        return y.reshape(*x.shape[:-1], self.out_features)


class Fp16Linear(PackedLinear):
    """fp16 weights prepacked for fbgemm; activations and accumulation stay fp32."""

    precision = "fp16"

    def __init__(self, linear: torch.nn.Linear):
        super().__init__(linear)
        weight = linear.weight.detach().float()
        self.packed = torch.ops.quantized.linear_prepack_fp16(weight, None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.quantized.linear_dynamic_fp16(self._flat(x).float().contiguous(), self.packed)
        return self._shaped(y, x)

    def dequantized(self) -> torch.Tensor:
        weight, _ = torch.ops.quantized.linear_unpack_fp16(self.packed)
        return weight.float()

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return self._shaped(self._flat(x).float() @ self.dequantized().T, x)


class Int8Linear(PackedLinear):
    """Symmetric per-output-channel int8 weights; the matmul runs in bf16."""

    precision = "int8"

    def __init__(self, linear: torch.nn.Linear):
        super().__init__(linear)
        weight = linear.weight.detach().float()
        self.scales = _bf16_at_least(weight.abs().amax(dim=1) / 127)
        scale = self.scales.float()[:, None]   # quantize with the scale the kernel will use
        self.qweight = torch.round(weight / scale).clamp(-127, 127).to(torch.int8).contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.aten._weight_int8pack_mm(self._flat(x).to(torch.bfloat16).contiguous(), self.qweight,
                                               self.scales)
        return self._shaped(y, x)

    def dequantized(self) -> torch.Tensor:
        return self.qweight.float() * self.scales.float()[:, None]

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        xb = self._flat(x).to(torch.bfloat16).float()
        return self._shaped(xb @ self.dequantized().T, x)


class Int4Linear(PackedLinear):
    """Asymmetric int4 weights in groups of 32 inputs (tinygemm layout); the matmul runs in bf16."""

    precision = "int4"

    def __init__(self, linear: torch.nn.Linear, group: int = INT4_GROUP):
        super().__init__(linear)
        if self.in_features % group or self.out_features % INT4_ROWS:
            raise ValueError(f"int4 needs in_features divisible by {group} and out_features by {INT4_ROWS}")
        self.group = group
        weight = linear.weight.detach().float().view(self.out_features, -1, group)
        low, high = weight.amin(-1, keepdim=True), weight.amax(-1, keepdim=True)
        scale = _bf16_at_least((high - low) / 15).float()
        zero = (low + 8 * scale).to(torch.bfloat16).float()  # the kernel computes (q - 8) * scale + zero
        q = torch.round((weight - zero) / scale + 8).clamp(0, 15).to(torch.int32)
        self.q = q.view(self.out_features, self.in_features)
        self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(self.q, 1)
        scales_zeros = torch.stack([scale.squeeze(-1), zero.squeeze(-1)], -1)   # (N, K/g, 2)
        self.scales_zeros = scales_zeros.transpose(0, 1).contiguous().to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(self._flat(x).to(torch.bfloat16).contiguous(),
                                                       self.packed, self.group, self.scales_zeros)
        return self._shaped(y, x)

    def dequantized(self) -> torch.Tensor:
        sz = self.scales_zeros.float().transpose(0, 1)                          # (N, K/g, 2)
        q = self.q.view(self.out_features, -1, self.group).float()
        return ((q - 8) * sz[..., :1] + sz[..., 1:]).view(self.out_features, self.in_features)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        xb = self._flat(x).to(torch.bfloat16).float()
        return self._shaped(xb @ self.dequantized().T, x)


class DynInt8Linear(PackedLinear):
    """Drafters only: int8 weights per output channel and int8 activations, quantized with one scale
    per forward (fbgemm's dynamic linear). A row's result depends on the other rows of its forward,
    so the target never takes it; a drafter's numbers only decide what is proposed, and the target's
    verification keeps the output its own. Measured on the fixture Qwen2.5-Coder-0.5B drafter (2-core
    AVX2): a drafting step 65–69 ms vs 98–107 ms with fp16 weights; its greedy choice agreed with the
    1.5B target's on 63–71% of positions of three texts vs 63–73% in fp16. Layers that narrow their
    input (an MLP's down projection: its inputs carry outliers that one scale per forward flattens;
    quantizing it dropped that agreement to 51–62%) keep fp16 weights (`quantize_linears`)."""

    precision = "int8dyn"

    def __init__(self, linear: torch.nn.Linear):
        super().__init__(linear)
        weight = linear.weight.detach().float()
        scales = (weight.abs().amax(dim=1).clamp(min=1e-8) / 127).double()
        zeros = torch.zeros(len(scales), dtype=torch.long)
        qweight = torch.quantize_per_channel(weight, scales, zeros, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(qweight, None)   # the only copy kept

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.quantized.linear_dynamic(self._flat(x).float().contiguous(), self.packed, True)
        return self._shaped(y, x)

    def dequantized(self) -> torch.Tensor:
        weight, _ = torch.ops.quantized.linear_unpack(self.packed)
        return weight.dequantize()


def _bf16_at_least(scale: torch.Tensor) -> torch.Tensor:
    """A bf16 scale no smaller than `scale` (bf16 rounds by at most 2^-9 relative), so nothing clips."""
    return (scale.clamp(min=1e-12) * (1 + 2 ** -8)).to(torch.bfloat16)


LAYERS = {"fp16": Fp16Linear, "int8": Int8Linear, "int4": Int4Linear}
DRAFT_ONLY = {"int8dyn": DynInt8Linear}   # results depend on the batch: never the target's layers


def usable(precision: str) -> bool:
    """Whether this PyTorch build has the kernel (fbgemm for fp16 and int8dyn, the packed aten ops for int8/int4)."""
    if precision in ("fp16", "int8dyn"):
        return "fbgemm" in torch.backends.quantized.supported_engines
    name = {"int8": "_weight_int8pack_mm", "int4": "_weight_int4pack_mm_for_cpu"}.get(precision)
    return bool(name) and hasattr(torch.ops.aten, name)


def quantize_linears(model: torch.nn.Module, precision: str) -> int:
    """Replace every float nn.Linear by the layer for `precision`, in place; returns how many."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.device.type == "cpu":
                if precision == "int4" and (child.in_features % INT4_GROUP or child.out_features % INT4_ROWS):
                    continue  # stays float: the kernel needs whole groups and blocks of rows
                layer = _layer_for(precision, child)
                with torch.no_grad():
                    setattr(parent, name, layer(child))
                swapped += 1
    return swapped


def _layer_for(precision: str, linear: torch.nn.Linear) -> type[PackedLinear]:
    """int8dyn keeps fp16 weights where a layer narrows its input (see DynInt8Linear)."""
    if precision == "int8dyn":
        return DynInt8Linear if linear.in_features <= linear.out_features else Fp16Linear
    return LAYERS[precision]
