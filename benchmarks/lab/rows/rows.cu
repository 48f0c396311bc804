// The rows lab: hand-written CUDA variants of tessera's row-wise kernels (softmax, LayerNorm),
// each with one idea turned, timed beside the device copy of as many bytes in one run, the
// method of `tessera bench` (CUDA events, L2 left clean by a read of twice its size before
// each repetition, median). Used to decide what the DSL should express before it does.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 rows.cu -o rows && ./rows
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <string>
#include "emitted.cuh"  // tessera show softmax_block_f32 + the norms, and one-change variants

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffff, v, m);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, m));
    return v;
}
template <int THREADS>
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float s[32];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? s[threadIdx.x % 32] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}
template <int THREADS>
__device__ __forceinline__ float block_max(float v) {
    __shared__ float s[32];
    v = warp_max(v);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
    __syncthreads();
    v = s[threadIdx.x % 32 < THREADS / 32 ? threadIdx.x % 32 : 0];
    v = warp_max(v);
    __syncthreads();
    return v;
}
// two sums through one round of shared memory: one barrier pair for both
template <int THREADS>
__device__ __forceinline__ float2 block_sum2(float a, float b) {
    __shared__ float2 s[32];
    a = warp_sum(a);
    b = warp_sum(b);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = make_float2(a, b);
    __syncthreads();
    float2 v = threadIdx.x % 32 < THREADS / 32 ? s[threadIdx.x % 32] : make_float2(0.0f, 0.0f);
    v.x = warp_sum(v.x);
    v.y = warp_sum(v.y);
    __syncthreads();
    return v;
}

// ---- softmax, a block per row, as tessera emits it: vectors of WIDTH from the row's start
// (WIDTH 1 where rows are not 16-byte aligned), ITEMS elements per thread
template <int THREADS, int ITEMS, int WIDTH>
__global__ void __launch_bounds__(THREADS) softmax_rowstart(const float* __restrict__ x, float* __restrict__ y, int R, int C, int ld) {
    int row = blockIdx.x, t = threadIdx.x;
    float v[ITEMS];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < ITEMS / WIDTH; ++j) {
        int i = j * THREADS + t;
        if ((i + 1) * WIDTH <= C) {
            if (WIDTH == 4) {
                float4 w = reinterpret_cast<const float4*>(x + (size_t)row * ld)[i];
                v[j * 4] = w.x; v[j * 4 + 1] = w.y; v[j * 4 + 2] = w.z; v[j * 4 + 3] = w.w;
            } else {
                v[j] = x[(size_t)row * ld + i];
            }
#pragma unroll
            for (int k = 0; k < WIDTH; ++k) m = fmaxf(m, v[j * WIDTH + k]);
        } else {
#pragma unroll
            for (int k = 0; k < WIDTH; ++k) {
                v[j * WIDTH + k] = i * WIDTH + k < C ? x[(size_t)row * ld + i * WIDTH + k] : -INFINITY;
                m = fmaxf(m, v[j * WIDTH + k]);
            }
        }
    }
    float rm = block_max<THREADS>(m);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) { v[j] = __expf(v[j] - rm); s += v[j]; }
    float scale = 1.0f / block_sum<THREADS>(s);
#pragma unroll
    for (int j = 0; j < ITEMS / WIDTH; ++j) {
        int i = j * THREADS + t;
        if ((i + 1) * WIDTH <= C) {
            if (WIDTH == 4) {
                reinterpret_cast<float4*>(y + (size_t)row * ld)[i] = make_float4(v[j * 4] * scale, v[j * 4 + 1] * scale, v[j * 4 + 2] * scale, v[j * 4 + 3] * scale);
            } else {
                y[(size_t)row * ld + i] = v[j] * scale;
            }
        } else {
#pragma unroll
            for (int k = 0; k < WIDTH; ++k)
                if (i * WIDTH + k < C) y[(size_t)row * ld + i * WIDTH + k] = v[j * WIDTH + k] * scale;
        }
    }
}

// ---- softmax with each row's own alignment: a head of up to 3 columns before the row's first
// 16-byte boundary (threads 0..2), float4 vectors from there, a tail of up to 3 (threads 4..6)
template <int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) softmax_aligned(const float* __restrict__ x, float* __restrict__ y, int R, int C, int ld) {
    int row = blockIdx.x, t = threadIdx.x;
    const float* xr = x + (size_t)row * ld;
    float* yr = y + (size_t)row * ld;
    int head = min((int)(((16 - ((uintptr_t)xr & 15)) & 15) / 4), C);
    int vectors = (C - head) / 4;
    int tail = head + vectors * 4;
    // the one extra element: a head column for threads 0..3, a tail column for threads 4..7
    int extra_col = t < 4 ? (t < head ? t : -1) : (t < 8 && tail + t - 4 < C ? tail + t - 4 : -1);
    float extra = extra_col >= 0 ? xr[extra_col] : -INFINITY;
    float v[ITEMS];
    float m = extra;
    const float4* xv = reinterpret_cast<const float4*>(xr + head);
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        int i = j * THREADS + t;
        float4 w = i < vectors ? xv[i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        v[j * 4] = w.x; v[j * 4 + 1] = w.y; v[j * 4 + 2] = w.z; v[j * 4 + 3] = w.w;
        m = fmaxf(m, fmaxf(fmaxf(w.x, w.y), fmaxf(w.z, w.w)));
    }
    float rm = block_max<THREADS>(m);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) { v[j] = __expf(v[j] - rm); s += v[j]; }
    extra = __expf(extra - rm);
    s += extra;
    float scale = 1.0f / block_sum<THREADS>(s);
    if (extra_col >= 0) yr[extra_col] = extra * scale;
    if (((uintptr_t)yr & 15) == ((uintptr_t)xr & 15)) {
        float4* yv = reinterpret_cast<float4*>(yr + head);
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            int i = j * THREADS + t;
            if (i < vectors) yv[i] = make_float4(v[j * 4] * scale, v[j * 4 + 1] * scale, v[j * 4 + 2] * scale, v[j * 4 + 3] * scale);
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            int i = j * THREADS + t;
            if (i < vectors)
                for (int k = 0; k < 4; ++k) yr[head + i * 4 + k] = v[j * 4 + k] * scale;
        }
    }
}

// ---- LayerNorm, a block per row, vectors of 4 (rows aligned), ITEMS per thread; TWO: the
// variance after the mean (two reductions), else sum and sum of squares of x − x[row, 0]
// in one reduction (the shifted-data formula)
template <int THREADS, int ITEMS, bool TWO, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) layer_norm(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y, int R, int C, int ld, float eps) {
    int row = blockIdx.x, t = threadIdx.x;
    const float4* xv = reinterpret_cast<const float4*>(x + (size_t)row * ld);
    float v[ITEMS];
    float shift = TWO ? 0.0f : x[(size_t)row * ld];
    float s = 0.0f, ss = 0.0f;
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        int i = j * THREADS + t;
        float4 q = i * 4 < C ? xv[i] : make_float4(shift, shift, shift, shift);
        v[j * 4] = q.x; v[j * 4 + 1] = q.y; v[j * 4 + 2] = q.z; v[j * 4 + 3] = q.w;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            float d = v[j * 4 + k] - shift;
            s += d;
            ss += d * d;
        }
    }
    float mean, inv;
    if (TWO) {
        mean = block_sum<THREADS>(s) / C;
        float sq = 0.0f;
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            int i = j * THREADS + t;
            if (i * 4 < C)
#pragma unroll
                for (int k = 0; k < 4; ++k) { float d = v[j * 4 + k] - mean; sq += d * d; }
        }
        inv = rsqrtf(block_sum<THREADS>(sq) / C + eps);
    } else {
        float2 r = block_sum2<THREADS>(s, ss);
        float dm = r.x / C;
        mean = shift + dm;
        inv = rsqrtf(fmaxf(r.y / C - dm * dm, 0.0f) + eps);
    }
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        int i = j * THREADS + t;
        if (i * 4 < C) {
            float4 wv = reinterpret_cast<const float4*>(w)[i];
            float4 bv = reinterpret_cast<const float4*>(b)[i];
            reinterpret_cast<float4*>(y + (size_t)row * ld)[i] = make_float4(
                (v[j * 4] - mean) * inv * wv.x + bv.x, (v[j * 4 + 1] - mean) * inv * wv.y + bv.y,
                (v[j * 4 + 2] - mean) * inv * wv.z + bv.z, (v[j * 4 + 3] - mean) * inv * wv.w + bv.w);
        }
    }
}

__global__ void read_all(const float4* p, size_t n, float* sink) {
    float s = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 1234.5f) *sink = s;
}

static float* flush_buf;
static float* sink;
static size_t flush_vec;

template <typename F>
float median_ms(F op, int reps = 30) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) op();
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
        read_all<<<1024, 256>>>(reinterpret_cast<float4*>(flush_buf), flush_vec, sink);
        CK(cudaEventRecord(a));
        op();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static void softmax_ref_check(const std::vector<float>& hx, const std::vector<float>& hy, int R, int C, int ld, const char* name) {
    double worst = 0.0;
    for (int r = 0; r < R; r += std::max(1, R / 64)) {
        double m = -1e30, s = 0.0;
        for (int c = 0; c < C; ++c) m = std::max(m, (double)hx[(size_t)r * ld + c]);
        for (int c = 0; c < C; ++c) s += std::exp((double)hx[(size_t)r * ld + c] - m);
        for (int c = 0; c < C; ++c) worst = std::max(worst, std::fabs(std::exp((double)hx[(size_t)r * ld + c] - m) / s - hy[(size_t)r * ld + c]) * C);
    }
    if (!(worst < 1e-3)) printf("  WRONG %s: worst scaled error %g\n", name, worst);
}

static void norm_ref_check(const std::vector<float>& hx, const std::vector<float>& hw, const std::vector<float>& hb, const std::vector<float>& hy, int R, int C, int ld, const char* name) {
    double worst = 0.0;
    for (int r = 0; r < R; r += std::max(1, R / 64)) {
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < C; ++c) mean += hx[(size_t)r * ld + c];
        mean /= C;
        for (int c = 0; c < C; ++c) { double d = hx[(size_t)r * ld + c] - mean; var += d * d; }
        double inv = 1.0 / std::sqrt(var / C + 1e-5);
        for (int c = 0; c < C; ++c) worst = std::max(worst, std::fabs((hx[(size_t)r * ld + c] - mean) * inv * hw[c] + hb[c] - hy[(size_t)r * ld + c]));
    }
    if (!(worst < 1e-3)) printf("  WRONG %s: worst error %g\n", name, worst);
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 30;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    flush_vec = 2 * (size_t)prop.l2CacheSize / 16;
    CK(cudaMalloc(&flush_buf, flush_vec * 16));
    CK(cudaMemset(flush_buf, 0, flush_vec * 16));
    CK(cudaMalloc(&sink, 4));

    struct Shape { int R, C; };
    for (Shape sh : {Shape{8192, 8192}, Shape{4096, 4097}, Shape{4096, 4096}, Shape{4096, 4100}}) {
        int R = sh.R, C = sh.C, ld = C;
        size_t n = (size_t)R * ld;
        float *x, *y, *w, *b;
        CK(cudaMalloc(&x, n * 4));
        CK(cudaMalloc(&y, n * 4));
        CK(cudaMalloc(&w, C * 4));
        CK(cudaMalloc(&b, C * 4));
        std::vector<float> hx(n), hw(C), hb(C), hy(n);
        srand(R + C);
        for (auto& e : hx) e = 4.0f * rand() / RAND_MAX - 2.0f + 3.0f;
        for (auto& e : hw) e = 1.0f * rand() / RAND_MAX + 0.5f;
        for (auto& e : hb) e = 1.0f * rand() / RAND_MAX - 0.5f;
        CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(w, hw.data(), C * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b, hb.data(), C * 4, cudaMemcpyHostToDevice));
        float copy = median_ms([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); }, reps);
        double bytes = 8.0 * R * C;
        printf("%d x %d: copy %.4f ms %.0f GB/s\n", R, C, copy, 8.0 * n / copy / 1e6);
        auto report = [&](const char* name, float ms) {
            printf("  %-40s %.4f ms %7.0f GB/s %6.1f%% of copy\n", name, ms, bytes / ms / 1e6, 100.0 * copy / ms * bytes / (8.0 * n));
        };
        bool aligned = ld % 4 == 0;
#define SOFTMAX(kernel, name) do { \
            CK(cudaMemset(y, 0xff, n * 4)); kernel<<<R, 256>>>(x, y, R, C, ld); CK(cudaDeviceSynchronize()); \
            CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost)); softmax_ref_check(hx, hy, R, C, ld, name); \
            report(name, median_ms([&] { kernel<<<R, 256>>>(x, y, R, C, ld); }, reps)); } while (0)
        if (aligned) SOFTMAX((softmax_rowstart<256, 32, 4>), "softmax rowstart 256x32 w4");
        SOFTMAX((softmax_rowstart<256, 32, 1>), "softmax rowstart 256x32 w1");
        if (C <= 5120) SOFTMAX((softmax_rowstart<256, 20, 1>), "softmax rowstart 256x20 w1");
        SOFTMAX((softmax_aligned<256, 32>), "softmax aligned 256x32");
        if (C <= 5120) SOFTMAX((softmax_aligned<256, 20>), "softmax aligned 256x20");
        if (C <= 4096 + 3 + 3) SOFTMAX((softmax_aligned<256, 16>), "softmax aligned 256x16");
        if (aligned) {
#define NORM(kernel, threads, name) do { \
            CK(cudaMemset(y, 0xff, n * 4)); kernel<<<R, threads>>>(x, w, b, y, R, C, ld, 1e-5f); CK(cudaDeviceSynchronize()); \
            CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost)); norm_ref_check(hx, hw, hb, hy, R, C, ld, name); \
            report(name, median_ms([&] { kernel<<<R, threads>>>(x, w, b, y, R, C, ld, 1e-5f); }, reps)); } while (0)
            NORM((layer_norm<256, 32, true, 1>), 256, "layer_norm 256x32 two reductions");
            NORM((layer_norm<256, 32, false, 1>), 256, "layer_norm 256x32 one (shifted)");
            NORM((layer_norm<256, 32, true, 4>), 256, "layer_norm 256x32 two, minblocks 4");
            NORM((layer_norm<256, 32, false, 4>), 256, "layer_norm 256x32 one, minblocks 4");
            NORM((layer_norm<512, 16, true, 1>), 512, "layer_norm 512x16 two reductions");
            NORM((layer_norm<512, 16, false, 1>), 512, "layer_norm 512x16 one (shifted)");
        }
        if (aligned) {
#define EMITTED_NORM(kernel, name) do { \
            CK(cudaMemset(y, 0xff, n * 4)); kernel<<<R, 256>>>(x, w, b, y, 1e-5f, R, C, ld, ld); CK(cudaDeviceSynchronize()); \
            CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost)); norm_ref_check(hx, hw, hb, hy, R, C, ld, name); \
            report(name, median_ms([&] { kernel<<<R, 256>>>(x, w, b, y, 1e-5f, R, C, ld, ld); }, reps)); } while (0)
            EMITTED_NORM(layer_norm_f32, "emitted layer_norm_f32");
            EMITTED_NORM(ln_rsqrt, "emitted, rsqrtf");
            EMITTED_NORM(ln_squares_by_vector, "emitted, squares guarded per vector");
            EMITTED_NORM(ln_no_else, "emitted, no element-wise branches");
            report("emitted rms_norm_f32", median_ms([&] { rms_norm_f32<<<R, 256>>>(x, w, y, 1e-5f, R, C, ld, ld); }, reps));
        }
        report("emitted softmax_block_f32", median_ms([&] { softmax_block_f32<<<R, 256>>>(x, y, R, C, ld, ld); }, reps));
        CK(cudaFree(x));
        CK(cudaFree(y));
        CK(cudaFree(w));
        CK(cudaFree(b));
    }
    return 0;
}
