// SGEMM lab 3: stream-K kernels as tessera emits them (and hand edits of them) beside cuBLAS.
// nvcc -O3 -arch=sm_90 lab3.cu <variant>.cu ... -lcublas -o lab3 ; ./lab3 reps rounds "M,N,K;..."
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <string>
#include <sstream>
#include <cublas_v2.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)
typedef void (*KernSK)(const float*, const float*, float*, float, float, int, int, int, int, int, int, float*, int*);
#define V(name) extern "C" __global__ void name(const float*, const float*, float*, float, float, int, int, int, int, int, int, float*, int*);
#include "variants3.inc"
#undef V
struct Variant { const char* name; KernSK k; int smem; int threads = 256; };
int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    std::string shapes_arg = argc > 3 ? argv[3] : "4096,4096,4096";
    std::vector<Variant> vs;
#define V(name) vs.push_back({#name, name, 0});
#include "variants3.inc"
#undef V
    // a cubin compiled elsewhere (NVRTC, as tessera loads it): CUBIN=path KERNEL=name
    if (getenv("CUBIN")) {
        cudaLibrary_t library; cudaKernel_t kernel;
        CK(cudaLibraryLoadFromFile(&library, getenv("CUBIN"), nullptr, nullptr, 0, nullptr, nullptr, 0));
        CK(cudaLibraryGetKernel(&kernel, library, getenv("KERNEL")));
        vs.push_back({"cubin", (KernSK)(const void*)kernel, 0});
    }
    for (auto& v : vs) {
        cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, v.k));
        int smem = 148992;
        if (std::string(v.name).find("_s4") != std::string::npos) smem = 198656;
        v.smem = smem;
        if (std::string(v.name).find("ws") != std::string::npos) v.threads = std::string(v.name).find("w1") != std::string::npos ? 288 : 384;
        CK(cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        printf("%-24s %d registers\n", v.name, at.numRegs);
    }
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float* partials; int* counters;
    CK(cudaMalloc(&partials, (size_t)2 * sms * 128 * 256 * 4));
    CK(cudaMalloc(&counters, (size_t)1 << 20));
    cublasHandle_t h; cublasCreate(&h); cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::stringstream ss(shapes_arg); std::string item;
    while (std::getline(ss, item, ';')) {
        int M, N, K; sscanf(item.c_str(), "%d,%d,%d", &M, &N, &K);
        size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        std::vector<float> ha(na), hb(nb);
        for (size_t i = 0; i < na; ++i) ha[i] = ((i * 7919 + 104729) % 2003) / 1001.0f - 1.0f;
        for (size_t i = 0; i < nb; ++i) hb[i] = ((i * 7919 + 2 * 104729) % 2003) / 1001.0f - 1.0f;
        float *a, *b, *c, *r;
        CK(cudaMalloc(&a, na * 4)); CK(cudaMalloc(&b, nb * 4)); CK(cudaMalloc(&c, nc * 4)); CK(cudaMalloc(&r, nc * 4));
        CK(cudaMemcpy(a, ha.data(), na * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b, hb.data(), nb * 4, cudaMemcpyHostToDevice));
        float one = 1, zero = 0;
        auto time = [&](auto f) {
            for (int i = 0; i < 3; ++i) f();
            std::vector<float> t;
            for (int i = 0; i < reps; ++i) {
                cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms);
            }
            std::sort(t.begin(), t.end());
            return t[t.size() / 2];
        };
        auto cublas = [&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b, N, a, K, &zero, r, N); };
        cublas(); CK(cudaDeviceSynchronize());
        std::vector<float> want(nc), got(nc);
        CK(cudaMemcpy(want.data(), r, nc * 4, cudaMemcpyDeviceToHost));
        int tiles = ((N + 255) / 256) * ((M + 127) / 128), k_tiles = (K + 31) / 32;
        int grid = std::min((long long)tiles * k_tiles, (long long)sms);
        std::vector<std::vector<float>> ratio(vs.size());
        std::vector<double> err(vs.size());
        for (size_t i = 0; i < vs.size(); ++i) {
            auto& v = vs[i];
            CK(cudaMemset(c, 0xff, nc * 4));
            CK(cudaMemsetAsync(counters, 0, tiles * 4));
            v.k<<<grid, v.threads, v.smem>>>(a, b, c, 1.0f, 0.0f, M, K, N, K, N, N, partials, counters);
            CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(got.data(), c, nc * 4, cudaMemcpyDeviceToHost));
            double d = 0, n2 = 0;
            for (size_t j = 0; j < nc; ++j) { double x = (double)got[j] - want[j]; d += x * x; n2 += (double)want[j] * want[j]; }
            err[i] = std::sqrt(d / n2);
        }
        for (int round = 0; round < rounds; ++round) {
            float base = time(cublas);
            for (size_t i = 0; i < vs.size(); ++i) {
                auto& v = vs[i];
                float ms = time([&] { cudaMemsetAsync(counters, 0, tiles * 4); v.k<<<grid, v.threads, v.smem>>>(a, b, c, 1.0f, 0.0f, M, K, N, K, N, N, partials, counters); });
                ratio[i].push_back(100.0f * base / ms);
            }
            printf("%dx%dx%d round %d: cuBLAS %.3f ms\n", M, N, K, round, base);
        }
        for (size_t i = 0; i < vs.size(); ++i) {
            auto r2 = ratio[i]; std::sort(r2.begin(), r2.end());
            printf("  %dx%dx%d %-24s median %6.1f%% of cuBLAS (min %.1f max %.1f) err %.1e\n", M, N, K, vs[i].name, r2[r2.size() / 2], r2.front(), r2.back(), err[i]);
        }
        cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(r);
    }
    return 0;
}
