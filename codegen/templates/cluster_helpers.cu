// Thread-block clusters (sm_90): the blocks of a cluster run at once on one GPC, and each can
// read the others' shared memory. The simulator defines the same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
// this block's rank in its cluster: 0 .. tessera_cluster_blocks() - 1
__device__ __forceinline__ int tessera_cluster_rank()
{
    unsigned int rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return static_cast<int>(rank);
}

__device__ __forceinline__ int tessera_cluster_blocks()
{
    unsigned int blocks;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
    return static_cast<int>(blocks);
}

// every thread of every block of the cluster arrives, then waits for all the others: what a
// block wrote to its shared memory before is visible to the whole cluster after
__device__ __forceinline__ void tessera_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// the address of `local` (this block's shared memory) in block `rank`'s shared memory
__device__ __forceinline__ unsigned int tessera_cluster_address(const void* local, int rank)
{
    unsigned int remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(remote) : "r"(static_cast<unsigned int>(__cvta_generic_to_shared(local))), "r"(rank));
    return remote;
}

#endif  // TESSERA_SIM_H
