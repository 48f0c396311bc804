"""torch's BF16 and F16 matmuls (cuBLAS, 16-bit output) at the shapes of `tessera bench hgemm`,
with the method of `tessera bench` (benchmarks/torch_timing.py): the anchor figures GPU.md and
issue 15 quote, measured in the same device call as tessera's own bench.

    python3 benchmarks/gemm_torch.py [--shapes 4096x4096x4096,8192x8192x256]
"""
import argparse

import torch

from torch_timing import median_ms

SHAPES = "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4095x4095x4095,4097x4097x4097,8192x8192x256,16384x16384x1024"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES, help="MxNxK, comma-separated")
    args = parser.parse_args()
    print("dtype,M,N,K,ms,TFLOP/s")
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        for dtype in (torch.bfloat16, torch.float16):
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(k, n, device="cuda").to(dtype)
            ms = median_ms(lambda: a @ b)
            print(f"{str(dtype).split('.')[-1]},{m},{n},{k},{ms:.4f},{2 * m * n * k / ms / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
