// Lab SGEMM: V10's structure with knobs, to find what closes the gap to cuBLAS.
// C = alpha*A*B + beta*C, row-major, any M, N, K; 256 threads; warp layout [4, 8], split [2, 2].
#pragma once

#define DEV __device__ __forceinline__

DEV void cp4(unsigned s, const void* g) { asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(s), "l"(g)); }
DEV void cp4z(unsigned s, const void* g, int valid) { asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(g), "r"(valid)); }
DEV void cp16(unsigned s, const void* g) { asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(g)); }
DEV void cp16z(unsigned s, const void* g, int valid) { asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(g), "r"(valid)); }
DEV void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> DEV void cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// KCHUNK: kk steps unrolled per trip of the (rolled) loop over a BK-deep tile.
// AMAP 0: V10's A copy (4 consecutive k per thread); 1: a warp copies 4 rows x 8 k (coalesced, conflict-free).
// VEC: 4 = 16-byte copies of B's rows, 1 = 4-byte (misaligned rows).
// ORDER 0: i-major FFMA order; 1: serpentine (j reversed on odd i).
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int AMAP, int VEC, int ORDER, int MINB, int SPM = 2, int SPN = 2>
struct Lab {
    static constexpr int THREADS = 256;
    static constexpr int APAD = 4;
    static constexpr int AS = BK * (BM + APAD);  // floats per A stage
    static constexpr int BS = BK * BN;           // floats per B stage
    static constexpr int SMEM = STAGES * (AS + BS) * 4;

    static DEV void run(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                        float alpha, float beta, int M, int K, int N, int a_ld, int b_ld, int c_ld) {
        extern __shared__ __align__(16) float smem[];
        float* a_s = smem;
        float* b_s = smem + STAGES * AS;
        const unsigned a_s_addr = static_cast<unsigned>(__cvta_generic_to_shared(a_s));
        const unsigned b_s_addr = static_cast<unsigned>(__cvta_generic_to_shared(b_s));
        const int tid = threadIdx.x;
        const int lane = tid % 32, warp = tid / 32;
        const int bx = blockIdx.x, by = blockIdx.y;
        constexpr int WARPS_N = BN / TN / 8;
        const int thread_row = warp / WARPS_N * 4 + lane / 8;
        const int thread_col = warp % WARPS_N * 8 + lane % 8;
        const int a_row0 = by * BM, b_col0 = bx * BN;
        const bool whole_mn = M - a_row0 >= BM && N - b_col0 >= BN;
        float acc[TM][TN] = {};
        const int k_tiles = (K + BK - 1) / BK;

        // --- A copy mapping (transposed into a_s[k][m]) ---
        constexpr int A_COPIES = BM * BK / THREADS;
        // AMAP 1: unit = 4 rows x 8 k; colgroup = warp % (BK/8), rowgroup = s * (8/(BK/8)) + warp / (BK/8)
        constexpr int KG = BK / 8;
        constexpr int A_ROW_STEP1 = 4 * (8 / KG);
        const int a_c1 = (warp % KG) * 8 + lane / 4;
        const int a_r1 = (warp / KG) * 4 + lane % 4;
        // AMAP 0: item = s*256 + tid; row = item / (BK/4), col = item % (BK/4) * 4, 4 copies per item
        const int a_r0 = tid / (BK / 4);
        const int a_c0 = tid % (BK / 4) * 4;
        constexpr int A_ROW_STEP0 = THREADS / (BK / 4);
        // --- B copy mapping ---
        constexpr int B_COPIES = BK * BN / (THREADS * VEC);
        const int b_r = tid / (BN / VEC);
        const int b_c = tid % (BN / VEC) * VEC;
        constexpr int B_ROW_STEP = THREADS / (BN / VEC);

        // AMAP 2: hoisted pointers, immediate offsets. A: a warp copies 4 rows x 8 k per instruction.
        constexpr int A2_KSTEPS = BK / 8, A2_RSTEPS = BM / 32;
        const int a2_row = warp * 4 + lane % 4, a2_k = lane / 4;
        const float* a2_ptr = a + (a_row0 + a2_row) * a_ld + a2_k;
        const unsigned a2_smem = a_s_addr + (a2_k * (BM + APAD) + a2_row) * 4;
        // B: TPR threads per row, CH chunks of VEC each per thread and row (stride TPR * VEC), rows per pass 256 / TPR
        constexpr int TPR = VEC == 4 ? 16 : 32;
        constexpr int CH = BN / (TPR * VEC), RPP = THREADS / TPR, PASSES = BK / RPP;
        const int b2_row = tid / TPR, b2_col = tid % TPR * VEC;
        const float* b2_ptr = b + b2_row * b_ld + b_col0 + b2_col;
        const unsigned b2_smem = b_s_addr + (b2_row * BN + b2_col) * 4;

        auto fetch2 = [&](int kt, int stage) {
            const int a_col0 = kt * BK;
            const int b_row0 = kt * BK;
            const bool whole = whole_mn && K - a_col0 >= BK;
            const unsigned as_stage = a2_smem + stage * AS * 4;
            const unsigned bs_stage = b2_smem + stage * BS * 4;
            const float* pa = a2_ptr + a_col0;
            const float* pb = b2_ptr + b_row0 * b_ld;
            if (whole) {
                #pragma unroll
                for (int r = 0; r < A2_RSTEPS; ++r) {
                    #pragma unroll
                    for (int j = 0; j < A2_KSTEPS; ++j)
                        cp4(as_stage + (j * 8 * (BM + APAD) + r * 32) * 4, pa + r * 32 * a_ld + j * 8);
                }
                #pragma unroll
                for (int r = 0; r < PASSES; ++r) {
                    #pragma unroll
                    for (int ch = 0; ch < CH; ++ch) {
                        if (VEC == 4) cp16(bs_stage + (r * RPP * BN + ch * TPR * VEC) * 4, pb + r * RPP * b_ld + ch * TPR * VEC);
                        else cp4(bs_stage + (r * RPP * BN + ch * TPR * VEC) * 4, pb + r * RPP * b_ld + ch * TPR * VEC);
                    }
                }
            } else {
                #pragma unroll
                for (int r = 0; r < A2_RSTEPS; ++r) {
                    #pragma unroll
                    for (int j = 0; j < A2_KSTEPS; ++j) {
                        const bool in = a_row0 + a2_row + r * 32 < M && a_col0 + a2_k + j * 8 < K;
                        cp4z(as_stage + (j * 8 * (BM + APAD) + r * 32) * 4, in ? pa + r * 32 * a_ld + j * 8 : a, in ? 4 : 0);
                    }
                }
                #pragma unroll
                for (int r = 0; r < PASSES; ++r) {
                    #pragma unroll
                    for (int ch = 0; ch < CH; ++ch) {
                        const int row = b_row0 + b2_row + r * RPP, col = b_col0 + b2_col + ch * TPR * VEC;
                        int valid = 0;
                        #pragma unroll
                        for (int q = 0; q < VEC; ++q) valid += (row < K && col + q < N) ? 4 : 0;
                        if (VEC == 4) cp16z(bs_stage + (r * RPP * BN + ch * TPR * VEC) * 4, valid > 0 ? pb + r * RPP * b_ld + ch * TPR * VEC : b, valid);
                        else cp4z(bs_stage + (r * RPP * BN + ch * TPR * VEC) * 4, valid > 0 ? pb + r * RPP * b_ld + ch * TPR * VEC : b, valid);
                    }
                }
            }
        };

        auto fetch = [&](int kt, int stage) {
            if (AMAP == 2) { fetch2(kt, stage); return; }
            const int a_col0 = kt * BK;
            const int b_row0 = kt * BK;
            const bool whole = whole_mn && K - a_col0 >= BK;
            const unsigned as_stage = a_s_addr + stage * AS * 4;
            const unsigned bs_stage = b_s_addr + stage * BS * 4;
            if (whole) {
                if (AMAP == 1) {
                    const float* p = a + (a_row0 + a_r1) * a_ld + a_col0 + a_c1;
                    const unsigned s0 = as_stage + (a_c1 * (BM + APAD) + a_r1) * 4;
                    const int step = A_ROW_STEP1 * a_ld;
                    #pragma unroll
                    for (int s = 0; s < A_COPIES; ++s) {
                        cp4(s0 + s * A_ROW_STEP1 * 4, p);
                        p += step;
                    }
                } else {
                    const float* p = a + (a_row0 + a_r0) * a_ld + a_col0 + a_c0;
                    const unsigned s0 = as_stage + (a_c0 * (BM + APAD) + a_r0) * 4;
                    const int step = A_ROW_STEP0 * a_ld;
                    #pragma unroll
                    for (int s = 0; s < A_COPIES / 4; ++s) {
                        #pragma unroll
                        for (int q = 0; q < 4; ++q) cp4(s0 + (q * (BM + APAD) + s * A_ROW_STEP0) * 4, p + q);
                        p += step;
                    }
                }
                {
                    const float* p = b + (b_row0 + b_r) * b_ld + b_col0 + b_c;
                    const unsigned s0 = bs_stage + (b_r * BN + b_c) * 4;
                    const int step = B_ROW_STEP * b_ld;
                    #pragma unroll
                    for (int s = 0; s < B_COPIES; ++s) {
                        if (VEC == 4) cp16(s0 + s * B_ROW_STEP * BN * 4, p); else cp4(s0 + s * B_ROW_STEP * BN * 4, p);
                        p += step;
                    }
                }
            } else {
                // edge tile: every element checked, zero-filled outside
                #pragma unroll
                for (int s = 0; s < A_COPIES; ++s) {
                    const int row = a_r1 + s * A_ROW_STEP1, col = a_c1;
                    const bool in = a_row0 + row < M && a_col0 + col < K;
                    cp4z(as_stage + (col * (BM + APAD) + row) * 4, in ? a + (a_row0 + row) * a_ld + a_col0 + col : a, in ? 4 : 0);
                }
                #pragma unroll
                for (int s = 0; s < B_COPIES; ++s) {
                    const int row = b_r + s * B_ROW_STEP, col = b_c;
                    if (VEC == 4) {
                        int valid = 0;
                        #pragma unroll
                        for (int q = 0; q < 4; ++q) valid += (b_row0 + row < K && b_col0 + col + q < N) ? 4 : 0;
                        cp16z(bs_stage + (row * BN + col) * 4, valid > 0 ? b + (b_row0 + row) * b_ld + b_col0 + col : b, valid);
                    } else {
                        const bool in = b_row0 + row < K && b_col0 + col < N;
                        cp4z(bs_stage + (row * BN + col) * 4, in ? b + (b_row0 + row) * b_ld + b_col0 + col : b, in ? 4 : 0);
                    }
                }
            }
        };

        #pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < k_tiles) fetch(s, s);
            cp_commit();
        }
        int stage = 0;
        int stage_ahead = STAGES - 1;
        for (int kt = 0; kt < k_tiles; ++kt) {
            cp_wait<STAGES - 2>();
            __syncthreads();
            if (kt + STAGES - 1 < k_tiles) fetch(kt + STAGES - 1, stage_ahead);
            cp_commit();
            const float* as = a_s + stage * AS + thread_row * (TM / SPM);
            const float* bs = b_s + stage * BS + thread_col * (TN / SPN);
            float af[2][TM], bf[2][TN];
            auto load = [&](int buf, int kk) {
                #pragma unroll
                for (int h = 0; h < SPM; ++h) {
                    #pragma unroll
                    for (int v = 0; v < TM / SPM; v += 4)
                        *reinterpret_cast<float4*>(&af[buf][h * (TM / SPM) + v]) =
                            *reinterpret_cast<const float4*>(as + kk * (BM + APAD) + h * (BM / SPM) + v);
                }
                #pragma unroll
                for (int h = 0; h < SPN; ++h) {
                    #pragma unroll
                    for (int v = 0; v < TN / SPN; v += 4)
                        *reinterpret_cast<float4*>(&bf[buf][h * (TN / SPN) + v]) =
                            *reinterpret_cast<const float4*>(bs + kk * BN + h * (BN / SPN) + v);
                }
            };
            load(0, 0);
            #pragma unroll 1
            for (int kc = 0; kc < BK; kc += KCHUNK) {
                #pragma unroll
                for (int kk = 0; kk < KCHUNK; ++kk) {
                    if (kk + 1 < KCHUNK || kc + KCHUNK < BK) load((kk + 1) % 2, kc + kk + 1);
                    if (ORDER == 2) {
                        #pragma unroll
                        for (int i = 0; i < TM; i += 2) {
                            #pragma unroll
                            for (int j = 0; j < TN; j += 2) {
                                acc[i][j] += af[kk % 2][i] * bf[kk % 2][j];
                                acc[i][j + 1] += af[kk % 2][i] * bf[kk % 2][j + 1];
                                acc[i + 1][j] += af[kk % 2][i + 1] * bf[kk % 2][j];
                                acc[i + 1][j + 1] += af[kk % 2][i + 1] * bf[kk % 2][j + 1];
                            }
                        }
                    } else {
                        #pragma unroll
                        for (int i = 0; i < TM; ++i) {
                            #pragma unroll
                            for (int jj = 0; jj < TN; ++jj) {
                                const int j = (ORDER == 1 && (i % 2 == 1)) ? TN - 1 - jj : jj;
                                acc[i][j] += af[kk % 2][i] * bf[kk % 2][j];
                            }
                        }
                    }
                }
            }
            stage = stage + 1 == STAGES ? 0 : stage + 1;
            stage_ahead = stage_ahead + 1 == STAGES ? 0 : stage_ahead + 1;
        }
        cp_wait<0>();

        const int c_row0 = a_row0, c_col0 = b_col0;
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = i / (TM / SPM) * (BM / SPM) + thread_row * (TM / SPM) + i % (TM / SPM);
            #pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int col = j / (TN / SPN) * (BN / SPN) + thread_col * (TN / SPN) + j % (TN / SPN);
                float* dst = c + (c_row0 + row) * c_ld + c_col0 + col;
                if (whole_mn && VEC == 4) {
                    float4 v = make_float4(alpha * acc[i][j], alpha * acc[i][j + 1], alpha * acc[i][j + 2], alpha * acc[i][j + 3]);
                    if (beta != 0.0f) {
                        const float4 o = *reinterpret_cast<const float4*>(dst);
                        v.x += beta * o.x; v.y += beta * o.y; v.z += beta * o.z; v.w += beta * o.w;
                    }
                    *reinterpret_cast<float4*>(dst) = v;
                } else {
                    #pragma unroll
                    for (int q = 0; q < 4; ++q)
                        if (c_row0 + row < M && c_col0 + col + q < N)
                            dst[q] = beta == 0.0f ? alpha * acc[i][j + q] : alpha * acc[i][j + q] + beta * dst[q];
                }
            }
        }
    }
};
