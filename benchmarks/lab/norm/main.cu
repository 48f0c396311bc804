// Norm lab: LayerNorm / RMSNorm on rows that are not 16-byte aligned (4097 columns), as tessera
// emits them (weight and bias read by element on the rows whose first vector is not where the
// weight's are) and in variants (variants.py writes them from tests/golden): the weight's and
// bias' vectors built from two aligned 16-byte chunks (lab_vector_from), and LayerNorm's mean and
// variance from one pair reduction; timed in alternation beside the device copy of x, L2 flushed.
//   python3 variants.py /tmp/norm-lab
//   for f in main.cu /tmp/norm-lab/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -I. -c $f -o /tmp/norm-lab/$(basename $f .cu).o; done
//   nvcc -arch=sm_90a /tmp/norm-lab/*.o -o /tmp/norm && /tmp/norm
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cmath>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#define DECLARE_BF16_LN(name) extern "C" __global__ void name(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, float, int, int, int, int);
#define DECLARE_BF16_RMS(name) extern "C" __global__ void name(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, float, int, int, int, int);
#define DECLARE_F32_LN(name) extern "C" __global__ void name(const float*, const float*, const float*, float*, float, int, int, int, int);
DECLARE_BF16_LN(layer_norm_short_bf16) DECLARE_BF16_LN(layer_norm_short_bf16_from) DECLARE_BF16_LN(layer_norm_short_bf16_pair)
DECLARE_BF16_RMS(rms_norm_short_bf16) DECLARE_BF16_RMS(rms_norm_short_bf16_from)
DECLARE_F32_LN(layer_norm_short_f32) DECLARE_F32_LN(layer_norm_short_f32_from)

__global__ void fill(unsigned short* p, size_t n, unsigned seed, bool f32) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        float v = (h & 0xffff) / 32768.0f - 1.0f;
        if (f32) reinterpret_cast<float*>(p)[i] = v; else reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
    }
}

template <typename Emitted, typename From>
void compare(const char* name, int R, int C, size_t elem, Emitted emitted, From from, void* y1, void* y2, void* src, void* dst, void* flush, size_t flush_bytes) {
    emitted(y1); from(y2); cudaDeviceSynchronize();
    std::vector<unsigned char> h1((size_t)R * C * elem), h2(h1.size());
    cudaMemcpy(h1.data(), y1, h1.size(), cudaMemcpyDeviceToHost); cudaMemcpy(h2.data(), y2, h2.size(), cudaMemcpyDeviceToHost);
    size_t differ = 0; for (size_t i = 0; i < h1.size(); ++i) differ += h1[i] != h2[i];
    double worst = 0;  // in units of the output (bf16 or f32)
    for (size_t i = 0; i < h1.size() / elem; ++i) {
        float a, b;
        if (elem == 2) { unsigned ua = (unsigned)reinterpret_cast<unsigned short*>(h1.data())[i] << 16, ub = (unsigned)reinterpret_cast<unsigned short*>(h2.data())[i] << 16; memcpy(&a, &ua, 4); memcpy(&b, &ub, 4); }
        else { a = reinterpret_cast<float*>(h1.data())[i]; b = reinterpret_cast<float*>(h2.data())[i]; }
        worst = std::max(worst, (double)fabsf(a - b));
    }
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<float> t[3];
    for (int r = 0; r < 63; ++r)
        for (int v = 0; v < 3; ++v) {
            cudaMemsetAsync(flush, r, flush_bytes);
            cudaEventRecord(e0);
            if (v == 0) cudaMemcpyAsync(dst, src, (size_t)R * C * elem, cudaMemcpyDeviceToDevice);
            else if (v == 1) emitted(y1); else from(y2);
            cudaEventRecord(e1); cudaEventSynchronize(e1);
            float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t[v].push_back(ms);
        }
    double med[3]; for (int v = 0; v < 3; ++v) { std::sort(t[v].begin(), t[v].end()); med[v] = t[v][t[v].size() / 2]; }
    printf("%-24s %5d x %5d: copy %.4f ms | emitted %.4f ms %5.1f%% | variant %.4f ms %5.1f%% | %zu bytes differ, largest %.3g%s\n", name, R, C,
           med[0], med[1], 100 * med[0] / med[1], med[2], 100 * med[0] / med[2], differ, worst, cudaGetLastError() ? " CUDA ERROR" : "");
}

int main() {
    cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0); printf("%s\n", prop.name);
    size_t flush_bytes = 256 << 20; void* flush; cudaMalloc(&flush, flush_bytes);
    for (int C : {4097, 4100, 4096, 5000, 3001}) {
        const int R = 4096; const size_t n = (size_t)R * C;
        void *x, *w, *b, *y1, *y2, *dst;
        cudaMalloc(&x, n * 4); cudaMalloc(&w, C * 4); cudaMalloc(&b, C * 4); cudaMalloc(&y1, n * 4); cudaMalloc(&y2, n * 4); cudaMalloc(&dst, n * 4);
        for (int f32 = 0; f32 < 2; ++f32) {
            fill<<<1024, 256>>>((unsigned short*)x, n, 1, f32); fill<<<64, 256>>>((unsigned short*)w, C, 2, f32); fill<<<64, 256>>>((unsigned short*)b, C, 3, f32);
            if (!f32) {
                auto bx = (const __nv_bfloat16*)x, bw = (const __nv_bfloat16*)w, bb = (const __nv_bfloat16*)b;
                compare("layer_norm_short_bf16", R, C, 2,
                        [&](void* y) { layer_norm_short_bf16<<<R, 256>>>(bx, bw, bb, (__nv_bfloat16*)y, 1e-5f, R, C, C, C); },
                        [&](void* y) { layer_norm_short_bf16_from<<<R, 256>>>(bx, bw, bb, (__nv_bfloat16*)y, 1e-5f, R, C, C, C); }, y1, y2, x, dst, flush, flush_bytes);
                compare("layer_norm bf16 pair", R, C, 2,
                        [&](void* y) { layer_norm_short_bf16<<<R, 256>>>(bx, bw, bb, (__nv_bfloat16*)y, 1e-5f, R, C, C, C); },
                        [&](void* y) { layer_norm_short_bf16_pair<<<R, 256>>>(bx, bw, bb, (__nv_bfloat16*)y, 1e-5f, R, C, C, C); }, y1, y2, x, dst, flush, flush_bytes);
                compare("rms_norm_short_bf16", R, C, 2,
                        [&](void* y) { rms_norm_short_bf16<<<R, 256>>>(bx, bw, (__nv_bfloat16*)y, 1e-5f, R, C, C, C); },
                        [&](void* y) { rms_norm_short_bf16_from<<<R, 256>>>(bx, bw, (__nv_bfloat16*)y, 1e-5f, R, C, C, C); }, y1, y2, x, dst, flush, flush_bytes);
            } else {
                auto fx = (const float*)x, fw = (const float*)w, fb = (const float*)b;
                compare("layer_norm_short_f32", R, C, 4,
                        [&](void* y) { layer_norm_short_f32<<<R, 256>>>(fx, fw, fb, (float*)y, 1e-5f, R, C, C, C); },
                        [&](void* y) { layer_norm_short_f32_from<<<R, 256>>>(fx, fw, fb, (float*)y, 1e-5f, R, C, C, C); }, y1, y2, x, dst, flush, flush_bytes);
            }
        }
        cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y1); cudaFree(y2); cudaFree(dst);
    }
}
