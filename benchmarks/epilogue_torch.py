"""torch's figures for `tessera bench epilogue`, at the same shapes, measured the same way
(CUDA events, L2 flushed before each repetition, median of 20 after 3 warm-ups), FP32 without
TF32: C = GELU(A·B + bias) as torch runs it eagerly (addmm, then gelu: two kernels), and the
plain A·B beside it (torch's cuBLAS SGEMM, the anchor of the percentages); then the same on
bf16 tensors (what `F.gelu(F.linear(x, w, b))` runs in a bf16 model), beside bf16 `a @ b`; and the residual form `torch.addmm(bias, a, b).add_(residual)`
(`x + F.linear(h, w, b)`: the GEMM with its bias, then the add) on bf16 and f32, at the same shapes and
at a transformer's projections back into the residual stream (16384 tokens, 4096 wide; K = 4096
and the MLP's 14336).

    python3 benchmarks/epilogue_torch.py
"""
import torch
import torch.nn.functional as F

from torch_timing import median_ms


print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
shapes = [(s, s, s) for s in (1024, 2048, 4096, 8192)] + [(4095, 4095, 4095), (4097, 4097, 4097), (8192, 8192, 256)]
for m, n, k in shapes:
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    bias, c = torch.randn(n, device="cuda"), torch.empty(m, n, device="cuda")
    flops = 2 * m * n * k
    plain = median_ms(lambda: torch.mm(a, b, out=c))
    fused = median_ms(lambda: F.gelu(torch.addmm(bias, a, b)))
    tflops = lambda ms: flops / (ms * 1e-3) / 1e12
    print(
        f"M={m},N={n},K={k:<6} mm {tflops(plain):6.2f} TFLOP/s   gelu(addmm) {tflops(fused):6.2f} TFLOP/s "
        f"({100 * plain / fused:5.1f}% of mm's speed)"
    )
for m, n, k in shapes:
    a, b = torch.randn(m, k, device="cuda").bfloat16(), torch.randn(k, n, device="cuda").bfloat16()
    bias, c = torch.randn(n, device="cuda").bfloat16(), torch.empty(m, n, device="cuda").bfloat16()
    flops = 2 * m * n * k
    plain = median_ms(lambda: torch.mm(a, b, out=c))
    fused = median_ms(lambda: F.gelu(torch.addmm(bias, a, b)))
    tflops = lambda ms: flops / (ms * 1e-3) / 1e12
    print(
        f"bf16 M={m},N={n},K={k:<6} mm {tflops(plain):6.2f} TFLOP/s   gelu(addmm) {tflops(fused):6.2f} TFLOP/s "
        f"({100 * plain / fused:5.1f}% of mm's speed)"
    )
residual_shapes = shapes + [(16384, 4096, 4096), (16384, 4096, 14336)]
for dtype, label in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
    for m, n, k in residual_shapes:
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        bias, residual = torch.randn(n, device="cuda", dtype=dtype), torch.randn(m, n, device="cuda", dtype=dtype)
        c = torch.empty(m, n, device="cuda", dtype=dtype)
        flops = 2 * m * n * k
        plain = median_ms(lambda: torch.mm(a, b, out=c))
        fused = median_ms(lambda: torch.addmm(bias, a, b).add_(residual))
        tflops = lambda ms: flops / (ms * 1e-3) / 1e12
        print(
            f"{label} M={m},N={n},K={k:<6} mm {tflops(plain):6.2f} TFLOP/s   addmm + residual {tflops(fused):6.2f} TFLOP/s "
            f"({100 * plain / fused:5.1f}% of mm's speed)"
        )
