"""Int8 weights for decoding: a copy of a TransformerLM whose block matrices are stored as 8-bit integers.

At batch 1 a decoding step reads every weight once per token and does ~2 FLOPs with each, so its speed
is bounded by the bytes it reads over the memory bandwidth (docs/benchmarks.md, "Decoding against the
memory limit"). Int8 weights are a quarter of float32's bytes, so their limit is up to ~4x higher, at
a cost in the model's likelihood that benchmarks/decode_limit.py --int8 measures. A speed path beside
the model, like layers/decode_step.py: the float32 model is copied, never changed.

Each row r of a matrix W (out, in), the weights of one output, is stored as int8 q_r with one scale s_r:

    s_r = max |W_r| / 127        q_r = round(W_r / s_r), in [-127, 127]        W_r ~ s_r * q_r

(symmetric, per output channel; s_r rounded up to a bfloat16 number, which the kernel wants). The
product is torch's weight-only int8 kernel, `torch._weight_int8pack_mm`: x in bfloat16, each int8 weight
converted to float and scaled in registers, the products summed in float32, the result rounded to
bfloat16 and added to the float32 bias. So the weights keep int8's precision and the activations
bfloat16's 8 significant bits, each row on its own: a token's logits do not depend on the other tokens
of a call, and decoding with the KV cache gives the tokens of recomputing the context. (Torch's x86
kernel, aten/src/ATen/native/cpu/int8mm_kernel.cpp, is vectorised for bfloat16 activations; float32 ones
take a scalar loop.)

Not used: fbgemm's dynamic quantization (`torch.ao.quantization.quantize_dynamic`), which quantizes the
activations too, to 7 bits with one scale per call: on shakespeare-transformer its logits moved ~3x
more (rms 0.154 against 0.045 over 2 x 100 random tokens), a token's logits depended on the other tokens
of the call (its cached greedy tokens left recomputation's within 64), and torch 2.13 deprecates its
quantized tensors.

The token embedding, the LayerNorms, the biases and the output projection (tied to the embedding: V x C,
small for a character vocabulary) stay float32. `generate` decodes the copy through the same KV-cached step as the
float32 model: layers/decode_step.py takes each Int8Linear's `step_product`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import Tensor, nn

from redthread.errors import InvalidType, InvalidValue
from redthread.models.transformer import TransformerLM


def int8_rows(weight: Tensor) -> tuple[Tensor, Tensor]:
    """W (out, in) float -> (q (out, in) int8, s (out,) float32) with W ~ s[:, None] * q (the module docstring)."""
    w = weight.detach().float()
    s = (w.abs().amax(dim=1) / 127).clamp(min=1e-30)  # a row of zeros keeps a positive scale
    # rounded up to bfloat16: s (1 + 2**-7) rounded to the nearest (8 significant bits: within 2**-8) stays above s,
    # so |W / s| <= 127 and nothing is clipped
    s = (s * (1 + 2**-7)).to(torch.bfloat16).float()
    q = torch.round(w / s[:, None]).clamp(-127, 127).to(torch.int8)
    return q, s


class Int8Linear(nn.Module):
    """nn.Linear with int8 weights: y = x (s * q)^T + b (the module docstring). Frozen: made from a float
    layer by `quantize_int8`; changes to the float model afterwards do not reach it."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        q, s = int8_rows(linear.weight)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight_int8", q)  # (out, in)
        self.register_buffer("scale", s.to(torch.bfloat16))  # (out,), exact: s is a bfloat16 number
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float().clone())

    def step_product(self) -> Callable[[Tensor], Tensor]:
        """x (B, in) -> (B, out) float32: the product that `DecodeStep` runs for this layer."""
        w, s, bias = self.weight_int8, self.scale, self.bias

        def product(x: Tensor) -> Tensor:
            y = torch._weight_int8pack_mm(x.to(torch.bfloat16), w, s)  # (B, out) bfloat16
            return y.float() if bias is None else torch.add(bias, y)  # float32: the bias's dtype wins

        return product

    def forward(self, x: Tensor) -> Tensor:
        """(..., in) -> (..., out), as nn.Linear."""
        return self.step_product()(x.reshape(-1, self.in_features)).view(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 weights"


def quantize_int8(model: nn.Module) -> TransformerLM:
    """A copy of a decoder-only TransformerLM for decoding, with int8 weights in its blocks' matrices
    (Int8Linear; the module docstring). `model` itself is unchanged."""
    if not isinstance(model, TransformerLM) or not model.can_step:
        raise InvalidType(f"quantize_int8 takes a decoder-only TransformerLM (self-attention blocks, generate's "
                          f"KV-cached step), got {type(model).__name__}")
    if any(isinstance(m, Int8Linear) for m in model.modules()):
        raise InvalidValue("this model's weights are int8 already: quantize the float32 model")
    if any(p.device.type != "cpu" for p in model.parameters()):
        raise InvalidValue("int8 decoding runs on the CPU: quantize the model after model.cpu()")
    sizes = model.cfg.d_model, model.cfg.ffn_size
    if any(n % 16 for n in sizes):  # the kernel reads rows in aligned blocks of 16 (otherwise it can crash)
        raise InvalidValue(f"int8 weights need d_model and d_ff divisible by 16, got {sizes[0]} and {sizes[1]}")
    int8 = copy.deepcopy(model).eval()
    for block in int8.blocks:
        for module in list(block.modules()):
            for name, child in module.named_children():
                if isinstance(child, nn.Linear):
                    setattr(module, name, Int8Linear(child))
    return int8
