"""The timing every torch baseline script here shares, the method of `tessera bench`: CUDA
events, the L2 cache flushed (a copy of twice its size, then a read of its source, which
leaves clean lines) before each repetition, the median of
20 runs after 3 warm-ups; FP32 matmuls without TF32."""
import statistics

import torch

torch.backends.cuda.matmul.allow_tf32 = False
L2_FLUSH = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device="cuda")
L2_FLUSH_TO = torch.empty_like(L2_FLUSH)


def median_ms(op, reps=20, warmup=3):
    """Median milliseconds of `op()` over `reps` runs, each after an L2 flush."""
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        L2_FLUSH_TO.copy_(L2_FLUSH)
        # read the source again: the copy's dirty lines are written back now, untimed, and the
        # L2 is left clean (as `tessera bench` does)
        L2_FLUSH.sum()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        op()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)
