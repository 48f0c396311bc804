"""NCCL's own figures through PyTorch, for the multi-GPU table in BENCHMARKS.md: all-reduce
and reduce-scatter of f32 tensors, one process per GPU, timed with CUDA events (median of
20 after 3 warm-up runs), bus bandwidth as nccl-tests reports it.

    NCCL_NVLS_ENABLE=0 python3 benchmarks/nccl_collectives.py --gpus 2 --mib 64,256,1024
"""
import argparse
import os
import statistics

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, sizes_mib, port):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    for mib in sizes_mib:
        count = mib * (1 << 20) // 4
        x = torch.zeros(count, dtype=torch.float32, device="cuda")
        out = torch.empty(count // world, dtype=torch.float32, device="cuda")
        for name, op in [
            ("all-reduce", lambda: dist.all_reduce(x)),
            ("reduce-scatter", lambda: dist.reduce_scatter_tensor(out, x)),
        ]:
            for _ in range(3):
                op()
            torch.cuda.synchronize()
            samples = []
            for _ in range(20):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                op()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end))
            ms = statistics.median(samples)
            algorithm = count * 4 / (ms * 1e-3) / 1e9
            factor = 2 * (world - 1) / world if name == "all-reduce" else (world - 1) / world
            if rank == 0:
                print(f"| torch/NCCL {name} | {mib} | {ms:.3f} | {algorithm:.1f} | {algorithm * factor:.1f} |", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    parser.add_argument("--mib", default="64,256,1024")
    parser.add_argument("--port", type=int, default=29512)
    args = parser.parse_args()
    sizes = [int(s) for s in args.mib.split(",")]
    print(f"NCCL through torch {torch.__version__}, {args.gpus} GPUs ({torch.cuda.get_device_name(0)}):\n")
    print("| collective | MiB | ms | algorithm GB/s | bus GB/s |")
    print("|---|---:|---:|---:|---:|")
    mp.spawn(worker, args=(args.gpus, sizes, args.port), nprocs=args.gpus)
