// wgmma epilogue lab: HGEMM V11 (bf16 → bf16) plain, with the bias, with bias + GELU fused as
// tessera emits it, the bias GEMM followed by `gelu_bf16` (tessera::gemm_bias_gelu today), and
// the GELU taken by the producer warpgroup's idle warps (wgmma_variants.py), timed in
// alternation with L2 flushed before each repetition.
//   python3 wgmma_variants.py /tmp/wg
//   for f in wgmma_main.cu /tmp/wg/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -c $f -o /tmp/wg/$(basename $f .cu).o & done; wait
//   nvcc -arch=sm_90a /tmp/wg/*.o -lcuda -o /tmp/wgmma-lab && /tmp/wgmma-lab 3
#include <cstdio>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

typedef void (*Gemm)(int, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, float, int, int, int, const void*, const void*);
#define GEMMS(X) X(plain) X(bias) X(emitted) X(by_producers_2) X(by_producers_4)
#define DECLARE(name) void launch_##name(int, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, float, int, int, int, const void*, const void*); void prepare_##name();
GEMMS(DECLARE)
void launch_gelu(__nv_bfloat16* c, int M, int N);

struct Variant { const char* name; Gemm launch; void (*prepare)(); bool then_gelu; };
static const Variant variants[] = {
    {"plain", launch_plain, prepare_plain, false},
    {"bias", launch_bias, prepare_bias, false},
    {"emitted (fused)", launch_emitted, prepare_emitted, false},
    {"bias, then gelu_bf16", launch_bias, prepare_bias, true},
    {"by_producers_2", launch_by_producers_2, prepare_by_producers_2, false},
    {"by_producers_4", launch_by_producers_4, prepare_by_producers_4, false},
};
constexpr int VARIANT_COUNT = sizeof(variants) / sizeof(variants[0]);

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed, float scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = __float2bfloat16_rn(((h & 0xffff) / 65536.0f - 0.5f) * scale);
    }
}

static void encode(CUtensorMap* map, const void* base, int rows, int cols, int box_rows, int box_cols) {
    cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    cuuint32_t element_strides[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled failed: %d\n", (int)r); exit(1); }
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    int sm = 0; cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
    printf("%s, %d SMs\n", prop.name, sm);
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int shapes[][3] = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 256}, {8192, 8192, 8192}, {4000, 4000, 4000}};
    float* flush; size_t flush_n = 64 << 20; cudaMalloc(&flush, flush_n * 4);
    for (auto& v : variants) v.prepare();
    for (auto& s : shapes) {
        int M = s[0], N = s[1], K = s[2];
        __nv_bfloat16 *a, *b, *bias, *c, *ref;
        cudaMalloc(&a, (size_t)M * K * 2); cudaMalloc(&b, (size_t)K * N * 2); cudaMalloc(&bias, N * 2);
        cudaMalloc(&c, (size_t)M * N * 2); cudaMalloc(&ref, (size_t)M * N * 2);
        fill<<<1024, 256>>>(a, (size_t)M * K, 1, 1.0f); fill<<<1024, 256>>>(b, (size_t)K * N, 2, 8.0f / sqrtf((float)K)); fill<<<64, 256>>>(bias, N, 3, 4.0f);
        alignas(64) CUtensorMap a_map, b_map;
        encode(&a_map, a, M, K, 128, 64);
        encode(&b_map, b, K, N, 64, 64);
        const int tiles = ((M + 127) / 128) * ((N + 255) / 256);
        const int blocks = std::min(sm, tiles);
        auto run = [&](const Variant& v, __nv_bfloat16* out) {
            v.launch(blocks, a, b, bias, out, 1.0f, M, K, N, &a_map, &b_map);
            if (v.then_gelu) launch_gelu(out, M, N);
        };
        // check: the producers' GELU against the bias GEMM then gelu_bf16 (the same roundings: bit for bit)
        std::vector<unsigned short> h1((size_t)M * N), h2((size_t)M * N);
        run(variants[3], ref);
        cudaMemcpy(h1.data(), ref, h1.size() * 2, cudaMemcpyDeviceToHost);
        printf("\n%d x %d x %d:", M, N, K);
        for (int v : {2, 4, 5}) {
            cudaMemset(c, 0xff, (size_t)M * N * 2);
            run(variants[v], c);
            cudaMemcpy(h2.data(), c, h2.size() * 2, cudaMemcpyDeviceToHost);
            size_t differ = 0;
            for (size_t i = 0; i < h1.size(); ++i) differ += h1[i] != h2[i];
            printf(" %s: %zu of %zu values differ from bias + gelu_bf16;", variants[v].name, differ, h1.size());
        }
        printf("%s\n", cudaGetLastError() ? " (CUDA ERROR)" : "");
        const int reps = K >= 8192 ? 10 : 40;
        std::vector<std::vector<float>> times(VARIANT_COUNT);
        cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
        for (int r = 0; r < rounds * reps + 2; ++r)
            for (int v = 0; v < VARIANT_COUNT; ++v) {
                cudaMemsetAsync(flush, r & 0xff, flush_n * 4);
                cudaEventRecord(e0);
                run(variants[v], c);
                cudaEventRecord(e1); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1);
                if (r >= 2) times[v].push_back(ms);
            }
        double plain = 0;
        for (int v = 0; v < VARIANT_COUNT; ++v) {
            auto t = times[v]; std::sort(t.begin(), t.end()); double med = t[t.size() / 2];
            if (v == 0) plain = med;
            printf("  %-22s %9.4f ms  %7.1f TFLOP/s  %6.2f%% of plain  (min %.4f, max %.4f)\n", variants[v].name, med,
                   2.0 * M * N * K / med / 1e9, 100 * plain / med, t.front(), t.back());
        }
        cudaFree(a); cudaFree(b); cudaFree(bias); cudaFree(c); cudaFree(ref);
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
