// A wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): the start
// address, leading and stride byte offsets (each >> 4) and the swizzle mode (1: 128 B,
// 2: 64 B, 3: 32 B) of the swizzled panels the operand is stored in.
#ifndef TESSERA_SIM_H
__device__ __forceinline__ unsigned long long tessera_wgmma_descriptor(const void* start, unsigned leading_bytes,
                                                                      unsigned stride_bytes, unsigned swizzle_mode)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(start));
    return static_cast<unsigned long long>((address & 0x3FFFF) >> 4)
        | static_cast<unsigned long long>((leading_bytes & 0x3FFFF) >> 4) << 16
        | static_cast<unsigned long long>((stride_bytes & 0x3FFFF) >> 4) << 32
        | static_cast<unsigned long long>(swizzle_mode) << 62;
}

// wgmma.fence: the accumulators' registers (and shared memory) are ready for wgmma.
__device__ __forceinline__ void tessera_wgmma_fence()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void tessera_wgmma_commit()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// Waits until at most N committed wgmma groups are still in flight.
template <int N>
__device__ __forceinline__ void tessera_wgmma_wait()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

// Keeps the compiler from moving reads or writes of the accumulators across the asynchronous
// wgmma that owns them between its issue and its wait.
template <int TILES>
__device__ __forceinline__ void tessera_wgmma_fence_operands(float (&d)[TILES][4])
{
    #pragma unroll
    for (int i = 0; i < TILES; ++i) {
        #pragma unroll
        for (int v = 0; v < 4; ++v) asm volatile("" : "+f"(d[i][v])::"memory");
    }
}

// The generic-proxy writes to shared memory (cp.async, st.shared) become visible to the async
// proxy that wgmma reads through.
__device__ __forceinline__ void tessera_fence_proxy_async()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
#endif  // TESSERA_SIM_H
