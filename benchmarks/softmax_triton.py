"""Triton's figures for the row softmax of `tessera bench softmax`, f32 and bf16, at its shapes,
measured the same way (CUDA events, L2 left clean before each repetition, median of 20 after 3
warm-ups), as % of the device copy of as many f32 elements in the same process (what `tessera
bench` compares with; a bf16 row moves half the bytes). Triton's kernel is the one-program-
per-row fused softmax of its tutorial (the row in registers, max, exp, sum, one store, f32
arithmetic), at 4, 8, 16 and 32 warps; the best is the figure to compare.

    python3 benchmarks/softmax_triton.py
"""
import torch
import triton
import triton.language as tl

from torch_timing import median_ms


@triton.jit
def softmax_kernel(x_ptr, y_ptr, C, x_ld, y_ld, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_ld + cols, mask=cols < C, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_ld + cols, y.to(y_ptr.dtype.element_ty), mask=cols < C)


print(f"triton {triton.__version__}, torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
# the shapes, then short rows (a group of lanes or a warp per row in tessera)
for rows, cols in [(8192, 8192), (4096, 4097), (32768, 128), (16, 65536), (131072, 64), (32768, 256), (32768, 512), (16384, 1024), (32768, 1536), (16384, 2048), (16384, 2560), (8192, 3072), (16384, 3584), (8192, 4096)]:
    x32 = torch.randn(rows, cols, device="cuda")
    z = torch.empty_like(x32)
    copy_ms = median_ms(lambda: z.copy_(x32))
    copy_gbs = 8 * rows * cols / (copy_ms * 1e-3) / 1e9
    for dtype, size in ((torch.float32, 4), (torch.bfloat16, 2)):
        x = x32.to(dtype)
        y = torch.empty_like(x)
        want = torch.softmax(x.float(), dim=1)
        best = None
        for warps in (4, 8, 16, 32):
            run = lambda: softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(cols), num_warps=warps)
            try:
                run()
            except Exception as error:  # a block too large for the registers at this warp count
                print(f"  {str(dtype):<14} {rows}x{cols} num_warps={warps}: {type(error).__name__}")
                continue
            torch.testing.assert_close(y.float(), want, rtol=1e-2 if size == 2 else 1e-5, atol=1e-6)
            ms = median_ms(run)
            gbs = 2 * size * rows * cols / (ms * 1e-3) / 1e9
            print(f"  triton {str(dtype):<14} {rows}x{cols} num_warps={warps:<2} {ms:.4f} ms {gbs:7.0f} GB/s {100 * gbs / copy_gbs:5.1f}% of copy")
            best = max(best or 0.0, 100 * gbs / copy_gbs)
        print(f"triton softmax {str(dtype):<14} {rows}x{cols}: best {best or 0.0:.1f}% of copy ({copy_gbs:.0f} GB/s)")
