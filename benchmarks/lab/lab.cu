// nvcc -O3 -arch=sm_90 -std=c++17 lab.cu -lcublas -o lab ; ./lab [reps]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <string>
#include <cublas_v2.h>
#include "lab.cuh"
#include "../../tests/golden/sgemm_v10.cu"
#include <tuple>
#include "lab2.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

typedef void (*Kern)(const float*, const float*, float*, float, float, int, int, int, int, int, int);

template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int AMAP, int VEC, int ORDER, int MINB, int SPM, int SPN>
__global__ void __launch_bounds__(256, MINB) lab_k(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, float alpha, float beta, int M, int K, int N, int a_ld, int b_ld, int c_ld) {
    Lab<BM, BN, BK, TM, TN, STAGES, KCHUNK, AMAP, VEC, ORDER, MINB, SPM, SPN>::run(a, b, c, alpha, beta, M, K, N, a_ld, b_ld, c_ld);
}

typedef void (*KernSK)(const float*, const float*, float*, float, float, int, int, int, int, int, int, float*, int*);
struct Variant { std::string name; Kern k4; Kern k1; int bm, bn, smem; KernSK s4 = nullptr, s1 = nullptr; };

template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int VEC, int ORDER, int SPREAD, int LP>
__global__ void __launch_bounds__(256, 1) lab2_k(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, float alpha, float beta, int M, int K, int N, int a_ld, int b_ld, int c_ld) {
    Lab2<BM, BN, BK, TM, TN, STAGES, KCHUNK, VEC, ORDER, SPREAD, LP>::run(a, b, c, alpha, beta, M, K, N, a_ld, b_ld, c_ld);
}
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int VEC, int ORDER, int SPREAD, int LP>
__global__ void __launch_bounds__(256, 1) lab2_sk(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, float alpha, float beta, int M, int K, int N, int a_ld, int b_ld, int c_ld, float* partials, int* flags) {
    Lab2<BM, BN, BK, TM, TN, STAGES, KCHUNK, VEC, ORDER, SPREAD, LP>::run_sk(a, b, c, alpha, beta, M, K, N, a_ld, b_ld, c_ld, partials, flags);
}
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int ORDER, int SPREAD, bool SK, int LP = 0>
Variant make2(const char* name) {
    using L = Lab2<BM, BN, BK, TM, TN, STAGES, KCHUNK, 4, ORDER, SPREAD, LP>;
    Variant v{name, nullptr, nullptr, BM, BN, L::SMEM};
    if (SK) {
        v.s4 = lab2_sk<BM, BN, BK, TM, TN, STAGES, KCHUNK, 4, ORDER, SPREAD, LP>;
        v.s1 = lab2_sk<BM, BN, BK, TM, TN, STAGES, KCHUNK, 1, ORDER, SPREAD, LP>;
        CK(cudaFuncSetAttribute(v.s4, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
        CK(cudaFuncSetAttribute(v.s1, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
    } else {
        v.k4 = lab2_k<BM, BN, BK, TM, TN, STAGES, KCHUNK, 4, ORDER, SPREAD, LP>;
        v.k1 = lab2_k<BM, BN, BK, TM, TN, STAGES, KCHUNK, 1, ORDER, SPREAD, LP>;
        CK(cudaFuncSetAttribute(v.k4, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
        CK(cudaFuncSetAttribute(v.k1, cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM));
    }
    return v;
}

template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int AMAP, int ORDER, int MINB, int SPM = 2, int SPN = 2>
Variant make(const char* name) {
    using L4 = Lab<BM, BN, BK, TM, TN, STAGES, KCHUNK, AMAP, 4, ORDER, MINB, SPM, SPN>;
    Kern k4 = lab_k<BM, BN, BK, TM, TN, STAGES, KCHUNK, AMAP, 4, ORDER, MINB, SPM, SPN>;
    Kern k1 = lab_k<BM, BN, BK, TM, TN, STAGES, KCHUNK, AMAP, 1, ORDER, MINB, SPM, SPN>;
    CK(cudaFuncSetAttribute(k4, cudaFuncAttributeMaxDynamicSharedMemorySize, L4::SMEM));
    CK(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, L4::SMEM));
    return {name, k4, k1, BM, BN, L4::SMEM};
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    std::string shape_filter = argc > 2 ? argv[2] : "all";
    std::string only = argc > 3 ? argv[3] : "";
    std::vector<Variant> vs;
    {
        CK(cudaFuncSetAttribute(sgemm_v10, cudaFuncAttributeMaxDynamicSharedMemorySize, 148992));
        vs.push_back({"v10 (tessera)", sgemm_v10, nullptr, 128, 256, 148992});
    }
#include "variants.inc"
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float* partials; int* flags;
    CK(cudaMalloc(&partials, (size_t)2 * sms * 128 * 256 * 4));
    CK(cudaMalloc(&flags, 2 * sms * 4));
    CK(cudaMemset(flags, 0, 2 * sms * 4));
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    int shapes[][3] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4095, 4095, 4095}, {4097, 4097, 4097}, {1024, 1024, 1024}};
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (auto& s : shapes) {
        int M = s[0], N = s[1], K = s[2];
        if (shape_filter != "all" && shape_filter.find(std::to_string(M)) == std::string::npos) continue;
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
        // row-major C = A B  ==  column-major C^T = B^T A^T
        float base = time([&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b, N, a, K, &zero, r, N); });
        CK(cudaDeviceSynchronize());
        double flops = 2.0 * M * N * K;
        printf("%dx%dx%d cuBLAS %.3f ms %.1f TFLOP/s\n", M, N, K, base, flops / base / 1e9);
        std::vector<float> want(nc), got(nc);
        CK(cudaMemcpy(want.data(), r, nc * 4, cudaMemcpyDeviceToHost));
        bool aligned = (K % 4 == 0) && (N % 4 == 0);
        for (auto& v : vs) {
            if (!only.empty() && v.name.find(only) == std::string::npos) continue;
            Kern k = aligned ? v.k4 : (v.k1 ? v.k1 : nullptr);
            KernSK ks = aligned ? v.s4 : v.s1;
            if (!k && !ks) continue;
            dim3 grid((N + v.bn - 1) / v.bn, (M + v.bm - 1) / v.bm);
            int tiles = grid.x * grid.y;
            auto launch = [&] {
                if (ks) ks<<<std::min(tiles * ((K + 31) / 32), sms), 256, v.smem>>>(a, b, c, 1.0f, 0.0f, M, K, N, K, N, N, partials, flags);
                else k<<<grid, 256, v.smem>>>(a, b, c, 1.0f, 0.0f, M, K, N, K, N, N);
            };
            CK(cudaMemset(c, 0xff, nc * 4));
            launch();
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(got.data(), c, nc * 4, cudaMemcpyDeviceToHost));
            double d = 0, n2 = 0;
            for (size_t i = 0; i < nc; ++i) { double x = (double)got[i] - want[i]; d += x * x; n2 += (double)want[i] * want[i]; }
            float ms = time(launch);
            printf("  %-44s %.3f ms %6.1f TFLOP/s %6.1f%% of cuBLAS  err %.1e\n", v.name.c_str(), ms, flops / ms / 1e9, 100.0 * base / ms, std::sqrt(d / n2));
        }
        cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(r);
    }
    return 0;
}
