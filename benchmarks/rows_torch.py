"""torch's figures for the row-wise kernels of `tessera bench softmax norm gemv` (and the sum
of `tessera bench reduce`), at the same shapes, measured the same way: CUDA events, L2 flushed
(a copy of twice the L2) before each repetition, median of 20 after 3 warm-up runs, GB/s of
compulsory traffic (x read once and y written once; the norms' weight and bias; A, x and y once
for GEMV; x once for the sum), and the device copy of as many floats for the percentage.

    python3 benchmarks/rows_torch.py                       # every family at its shapes
    python3 benchmarks/rows_torch.py norm 8192x6144,8192x7168   # the norms at these shapes only
    python3 benchmarks/rows_torch.py gemv 8192x5120              # the GEMVs at these shapes only
"""
import sys

import torch
import torch.nn.functional as F

from torch_timing import median_ms


def copy_gbs(elements):
    a = torch.rand(elements, device="cuda")
    b = torch.empty_like(a)
    return 8 * elements / (median_ms(lambda: b.copy_(a)) * 1e-3) / 1e9


def row(name, shape, ms, traffic, copy):
    gbs = traffic / (ms * 1e-3) / 1e9
    print(f"{name:<16} {shape:<14} {ms:9.4f} ms {gbs:8.0f} GB/s {100 * gbs / copy:6.1f}% of copy ({copy:.0f} GB/s)")


print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")


def norms(shapes):
    for rows, cols in shapes:
        x = torch.randn(rows, cols, device="cuda")
        w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
        copy = copy_gbs(rows * cols)
        row("layer_norm", f"{rows}x{cols}", median_ms(lambda: F.layer_norm(x, (cols,), w, b, 1e-5)), 8 * rows * cols + 8 * cols, copy)
        row("rms_norm", f"{rows}x{cols}", median_ms(lambda: F.rms_norm(x, (cols,), w, 1e-5)), 8 * rows * cols + 4 * cols, copy)
        xh, wh, bh = x.bfloat16(), w.bfloat16(), b.bfloat16()
        row("layer_norm bf16", f"{rows}x{cols}", median_ms(lambda: F.layer_norm(xh, (cols,), wh, bh, 1e-5)), 4 * rows * cols + 4 * cols, copy)
        row("rms_norm bf16", f"{rows}x{cols}", median_ms(lambda: F.rms_norm(xh, (cols,), wh, 1e-5)), 4 * rows * cols + 2 * cols, copy)


def gemvs(shapes):
    for m, k in shapes:
        a = torch.randn(m, k, device="cuda")
        x, xt = torch.randn(k, device="cuda"), torch.randn(m, device="cuda")
        copy = copy_gbs(m * k)
        traffic = 4 * (m * k + m + k)
        row("gemv (A x)", f"{m}x{k}", median_ms(lambda: torch.mv(a, x)), traffic, copy)
        row("gemv_t (At x)", f"{m}x{k}", median_ms(lambda: torch.mv(a.t(), xt)), traffic, copy)
        ah, xh = a.bfloat16(), x.bfloat16()
        row("gemv bf16 (A x)", f"{m}x{k}", median_ms(lambda: torch.mv(ah, xh)), traffic // 2, copy)
        xth = xt.bfloat16()
        row("gemv_t bf16 (At x)", f"{m}x{k}", median_ms(lambda: torch.mv(ah.t(), xth)), traffic // 2, copy)


# the shapes, then wide ones; 8192 × 5120, 8192 × 10000 and 16384 × 12000: 160–188
# bands of 128 bytes for tessera's Aᵀ·x, more than the SMs of an H200
GEMV_SHAPES = [(8192, 8192), (4097, 4095), (4096, 16384), (8192, 16384), (16384, 8192), (14336, 4096), (4096, 14336), (8192, 3000), (16384, 3000), (8192, 5120), (8192, 10000), (16384, 12000)]
if len(sys.argv) > 2 and sys.argv[1] == "gemv":
    gemvs([tuple(int(n) for n in shape.split("x")) for shape in sys.argv[2].split(",")])
    sys.exit(0)


# the shapes, short rows (a group of lanes or a warp per row in tessera), then 16-bit
# LayerNorm's 6144- and 7168-column widths
NORM_SHAPES = [(8192, 8192), (4096, 4097), (4096, 4096), (131072, 128), (131072, 256), (65536, 512), (32768, 768), (32768, 1024), (32768, 1536), (16384, 2048), (16384, 2304), (16384, 2560), (8192, 3072), (16384, 3584), (8192, 4096), (8192, 6144), (8192, 7168)]
if len(sys.argv) > 2 and sys.argv[1] == "norm":
    norms([tuple(int(n) for n in shape.split("x")) for shape in sys.argv[2].split(",")])
    sys.exit(0)
# the shapes, then short rows (a group of lanes or a warp per row in tessera)
for rows, cols in [(8192, 8192), (4096, 4097), (32768, 128), (16, 65536), (131072, 64), (32768, 256), (32768, 512), (16384, 1024), (32768, 1536), (16384, 2048), (16384, 2560), (8192, 3072), (16384, 3584), (8192, 4096)]:
    x = torch.randn(rows, cols, device="cuda")
    y = torch.empty_like(x)
    copy = copy_gbs(rows * cols)
    row("softmax", f"{rows}x{cols}", median_ms(lambda: torch.softmax(x, dim=1, out=y)), 8 * rows * cols, copy)
    xh, yh = x.bfloat16(), y.bfloat16()
    row("softmax bf16", f"{rows}x{cols}", median_ms(lambda: torch.softmax(xh, dim=1, out=yh)), 4 * rows * cols, copy)
norms(NORM_SHAPES)
gemvs(GEMV_SHAPES)
# narrow rows (a group of lanes per row in tessera)
for m, k in [(1048576, 32), (1048576, 64), (131072, 96), (524288, 128), (262144, 256), (131072, 512), (65536, 1024)]:
    a, x, xt = torch.randn(m, k, device="cuda"), torch.randn(k, device="cuda"), torch.randn(m, device="cuda")
    copy = copy_gbs(m * k)
    traffic = 4 * (m * k + m + k)
    row("gemv (A x)", f"{m}x{k}", median_ms(lambda: torch.mv(a, x)), traffic, copy)
    row("gemv_t (At x)", f"{m}x{k}", median_ms(lambda: torch.mv(a.t(), xt)), traffic, copy)
    ah, xh, xth = a.bfloat16(), x.bfloat16(), xt.bfloat16()
    row("gemv bf16 (A x)", f"{m}x{k}", median_ms(lambda: torch.mv(ah, xh)), traffic // 2, copy)
    row("gemv_t bf16 (At x)", f"{m}x{k}", median_ms(lambda: torch.mv(ah.t(), xth)), traffic // 2, copy)
for n in [1 << 24, 1 << 28]:
    x = torch.rand(n, device="cuda")
    total = torch.empty((), device="cuda")
    copy = copy_gbs(n)
    row("sum", f"2^{n.bit_length() - 1}", median_ms(lambda: torch.sum(x, dim=0, out=total)), 4 * n, copy)
