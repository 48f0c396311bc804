// sgemm_bt lab: C = A·Bᵀ on f32 with B stored [N, K] — cuBLAS (pedantic FP32, B transposed), tessera's
// sgemm_v13_bt as emitted, and the k16 variants (sgemm_bt_k16.py), timed in alternation with L2
// flushed before each repetition; each variant's C checked against the emitted kernel's.
//   python3 sgemm_bt_k16.py /tmp/bt
//   for f in sgemm_bt_main.cu /tmp/bt/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -c $f -o /tmp/bt/$(basename $f .cu).o & done; wait
//   nvcc -arch=sm_90a /tmp/bt/*.o -lcublas -o /tmp/sgemm-bt-lab && /tmp/sgemm-bt-lab 3
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define VARIANTS(X) X(emitted) X(k16) X(k16_double)
#define DECLARE(name) void launch_##name(int, const float*, const float*, float*, int, int, int); void prepare_##name();
VARIANTS(DECLARE)
struct Variant { const char* name; void (*launch)(int, const float*, const float*, float*, int, int, int); void (*prepare)(); };
#define ENTRY(name) {#name, launch_##name, prepare_##name},
static const Variant variants[] = { VARIANTS(ENTRY) };
constexpr int COUNT = sizeof(variants) / sizeof(variants[0]);

__global__ void fill(float* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = (h & 0xffff) / 65536.0f - 0.5f;
    }
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    int sm = 0; cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
    printf("%s, %d SMs\n", prop.name, sm);
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int shapes[][3] = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 8192, 256}, {4000, 4000, 4000}};
    cublasHandle_t handle; cublasCreate(&handle); cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
    float* flush; size_t flush_n = 64 << 20; cudaMalloc(&flush, flush_n * 4);
    for (auto& v : variants) v.prepare();
    for (auto& s : shapes) {
        int M = s[0], N = s[1], K = s[2];
        float *a, *b, *c, *ref;
        cudaMalloc(&a, (size_t)M * K * 4); cudaMalloc(&b, (size_t)N * K * 4);
        cudaMalloc(&c, (size_t)M * N * 4); cudaMalloc(&ref, (size_t)M * N * 4);
        fill<<<1024, 256>>>(a, (size_t)M * K, 1); fill<<<1024, 256>>>(b, (size_t)N * K, 2);
        const int tiles = ((M + 127) / 128) * ((N + 255) / 256);
        const int blocks = std::min(sm, tiles);
        std::vector<float> h1((size_t)M * N), h2((size_t)M * N);
        variants[0].launch(blocks, a, b, ref, M, K, N);
        cudaMemcpy(h1.data(), ref, h1.size() * 4, cudaMemcpyDeviceToHost);
        printf("\n%d x %d x %d:", M, N, K);
        for (int v = 1; v < COUNT; ++v) {
            cudaMemset(c, 0xff, (size_t)M * N * 4);
            variants[v].launch(blocks, a, b, c, M, K, N);
            cudaMemcpy(h2.data(), c, h2.size() * 4, cudaMemcpyDeviceToHost);
            size_t differ = 0;
            for (size_t i = 0; i < h1.size(); ++i) differ += h1[i] != h2[i];
            printf(" %s: %zu values differ from emitted;", variants[v].name, differ);
        }
        printf("%s\n", cudaGetLastError() ? " (CUDA ERROR)" : "");
        const float one = 1.0f, zero = 0.0f;
        const int reps = K >= 8192 ? 5 : 20;
        std::vector<std::vector<float>> times(COUNT + 1);
        cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
        for (int r = 0; r < rounds * reps + 2; ++r)
            for (int v = 0; v <= COUNT; ++v) {
                cudaMemsetAsync(flush, r & 0xff, flush_n * 4);
                cudaEventRecord(e0);
                if (v == COUNT) cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, b, K, a, K, &zero, c, N);
                else variants[v].launch(blocks, a, b, c, M, K, N);
                cudaEventRecord(e1); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1);
                if (r >= 2) times[v].push_back(ms);
            }
        std::vector<double> med(COUNT + 1);
        for (int v = 0; v <= COUNT; ++v) { auto t = times[v]; std::sort(t.begin(), t.end()); med[v] = t[t.size() / 2]; }
        for (int v = 0; v <= COUNT; ++v)
            printf("  %-14s %9.4f ms  %6.2f TFLOP/s  %6.2f%% of cuBLAS (Bt)\n", v == COUNT ? "cuBLAS (Bt)" : variants[v].name, med[v],
                   2.0 * M * N * K / med[v] / 1e9, 100 * med[COUNT] / med[v]);
        cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(ref);
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
