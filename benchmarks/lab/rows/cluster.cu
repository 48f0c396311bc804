// The long-row softmax (16 rows of 65536 floats) on thread-block clusters, hand-written
// variants beside the device copy of as many bytes, as rows.cu times them: how much of the
// cluster kernel's time is its exchanges, and what one exchange of (maximum, sum) pairs or
// other cluster shapes give.
//
//   nvcc -O3 -arch=sm_90a -std=c++17 cluster.cu -o cluster && ./cluster
// (tessera's own kernel and one-change variants of it from emitted_cluster.cuh first)
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>

namespace cg = cooperative_groups;
#include "emitted_cluster.cuh"  // tessera show softmax_cluster_f32, and one-change variants
#include "emitted_cluster_pairs.cuh"  // the same kernel on cluster_softmax_scale

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffff, v, m);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, m));
    return v;
}
template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* s) {
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? s[threadIdx.x % 32] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}
template <int THREADS>
__device__ __forceinline__ float block_max(float v, float* s) {
    v = warp_max(v);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
    __syncthreads();
    v = s[threadIdx.x % 32 < THREADS / 32 ? threadIdx.x % 32 : 0];
    v = warp_max(v);
    __syncthreads();
    return v;
}

// MODE 0: cluster max, then cluster sum (two exchanges, as tessera's softmax_cluster_f32);
// MODE 1: each block's (max, sum of exp(x − max)) pair, one exchange, combined in rank order
// MODE 2: MODE 1 with the block's pair from one pass of online (max, sum) per thread
template <int THREADS, int ITEMS, int MODE>
__global__ void __launch_bounds__(THREADS) softmax_cluster(const float* __restrict__ x, float* __restrict__ y, int C) {
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ float scratch[32];
    __shared__ float2 slot;
    const int blocks = cluster.num_blocks();
    const int rank = cluster.block_rank();
    const int row = blockIdx.y;
    const int t = threadIdx.x;
    const float4* xv = reinterpret_cast<const float4*>(x + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4* yv = reinterpret_cast<float4*>(y + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float v[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        float4 w = xv[j * THREADS + t];
        v[4 * j] = w.x; v[4 * j + 1] = w.y; v[4 * j + 2] = w.z; v[4 * j + 3] = w.w;
    }
    float row_max, scale;
    if (MODE == 3) {
        // no reductions, no exchange: the floor of loads, exp and stores at this grid
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) v[j] = __expf(v[j]);
        scale = 1.0f;
    } else if (MODE == 0) {
        float m = -INFINITY;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) m = fmaxf(m, v[j]);
        m = block_max<THREADS>(m, scratch);
        if (t == 0) slot.x = m;
        cluster.sync();
        row_max = -INFINITY;
        for (int r = 0; r < blocks; ++r) row_max = fmaxf(row_max, cluster.map_shared_rank(&slot, r)->x);
        cluster.sync();
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) { v[j] = __expf(v[j] - row_max); s += v[j]; }
        s = block_sum<THREADS>(s, scratch);
        if (t == 0) slot.y = s;
        cluster.sync();
        float total = 0.0f;
        for (int r = 0; r < blocks; ++r) total += cluster.map_shared_rank(&slot, r)->y;
        cluster.sync();
        scale = 1.0f / total;
    } else {
        float m = -INFINITY;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) m = fmaxf(m, v[j]);
        float s = 0.0f;
        if (MODE == 1) {
            m = block_max<THREADS>(m, scratch);
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) s += __expf(v[j] - m);
            s = block_sum<THREADS>(s, scratch);
        } else {
            // the thread's own pair, then the block's through shared memory in one round
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) s += __expf(v[j] - m);
            float bm = block_max<THREADS>(m, scratch);
            s = block_sum<THREADS>(s * __expf(m - bm), scratch);
            m = bm;
        }
        if (t == 0) slot = make_float2(m, s);
        cluster.sync();
        row_max = -INFINITY;
        float2 pairs[16];
        for (int r = 0; r < blocks; ++r) { pairs[r] = *cluster.map_shared_rank(&slot, r); row_max = fmaxf(row_max, pairs[r].x); }
        float total = 0.0f;
        for (int r = 0; r < blocks; ++r) total += pairs[r].y * __expf(pairs[r].x - row_max);
        cluster.sync();
        scale = 1.0f / total;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) v[j] = __expf(v[j] - row_max);
    }
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j)
        yv[j * THREADS + t] = make_float4(v[4 * j] * scale, v[4 * j + 1] * scale, v[4 * j + 2] * scale, v[4 * j + 3] * scale);
}

__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// (max, sum of exp(x − max)) pairs combined: one exp
__device__ __forceinline__ float2 combine(float2 a, float2 b) {
    return a.x >= b.x ? make_float2(a.x, a.y + b.y * expf(b.x - a.x)) : make_float2(b.x, b.y + a.y * expf(a.x - b.x));
}

// One exchange, the exps taken before it and the cluster's exit barrier split around the stores:
// the maximum of a thread's vectors
template <int CHUNKS>
__device__ __forceinline__ float thread_maximum(const float4 (&v)[CHUNKS]) {
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) m = fmaxf(m, fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w)));
    return m;
}
// v ← exp(v − m) element by element; returns their sum
template <int CHUNKS>
__device__ __forceinline__ float exponentiate(float4 (&v)[CHUNKS], float m) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
        v[j] = make_float4(expf(v[j].x - m), expf(v[j].y - m), expf(v[j].z - m), expf(v[j].w - m));
        s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
    return s;
}

// MODE 4: each loaded float4 exponentiated against its own maximum as it arrives (the chunk's
//   maximum kept), the thread's pair from its chunks', the block's from a butterfly of pairs;
//   after the exchange one exp a chunk rescales its four values.
// MODE 5: the thread's maximum, its values exponentiated against it; the block's maximum and
//   sum by two block reductions (what tessera's block_max / block_sum give); one exchange of
//   the blocks' pairs; one exp a thread rescales.
// MODE 6: MODE 5 with the exit barrier whole (cluster.sync() after the exchange).
template <int THREADS, int ITEMS, int MODE>
__global__ void __launch_bounds__(THREADS) softmax_one_exchange(const float* __restrict__ x, float* __restrict__ y, int C) {
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ float scratch[32];
    __shared__ float2 pair_scratch[32];
    __shared__ float2 slot;
    constexpr int CHUNKS = ITEMS / 4;
    const int blocks = cluster.num_blocks();
    const int rank = cluster.block_rank();
    const int row = blockIdx.y;
    const int t = threadIdx.x;
    const float4* xv = reinterpret_cast<const float4*>(x + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4* yv = reinterpret_cast<float4*>(y + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4 v[CHUNKS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) v[j] = xv[j * THREADS + t];
    float2 block_pair;
    float chunk_max[CHUNKS];
    float thread_max = -INFINITY;
    if (MODE == 4) {
        float2 mine = make_float2(-INFINITY, 0.0f);
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            const float m = fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w));
            chunk_max[j] = m;
            v[j] = make_float4(expf(v[j].x - m), expf(v[j].y - m), expf(v[j].z - m), expf(v[j].w - m));
            mine = combine(mine, make_float2(m, (v[j].x + v[j].y) + (v[j].z + v[j].w)));
        }
#pragma unroll
        for (int o = 16; o > 0; o /= 2)
            mine = combine(mine, make_float2(__shfl_xor_sync(0xffffffff, mine.x, o), __shfl_xor_sync(0xffffffff, mine.y, o)));
        if (t % 32 == 0) pair_scratch[t / 32] = mine;
        __syncthreads();
        float2 p = t % 32 < THREADS / 32 ? pair_scratch[t % 32] : make_float2(-INFINITY, 0.0f);
#pragma unroll
        for (int o = 16; o > 0; o /= 2)
            p = combine(p, make_float2(__shfl_xor_sync(0xffffffff, p.x, o), __shfl_xor_sync(0xffffffff, p.y, o)));
        block_pair = p;
    } else {
        thread_max = thread_maximum(v);
        float s = MODE != 8 ? exponentiate(v, thread_max) : 0.0f;
        if (MODE < 7) {
            const float m = block_max<THREADS>(thread_max, scratch);
            s = block_sum<THREADS>(s * expf(thread_max - m), scratch);
            block_pair = make_float2(m, s);
        } else {
            block_pair = make_float2(thread_max, s);  // the thread's own pair
        }
    }
    if (MODE >= 7) {
        // what tessera's cluster_max / cluster_sum would do with a slot each and no barrier
        // after their reads: exps first, then two exchanges of one value each, one barrier
        // each, and a last one before the blocks leave
        __shared__ float max_slot, sum_slot;
        const float m = block_max<THREADS>(thread_max, scratch);
        if (t == 0) max_slot = m;
        cluster.sync();
        float parts[8];
#pragma unroll
        for (int r = 0; r < 8; ++r) parts[r] = r < blocks ? *cluster.map_shared_rank(&max_slot, r) : m;
        float row_max = parts[0];
#pragma unroll
        for (int r = 1; r < 8; ++r) row_max = fmaxf(row_max, parts[r]);
        if (MODE == 8) {
            // MODE 8: the exps after the maximum, as tessera's kernel takes them today
            float own = 0.0f;
#pragma unroll
            for (int j = 0; j < CHUNKS; ++j) {
                v[j] = make_float4(expf(v[j].x - row_max), expf(v[j].y - row_max), expf(v[j].z - row_max), expf(v[j].w - row_max));
                own += (v[j].x + v[j].y) + (v[j].z + v[j].w);
            }
            block_pair.y = own;
            thread_max = row_max;
        }
        const float shifted = block_sum<THREADS>(block_pair.y * expf(thread_max - row_max), scratch);
        if (t == 0) sum_slot = shifted;
        cluster.sync();
#pragma unroll
        for (int r = 0; r < 8; ++r) parts[r] = r < blocks ? *cluster.map_shared_rank(&sum_slot, r) : 0.0f;
        float total = 0.0f;
#pragma unroll
        for (int r = 0; r < 8; ++r) total += parts[r];
        const float scale = expf(thread_max - row_max) / total;
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) yv[j * THREADS + t] = make_float4(v[j].x * scale, v[j].y * scale, v[j].z * scale, v[j].w * scale);
        cluster.sync();
        return;
    }
    if (t == 0) slot = block_pair;
    cluster.sync();
    float2 pairs[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) pairs[r] = r < blocks ? *cluster.map_shared_rank(&slot, r) : make_float2(-INFINITY, 0.0f);
    if (MODE == 6) cluster.sync(); else cluster_arrive();
    float row_max = -INFINITY;
#pragma unroll
    for (int r = 0; r < 8; ++r) row_max = fmaxf(row_max, pairs[r].x);
    float total = 0.0f;
#pragma unroll
    for (int r = 0; r < 8; ++r) total += pairs[r].y * expf(pairs[r].x - row_max);
    const float inverse = 1.0f / total;
    if (MODE == 4) {
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
            const float scale = expf(chunk_max[j] - row_max) * inverse;
            yv[j * THREADS + t] = make_float4(v[j].x * scale, v[j].y * scale, v[j].z * scale, v[j].w * scale);
        }
    } else {
        const float scale = expf(thread_max - row_max) * inverse;
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) yv[j * THREADS + t] = make_float4(v[j].x * scale, v[j].y * scale, v[j].z * scale, v[j].w * scale);
    }
    if (MODE != 6) cluster_wait();
}

// MODE 9/10: the pairs pushed instead of read. Each block's mbarrier expects 8 pairs (64 bytes);
// once every block has initialised its own (a cluster barrier whose arrive comes at the start
// and whose wait comes after the block's reductions, off the critical path), thread r < 8 of
// each block stores the block's pair into rank r's slot [own rank] with st.async, which counts
// its bytes on rank r's mbarrier; each block then waits on its own mbarrier and reads its own
// shared memory — no barrier after the exchange (a block leaves once all pushes into it have
// landed). MODE 10: as 9, the pushes by one thread.
__device__ __forceinline__ uint32_t cta_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ uint32_t rank_address(const void* p, int rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(cta_address(p)), "r"(rank));
    return remote;
}
template <int THREADS, int ITEMS, int MODE>
__global__ void __launch_bounds__(THREADS) softmax_pushed(const float* __restrict__ x, float* __restrict__ y, int C) {
    __shared__ float scratch[32];
    __shared__ __align__(8) float2 pairs[8];
    __shared__ __align__(8) unsigned long long bar;
    constexpr int CHUNKS = ITEMS / 4;
    unsigned int rank_u, blocks_u;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank_u));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks_u));
    const int rank = rank_u, blocks = blocks_u;
    const int row = blockIdx.y;
    const int t = threadIdx.x;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(cta_address(&bar)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(cta_address(&bar)), "r"(blocks * 8) : "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    const float4* xv = reinterpret_cast<const float4*>(x + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4* yv = reinterpret_cast<float4*>(y + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4 v[CHUNKS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) v[j] = xv[j * THREADS + t];
    const float thread_max = thread_maximum(v);
    float s = exponentiate(v, thread_max);
    const float m = block_max<THREADS>(thread_max, scratch);
    s = block_sum<THREADS>(s * expf(thread_max - m), scratch);
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  // every block's mbarrier initialised
    if (MODE == 9 ? t < blocks : t == 0) {
        for (int r = (MODE == 9 ? t : 0); r < (MODE == 9 ? t + 1 : blocks); ++r) {
            const uint32_t slot = rank_address(&pairs[rank], r), remote_bar = rank_address(&bar, r);
            asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
                         ::"r"(slot), "f"(m), "f"(s), "r"(remote_bar) : "memory");
        }
    }
    asm volatile(
        "{\n .reg .pred done;\n wait:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
        " @!done bra wait;\n}" ::"r"(cta_address(&bar)) : "memory");
    float2 p[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) p[r] = r < blocks ? pairs[r] : make_float2(-INFINITY, 0.0f);
    float row_max = -INFINITY;
#pragma unroll
    for (int r = 0; r < 8; ++r) row_max = fmaxf(row_max, p[r].x);
    float total = 0.0f;
#pragma unroll
    for (int r = 0; r < 8; ++r) total += p[r].y * expf(p[r].x - row_max);
    const float scale = expf(thread_max - row_max) / total;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) yv[j * THREADS + t] = make_float4(v[j].x * scale, v[j].y * scale, v[j].z * scale, v[j].w * scale);
}

// MODE 11: no block reduction at all — each warp's (maximum, sum) pair, from warp butterflies,
// pushed by lanes 0 .. blocks − 1 into every block's shared memory (st.async, counted on that
// block's mbarrier: blocks × WARPS pairs); each warp then waits on its own block's mbarrier and
// combines all the cluster's warp pairs with two more butterflies. No __syncthreads anywhere.
// MODE 12: the warp pairs and no exchange (each warp scales by its own pair: wrong results, the
// time of everything but the exchange).
template <int THREADS, int ITEMS, int MODE>
__global__ void __launch_bounds__(THREADS) softmax_warp_pushed(const float* __restrict__ x, float* __restrict__ y, int C) {
    constexpr int WARPS = THREADS / 32;
    constexpr int CHUNKS = ITEMS / 4;
    constexpr int PER_LANE = (8 * WARPS + 31) / 32;
    __shared__ __align__(8) float2 pairs[8 * WARPS];
    __shared__ __align__(8) unsigned long long bar;
    unsigned int rank_u, blocks_u;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank_u));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks_u));
    const int rank = rank_u, blocks = blocks_u;
    const int row = blockIdx.y;
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(cta_address(&bar)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(cta_address(&bar)), "r"(blocks * WARPS * 8) : "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    const float4* xv = reinterpret_cast<const float4*>(x + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4* yv = reinterpret_cast<float4*>(y + (size_t)row * C) + rank * (THREADS * ITEMS / 4);
    float4 v[CHUNKS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) v[j] = xv[j * THREADS + t];
    const float thread_max = thread_maximum(v);
    const float s = exponentiate(v, thread_max);
    const float wm = warp_max(thread_max);
    const float ws = warp_sum(s * expf(thread_max - wm));
    float scale;
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  // every block's mbarrier initialised
    if (MODE == 12) {
        scale = expf(thread_max - wm) / ws;
    } else {
        if (lane < blocks) {
            const uint32_t slot = rank_address(&pairs[rank * WARPS + warp], lane), remote_bar = rank_address(&bar, lane);
            asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
                         ::"r"(slot), "f"(wm), "f"(ws), "r"(remote_bar) : "memory");
        }
        asm volatile(
            "{\n .reg .pred done;\n wait:\n"
            " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
            " @!done bra wait;\n}" ::"r"(cta_address(&bar)) : "memory");
        float2 p[PER_LANE];
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) {
            const int k = i * 32 + lane;
            p[i] = k < blocks * WARPS ? pairs[k] : make_float2(-INFINITY, 0.0f);
        }
        float m = p[0].x;
#pragma unroll
        for (int i = 1; i < PER_LANE; ++i) m = fmaxf(m, p[i].x);
        const float row_max = warp_max(m);
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) part += p[i].y * expf(p[i].x - row_max);
        scale = expf(thread_max - row_max) / warp_sum(part);
    }
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) yv[j * THREADS + t] = make_float4(v[j].x * scale, v[j].y * scale, v[j].z * scale, v[j].w * scale);
}

__global__ void read_all(const float4* p, size_t n, float* sink) {
    float s = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 1234.5f) *sink = s;
}

static float* flush_buf;
static float* sink;
static size_t flush_vec;

template <typename F>
float median_us(F op, int reps) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) op();
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
        read_all<<<1024, 256>>>(reinterpret_cast<float4*>(flush_buf), flush_vec, sink);
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
}

template <int THREADS, int ITEMS, int MODE, bool ONE_EXCHANGE = false, bool PUSHED = false>
void run(const char* name, int clusters_blocks, const float* x, float* y, int R, int C, const std::vector<float>& hx, float copy_us, int reps) {
    auto kernel = MODE >= 11 ? softmax_warp_pushed<THREADS, ITEMS, MODE>
                  : PUSHED ? softmax_pushed<THREADS, ITEMS, MODE>
                         : ONE_EXCHANGE ? softmax_one_exchange<THREADS, ITEMS, MODE> : softmax_cluster<THREADS, ITEMS, MODE>;
    if (clusters_blocks > 8) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(clusters_blocks, R, 1);
    config.blockDim = dim3(THREADS, 1, 1);
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = clusters_blocks;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    auto launch = [&] { CK(cudaLaunchKernelEx(&config, kernel, x, y, C)); };
    CK(cudaMemset(y, 0xff, (size_t)R * C * 4));
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> hy((size_t)R * C);
    CK(cudaMemcpy(hy.data(), y, hy.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (int r = 0; r < R; ++r) {
        double m = -1e30, s = 0.0;
        for (int c = 0; c < C; ++c) m = std::max(m, (double)hx[(size_t)r * C + c]);
        for (int c = 0; c < C; ++c) s += std::exp((double)hx[(size_t)r * C + c] - m);
        for (int c = 0; c < C; ++c) worst = std::max(worst, std::fabs(std::exp((double)hx[(size_t)r * C + c] - m) / s - hy[(size_t)r * C + c]) * C);
    }
    float us = median_us(launch, reps);
    printf("  %-44s %7.2f us %6.1f%% of copy%s\n", name, us, 100.0 * copy_us / us, MODE == 3 || MODE == 12 || worst < 1e-3 ? "" : "  WRONG");
}

template <typename K>
void run_emitted(const char* name, K kernel, const float* x, float* y, int R, int C, const std::vector<float>& hx, float copy_us, int reps) {
    auto launch = [&] { kernel<<<dim3(8, R, 1), 256>>>(x, y, R, C, C, C); };
    CK(cudaMemset(y, 0xff, (size_t)R * C * 4));
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> hy((size_t)R * C);
    CK(cudaMemcpy(hy.data(), y, hy.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (int r = 0; r < R; ++r) {
        double m = -1e30, s = 0.0;
        for (int c = 0; c < C; ++c) m = std::max(m, (double)hx[(size_t)r * C + c]);
        for (int c = 0; c < C; ++c) s += std::exp((double)hx[(size_t)r * C + c] - m);
        for (int c = 0; c < C; ++c) worst = std::max(worst, std::fabs(std::exp((double)hx[(size_t)r * C + c] - m) / s - hy[(size_t)r * C + c]) * C);
    }
    float us = median_us(launch, reps);
    printf("  %-44s %7.2f us %6.1f%% of copy%s\n", name, us, 100.0 * copy_us / us, worst < 1e-3 ? "" : "  WRONG");
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    flush_vec = 2 * (size_t)prop.l2CacheSize / 16;
    CK(cudaMalloc(&flush_buf, flush_vec * 16));
    CK(cudaMemset(flush_buf, 0, flush_vec * 16));
    CK(cudaMalloc(&sink, 4));
    const int R = 16, C = 65536;
    size_t n = (size_t)R * C;
    float *x, *y;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    std::vector<float> hx(n);
    for (auto& e : hx) e = 16.0f * rand() / RAND_MAX - 8.0f;
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    float copy = median_us([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); }, reps);
    printf("%s: %d x %d, copy %.2f us\n", prop.name, R, C, copy);
    run_emitted("tessera's softmax_cluster_f32", softmax_cluster_f32, x, y, R, C, hx, copy, reps);
    run_emitted("tessera's softmax_cluster_f32 on cluster_softmax_scale", softmax_cluster_pairs, x, y, R, C, hx, copy, reps);
    run_emitted("  ranks read before combined", cluster_batched, x, y, R, C, hx, copy, reps);
    run_emitted("  ranks read before combined, __expf", cluster_batched_fast_exp, x, y, R, C, hx, copy, reps);
    run<256, 32, 3>("8 x 256 x 32, no reductions (a floor)", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 0>("8 x 256 x 32, max then sum (as tessera)", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 1>("8 x 256 x 32, one (max, sum) exchange", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 2>("8 x 256 x 32, one exchange, thread pairs", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 4, true>("8 x 256 x 32, exps first by float4, pair butterfly", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 5, true>("8 x 256 x 32, exps first, block max + block sum", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 6, true>("  the same, exit barrier not split", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 7, true>("8 x 256 x 32, exps first, cluster max, cluster sum", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 9, false, true>("8 x 256 x 32, exps first, pairs pushed (8 threads)", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 10, false, true>("8 x 256 x 32, exps first, pairs pushed (1 thread)", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 8, true>("8 x 256 x 32, cluster max, exps, cluster sum", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 11>("8 x 256 x 32, warp pairs pushed, no block barrier", 8, x, y, R, C, hx, copy, reps);
    run<512, 16, 11>("8 x 512 x 16, warp pairs pushed, no block barrier", 8, x, y, R, C, hx, copy, reps);
    run<1024, 8, 11>("8 x 1024 x 8, warp pairs pushed, no block barrier", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 12>("8 x 256 x 32, warp pairs, no exchange (timing only)", 8, x, y, R, C, hx, copy, reps);
    run<512, 16, 4, true>("8 x 512 x 16, exps first by float4, pair butterfly", 8, x, y, R, C, hx, copy, reps);
    run<512, 16, 5, true>("8 x 512 x 16, exps first, block max + block sum", 8, x, y, R, C, hx, copy, reps);
    run<512, 16, 7, true>("8 x 512 x 16, exps first, cluster max, cluster sum", 8, x, y, R, C, hx, copy, reps);
    run<128, 64, 4, true>("8 x 128 x 64, exps first by float4, pair butterfly", 8, x, y, R, C, hx, copy, reps);
    run<512, 16, 1>("8 x 512 x 16, one exchange", 8, x, y, R, C, hx, copy, reps);
    run<1024, 8, 1>("8 x 1024 x 8, one exchange", 8, x, y, R, C, hx, copy, reps);
    run<256, 16, 1>("16 x 256 x 16, one exchange (non-portable)", 16, x, y, R, C, hx, copy, reps);
    run<512, 8, 1>("16 x 512 x 8, one exchange (non-portable)", 16, x, y, R, C, hx, copy, reps);
    return 0;
}
