// Warp-specialised V12-shaped SGEMM (lab only): warpgroup 0 copies tiles with cp.async into a
// 3-stage ring guarded by mbarriers; warpgroups 1-2 (256 threads, V12's thread layout) only read
// shared memory and multiply. Persistent over tiles, data-parallel (no stream-K). Aligned shapes
// only: M % 128, N % 256, K % 32 == 0.
typedef unsigned long long uint64_t;

namespace ws {
constexpr int BM = 128, BN = 256, BK = 32, TM = 16, TN = 8, STAGES = 3;
constexpr int PRODUCERS = WS_PRODUCERS, CONSUMERS = 256;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void bar_init(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void bar_arrive(uint64_t* bar) {
    asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}" :: "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t* bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred done;\n"
        "wait_%=:\n"
        " mbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
        " @!done bra wait_%=;\n}" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void copy4(unsigned dst, const float* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(src));
}
__device__ __forceinline__ void copy16(unsigned dst, const float* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src));
}
__device__ __forceinline__ void copies_arrive(uint64_t* bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(smem_addr(bar)) : "memory");
}
}  // namespace ws

extern "C" __global__ void __launch_bounds__(WS_PRODUCERS + 256, 1)
WS_NAME(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, const float alpha, const float beta,
     const int M, const int K, const int N, const int a_ld, const int b_ld, const int c_ld, float*, int*)
{
    using namespace ws;
    extern __shared__ __align__(16) unsigned char smem[];
    float (&a_s)[STAGES][BK][BM + 4] = *reinterpret_cast<float (*)[STAGES][BK][BM + 4]>(smem);
    float (&b_s)[STAGES][BK][BN] = *reinterpret_cast<float (*)[STAGES][BK][BN]>(smem + sizeof(float) * STAGES * BK * (BM + 4));
    __shared__ uint64_t full[STAGES], empty[STAGES];
    const int tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(&full[s], PRODUCERS);
            bar_init(&empty[s], CONSUMERS / 32);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int tiles_x = N / BN, tiles = tiles_x * (M / BM), k_tiles = K / BK;
    if (tid < PRODUCERS) {
#if WS_SETMAXNREG
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
#endif
        const int a_row = tid / 32 * 4 + tid % 4, a_col = tid % 32 / 4;   // PRODUCERS / 8 rows × 8 columns per pass
        const int b_row = tid / 8, b_col = tid % 8 * 4;                     // PRODUCERS / 8 rows × 32 columns per pass
        int g = 0;  // this block's k-tile sequence number: stage g % STAGES, phase g / STAGES
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const int by = tile / tiles_x, bx = tile % tiles_x;
            const float* a_src = a + (size_t)(by * BM + a_row) * a_ld + a_col;
            const float* b_src = b + (size_t)b_row * b_ld + bx * BN + b_col;
            for (int k = 0; k < k_tiles; ++k, ++g) {
                const int s = g % STAGES;
                if (g >= STAGES) bar_wait(&empty[s], ((g / STAGES) - 1) & 1);
                const unsigned a_dst = smem_addr(&a_s[s][a_col][a_row]);
                const float* as = a_src + k * BK;
                #pragma unroll
                for (int r = 0; r < BM; r += PRODUCERS / 8) {
                    #pragma unroll
                    for (int cc = 0; cc < BK; cc += 8) copy4(a_dst + 4 * (cc * (BM + 4) + r), as + r * a_ld + cc);
                }
                const unsigned b_dst = smem_addr(&b_s[s][b_row][b_col]);
                const float* bs = b_src + (size_t)k * BK * b_ld;
                #pragma unroll
                for (int r = 0; r < BK; r += PRODUCERS / 8) {
                    #pragma unroll
                    for (int cc = 0; cc < BN; cc += 32) copy16(b_dst + 4 * (r * BN + cc), bs + r * b_ld + cc);
                }
#if WS_WAIT_ALL
                asm volatile("cp.async.wait_all;" ::: "memory");
                bar_arrive(&full[s]);
#else
                copies_arrive(&full[s]);
#endif
            }
        }
        return;
    }
#if WS_SETMAXNREG
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
#endif
    const int ctid = tid - PRODUCERS;
    const int thread_row = ctid / 32 / (32 / 8) * 4 + ctid % 32 / 8;
    const int thread_col = ctid / 32 % (32 / 8) * 8 + ctid % 32 % 8;
    int g = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int by = tile / tiles_x, bx = tile % tiles_x;
        float acc[TM][TN] = {};
        for (int k = 0; k < k_tiles; ++k, ++g) {
            const int s = g % STAGES;
            bar_wait(&full[s], (g / STAGES) & 1);
            float a_frag[2][TM];
            float b_frag[2][TN];
            *reinterpret_cast<float4*>(&a_frag[0][0]) = *reinterpret_cast<const float4*>(&a_s[s][0][thread_row * (TM / 2)]);
            *reinterpret_cast<float4*>(&a_frag[0][4]) = *reinterpret_cast<const float4*>(&a_s[s][0][thread_row * (TM / 2) + 4]);
            *reinterpret_cast<float4*>(&a_frag[0][8]) = *reinterpret_cast<const float4*>(&a_s[s][0][BM / 2 + thread_row * (TM / 2)]);
            *reinterpret_cast<float4*>(&a_frag[0][12]) = *reinterpret_cast<const float4*>(&a_s[s][0][BM / 2 + thread_row * (TM / 2) + 4]);
            *reinterpret_cast<float4*>(&b_frag[0][0]) = *reinterpret_cast<const float4*>(&b_s[s][0][thread_col * (TN / 2)]);
            *reinterpret_cast<float4*>(&b_frag[0][4]) = *reinterpret_cast<const float4*>(&b_s[s][0][BN / 2 + thread_col * (TN / 2)]);
            #pragma unroll 1
            for (int k0 = 0; k0 < BK; k0 += 8) {
                #pragma unroll
                for (int step = 0; step < 8; ++step) {
                    const int kk = k0 + step;
                    if (step + 1 < 8 || k0 + 8 < BK) {
                        *reinterpret_cast<float4*>(&a_frag[(step + 1) % 2][0]) = *reinterpret_cast<const float4*>(&a_s[s][kk + 1][thread_row * (TM / 2)]);
                        *reinterpret_cast<float4*>(&a_frag[(step + 1) % 2][4]) = *reinterpret_cast<const float4*>(&a_s[s][kk + 1][thread_row * (TM / 2) + 4]);
                        *reinterpret_cast<float4*>(&a_frag[(step + 1) % 2][8]) = *reinterpret_cast<const float4*>(&a_s[s][kk + 1][BM / 2 + thread_row * (TM / 2)]);
                        *reinterpret_cast<float4*>(&a_frag[(step + 1) % 2][12]) = *reinterpret_cast<const float4*>(&a_s[s][kk + 1][BM / 2 + thread_row * (TM / 2) + 4]);
                        *reinterpret_cast<float4*>(&b_frag[(step + 1) % 2][0]) = *reinterpret_cast<const float4*>(&b_s[s][kk + 1][thread_col * (TN / 2)]);
                        *reinterpret_cast<float4*>(&b_frag[(step + 1) % 2][4]) = *reinterpret_cast<const float4*>(&b_s[s][kk + 1][BN / 2 + thread_col * (TN / 2)]);
                    }
                    #pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        #pragma unroll
                        for (int jj = 0; jj < TN; ++jj) {
                            const int j = i % 2 == 0 ? jj : TN - 1 - jj;
                            acc[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];
                        }
                    }
                }
            }
            // this warp is done reading stage s
            __syncwarp();
            if (ctid % 32 == 0) bar_arrive(&empty[s]);
        }
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = by * BM + i / (TM / 2) * (BM / 2) + thread_row * (TM / 2) + i % (TM / 2);
            #pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int col = bx * BN + j / (TN / 2) * (BN / 2) + thread_col * (TN / 2) + j % (TN / 2);
                float4* out = reinterpret_cast<float4*>(&c[(size_t)row * c_ld + col]);
                float4 v = make_float4(alpha * acc[i][j], alpha * acc[i][j + 1], alpha * acc[i][j + 2], alpha * acc[i][j + 3]);
                if (beta != 0.0f) {
                    const float4 old = *out;
                    v.x += beta * old.x; v.y += beta * old.y; v.z += beta * old.z; v.w += beta * old.w;
                }
                *out = v;
            }
        }
    }
}
