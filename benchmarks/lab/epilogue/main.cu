// Epilogue lab: SGEMM V13 plain, and with the fused bias + GELU epilogue as tessera emits it
// and in variants (variants.py writes them from tests/golden), timed in alternation (L2 flushed
// before each repetition), to find what the fused epilogue costs over the plain store.
//   python3 variants.py /tmp/eplab
//   for f in main.cu /tmp/eplab/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -I. -c $f -o /tmp/eplab/$(basename $f .cu).o; done
//   nvcc -arch=sm_90a /tmp/eplab/*.o -o /tmp/epilogue && /tmp/epilogue 3
#include <cstdio>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define VARIANTS(X) X(plain) X(emitted) X(no_gelu) X(own_erf) X(lockstep) X(unswitched_rows) X(hoisted) X(by_producers) X(by_producers_2) X(by_producers_call) X(by_producers_nopass)
#define DECLARE(name) void launch_##name(int, const float*, const float*, const float*, float*, float, int, int, int); void prepare_##name();
VARIANTS(DECLARE)

struct Variant { const char* name; void (*launch)(int, const float*, const float*, const float*, float*, float, int, int, int); void (*prepare)(); };
#define ENTRY(name) {#name, launch_##name, prepare_##name},
static const Variant variants[] = { VARIANTS(ENTRY) };

__global__ void fill(float* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = (h & 0xffff) / 65536.0f - 0.5f;
    }
}

int main(int argc, char** argv) {
    int sm = 0; cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
    printf("%s, %d SMs\n", prop.name, sm);
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int shapes[][3] = {{4096, 4096, 4096}, {8192, 8192, 256}, {8192, 8192, 8192}};
    float *flush; size_t flush_n = 64 << 20; cudaMalloc(&flush, flush_n * 4);
    for (auto& s : shapes) {
        int M = s[0], N = s[1], K = s[2];
        float *a, *b, *bias, *c, *ref;
        cudaMalloc(&a, (size_t)M * K * 4); cudaMalloc(&b, (size_t)K * N * 4); cudaMalloc(&bias, N * 4);
        cudaMalloc(&c, (size_t)M * N * 4); cudaMalloc(&ref, (size_t)M * N * 4);
        fill<<<1024, 256>>>(a, (size_t)M * K, 1); fill<<<1024, 256>>>(b, (size_t)K * N, 2); fill<<<64, 256>>>(bias, N, 3);
        for (auto& v : variants) v.prepare();
        // check: every variant with the whole map against the emitted kernel's C (own_erf and lockstep
        // use another erf: a few ulp apart)
        std::vector<float> h1((size_t)M * N), h2((size_t)M * N);
        variants[1].launch(sm, a, b, bias, ref, 1.0f, M, K, N);
        cudaMemcpy(h1.data(), ref, h1.size() * 4, cudaMemcpyDeviceToHost);
        printf("\n%d x %d x %d:", M, N, K);
        for (int v : {3, 4, 5, 6, 7, 8, 9, 10}) {
            variants[v].launch(sm, a, b, bias, c, 1.0f, M, K, N);
            cudaMemcpy(h2.data(), c, h2.size() * 4, cudaMemcpyDeviceToHost);
            size_t differ = 0; double worst = 0;
            for (size_t i = 0; i < h1.size(); ++i) { differ += h1[i] != h2[i]; worst = fmax(worst, fabs((double)h1[i] - h2[i]) / fmax(fabs((double)h1[i]), 1e-3)); }
            printf(" %s: %zu values differ from emitted (largest %.2e relative);", variants[v].name, differ, worst);
        }
        printf("%s\n", cudaGetLastError() ? " (CUDA ERROR)" : "");
        const int reps = K >= 8192 ? 5 : 20;
        std::vector<std::vector<float>> times(sizeof(variants) / sizeof(variants[0]));
        cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
        for (int r = 0; r < rounds * reps + 2; ++r)
            for (size_t v = 0; v < times.size(); ++v) {
                cudaMemsetAsync(flush, r & 0xff, flush_n * 4);
                cudaEventRecord(e0);
                variants[v].launch(sm, a, b, bias, c, 1.0f, M, K, N);
                cudaEventRecord(e1); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1);
                if (r >= 2) times[v].push_back(ms);
            }
        double plain = 0;
        for (size_t v = 0; v < times.size(); ++v) {
            auto t = times[v]; std::sort(t.begin(), t.end()); double med = t[t.size() / 2];
            if (v == 0) plain = med;
            printf("  %-18s %9.4f ms  %7.2f TFLOP/s  %6.2f%% of plain  (min %.4f, max %.4f)\n", variants[v].name, med,
                   2.0 * M * N * K / med / 1e9, 100 * plain / med, t.front(), t.back());
        }
        cudaFree(a); cudaFree(b); cudaFree(bias); cudaFree(c); cudaFree(ref);
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
