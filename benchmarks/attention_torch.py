"""torch's fused attention at the shapes of `tessera bench attention`, measured the way
`tessera bench` measures (benchmarks/torch_timing.py: CUDA events, L2 flushed, medians):
`torch.nn.functional.scaled_dot_product_attention` on BF16 (batch, heads, seq, head_dim)
tensors, forward and backward, with each backend forced in turn (flash, cuDNN, efficient), causal and not,
16k tokens (batch · seq = 16384), 16 heads of 128 or 32 heads of 64. Beside each, an anchor
from the same run (a 4096³ BF16 matmul) so clock drift between runs cancels in the ratios.

TFLOP/s count 4 · seq² · head_dim · heads · batch per forward, halved when causal, and 2.5
times that per backward (FlashAttention's count: five GEMMs to the forward's two). The backward
is `torch.autograd.grad(o, (q, k, v), do)` on an O kept from one forward: the backend's backward
kernels only, as `tessera bench attention` times `attention::backward`.

    python3 benchmarks/attention_torch.py [--seqs 512,1024,...] [--passes forward,backward]
        [--heads 16:128,32:64]   (heads:head_dim pairs; 8:256 for the head-dim-256 kernels)
"""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from torch_timing import median_ms

BACKENDS = [
    ("flash", SDPBackend.FLASH_ATTENTION),
    ("cudnn", SDPBackend.CUDNN_ATTENTION),
    ("efficient", SDPBackend.EFFICIENT_ATTENTION),
]


def anchor_tflops():
    a = torch.randn(4096, 4096, device="cuda").bfloat16()
    b = torch.randn(4096, 4096, device="cuda").bfloat16()
    return 2 * 4096**3 / (median_ms(lambda: a @ b) * 1e-3) / 1e12


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--passes", default="forward,backward")
    parser.add_argument("--heads", default="16:128,32:64", help="heads:head_dim pairs, comma-separated")
    args = parser.parse_args()
    shapes = [tuple(int(x) for x in pair.split(":")) for pair in args.heads.split(",")]
    passes = args.passes.split(",")
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print("pass,backend,batch,heads,seq,head_dim,causal,ms,TFLOP/s,anchor bf16 4096^3 TFLOP/s")
    for heads, head_dim in shapes:
        for seq in (int(s) for s in args.seqs.split(",")):
            batch = max(1, args.tokens // seq)
            q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda").bfloat16() for _ in range(3))
            do = torch.randn(batch, heads, seq, head_dim, device="cuda").bfloat16()
            for causal in (False, True):
                for pass_ in passes:
                    flops = 4 * seq * seq * head_dim * heads * batch / (2 if causal else 1)
                    flops *= 2.5 if pass_ == "backward" else 1
                    anchor = anchor_tflops()
                    for name, backend in BACKENDS:
                        row = f"{pass_},{name},{batch},{heads},{seq},{head_dim},{causal}"
                        try:
                            with sdpa_kernel(backend):
                                ms = median_ms(timed(pass_, q, k, v, do, causal))
                        except RuntimeError as error:
                            print(f"{row},,,{anchor:.1f}  # {str(error).splitlines()[0]}")
                            continue
                        print(f"{row},{ms:.4f},{flops / (ms * 1e-3) / 1e12:.1f},{anchor:.1f}", flush=True)


def timed(pass_, q, k, v, do, causal):
    """What one repetition runs: the forward, or the backward of one kept forward."""
    if pass_ == "forward":
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    inputs = [t.detach().requires_grad_() for t in (q, k, v)]
    o = F.scaled_dot_product_attention(*inputs, is_causal=causal)
    return lambda: torch.autograd.grad(o, inputs, do, retain_graph=True)

if __name__ == "__main__":
    main()
