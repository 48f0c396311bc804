// TMA stores (sm_90): one thread hands the copy engine a box of shared memory (16 rows of one
// 128-byte panel, in the 128-byte swizzle the map names) to write into a tensor, through its
// tensor map; what lies outside the tensor is not written. Stores are grouped: a thread waits
// until at most N of its groups still read shared memory (wait_read) or are still writing
// (wait). The simulator defines the same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
__device__ __forceinline__ void tessera_tma_store(const tessera_tensor_map* map, int col, int row, const void* shared)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row),
                    "r"(tessera_shared_address(shared))
                 : "memory");
}

__device__ __forceinline__ void tessera_tma_store_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// until at most N of this thread's store groups still read their shared memory
template <int N>
__device__ __forceinline__ void tessera_tma_store_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// until at most N of this thread's store groups are still writing
template <int N>
__device__ __forceinline__ void tessera_tma_store_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif  // TESSERA_SIM_H
