// Transposes of a 16384² f32 matrix through the Tensor Memory Accelerator, beside tessera's
// `transpose_vector_64` (16-byte accesses both sides, blocks walking down x's rows) and the
// device copy of as many bytes (L2 left clean before each repetition, median), as
// transpose.cu times them: does a copy engine that writes the tile into shared memory (and, in
// the second form, reads y's tile back out of it) close the last 2% to the copy?
//
//   nvcc -O3 -arch=sm_90a -std=c++17 transpose_tma.cu -lcuda -o transpose_tma && ./transpose_tma
#include <cuda.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)
#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char* s; cuGetErrorString(e, &s); printf("CU %s at %s:%d\n", s, __FILE__, __LINE__); exit(1); } } while (0)

// tessera's transpose_vector_64 (the lab's rect_tile<64, 64>), the tile at x's rows by .., columns
// bx ..: 16-byte loads of x's rows, their elements down a column of the padded tile, 16-byte
// stores of y's rows
__device__ __forceinline__ void vector64_tile(const float* __restrict__ x, float* __restrict__ y, int R, int C, int by, int bx) {
    __shared__ float t[64][65];
    const int q = threadIdx.x % 16, p = threadIdx.x / 16;
    float4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = __ldg(reinterpret_cast<const float4*>(x + (size_t)(by + p + 16 * k) * C + bx) + q);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const int r = p + 16 * k;
        t[4 * q][r] = v[k].x;
        t[4 * q + 1][r] = v[k].y;
        t[4 * q + 2][r] = v[k].z;
        t[4 * q + 3][r] = v[k].w;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const int c = p + 16 * k;
        const float4 w = make_float4(t[c][4 * q], t[c][4 * q + 1], t[c][4 * q + 2], t[c][4 * q + 3]);
        reinterpret_cast<float4*>(y + (size_t)(bx + c) * R + by)[q] = w;
    }
}

// the baseline: blocks walking down x's rows (blockIdx.x along them)
__global__ void __launch_bounds__(256) vector64_down(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    vector64_tile(x, y, R, C, blockIdx.x * 64, blockIdx.y * 64);
}

// vector64_down on a one-dimensional grid in bands of G tile columns: consecutive blocks take
// the G tiles side by side in one band of x's rows, then the band's next 64 rows, so the blocks
// in flight read runs of G·256 bytes of x's rows and write runs of about as many of y's rows
// (walking down, G = 1: 256-byte reads, y's rows written end to end)
template <int G>
__global__ void __launch_bounds__(256) vector64_bands(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    const int tiles_down = R / 64, band = blockIdx.x / (G * tiles_down), in_band = blockIdx.x % (G * tiles_down);
    vector64_tile(x, y, R, C, (in_band / G) * 64, (band * G + in_band % G) * 64);
}

__device__ __forceinline__ uint32_t smem(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbarrier_expect(uint64_t* bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, int phase) {
    asm volatile(
        "{\n .reg .pred done;\n wait:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        " @!done bra wait;\n}" ::"r"(smem(bar)), "r"(phase) : "memory");
}
// one box of the tensor map at (column, row) into shared memory, counted on bar
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int column, int row, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(smem(dst)), "l"(map), "r"(column), "r"(row), "r"(smem(bar)) : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap* map, int column, int row, const void* src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(map), "r"(column), "r"(row), "r"(smem(src)) : "memory");
}

// 16-byte chunk `chunk` of row `row` in a box of 128-byte rows written with the 128-byte swizzle
__device__ __forceinline__ int swizzled(int row, int chunk) { return row * 128 + ((chunk ^ (row % 8)) * 16); }

// This thread's part of a 64 × 64 tile of x that arrived as two 64-row × 32-column boxes: chunk
// `chunk` of rows row0 .. row0 + 3 of box `box`, transposed in registers — w[j] holds x's rows
// row0 .. row0 + 3 of its column 32·box + 4·chunk + j (a vector of y's row)
struct TilePart {
    int box, chunk, row0;
    __device__ TilePart() : box(threadIdx.x / 128), chunk(threadIdx.x % 8), row0(16 * (threadIdx.x / 32 % 4) + 4 * (threadIdx.x % 32 / 8)) {}
    __device__ void transposed(const unsigned char* x_tile, float4 (&w)[4]) const {
        float4 v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = *reinterpret_cast<const float4*>(x_tile + box * 8192 + swizzled(row0 + i, chunk));
        w[0] = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
        w[1] = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
        w[2] = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
        w[3] = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
    }
    // into y's tile: 64 rows (x's columns) × 64 columns (x's rows) as two swizzled 32-column boxes
    __device__ void into_y_tile(unsigned char* y_tile, const float4 (&w)[4]) const {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int y_row = 32 * box + 4 * chunk + j, y_box = row0 / 32, y_chunk = (row0 % 32) / 4;
            *reinterpret_cast<float4*>(y_tile + y_box * 8192 + swizzled(y_row, y_chunk)) = w[j];
        }
    }
};

// A 64 × 64 tile of x arrives as two 64-row × 32-column boxes (128-byte swizzle); warp w reads
// rows 16·(w % 4) .. of box w / 4: lane l the 16-byte chunk l % 8 of 4 consecutive rows
// (conflict-free: 8 lanes, one row, 8 chunks), transposes the 4 × 4 in registers and stores 4
// vectors of y's rows (8 rows × 64 bytes a store instruction). TMA_STORE: the vectors go into
// two swizzled boxes of y's tile instead, and one thread stores them with TMA.
template <bool TMA_STORE>
__global__ void __launch_bounds__(256) tma_tile(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                                                float* __restrict__ y, int R, int C) {
    extern __shared__ __align__(1024) unsigned char raw[];
    unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    unsigned char* x_tile = base;                 // 2 boxes × 64 rows × 128 bytes
    unsigned char* y_tile = base + 16384;         // the same for y's tile (TMA_STORE)
    __shared__ uint64_t bar;
    const int by = blockIdx.x * 64, bx = blockIdx.y * 64;  // walking down x's rows
    if (threadIdx.x == 0) {
        mbarrier_init(&bar, 1);
        mbarrier_expect(&bar, 16384);
        tma_load(x_tile, &x_map, bx, by, &bar);
        tma_load(x_tile + 8192, &x_map, bx + 32, by, &bar);
    }
    __syncthreads();
    mbarrier_wait(&bar, 0);
    const TilePart part;
    float4 w[4];
    part.transposed(x_tile, w);
    if (!TMA_STORE) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
            reinterpret_cast<float4*>(y + (size_t)(bx + 32 * part.box + 4 * part.chunk + j) * R + by + part.row0)[0] = w[j];
    } else {
        part.into_y_tile(y_tile, w);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (threadIdx.x == 0) {
            tma_store(&y_map, by, bx, y_tile);
            tma_store(&y_map, by + 32, bx, y_tile + 8192);
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        }
    }
}

// The same tile walk, persistent: each block takes tiles t = blockIdx.x, + gridDim.x, ..
// (down x's rows), STAGES tiles' loads in flight, y stored with TMA from a ring of two y tiles.
template <int STAGES>
__global__ void __launch_bounds__(256) tma_persistent(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                                                      int R, int C) {
    extern __shared__ __align__(1024) unsigned char raw[];
    unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    unsigned char* x_ring = base;                      // STAGES × 16 KiB
    unsigned char* y_ring = base + STAGES * 16384;     // 2 × 16 KiB
    __shared__ uint64_t full[STAGES];
    const int tiles_down = R / 64, tiles = tiles_down * (C / 64);
    auto issue = [&](int tile, int stage) {
        const int by = (tile % tiles_down) * 64, bx = (tile / tiles_down) * 64;
        mbarrier_expect(&full[stage], 16384);
        tma_load(x_ring + stage * 16384, &x_map, bx, by, &full[stage]);
        tma_load(x_ring + stage * 16384 + 8192, &x_map, bx + 32, by, &full[stage]);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbarrier_init(&full[s], 1);
        for (int s = 0; s < STAGES; ++s) {
            const int tile = blockIdx.x + s * gridDim.x;
            if (tile < tiles) issue(tile, s);
        }
    }
    __syncthreads();
    const TilePart part;
    int n = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++n) {
        const int stage = n % STAGES, phase = (n / STAGES) % 2;
        const int by = (tile % tiles_down) * 64, bx = (tile / tiles_down) * 64;
        mbarrier_wait(&full[stage], phase);
        float4 w[4];
        part.transposed(x_ring + stage * 16384, w);
        // the y tile of two tiles ago must have been read out by its TMA store
        if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        __syncthreads();  // also: every thread has read x_tile, so its stage may be refilled
        if (threadIdx.x == 0) {
            const int next = tile + STAGES * gridDim.x;
            if (next < tiles) issue(next, stage);
        }
        unsigned char* y_tile = y_ring + (n % 2) * 16384;
        part.into_y_tile(y_tile, w);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (threadIdx.x == 0) {
            tma_store(&y_map, by, bx, y_tile);
            tma_store(&y_map, by + 32, bx, y_tile + 8192);
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
    if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

__global__ void read_all(const float4* p, size_t n, float* sink) {
    float s = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 1234.5f) *sink = s;
}

// a row-major rows × columns f32 matrix read or written in 32-column × 64-row boxes, 128-byte swizzle
static CUtensorMap tensor_map(float* p, int rows, int columns) {
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)columns, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)columns * 4};
    cuuint32_t box[2] = {32, 64};
    cuuint32_t element_strides[2] = {1, 1};
    CU(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, p, dims, strides, box, element_strides,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return map;
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
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const int R = 16384, C = 16384;
    size_t n = (size_t)R * C;
    float *x, *y;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    std::vector<float> hx(n), hy(n);
    for (size_t i = 0; i < n; ++i) hx[i] = (float)(i % 100003);
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    const CUtensorMap x_map = tensor_map(x, R, C), y_map = tensor_map(y, C, R);
    for (int round = 0; round < 2; ++round) {
        float copy = median_ms([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); });
        printf("round %d, %d x %d: copy %.4f ms (%.0f GB/s)\n", round, R, C, copy, 8.0 * n / copy / 1e6);
        auto run = [&](const char* name, auto launch) {
            CK(cudaMemset(y, 0, n * 4));
            launch();
            CK(cudaDeviceSynchronize());
            CK(cudaGetLastError());
            CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
            size_t wrong = 0;
            for (size_t r = 0; r < (size_t)C; r += 97)
                for (size_t c = 0; c < (size_t)R; ++c) wrong += hy[r * R + c] != hx[c * C + r];
            float ms = median_ms(launch);
            printf("  %-52s %.4f ms %6.1f%% of copy%s\n", name, ms, 100.0 * copy / ms, wrong ? "  WRONG" : "");
        };
        const dim3 grid(R / 64, C / 64);
        run("vector 64 x 64 down (tessera's transpose_vector_64)", [&] { vector64_down<<<grid, 256>>>(x, y, R, C); });
        const int blocks = (R / 64) * (C / 64);
        run("  bands of 1 tile (the same walk, 1-D grid)", [&] { vector64_bands<1><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 2 tiles", [&] { vector64_bands<2><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 4 tiles", [&] { vector64_bands<4><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 8 tiles", [&] { vector64_bands<8><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 16 tiles", [&] { vector64_bands<16><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 32 tiles", [&] { vector64_bands<32><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 64 tiles", [&] { vector64_bands<64><<<blocks, 256>>>(x, y, R, C); });
        run("  bands of 256 tiles (along x's rows)", [&] { vector64_bands<256><<<blocks, 256>>>(x, y, R, C); });
        CK(cudaFuncSetAttribute(tma_tile<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, 33 * 1024));
        CK(cudaFuncSetAttribute(tma_tile<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, 33 * 1024));
        run("TMA load, 16-byte stores", [&] { tma_tile<false><<<grid, 256, 17 * 1024>>>(x_map, y_map, y, R, C); });
        run("TMA load, TMA store", [&] { tma_tile<true><<<grid, 256, 33 * 1024>>>(x_map, y_map, y, R, C); });
        auto persistent = [&](const char* name, auto kernel, int stages, int blocks_per_sm) {
            const int bytes = (stages + 2) * 16384 + 1024;
            CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
            char label[96];
            snprintf(label, sizeof label, "%s, %d stages, %d blocks an SM", name, stages, blocks_per_sm);
            run(label, [&] { kernel<<<prop.multiProcessorCount * blocks_per_sm, 256, bytes>>>(x_map, y_map, R, C); });
        };
        persistent("persistent TMA", tma_persistent<2>, 2, 3);
        persistent("persistent TMA", tma_persistent<4>, 4, 2);
        persistent("persistent TMA", tma_persistent<4>, 4, 1);
        persistent("persistent TMA", tma_persistent<8>, 8, 1);
        persistent("persistent TMA", tma_persistent<2>, 2, 2);
    }
    return 0;
}
