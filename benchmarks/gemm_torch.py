"""torch's BF16 and F16 matmuls (cuBLAS, 16-bit output) at the shapes of `tessera bench hgemm`,
with the method of `tessera bench` (benchmarks/torch_timing.py): the anchor figures GPU.md and
issue 15 quote, measured in the same device call as tessera's own bench.

    python3 benchmarks/gemm_torch.py [--shapes 4096x4096x4096,8192x8192x256] [--dtypes bf16,f16,tf32,tf32-bt]

tf32 is f32 `a @ b` with TF32 matmuls allowed; tf32-bt is `a @ w.T` with w stored [N, K] (a
linear layer's weights, what `gemm_tf32_wgmma_bt` takes).
"""
import argparse

import torch

from torch_timing import median_ms

SHAPES = "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4095x4095x4095,4097x4097x4097,8192x8192x256,16384x16384x1024"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES, help="MxNxK, comma-separated")
    parser.add_argument("--dtypes", default="bf16,f16", help="of bf16, f16, tf32, tf32-bt; comma-separated")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    types = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32, "tf32-bt": torch.float32}
    print("dtype,M,N,K,ms,TFLOP/s")
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        for name in args.dtypes.split(","):
            dtype = types[name]
            a = torch.randn(m, k, device="cuda").to(dtype)
            if name == "tf32-bt":
                w = torch.randn(n, k, device="cuda")
                ms = median_ms(lambda: a @ w.T)
            else:
                b = torch.randn(k, n, device="cuda").to(dtype)
                ms = median_ms(lambda: a @ b)
            print(f"{name},{m},{n},{k},{ms:.4f},{2 * m * n * k / ms / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
