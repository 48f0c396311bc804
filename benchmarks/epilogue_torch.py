"""torch's figures for `tessera bench epilogue`, at the same shapes, measured the same way
(CUDA events, L2 flushed before each repetition, median of 20 after 3 warm-ups), FP32 without
TF32: C = GELU(A·B + bias) as torch runs it eagerly (addmm, then gelu: two kernels), and the
plain A·B beside it (torch's cuBLAS SGEMM, the anchor of the percentages).

    python3 benchmarks/epilogue_torch.py
"""
import statistics

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
L2_FLUSH = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device="cuda")
L2_FLUSH_TO = torch.empty_like(L2_FLUSH)


def median_ms(op, reps=20, warmup=3):
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        L2_FLUSH_TO.copy_(L2_FLUSH)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        op()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


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
