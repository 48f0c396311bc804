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

template <int THREADS, int ITEMS, int MODE>
void run(const char* name, int clusters_blocks, const float* x, float* y, int R, int C, const std::vector<float>& hx, float copy_us, int reps) {
    auto kernel = softmax_cluster<THREADS, ITEMS, MODE>;
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
    printf("  %-44s %7.2f us %6.1f%% of copy%s\n", name, us, 100.0 * copy_us / us, MODE == 3 || worst < 1e-3 ? "" : "  WRONG");
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
    run_emitted("  ranks read before combined", cluster_batched, x, y, R, C, hx, copy, reps);
    run_emitted("  ranks read before combined, __expf", cluster_batched_fast_exp, x, y, R, C, hx, copy, reps);
    run<256, 32, 3>("8 x 256 x 32, no reductions (a floor)", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 0>("8 x 256 x 32, max then sum (as tessera)", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 1>("8 x 256 x 32, one (max, sum) exchange", 8, x, y, R, C, hx, copy, reps);
    run<256, 32, 2>("8 x 256 x 32, one exchange, thread pairs", 8, x, y, R, C, hx, copy, reps);
    run<512, 16, 1>("8 x 512 x 16, one exchange", 8, x, y, R, C, hx, copy, reps);
    run<1024, 8, 1>("8 x 1024 x 8, one exchange", 8, x, y, R, C, hx, copy, reps);
    run<256, 16, 1>("16 x 256 x 16, one exchange (non-portable)", 16, x, y, R, C, hx, copy, reps);
    run<512, 8, 1>("16 x 512 x 8, one exchange (non-portable)", 16, x, y, R, C, hx, copy, reps);
    return 0;
}
