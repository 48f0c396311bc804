// GEMV y = Aᵀ·x at 4097 × 4095 (issue 17): tessera's row-split pass 1 as emitted
// (emitted_gemv_t.cuh: a warp reads 32 columns, 128 bytes, of each of its rows) beside
// variants whose lanes read CG column groups of 32 (a warp 128·CG contiguous bytes of a row),
// timed as rows.cu times (device copy of as many floats, L2 left clean, median).
//
//   nvcc -O3 -arch=sm_90a -std=c++17 gemv_t.cu -o gemv_t && ./gemv_t
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include "emitted_gemv_t.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

// block (bx, by): columns bx·32·CG .., rows of slice by; lane l of warp w adds columns
// c0 + l + 32·g (g < CG) of rows r0 + w·U + u, U rows a trip; loads clamped, products guarded;
// the warps' sums added in warp order, column c's total handed to store(c, total)
template <int CG, int U, int WARPS, typename Store>
__device__ __forceinline__ void slice_totals(const float* __restrict__ a, const float* __restrict__ x, int M, int N, int S, Store store) {
    __shared__ float partial[WARPS][32 * CG];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int c0 = blockIdx.x * 32 * CG;
    const int slice = (M + S - 1) / S, begin = blockIdx.y * slice, end = min(begin + slice, M);
    float s[CG] = {};
    int col[CG];
#pragma unroll
    for (int g = 0; g < CG; ++g) col[g] = min(c0 + lane + 32 * g, N - 1);
    for (int r0 = begin + warp * U; r0 < end; r0 += WARPS * U) {
        float v[U][CG], w[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int r = min(r0 + u, M - 1);
            w[u] = x[r];
#pragma unroll
            for (int g = 0; g < CG; ++g) v[u][g] = a[(size_t)r * N + col[g]];
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (r0 + u < end)
#pragma unroll
                for (int g = 0; g < CG; ++g) s[g] += v[u][g] * w[u];
    }
#pragma unroll
    for (int g = 0; g < CG; ++g) partial[warp][lane + 32 * g] = s[g];
    __syncthreads();
    for (int c = threadIdx.x; c < 32 * CG; c += WARPS * 32) {
        float t = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) t += partial[w][c];
        store(c, t);
    }
}

// slice_totals' totals into partials[by, c0 ..]
template <int CG, int U, int WARPS>
__device__ __forceinline__ void slice_partials(const float* __restrict__ a, const float* __restrict__ x, float* partials, int M, int N, int S) {
    const int c0 = blockIdx.x * 32 * CG;
    slice_totals<CG, U, WARPS>(a, x, M, N, S, [&](int c, float t) {
        if (c0 + c < N) partials[(size_t)blockIdx.y * N + c0 + c] = t;
    });
}

// pass 1; with TRIGGER the finish kernel may launch as soon as every block has started
// (`griddepcontrol.launch_dependents`: a programmatic dependent launch)
template <int CG, int U, int WARPS, int MINB, bool TRIGGER = false>
__global__ void __launch_bounds__(WARPS * 32, MINB) gemv_t_groups(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ partials, int M, int N, int S) {
    if (TRIGGER) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    slice_partials<CG, U, WARPS>(a, x, partials, M, N, S);
}

// the same in one launch: each block writes its slice's partial sums, then counts itself in at
// its column band's counter; the band's last block (every block's writes visible to it after
// the fences) adds the S partials in slice order, so the result does not depend on which block
// came last, and sets the counter back to 0 for the next launch
template <int CG, int U, int WARPS, int MINB>
__global__ void __launch_bounds__(WARPS * 32, MINB) gemv_t_single(const float* __restrict__ a, const float* __restrict__ x, float* partials, unsigned* done, float* __restrict__ y, int M, int N, int S) {
    __shared__ bool last;
    slice_partials<CG, U, WARPS>(a, x, partials, M, N, S);
    const int c0 = blockIdx.x * 32 * CG;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(&done[blockIdx.x], 1u) == S - 1;
        if (last) done[blockIdx.x] = 0;
    }
    __syncthreads();
    if (last) {
        __threadfence();
        for (int c = threadIdx.x; c < 32 * CG; c += WARPS * 32) {
            if (c0 + c < N) {
                float t = 0.0f;
                int r = 0;
                for (; r + 8 <= S; r += 8) {  // eight loads in flight, added in slice order
                    float p[8];
#pragma unroll
                    for (int i = 0; i < 8; ++i) p[i] = __ldcg(&partials[(size_t)(r + i) * N + c0 + c]);
#pragma unroll
                    for (int i = 0; i < 8; ++i) t += p[i];
                }
                for (; r < S; ++r) t += __ldcg(&partials[(size_t)r * N + c0 + c]);
                y[c0 + c] = t;
            }
        }
    }
}

// One launch in clusters of the 8 slices of a column band (cluster dims (1, 8)): each block's
// column totals reach rank 0's shared memory (totals[rank][c]), which adds them in slice order
// and writes y. BARRIER: stores into rank 0's shared memory (st.shared::cluster), then a cluster
// barrier. PUSH: st.async, counted on rank 0's mbarrier, the cluster barrier that makes it safe
// to push into arrived at as the kernel starts and waited for before the pushes; only rank 0
// waits for the data, the others leave at once.
template <int CG, int U, int WARPS, int MINB, bool PUSH>
__global__ void __launch_bounds__(WARPS * 32, MINB) gemv_t_cluster(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y, int M, int N) {
    __shared__ __align__(16) float totals[8][32 * CG];
    __shared__ __align__(8) unsigned long long bar;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const unsigned bar_address = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    if (PUSH) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_address));
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
            if (rank == 0)
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_address), "r"(7 * 32 * CG * 4) : "memory");
        }
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    }
    slice_totals<CG, U, WARPS>(a, x, M, N, 8, [&](int c, float t) { totals[rank][c] = t; });
    if (PUSH) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    for (int c = threadIdx.x; c < 32 * CG && rank != 0; c += WARPS * 32) {
        unsigned remote, remote_bar;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&totals[rank][c]))));
        if (PUSH) {
            asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote_bar) : "r"(bar_address));
            asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];" ::"r"(remote), "f"(totals[rank][c]), "r"(remote_bar) : "memory");
        } else {
            asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(totals[rank][c]) : "memory");
        }
    }
    if (!PUSH) asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank != 0) return;
    if (PUSH)
        asm volatile("{\n .reg .pred done;\n wait:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra wait;\n}" ::"r"(bar_address) : "memory");
    const int c0 = blockIdx.x * 32 * CG;
    for (int c = threadIdx.x; c < 32 * CG; c += WARPS * 32) {
        float t = 0.0f;
#pragma unroll
        for (int r = 0; r < 8; ++r) t += totals[r][c];
        if (c0 + c < N) y[c0 + c] = t;
    }
}

// pass 2: the slices added in order; with `wait`, launched as a programmatic dependent of pass
// 1, it first waits for pass 1's grid to complete and its writes to be visible
__global__ void finish(const float* __restrict__ partials, float* __restrict__ y, int S, int N, bool wait) {
    if (wait) asm volatile("griddepcontrol.wait;" ::: "memory");
    const int c = blockIdx.x * 256 + threadIdx.x;
    if (c < N) {
        float t = 0.0f;
        for (int r = 0; r < S; ++r) t += partials[(size_t)r * N + c];
        y[c] = t;
    }
}

static void launch_dependent(const float* partials, float* y, int S, int N) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((N + 255) / 256);
    config.blockDim = dim3(256);
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    CK(cudaLaunchKernelEx(&config, finish, partials, y, S, N, true));
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
    size_t flush_vec = 2 * (size_t)prop.l2CacheSize / 16;
    float *flush, *sink;
    CK(cudaMalloc(&flush, flush_vec * 16));
    CK(cudaMemset(flush, 0, flush_vec * 16));
    CK(cudaMalloc(&sink, 4));
    auto median_us = [&](auto op) {
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        for (int i = 0; i < 3; ++i) op();
        std::vector<float> t;
        for (int r = 0; r < reps; ++r) {
            read_all<<<1024, 256>>>(reinterpret_cast<float4*>(flush), flush_vec, sink);
            CK(cudaEventRecord(e0));
            op();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 1000.0f);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    printf("%s\n", prop.name);
    for (auto [M, N] : {std::pair{4097, 4095}, std::pair{8192, 8192}, std::pair{2049, 1000}}) {
        size_t n = (size_t)M * N;
        float *a, *c, *x, *y, *partials;
        CK(cudaMalloc(&a, n * 4));
        CK(cudaMalloc(&c, n * 4));
        CK(cudaMalloc(&x, M * 4));
        CK(cudaMalloc(&y, N * 4));
        CK(cudaMalloc(&partials, 64 * (size_t)N * 4));
        std::vector<float> ha(n), hx(M), hy(N);
        for (auto& e : ha) e = 2.0f * rand() / RAND_MAX - 1.0f;
        for (auto& e : hx) e = 2.0f * rand() / RAND_MAX - 1.0f;
        std::vector<double> want(N, 0.0);
        for (int r = 0; r < M; ++r)
            for (int k = 0; k < N; ++k) want[k] += (double)ha[(size_t)r * N + k] * hx[r];
        CK(cudaMemcpy(a, ha.data(), n * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(x, hx.data(), M * 4, cudaMemcpyHostToDevice));
        float copy = median_us([&] { CK(cudaMemcpyAsync(c, a, n * 4, cudaMemcpyDeviceToDevice)); });
        double copy_gbs = 8.0 * n / copy / 1e3;
        printf("%d x %d: copy %.2f us (%.0f GB/s)\n", M, N, copy, copy_gbs);
        auto check_and_time = [&](const char* name, int S, auto pass1) {
            CK(cudaMemset(y, 0xff, N * 4));
            pass1();
            finish<<<(N + 255) / 256, 256>>>(partials, y, S, N, false);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hy.data(), y, N * 4, cudaMemcpyDeviceToHost));
            double worst = 0.0;
            for (int k = 0; k < N; ++k) worst = std::max(worst, std::fabs(want[k] - hy[k]));
            const double bytes = 4.0 * (n + M + (size_t)S * N);
            float us = median_us(pass1);
            float both = median_us([&] { pass1(); finish<<<(N + 255) / 256, 256>>>(partials, y, S, N, false); });
            printf("  %-40s S %2d  pass 1 %7.2f us %6.1f%%   both passes %7.2f us %6.1f%%%s\n", name, S, us,
                   100.0 * bytes / us / 1e3 / copy_gbs, both, 100.0 * 4.0 * (n + M + N) / both / 1e3 / copy_gbs, worst < 1e-2 ? "" : "  WRONG");
        };
        auto slices = [&](int column_blocks) { return std::min(32, std::max(1, std::min(1024 / column_blocks, (M + 511) / 512))); };
        {
            int S = slices((N + 31) / 32);
            check_and_time("emitted (CG 1, 8 rows a trip, 512 threads)", S, [&] {
                gemv_t_partials_f32<<<dim3((N + 31) / 32, S), 512>>>(a, x, partials, M, N, S, N, N); });
        }
#define V(CG, U, WARPS, MINB, S) do { \
            char name[64]; snprintf(name, sizeof name, "CG %d, U %d, %d threads, %d an SM", CG, U, WARPS * 32, MINB); \
            check_and_time(name, S, [&] { gemv_t_groups<CG, U, WARPS, MINB><<<dim3((N + 32 * CG - 1) / (32 * CG), S), WARPS * 32>>>(a, x, partials, M, N, S); }); } while (0)
        unsigned* done;
        CK(cudaMalloc(&done, 4096 * 4));
        CK(cudaMemset(done, 0, 4096 * 4));
        auto single = [&](const char* name, int S, auto launch) {
            CK(cudaMemset(y, 0xff, N * 4));
            launch();
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hy.data(), y, N * 4, cudaMemcpyDeviceToHost));
            double worst = 0.0;
            for (int k = 0; k < N; ++k) worst = std::max(worst, std::fabs(want[k] - hy[k]));
            float us = median_us(launch);
            printf("  %-40s S %2d  one launch %7.2f us %6.1f%%%s\n", name, S, us, 100.0 * 4.0 * (n + M + N) / us / 1e3 / copy_gbs, worst < 1e-2 ? "" : "  WRONG");
        };
#define V1(CG, U, WARPS, MINB, S) do { \
            char name[64]; snprintf(name, sizeof name, "one launch: CG %d, U %d, %d threads, %d an SM", CG, U, WARPS * 32, MINB); \
            single(name, S, [&] { gemv_t_single<CG, U, WARPS, MINB><<<dim3((N + 32 * CG - 1) / (32 * CG), S), WARPS * 32>>>(a, x, partials, done, y, M, N, S); }); } while (0)
        {
            const int S = 8;
            auto pass1 = [&] { gemv_t_groups<2, 8, 16, 2, true><<<dim3((N + 63) / 64, S), 512>>>(a, x, partials, M, N, S); };
            CK(cudaMemset(y, 0xff, N * 4));
            pass1();
            launch_dependent(partials, y, S, N);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hy.data(), y, N * 4, cudaMemcpyDeviceToHost));
            double worst = 0.0;
            for (int k = 0; k < N; ++k) worst = std::max(worst, std::fabs(want[k] - hy[k]));
            float plain = median_us([&] { pass1(); finish<<<(N + 255) / 256, 256>>>(partials, y, S, N, false); });
            float pdl = median_us([&] { pass1(); launch_dependent(partials, y, S, N); });
            printf("  two passes CG 2, S 8: plain launches %7.2f us %6.1f%%, dependent launch %7.2f us %6.1f%%%s\n", plain,
                   100.0 * 4.0 * (n + M + N) / plain / 1e3 / copy_gbs, pdl, 100.0 * 4.0 * (n + M + N) / pdl / 1e3 / copy_gbs, worst < 1e-2 ? "" : "  WRONG");
        }
        auto clustered = [&](const char* name, auto kernel) {
            cudaLaunchConfig_t config = {};
            config.gridDim = dim3((N + 63) / 64, 8);
            config.blockDim = dim3(512);
            cudaLaunchAttribute attribute[1];
            attribute[0].id = cudaLaunchAttributeClusterDimension;
            attribute[0].val.clusterDim.x = 1;
            attribute[0].val.clusterDim.y = 8;
            attribute[0].val.clusterDim.z = 1;
            config.attrs = attribute;
            config.numAttrs = 1;
            single(name, 8, [&] { CK(cudaLaunchKernelEx(&config, kernel, (const float*)a, (const float*)x, y, M, N)); });
        };
        clustered("one launch in clusters of 8 slices, stores + barrier", gemv_t_cluster<2, 8, 16, 2, false>);
        clustered("one launch in clusters of 8 slices, pushes", gemv_t_cluster<2, 8, 16, 2, true>);
        V1(1, 8, 16, 2, 8);
        V1(2, 8, 16, 2, 8);
        V1(2, 8, 16, 2, 16);
        V1(4, 4, 16, 2, 16);
        V1(2, 4, 16, 2, 8);
        V1(2, 8, 8, 4, 8);
        V1(2, 16, 16, 2, 8);
        CK(cudaFree(done));
        // unsplit (S = 1: pass 1 is the whole answer), one block a band of columns
        V(1, 16, 16, 2, 1);
        V(1, 16, 32, 1, 1);
        V(1, 8, 32, 1, 1);
        V(1, 32, 32, 1, 1);
        V(2, 16, 32, 1, 1);
        V(1, 8, 16, 2, 8);
        V(2, 8, 16, 2, 8);
        V(2, 8, 16, 2, 16);
        V(4, 4, 16, 2, 16);
        V(4, 8, 16, 2, 16);
        V(4, 4, 16, 2, 32);
        V(4, 8, 8, 4, 32);
        V(8, 4, 16, 2, 32);
        V(8, 4, 8, 4, 32);
        V(8, 2, 16, 2, 64);
        V(16, 2, 8, 4, 32);
        CK(cudaFree(a));
        CK(cudaFree(c));
        CK(cudaFree(x));
        CK(cudaFree(y));
        CK(cudaFree(partials));
    }
    return 0;
}
