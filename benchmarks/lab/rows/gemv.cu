// GEMV y = A·x as tessera emits it before (vectors from each row's start, narrowed to single
// floats where rows start misaligned: emitted_gemv_old.cuh) and after (vectors from each row's
// first aligned column: emitted_gemv_new.cuh), beside the device copy, as rows.cu times.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 gemv.cu -o gemv && ./gemv
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include "emitted_gemv_old.cuh"
#include "emitted_gemv_new.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__global__ void read_all(const float4* p, size_t n, float* sink) {
    float s = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 1234.5f) *sink = s;
}


// the emitted width-1 kernel's structure with one load hint turned (HINT 0: plain, 1: .L2::256B,
// 2: .L1::no_allocate.L2::256B) and ELEMENTS loads a lane a trip
template <int HINT, int ELEMENTS>
__global__ void __launch_bounds__(256, 2) gemv_hinted(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y, const int M, const int K, const int a_ld) {
    const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= M) return;
    float s[ELEMENTS] = {};
    const float* r = a + (long)row * a_ld;
    for (int i0 = 0; i0 < K; i0 += 32 * ELEMENTS) {
        float w[ELEMENTS], v[ELEMENTS];
#pragma unroll
        for (int u = 0; u < ELEMENTS; ++u) {
            const int i = min(i0 + u * 32 + lane, K - 1);
            if (HINT == 0) w[u] = r[i];
            else if (HINT == 1) asm volatile("ld.global.nc.L2::256B.f32 %0, [%1];" : "=f"(w[u]) : "l"(r + i));
            else asm volatile("ld.global.nc.L1::no_allocate.L2::256B.f32 %0, [%1];" : "=f"(w[u]) : "l"(r + i));
            v[u] = x[i];
        }
#pragma unroll
        for (int u = 0; u < ELEMENTS; ++u)
            if (i0 + u * 32 + lane < K) s[u] += w[u] * v[u];
    }
    float t = 0.0f;
#pragma unroll
    for (int u = 0; u < ELEMENTS; ++u) t += s[u];
    for (int m = 16; m > 0; m /= 2) t += __shfl_xor_sync(0xffffffff, t, m);
    if (lane == 0) y[row] = t;
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
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        for (int i = 0; i < 3; ++i) op();
        std::vector<float> t;
        for (int r = 0; r < reps; ++r) {
            read_all<<<1024, 256>>>(reinterpret_cast<float4*>(flush), flush_vec, sink);
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
    printf("%s\n", prop.name);
    for (auto [M, K] : {std::pair{8192, 8192}, std::pair{4097, 4095}, std::pair{8192, 8191}}) {
        size_t n = (size_t)M * K;
        float *a, *x, *y, *c;
        CK(cudaMalloc(&a, n * 4));
        CK(cudaMalloc(&c, n * 4));
        CK(cudaMalloc(&x, K * 4));
        CK(cudaMalloc(&y, M * 4));
        std::vector<float> ha(n), hx(K), hy(M);
        for (auto& e : ha) e = 2.0f * rand() / RAND_MAX - 1.0f;
        for (auto& e : hx) e = 2.0f * rand() / RAND_MAX - 1.0f;
        CK(cudaMemcpy(a, ha.data(), n * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(x, hx.data(), K * 4, cudaMemcpyHostToDevice));
        float copy = median_us([&] { CK(cudaMemcpyAsync(c, a, n * 4, cudaMemcpyDeviceToDevice)); });
        double bytes = 4.0 * (n + M + K), copy_gbs = 8.0 * n / copy / 1e3;
        printf("%d x %d: copy %.2f us (%.0f GB/s)\n", M, K, copy, copy_gbs);
        auto check_and_time = [&](const char* name, auto kernel) {
            CK(cudaMemset(y, 0xff, M * 4));
            kernel<<<(M + 7) / 8, 256>>>(a, x, y, M, K, K);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hy.data(), y, M * 4, cudaMemcpyDeviceToHost));
            double worst = 0.0;
            for (int r = 0; r < M; r += 7) {
                double s = 0.0;
                for (int k = 0; k < K; ++k) s += (double)ha[(size_t)r * K + k] * hx[k];
                worst = std::max(worst, std::fabs(s - hy[r]));
            }
            float us = median_us([&] { kernel<<<(M + 7) / 8, 256>>>(a, x, y, M, K, K); });
            printf("  %-36s %8.2f us %6.1f%% of copy%s\n", name, us, 100.0 * bytes / us / 1e3 / copy_gbs, worst < 1e-2 ? "" : "  WRONG");
        };
        if (K % 4 == 0) check_and_time("before (rows from their start, w4)", gemv_rowstart_w4);
        check_and_time("before (rows from their start, w1)", gemv_rowstart_w1);
        check_and_time("after (rows from their aligned column)", gemv_aligned);
        check_and_time("hand-written w1, 32 a trip", gemv_hinted<0, 32>);
        check_and_time("... .L2::256B", gemv_hinted<1, 32>);
        check_and_time("... .L1::no_allocate.L2::256B", gemv_hinted<2, 32>);
        check_and_time("hand-written w1 .L2::256B, 16 a trip", gemv_hinted<1, 16>);
        CK(cudaFree(a));
        CK(cudaFree(c));
        CK(cudaFree(x));
        CK(cudaFree(y));
    }
    return 0;
}
