// Transposes of a 16384² (and 4095 × 4097) f32 matrix, hand-written variants beside the device
// copy of as many bytes (L2 left clean before each repetition, median), as rows.cu times: what
// closes the gap between a padded shared tile of 4-byte accesses (tessera's best, 93.5%) and
// the copy.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 transpose.cu -o transpose && ./transpose
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

// tessera's transpose_padded_64: 64 × 64 tile, 32 × 8 threads, 4-byte accesses both sides
template <bool DOWN>
__global__ void __launch_bounds__(256) scalar64(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    __shared__ float t[64][65];
    int bx = (DOWN ? blockIdx.y : blockIdx.x) * 64, by = (DOWN ? blockIdx.x : blockIdx.y) * 64;
    int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
#pragma unroll
    for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int r = by + ty + 8 * k, c = bx + tx + 32 * h;
            if (r < R && c < C) t[ty + 8 * k][tx + 32 * h] = x[(size_t)r * C + c];
        }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int r = bx + ty + 8 * k, c = by + tx + 32 * h;
            if (r < C && c < R) y[(size_t)r * R + c] = t[tx + 32 * h][ty + 8 * k];
        }
}

// TILE × TILE tile, 256 threads, 16-byte loads of x's rows and 16-byte stores of y's rows:
// a thread loads float4s, writes their 4 elements down a column of the padded tile (4-byte
// shared stores), and builds each output float4 from 4 elements of a tile row.
// STREAM: evict-first hints on both sides (each byte is touched once).
template <int TILE, bool STREAM, bool DOWN = false>
__global__ void __launch_bounds__(256) vector_tile(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    constexpr int Q = TILE / 4;            // float4s per tile row
    constexpr int ROWS = 256 / Q;          // tile rows one pass of the block covers
    __shared__ float t[TILE][TILE + 1];    // t[c][r] = x[by + r][bx + c]
    int bx = (DOWN ? blockIdx.y : blockIdx.x) * TILE, by = (DOWN ? blockIdx.x : blockIdx.y) * TILE;
    int q = threadIdx.x % Q, p = threadIdx.x / Q;
    float4 v[TILE / ROWS];
#pragma unroll
    for (int k = 0; k < TILE / ROWS; ++k) {
        int r = by + p + ROWS * k;
        const float4* src = reinterpret_cast<const float4*>(x + (size_t)r * C + bx) + q;
        v[k] = r < R ? (STREAM ? __ldcs(src) : __ldg(src)) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < TILE / ROWS; ++k) {
        int r = p + ROWS * k;
        t[4 * q][r] = v[k].x;
        t[4 * q + 1][r] = v[k].y;
        t[4 * q + 2][r] = v[k].z;
        t[4 * q + 3][r] = v[k].w;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / ROWS; ++k) {
        int c = p + ROWS * k;  // the tile's column c is y's row bx + c
        float4 w = make_float4(t[c][4 * q], t[c][4 * q + 1], t[c][4 * q + 2], t[c][4 * q + 3]);
        if (bx + c < C) {
            float4* dst = reinterpret_cast<float4*>(y + (size_t)(bx + c) * R + by) + q;
            if (STREAM) __stcs(dst, w); else *dst = w;
        }
    }
}

// As vector_tile, the tile swizzled instead of padded so that the shared accesses are 16 bytes
// too: element (c, r) at row c, 16-byte chunk (r / 4) ^ (c % Q'), so a thread's four stores
// of one loaded float4 and its one 16-byte read each hit distinct banks within a phase.
template <int TILE>
__global__ void __launch_bounds__(256) vector_swizzled(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    constexpr int Q = TILE / 4;
    constexpr int ROWS = 256 / Q;
    __shared__ float4 t[TILE][Q];  // t[c][chunk] holds x[by + 4·chunk' .. +3][bx + c], chunk = chunk' ^ (c % Q)... by element
    float* tf = reinterpret_cast<float*>(t);
    int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
    int q = threadIdx.x % Q, p = threadIdx.x / Q;
    float4 v[TILE / ROWS];
#pragma unroll
    for (int k = 0; k < TILE / ROWS; ++k) {
        int r = by + p + ROWS * k;
        const float4* src = reinterpret_cast<const float4*>(x + (size_t)r * C + bx) + q;
        v[k] = r < R ? __ldg(src) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < TILE / ROWS; ++k) {
        int r = p + ROWS * k;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            int c = 4 * q + e;
            int chunk = (r / 4) ^ (c % Q);
            tf[c * TILE + 4 * chunk + r % 4] = reinterpret_cast<float*>(&v[k])[e];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / ROWS; ++k) {
        int c = p + ROWS * k;
        float4 w = t[c][q ^ (c % Q)];
        if (bx + c < C) reinterpret_cast<float4*>(y + (size_t)(bx + c) * R + by)[q] = w;
    }
}


// TR × TC tiles (TR rows of x by TC of its columns), 256 threads, 16-byte accesses on both
// sides, blocks walking down x's rows (blockIdx.x along them): wider tiles read longer runs of
// each row of x, taller ones write longer runs of each row of y
template <int TR, int TC>
__global__ void __launch_bounds__(256) rect_tile(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    constexpr int Q = TC / 4, ROWS = 256 / Q;     // loads: float4s per tile row, rows a pass
    constexpr int Q2 = TR / 4, ROWS2 = 256 / Q2;  // stores: float4s per row of y, rows a pass
    __shared__ float t[TC][TR + 1];                // t[c][r] = x[by + r][bx + c]
    const int by = blockIdx.x * TR, bx = blockIdx.y * TC;
    const int q = threadIdx.x % Q, p = threadIdx.x / Q;
    float4 v[TR / ROWS];
#pragma unroll
    for (int k = 0; k < TR / ROWS; ++k) {
        const int r = by + p + ROWS * k;
        v[k] = r < R ? __ldg(reinterpret_cast<const float4*>(x + (size_t)r * C + bx) + q) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < TR / ROWS; ++k) {
        const int r = p + ROWS * k;
        t[4 * q][r] = v[k].x;
        t[4 * q + 1][r] = v[k].y;
        t[4 * q + 2][r] = v[k].z;
        t[4 * q + 3][r] = v[k].w;
    }
    __syncthreads();
    const int q2 = threadIdx.x % Q2, p2 = threadIdx.x / Q2;
#pragma unroll
    for (int k = 0; k < TC / ROWS2; ++k) {
        const int c = p2 + ROWS2 * k;
        const float4 w = make_float4(t[c][4 * q2], t[c][4 * q2 + 1], t[c][4 * q2 + 2], t[c][4 * q2 + 3]);
        if (bx + c < C) reinterpret_cast<float4*>(y + (size_t)(bx + c) * R + by)[q2] = w;
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

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 30;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    size_t flush_vec = 2 * (size_t)prop.l2CacheSize / 16;
    float *flush, *sink;
    CK(cudaMalloc(&flush, flush_vec * 16));
    CK(cudaMemset(flush, 0, flush_vec * 16));
    CK(cudaMalloc(&sink, 4));
    auto median_ms = [&](auto op) {
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
            t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    printf("%s\n", prop.name);
    const int R = 16384, C = 16384;
    size_t n = (size_t)R * C;
    float *x, *y;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    std::vector<float> hx(n), hy(n);
    for (size_t i = 0; i < n; ++i) hx[i] = (float)(i % 100003);
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    float copy = median_ms([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); });
    printf("%d x %d: copy %.4f ms (%.0f GB/s)\n", R, C, copy, 8.0 * n / copy / 1e6);
    auto run = [&](const char* name, auto kernel, int tile, bool down = false, int tile_cols = 0) {
        dim3 grid((C + tile - 1) / tile, (R + tile - 1) / tile);
        if (down) grid = dim3((R + tile - 1) / tile, (C + tile - 1) / tile);
        if (tile_cols) grid = dim3((R + tile - 1) / tile, (C + tile_cols - 1) / tile_cols);
        CK(cudaMemset(y, 0, n * 4));
        kernel<<<grid, 256>>>(x, y, R, C);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
        size_t wrong = 0;
        for (size_t r = 0; r < (size_t)C; r += 97)
            for (size_t c = 0; c < (size_t)R; ++c) wrong += hy[r * R + c] != hx[c * C + r];
        float ms = median_ms([&] { kernel<<<grid, 256>>>(x, y, R, C); });
        printf("  %-44s %.4f ms %6.1f%% of copy%s\n", name, ms, 100.0 * copy / ms, wrong ? "  WRONG" : "");
    };
    run("padded 64 x 64, 4-byte accesses (tessera)", scalar64<false>, 64);
    run("  the same, blocks walking down x's rows", scalar64<true>, 64, true);
    run("padded 32 x 32, 16-byte accesses", vector_tile<32, false>, 32);
    run("padded 64 x 64, 16-byte accesses", vector_tile<64, false>, 64);
    run("  the same, blocks walking down x's rows", vector_tile<64, false, true>, 64, true);
    run("padded 64 x 64, 16-byte, evict-first", vector_tile<64, true>, 64);
    run("swizzled 32 x 32, 16-byte everywhere", vector_swizzled<32>, 32);
    run("swizzled 64 x 64, 16-byte everywhere", vector_swizzled<64>, 64);
    run("rect 64 x 64 down (tessera's transpose_vector_64)", rect_tile<64, 64>, 64, true, 64);
    run("rect 32 x 128 down", rect_tile<32, 128>, 32, true, 128);
    run("rect 64 x 128 down", rect_tile<64, 128>, 64, true, 128);
    run("rect 128 x 64 down", rect_tile<128, 64>, 128, true, 64);
    run("rect 32 x 256 down", rect_tile<32, 256>, 32, true, 256);
    run("rect 16 x 256 down", rect_tile<16, 256>, 16, true, 256);
    run("rect 128 x 32 down", rect_tile<128, 32>, 128, true, 32);
    return 0;
}
