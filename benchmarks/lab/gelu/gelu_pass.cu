// GELU-pass lab: `gelu_bf16` (C = GELU(C) in place, the second kernel of 16-bit
// `tessera::gemm_bias_gelu`) as tessera emits it, beside variants with one knob turned, and the
// device copy of the same bytes; L2 flushed before each repetition, medians of 60.
//   nvcc -O3 -arch=sm_90a -std=c++17 -I. gelu_pass.cu -o /tmp/gelu_pass && /tmp/gelu_pass
// (the emitted kernel is #included from tests/golden/gelu_bf16.cu, so the lab times what ships)
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cuda_runtime.h>
#include "../../../tests/golden/gelu_bf16.cu"

// VECTORS 16-byte vectors a thread, all loaded before the first GELU (tessera emitted one before
// 2026-11-27, two since)
template <int VECTORS, bool DO_GELU>
__global__ void __launch_bounds__(256) gelu_vectors(__nv_bfloat16* __restrict__ c, int M, int N) {
    const int row = blockIdx.x;
    const int base = blockIdx.y * 256 * VECTORS + threadIdx.x;
    tessera_bf16x8 v[VECTORS];
    const int whole = N / 8;
#pragma unroll
    for (int j = 0; j < VECTORS; ++j)
        if (base + j * 256 < whole) v[j] = reinterpret_cast<tessera_bf16x8*>(c + (size_t)row * N)[base + j * 256];
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
        if (base + j * 256 < whole) {
            tessera_bf16x8 out;
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                float x = __bfloat162float(v[j].v[e]);
                out.v[e] = __float2bfloat16_rn(DO_GELU ? tessera_gelu(x) : x * 1.0001f);
            }
            reinterpret_cast<tessera_bf16x8*>(c + (size_t)row * N)[base + j * 256] = out;
        }
    }
}

// pairs converted and rounded two at a time (cvt.rn.bf16x2.f32)
template <int VECTORS>
__global__ void __launch_bounds__(256) gelu_pairs(__nv_bfloat16* __restrict__ c, int M, int N) {
    const int row = blockIdx.x;
    const int base = blockIdx.y * 256 * VECTORS + threadIdx.x;
    uint4 v[VECTORS];
    const int whole = N / 8;
#pragma unroll
    for (int j = 0; j < VECTORS; ++j)
        if (base + j * 256 < whole) v[j] = reinterpret_cast<const uint4*>(c + (size_t)row * N)[base + j * 256];
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
        if (base + j * 256 < whole) {
            unsigned w[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                float lo = __uint_as_float(w[p] << 16), hi = __uint_as_float(w[p] & 0xffff0000u);
                __nv_bfloat162 r = __floats2bfloat162_rn(tessera_gelu(lo), tessera_gelu(hi));
                memcpy(&w[p], &r, 4);
            }
            reinterpret_cast<uint4*>(c + (size_t)row * N)[base + j * 256] = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

__global__ void fill(__nv_bfloat16* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = __float2bfloat16((h & 0xffff) / 8192.0f - 4.0f);
    }
}

int main() {
    const int shapes[][2] = {{2048, 2048}, {4096, 4096}, {8192, 8192}, {16384, 4096}};
    size_t flush_bytes = 256u << 20; void* flush; cudaMalloc(&flush, flush_bytes);
    for (auto& s : shapes) {
        const int M = s[0], N = s[1];
        const size_t n = (size_t)M * N, bytes = n * 2;
        __nv_bfloat16 *c, *src, *dst, *ref; cudaMalloc(&c, bytes); cudaMalloc(&src, bytes); cudaMalloc(&dst, bytes); cudaMalloc(&ref, bytes);
        fill<<<1024, 256>>>(src, n);
        // reference: the emitted kernel once on fresh values
        cudaMemcpy(ref, src, bytes, cudaMemcpyDeviceToDevice);
        gelu_bf16<<<dim3(M, (N + 4095) / 4096), 256>>>(ref, M, N, N);
        std::vector<unsigned short> want(n), got(n);
        cudaMemcpy(want.data(), ref, bytes, cudaMemcpyDeviceToHost);
        struct V { const char* name; int cols_per_block; bool check; };
        V variants[] = {
            {"1 vector (as emitted before)", 2048, true},
            {"2 vectors in flight", 4096, true},
            {"4 vectors in flight", 8192, true},
            {"2 vectors, pairs rounded together", 4096, true},
            {"1 vector, no GELU (memory floor)", 2048, false},
            {"2 vectors, no GELU", 4096, false},
        };
        auto launch = [&](int v, __nv_bfloat16* p) {
            dim3 grid(M, (N + variants[v].cols_per_block - 1) / variants[v].cols_per_block);
            switch (v) {
                case 0: gelu_vectors<1, true><<<grid, 256>>>(p, M, N); break;
                case 1: gelu_vectors<2, true><<<grid, 256>>>(p, M, N); break;
                case 2: gelu_vectors<4, true><<<grid, 256>>>(p, M, N); break;
                case 3: gelu_pairs<2><<<grid, 256>>>(p, M, N); break;
                case 4: gelu_vectors<1, false><<<grid, 256>>>(p, M, N); break;
                case 5: gelu_vectors<2, false><<<grid, 256>>>(p, M, N); break;
            }
        };
        const int V_COUNT = 6;
        for (int v = 0; v < V_COUNT; ++v) {
            if (!variants[v].check) continue;
            cudaMemcpy(c, src, bytes, cudaMemcpyDeviceToDevice); launch(v, c);
            cudaMemcpy(got.data(), c, bytes, cudaMemcpyDeviceToHost);
            size_t differ = 0; for (size_t i = 0; i < n; ++i) differ += got[i] != want[i];
            if (differ) printf("  %s: %zu values differ from the emitted kernel's\n", variants[v].name, differ);
        }
        cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
        std::vector<float> t[V_COUNT + 2];
        for (int r = 0; r < 63; ++r)
            for (int v = -2; v < V_COUNT; ++v) {
                cudaMemsetAsync(flush, r, flush_bytes);
                cudaMemcpyAsync(c, src, bytes, cudaMemcpyDeviceToDevice);  // fresh values each time
                cudaMemsetAsync(flush, r + 1, flush_bytes);
                cudaEventRecord(e0);
                if (v == -2) cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice);
                else if (v == -1) gelu_bf16<<<dim3(M, (N + 4095) / 4096), 256>>>(c, M, N, N);
                else launch(v, c);
                cudaEventRecord(e1); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t[v + 2].push_back(ms);
            }
        double med[V_COUNT + 2];
        for (int v = 0; v < V_COUNT + 2; ++v) { std::sort(t[v].begin(), t[v].end()); med[v] = t[v][t[v].size() / 2]; }
        printf("%5d x %5d bf16: device copy %.2f us (%.0f GB/s)%s\n", M, N, med[0] * 1e3, 2 * bytes / med[0] / 1e6, cudaGetLastError() ? " CUDA ERROR" : "");
        printf("  %-36s %8.2f us %6.1f%% of the copy\n", "gelu_bf16 (tessera, emitted)", med[1] * 1e3, 100 * med[0] / med[1]);
        for (int v = 0; v < V_COUNT; ++v)
            printf("  %-36s %8.2f us %6.1f%% of the copy\n", variants[v].name, med[v + 2] * 1e3, 100 * med[0] / med[v + 2]);
        cudaFree(c); cudaFree(src); cudaFree(dst); cudaFree(ref);
    }
}
