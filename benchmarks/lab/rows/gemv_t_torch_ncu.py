"""torch's y = Aᵀ·x (`torch.mv(a.t(), x)`) at the shapes where it leads tessera's `gemv::gemv_t`,
one call each between cudaProfilerStart/Stop, for `ncu --profile-from-start off`: which cuBLAS
kernels run, on what grid and blocks, how many launches.

    ncu --profile-from-start off --section LaunchStats --section SpeedOfLight python3 gemv_t_torch_ncu.py
"""
import torch

SHAPES = [(14336, 4096, torch.float32), (8192, 3000, torch.float32), (4097, 4095, torch.float32),
          (14336, 4096, torch.bfloat16), (16384, 8192, torch.bfloat16), (8192, 8192, torch.bfloat16),
          (4097, 4095, torch.bfloat16)]
cases = []
for m, n, t in SHAPES:
    a = torch.randn(m, n, device="cuda").to(t)
    x = torch.randn(m, device="cuda").to(t)
    torch.mv(a.t(), x)  # warm: cuBLAS's handle and heuristics
    cases.append((a, x))
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
for (m, n, t), (a, x) in zip(SHAPES, cases):
    torch.cuda.nvtx.range_push(f"{m}x{n} {t}")
    torch.mv(a.t(), x)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
