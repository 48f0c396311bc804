// Norm lab, block shapes: tessera's 16-bit LayerNorm / RMSNorm as emitted and with other
// threads × ITEMS (shapes.py writes them from tests/golden), each timed in alternation with the
// device copy of x (L2 flushed before every run and left clean — since the session of
// 2026-11-28; before, its dirty lines cost both the copy and the kernel —, median of 60),
// outputs compared with the emitted shape's.
//   python3 shapes.py /tmp/norm-shapes
//   for f in shapes.cu /tmp/norm-shapes/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -I. -I/tmp/norm-shapes -c $f -o /tmp/norm-shapes/$(basename $f .cu).o; done
//   nvcc -arch=sm_90a /tmp/norm-shapes/*.o -o /tmp/norm-shapes/run && /tmp/norm-shapes/run ["R,C;R,C;.."]
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstring>
#include <utility>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

struct Shape { const char* name; bool layer; int threads; int columns; const void* kernel; };
#include "shapes.inc"

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = __float2bfloat16((h & 0xffff) / 32768.0f - 1.0f);
    }
}

// Reads `n` words (the flush's source again): the copy left L2 full of its dirty lines, which
// this writes back untimed, leaving clean ones, as `tessera bench`'s flush does.
__global__ void read_all(const unsigned* p, size_t n, unsigned* sink) {
    unsigned s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s ^= p[i];
    if (s == 0x12345678u) *sink = s;
}

int main(int argc, char** argv) {
    cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0); printf("%s\n", prop.name);
    const size_t flush_bytes = 256 << 20; void* flush; cudaMalloc(&flush, flush_bytes);
    void* scratch; cudaMalloc(&scratch, flush_bytes);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<std::pair<int, int>> sizes = {{4096, 4097}, {4096, 4096}, {4096, 5000}, {4096, 3001}};
    if (argc > 1) {  // "R,C;R,C;..": the rows × columns to run
        sizes.clear();
        for (const char* p = argv[1]; *p;) {
            int r = 0, c = 0, used = 0;
            if (sscanf(p, "%d,%d%n", &r, &c, &used) != 2) { fprintf(stderr, "sizes: R,C;R,C;..\n"); return 1; }
            sizes.push_back({r, c}); p += used; if (*p == ';') ++p;
        }
    }
    for (auto [R, C] : sizes) {
        const size_t n = (size_t)R * C;
        __nv_bfloat16 *x, *w, *b, *y, *reference[2], *dst;
        cudaMalloc(&x, n * 2); cudaMalloc(&w, C * 2); cudaMalloc(&b, C * 2); cudaMalloc(&y, n * 2); cudaMalloc(&reference[0], n * 2); cudaMalloc(&reference[1], n * 2); cudaMalloc(&dst, n * 2);
        fill<<<1024, 256>>>(x, n, 1); fill<<<64, 256>>>(w, C, 2); fill<<<64, 256>>>(b, C, 3);
        const char* first_of[2] = {nullptr, nullptr};
        for (const Shape& s : SHAPES) {
            if (s.columns < C) continue;
            auto launch = [&](__nv_bfloat16* out) {
                float eps = 1e-5f; int ld = C;
                void* ln[] = {&x, &w, &b, &out, &eps, (void*)&R, &C, &ld, &ld};
                void* rms[] = {&x, &w, &out, &eps, (void*)&R, &C, &ld, &ld};
                cudaLaunchKernel(s.kernel, dim3(R), dim3(s.threads), s.layer ? ln : rms, 0, 0);
            };
            // the first shape of each norm (as emitted) writes the reference the others are compared with
            bool first = first_of[s.layer] == nullptr;
            if (first) first_of[s.layer] = s.name;
            launch(first ? reference[s.layer] : y);
            cudaDeviceSynchronize();
            size_t differ = 0;
            if (!first) {
                std::vector<unsigned short> h1(n), h2(n);
                cudaMemcpy(h1.data(), reference[s.layer], n * 2, cudaMemcpyDeviceToHost); cudaMemcpy(h2.data(), y, n * 2, cudaMemcpyDeviceToHost);
                for (size_t i = 0; i < n; ++i) differ += h1[i] != h2[i];
            }
            std::vector<float> t[2];
            for (int r = 0; r < 63; ++r)
                for (int v = 0; v < 2; ++v) {
                    cudaMemcpyAsync(scratch, flush, flush_bytes, cudaMemcpyDeviceToDevice);
                    read_all<<<1024, 256>>>((const unsigned*)flush, flush_bytes / 4, (unsigned*)scratch);
                    cudaEventRecord(e0);
                    if (v == 0) cudaMemcpyAsync(dst, x, n * 2, cudaMemcpyDeviceToDevice); else launch(y);
                    cudaEventRecord(e1); cudaEventSynchronize(e1);
                    float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t[v].push_back(ms);
                }
            double med[2]; for (int v = 0; v < 2; ++v) { std::sort(t[v].begin(), t[v].end()); med[v] = t[v][t[v].size() / 2]; }
            printf("%5d x %5d  %-34s copy %.4f ms  norm %.4f ms  %5.1f%%  %s%zu outputs differ from %s%s\n", R, C, s.name, med[0], med[1],
                   100 * med[0] / med[1], first ? "(reference) " : "", differ, first_of[s.layer], cudaGetLastError() ? "  CUDA ERROR" : "");
        }
        cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y); cudaFree(reference[0]); cudaFree(reference[1]); cudaFree(dst);
    }
}
