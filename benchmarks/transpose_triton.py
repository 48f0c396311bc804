"""Triton's and torch's figures for the f32 transpose of `tessera bench transpose`, measured the
same way (CUDA events, L2 left clean before each repetition, median of 20 after 3 warm-ups),
as % of the device copy of as many bytes in the same process. Triton's kernel is the plain
tile transpose (`tl.load` of a block, `tl.trans`, `tl.store`), at each tile size and warp
count below; the best is the figure to compare.

    python3 benchmarks/transpose_triton.py
"""
import torch
import triton
import triton.language as tl

from torch_timing import median_ms


@triton.jit
def transpose_kernel(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=(rows[:, None] < R) & (cols[None, :] < C))
    tl.store(y_ptr + cols[:, None] * R + rows[None, :], tl.trans(tile), mask=(cols[:, None] < C) & (rows[None, :] < R))


print(f"triton {triton.__version__}, torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
for rows, cols in [(16384, 16384), (4095, 4097)]:
    x = torch.randn(rows, cols, device="cuda")
    y = torch.empty(cols, rows, device="cuda")
    z = torch.empty_like(x)
    copy = median_ms(lambda: z.copy_(x))
    print(f"{rows}x{cols}: copy {copy:.4f} ms")
    y.copy_(x.t())
    print(f"  torch x.t().contiguous() {median_ms(lambda: y.copy_(x.t())):.4f} ms  {100 * copy / median_ms(lambda: y.copy_(x.t())):5.1f}% of copy")
    for block in (32, 64, 128):
        for warps in (4, 8):
            grid = (triton.cdiv(rows, block), triton.cdiv(cols, block))
            run = lambda: transpose_kernel[grid](x, y, rows, cols, BLOCK=block, num_warps=warps)
            run()
            assert torch.equal(y, x.t()), (block, warps)
            ms = median_ms(run)
            print(f"  triton BLOCK={block:<3} num_warps={warps} {ms:.4f} ms  {100 * copy / ms:5.1f}% of copy")
