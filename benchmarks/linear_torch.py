"""torch's figures for a transformer MLP's two linear layers on bf16, the weight stored [out, in]
as `nn.Linear` keeps it — what `tessera::gemm_bt_bias_gelu` and `gemm_bt_bias_residual` run —
measured as `tessera bench` measures (torch_timing: CUDA events, L2 flushed, median of 20):
`F.gelu(F.linear(x, w, b))` (the GEMM with its bias, then the GELU: two kernels) and
`x + F.linear(h, w, b)` (the GEMM with its bias, then the add), beside `F.linear(x, w)` alone
(torch's cuBLAS on B [N, K], the anchor of the percentages).

    python3 benchmarks/linear_torch.py
"""
import torch
import torch.nn.functional as F

from torch_timing import median_ms

print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
shapes = [(s, s, s) for s in (1024, 2048, 4096, 8192)] + [
    (4097, 4097, 4097),
    (8192, 8192, 256),
    (16384, 4096, 4096),
    (16384, 4096, 14336),
]
for m, n, k in shapes:
    x = torch.randn(m, k, device="cuda").bfloat16()
    w, b = torch.randn(n, k, device="cuda").bfloat16(), torch.randn(n, device="cuda").bfloat16()
    residual = torch.randn(m, n, device="cuda").bfloat16()
    tflops = lambda ms: 2 * m * n * k / (ms * 1e-3) / 1e12
    plain = median_ms(lambda: F.linear(x, w))
    gelu = median_ms(lambda: F.gelu(F.linear(x, w, b)))
    added = median_ms(lambda: residual + F.linear(x, w, b))
    print(
        f"bf16 M={m},N={n},K={k:<6} linear {tflops(plain):6.1f} TFLOP/s   gelu(linear) {tflops(gelu):6.1f}   "
        f"residual + linear {tflops(added):6.1f} TFLOP/s"
    )
