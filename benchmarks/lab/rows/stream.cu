// The stream lab: how fast can a read-only kernel read 64 MiB (issue 17's sum at 2^24 floats)?
// Hand-written variants of `sum_partials_f32`'s pass 1, one idea turned each, timed beside the
// device copy of the same floats as `tessera bench` times them (CUDA events, the L2 left clean by
// a read of twice its size before each repetition, median). % of copy = GB/s of the bytes read
// against the copy's GB/s of the bytes it reads and writes.
//
//   nvcc -O3 -arch=sm_90a -std=c++17 stream.cu -o stream && ./stream [reps]
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffff, v, m);
    return v;
}
template <int THREADS>
__device__ __forceinline__ void block_partial(float v, float* partials) {
    __shared__ float s[32];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < THREADS / 32 ? s[threadIdx.x] : 0.0f;
        v = warp_sum(v);
        if (threadIdx.x == 0) partials[blockIdx.x] = v;
    }
}

enum Hint { PLAIN = 0, NC = 1, L2_256 = 2, NO_ALLOC_256 = 3, NO_ALLOC = 4 };

template <int HINT>
__device__ __forceinline__ float4 load4(const float4* p) {
    float4 v;
    if (HINT == PLAIN) {
        v = *p;
    } else if (HINT == NC) {
        asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    } else if (HINT == L2_256) {
        asm volatile("ld.global.nc.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    } else if (HINT == NO_ALLOC_256) {
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    } else {
        asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    }
    return v;
}

// tessera's sum_partials_f32 as emitted: grid-stride over float4, UNROLL loads a trip (indices
// clamped, additions guarded), P blocks
template <int THREADS, int UNROLL, int HINT>
__global__ void __launch_bounds__(THREADS) grid_stride(const float* __restrict__ x, float* partials, long n) {
    long first = blockIdx.x * (long)THREADS + threadIdx.x, stride = (long)gridDim.x * THREADS, vectors = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s[UNROLL] = {};
    for (long i0 = first; i0 < vectors; i0 += stride * UNROLL) {
        float w[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float4 v = load4<HINT>(x4 + min(i0 + u * stride, vectors - 1));
            w[u] = v.x + v.y + v.z + v.w;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            if (i0 + u * stride < vectors) s[u] += w[u];
    }
    float t = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) t += s[u];
    block_partial<THREADS>(t, partials);
}

// each block a contiguous chunk (n / 4 / P vectors), the block's threads striding through it
template <int THREADS, int UNROLL, int HINT>
__global__ void __launch_bounds__(THREADS) chunked(const float* __restrict__ x, float* partials, long n) {
    long vectors = n / 4, per = (vectors + gridDim.x - 1) / gridDim.x;
    long begin = blockIdx.x * per, end = min(begin + per, vectors);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s[UNROLL] = {};
    for (long i0 = begin + threadIdx.x; i0 < end; i0 += THREADS * UNROLL) {
        float w[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float4 v = load4<HINT>(x4 + min(i0 + u * THREADS, end - 1));
            w[u] = v.x + v.y + v.z + v.w;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            if (i0 + u * THREADS < end) s[u] += w[u];
    }
    float t = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) t += s[u];
    block_partial<THREADS>(t, partials);
}

// bulk copies (cp.async.bulk, the TMA's 1-D form) of CHUNK bytes into a ring of STAGES buffers,
// thread 0 issuing, every thread adding its share of each arrived chunk from shared memory
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect(uint64_t* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(bytes));
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned phase) {
    asm volatile(
        "{\n .reg .pred p;\n wait_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra wait_%=;\n}\n"
        :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(phase));
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(bytes), "r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
}
template <int THREADS, int CHUNK, int STAGES>
__global__ void __launch_bounds__(THREADS) bulk(const float* __restrict__ x, float* partials, long n) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ uint64_t full[STAGES];
    const long chunks = n * 4 / CHUNK;  // n * 4 a multiple of CHUNK here
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;");
    }
    __syncthreads();
    long mine = 0;  // chunks this block takes: blockIdx.x, + gridDim.x, ...
    for (long c = blockIdx.x; c < chunks; c += gridDim.x) ++mine;
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES && s < mine; ++s) {
            mbar_expect(&full[s], CHUNK);
            bulk_load(smem + s * CHUNK, reinterpret_cast<const char*>(x) + (blockIdx.x + s * (long)gridDim.x) * CHUNK, CHUNK, &full[s]);
        }
    float acc = 0.0f;
    for (long k = 0; k < mine; ++k) {
        int s = k % STAGES;
        mbar_wait(&full[s], (k / STAGES) & 1);
        const float4* b = reinterpret_cast<const float4*>(smem + s * CHUNK);
#pragma unroll 4
        for (int i = threadIdx.x; i < CHUNK / 16; i += THREADS) {
            float4 v = b[i];
            acc += v.x + v.y + v.z + v.w;
        }
        __syncthreads();  // the buffer is read by all before it is refilled
        if (threadIdx.x == 0 && k + STAGES < mine) {
            mbar_expect(&full[s], CHUNK);
            bulk_load(smem + s * CHUNK, reinterpret_cast<const char*>(x) + (blockIdx.x + (k + STAGES) * (long)gridDim.x) * CHUNK, CHUNK, &full[s]);
        }
    }
    block_partial<THREADS>(acc, partials);
}

__global__ void read_all(const float4* p, size_t n, float* sink) {
    float s = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 1234.5f) *sink = s;
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    size_t flush_elems = 2 * (size_t)prop.l2CacheSize / 4;
    float *flush_from, *flush_to, *sink;
    CK(cudaMalloc(&flush_from, flush_elems * 4));
    CK(cudaMalloc(&flush_to, flush_elems * 4));
    CK(cudaMemset(flush_from, 0, flush_elems * 4));
    CK(cudaMalloc(&sink, 4));
    // tessera bench's flush: a copy of twice the L2, then a read of its source (clean lines)
    auto flush = [&] {
        CK(cudaMemcpyAsync(flush_to, flush_from, flush_elems * 4, cudaMemcpyDeviceToDevice));
        read_all<<<1024, 256>>>(reinterpret_cast<float4*>(flush_from), flush_elems / 4, sink);
    };
    auto median_us = [&](auto op) {
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        for (int i = 0; i < 3; ++i) op();
        std::vector<float> t;
        for (int r = 0; r < reps; ++r) {
            flush();
            CK(cudaEventRecord(a));
            op();
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            t.push_back(ms * 1000.0f);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    printf("%s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    for (long n : {1L << 24, 1L << 25, 1L << 28}) {
        float *x, *y, *partials;
        CK(cudaMalloc(&x, n * 4));
        CK(cudaMalloc(&y, n * 4));
        CK(cudaMalloc(&partials, 65536 * 4));
        std::vector<float> hx(n);
        double want = 0.0;
        for (long i = 0; i < n; ++i) {
            hx[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
            want += hx[i];
        }
        CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
        float copy = median_us([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); });
        double copy_gbs = 8.0 * n / copy / 1e3;
        printf("N = 2^%d: copy %.2f us (%.0f GB/s)\n", (int)std::log2((double)n), copy, copy_gbs);
        auto run = [&](const char* name, int blocks, int smem, auto launch) {
            CK(cudaMemset(partials, 0, 65536 * 4));
            launch();
            CK(cudaDeviceSynchronize());
            std::vector<float> hp(blocks);
            CK(cudaMemcpy(hp.data(), partials, blocks * 4, cudaMemcpyDeviceToHost));
            double got = 0.0;
            for (float p : hp) got += p;
            float us = median_us(launch);
            printf("  %-44s %8.2f us %6.1f%% of copy%s\n", name, us, 100.0 * 4.0 * n / us / 1e3 / copy_gbs,
                   std::fabs(got - want) < 1e-3 * n ? "" : "  WRONG");
        };
#define GS(T, U, H, P, name) run(name, P, 0, [&] { grid_stride<T, U, H><<<P, T>>>(x, partials, n); })
#define CH(T, U, H, P, name) run(name, P, 0, [&] { chunked<T, U, H><<<P, T>>>(x, partials, n); })
        GS(256, 4, PLAIN, 1024, "grid-stride 256 x4, P 1024 (as emitted)");
        GS(256, 4, NC, 1024, "... ld.global.nc");
        GS(256, 4, L2_256, 1024, "... .L2::256B");
        GS(256, 4, NO_ALLOC_256, 1024, "... .L1::no_allocate.L2::256B");
        GS(256, 4, NO_ALLOC, 1024, "... .L1::no_allocate");
        GS(256, 8, PLAIN, 1024, "grid-stride 256 x8, P 1024");
        GS(256, 2, PLAIN, 1024, "grid-stride 256 x2, P 1024");
        GS(256, 4, PLAIN, 1056, "grid-stride 256 x4, P 1056 (8 an SM)");
        GS(512, 4, PLAIN, 528, "grid-stride 512 x4, P 528");
        GS(1024, 4, PLAIN, 264, "grid-stride 1024 x4, P 264");
        GS(256, 1, PLAIN, 4096, "grid-stride 256 x1, P 4096");
        GS(256, 4, L2_256, 2048, "grid-stride 256 x4 .L2::256B, P 2048");
        CH(256, 4, PLAIN, 1024, "chunked 256 x4, P 1024");
        CH(256, 4, L2_256, 1024, "chunked 256 x4 .L2::256B, P 1024");
        CH(256, 4, PLAIN, 4096, "chunked 256 x4, P 4096");
        CH(256, 4, PLAIN, 16384, "chunked 256 x4, P 16384");
#define BULK(T, C, S, P, name) do { \
            auto k = bulk<T, C, S>; \
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, C * S)); \
            run(name, P, C * S, [&] { k<<<P, T, C * S>>>(x, partials, n); }); } while (0)
        BULK(256, 16384, 4, 264, "bulk 16 KiB x 4 stages, 2 blocks an SM");
        BULK(256, 8192, 4, 528, "bulk 8 KiB x 4 stages, 4 blocks an SM");
        BULK(256, 32768, 3, 132, "bulk 32 KiB x 3 stages, 1 block an SM");
        BULK(512, 32768, 6, 132, "bulk 32 KiB x 6 stages, 1 block an SM");
        BULK(256, 16384, 6, 264, "bulk 16 KiB x 6 stages, 2 blocks an SM");
        CK(cudaFree(x));
        CK(cudaFree(y));
        CK(cudaFree(partials));
    }
    return 0;
}
