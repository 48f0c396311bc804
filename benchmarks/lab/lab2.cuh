// Lab SGEMM v2: coalesced conflict-free copies with hoisted pointers, chunked kk loop,
// copies spread over the chunks (SPREAD), and a stream-K schedule (persistent blocks).
#pragma once
#include "lab.cuh"

// ORDER 0 i-major, 1 serpentine, 3 j-major
template <int BM, int BN, int BK, int TM, int TN, int STAGES, int KCHUNK, int VEC, int ORDER, int SPREAD, int LOADPOS = 0>
struct Lab2 {
    static constexpr int THREADS = 256;
    static constexpr int APAD = 4;
    static constexpr int AS = BK * (BM + APAD);
    static constexpr int BS = BK * BN;
    static constexpr int SMEM = STAGES * (AS + BS) * 4;
    static constexpr int NP = SPREAD ? BK / KCHUNK : 1;  // parts the copies of one tile are issued in
    // A: a warp copies 4 rows x 8 k per instruction; a thread's copies: A_R row steps (32 rows apart) x A_J k steps (8 apart)
    static constexpr int A_J = BK / 8, A_R = BM / 32;
    static_assert(A_R % NP == 0 || NP % A_R == 0, "A parts");
    // B: TPR threads per row, CH chunks per row (TPR * VEC apart), PASSES passes of RPP rows
    static constexpr int TPR = VEC == 4 ? 16 : 32;
    static constexpr int CH = BN / (TPR * VEC), RPP = THREADS / TPR, PASSES = BK / RPP;
    static constexpr int B_COPIES = PASSES * CH;
    static_assert(B_COPIES % NP == 0, "B parts");
    static constexpr int A_COPIES = A_R * A_J;
    static_assert(A_COPIES % NP == 0, "A parts");

    struct Ctx {
        const float* a; const float* b; float* c;
        int M, K, N, a_ld, b_ld, c_ld;
        unsigned a_smem, b_smem;   // this thread's copy destinations in stage 0
        const float* a_s; const float* b_s;
        int tid, lane, warp, thread_row, thread_col;
        int a2_row, a2_k, b2_row, b2_col;
    };

    static DEV void init(Ctx& x, const float* a, const float* b, float* c, int M, int K, int N, int a_ld, int b_ld, int c_ld) {
        extern __shared__ __align__(16) float smem[];
        x.a = a; x.b = b; x.c = c; x.M = M; x.K = K; x.N = N; x.a_ld = a_ld; x.b_ld = b_ld; x.c_ld = c_ld;
        x.tid = threadIdx.x; x.lane = x.tid % 32; x.warp = x.tid / 32;
        constexpr int WARPS_N = BN / TN / 8;
        x.thread_row = x.warp / WARPS_N * 4 + x.lane / 8;
        x.thread_col = x.warp % WARPS_N * 8 + x.lane % 8;
        x.a_s = smem; x.b_s = smem + STAGES * AS;
        x.a2_row = x.warp * 4 + x.lane % 4; x.a2_k = x.lane / 4;
        x.b2_row = x.tid / TPR; x.b2_col = x.tid % TPR * VEC;
        x.a_smem = static_cast<unsigned>(__cvta_generic_to_shared(smem)) + (x.a2_k * (BM + APAD) + x.a2_row) * 4;
        x.b_smem = static_cast<unsigned>(__cvta_generic_to_shared(smem + STAGES * AS)) + (x.b2_row * BN + x.b2_col) * 4;
    }

    // where one tile's copies go: computed once per tile, then issued in NP parts
    struct TileCopy { const float* pa; const float* pb; unsigned as, bs; bool whole; int a_rows, a_cols, b_rows, b_cols; };

    static DEV TileCopy tile_copy(const Ctx& x, int a_row0, int b_col0, bool whole_mn, int kt, int stage) {
        const int k0 = kt * BK;
        TileCopy t;
        t.whole = whole_mn && x.K - k0 >= BK;
        t.as = x.a_smem + stage * AS * 4;
        t.bs = x.b_smem + stage * BS * 4;
        t.pa = x.a + (a_row0 + x.a2_row) * x.a_ld + k0 + x.a2_k;
        t.pb = x.b + (k0 + x.b2_row) * x.b_ld + b_col0 + x.b2_col;
        // rows and columns of A and B left inside the tensors, from this thread's first element
        t.a_rows = x.M - a_row0 - x.a2_row; t.a_cols = x.K - k0 - x.a2_k;
        t.b_rows = x.K - k0 - x.b2_row; t.b_cols = x.N - b_col0 - x.b2_col;
        return t;
    }

    // part p (of NP) of a tile's copies
    static DEV void fetch(const Ctx& x, const TileCopy& t, unsigned p) {
        constexpr int AQ = A_COPIES / NP, BQ = B_COPIES / NP;
        // A: part p covers copies q = p * AQ + u (row step q / A_J, k step q % A_J)
        const float* pa = t.pa;
        unsigned as = t.as;
        int a_rows = t.a_rows;
        if (NP > 1) {
            const int r0 = p * AQ / A_J;  // AQ is a multiple of A_J or divides it: both powers of two
            pa += r0 * 32 * x.a_ld;
            as += r0 * 32 * 4;
            a_rows -= r0 * 32;
        }
        const int j0 = NP > 1 && AQ < A_J ? p * AQ % A_J : 0;
        // B: part p covers copies q = p * BQ + u (pass q / CH, chunk q % CH)
        const float* pb = t.pb;
        unsigned bs = t.bs;
        int b_rows = t.b_rows;
        if (NP > 1) {
            const int r0 = p * BQ / CH;
            pb += r0 * RPP * x.b_ld;
            bs += r0 * RPP * BN * 4;
            b_rows -= r0 * RPP;
        }
        const int c0 = NP > 1 && BQ < CH ? p * BQ % CH : 0;
        pb += c0 * TPR * VEC;
        bs += c0 * TPR * VEC * 4;
        const int b_cols = t.b_cols - c0 * TPR * VEC;
        pa += j0 * 8;
        as += j0 * 8 * (BM + APAD) * 4;
        const int a_cols = t.a_cols - j0 * 8;
        if (t.whole) {
            #pragma unroll
            for (int u = 0; u < AQ; ++u) {
                const int r = AQ < A_J ? 0 : u / A_J, j = AQ < A_J ? u : u % A_J;
                cp4(as + (j * 8 * (BM + APAD) + r * 32) * 4, pa + r * 32 * x.a_ld + j * 8);
            }
            #pragma unroll
            for (int u = 0; u < BQ; ++u) {
                const int r = BQ < CH ? 0 : u / CH, ch = BQ < CH ? u : u % CH;
                const unsigned s = bs + (r * RPP * BN + ch * TPR * VEC) * 4;
                const float* g = pb + r * RPP * x.b_ld + ch * TPR * VEC;
                if (VEC == 4) cp16(s, g); else cp4(s, g);
            }
        } else {
            #pragma unroll
            for (int u = 0; u < AQ; ++u) {
                const int r = AQ < A_J ? 0 : u / A_J, j = AQ < A_J ? u : u % A_J;
                const bool in = r * 32 < a_rows && j * 8 < a_cols;
                cp4z(as + (j * 8 * (BM + APAD) + r * 32) * 4, in ? pa + r * 32 * x.a_ld + j * 8 : x.a, in ? 4 : 0);
            }
            #pragma unroll
            for (int u = 0; u < BQ; ++u) {
                const int r = BQ < CH ? 0 : u / CH, ch = BQ < CH ? u : u % CH;
                const unsigned s = bs + (r * RPP * BN + ch * TPR * VEC) * 4;
                const float* g = pb + r * RPP * x.b_ld + ch * TPR * VEC;
                int valid = 0;
                #pragma unroll
                for (int v = 0; v < VEC; ++v) valid += (r * RPP < b_rows && ch * TPR * VEC + v < b_cols) ? 4 : 0;
                if (VEC == 4) cp16z(s, valid > 0 ? g : x.b, valid); else cp4z(s, valid > 0 ? g : x.b, valid);
            }
        }
    }

    // rows [I0, I1) of one outer product
    template <int I0, int I1>
    static DEV void fma_rows(float (&acc)[TM][TN], const float (&af)[TM], const float (&bf)[TN]) {
        if (ORDER == 3) {
            #pragma unroll
            for (int j = 0; j < TN; ++j)
                #pragma unroll
                for (int i = I0; i < I1; ++i) acc[i][j] += af[i] * bf[j];
        } else if (ORDER == 2) {
            #pragma unroll
            for (int i = I0; i < I1; i += 2)
                #pragma unroll
                for (int j = 0; j < TN; j += 2) {
                    acc[i][j] += af[i] * bf[j];
                    acc[i][j + 1] += af[i] * bf[j + 1];
                    acc[i + 1][j] += af[i + 1] * bf[j];
                    acc[i + 1][j + 1] += af[i + 1] * bf[j + 1];
                }
        } else if (ORDER == 4) {
            // serpentine over pairs of rows: (i, j), (i + 1, j) down the columns, direction alternating
            #pragma unroll
            for (int i = I0; i < I1; i += 2)
                #pragma unroll
                for (int jj = 0; jj < TN; ++jj) {
                    const int j = ((i / 2) % 2 == 1) ? TN - 1 - jj : jj;
                    acc[i][j] += af[i] * bf[j];
                    acc[i + 1][j] += af[i + 1] * bf[j];
                }
        } else {
            #pragma unroll
            for (int i = I0; i < I1; ++i)
                #pragma unroll
                for (int jj = 0; jj < TN; ++jj) {
                    const int j = (ORDER == 1 && (i % 2 == 1)) ? TN - 1 - jj : jj;
                    acc[i][j] += af[i] * bf[j];
                }
        }
    }

    // acc += A[rows of tile tm, k tiles kb..ke) * B[.., cols of tile tn]
    static DEV void mainloop(const Ctx& x, int tm, int tn, int kb, int ke, float (&acc)[TM][TN]) {
        const int a_row0 = tm * BM, b_col0 = tn * BN;
        const bool whole_mn = x.M - a_row0 >= BM && x.N - b_col0 >= BN;
        #pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (kb + s < ke) {
                const TileCopy t = tile_copy(x, a_row0, b_col0, whole_mn, kb + s, s);
                #pragma unroll
                for (int p = 0; p < NP; ++p) fetch(x, t, p);
            }
            cp_commit();
        }
        int stage = 0, stage_ahead = STAGES - 1;
        for (int kt = kb; kt < ke; ++kt) {
            cp_wait<STAGES - 2>();
            __syncthreads();
            const bool refill = kt + STAGES - 1 < ke;
            const TileCopy t = tile_copy(x, a_row0, b_col0, whole_mn, kt + STAGES - 1, stage_ahead);
            if (!SPREAD && refill) fetch(x, t, 0);
            const float* as = x.a_s + stage * AS + x.thread_row * (TM / 2);
            const float* bs = x.b_s + stage * BS + x.thread_col * (TN / 2);
            float af[2][TM], bf[2][TN];
            auto load = [&](int buf, int kk) {
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    #pragma unroll
                    for (int v = 0; v < TM / 2; v += 4)
                        *reinterpret_cast<float4*>(&af[buf][h * (TM / 2) + v]) = *reinterpret_cast<const float4*>(as + kk * (BM + APAD) + h * (BM / 2) + v);
                    #pragma unroll
                    for (int v = 0; v < TN / 2; v += 4)
                        *reinterpret_cast<float4*>(&bf[buf][h * (TN / 2) + v]) = *reinterpret_cast<const float4*>(bs + kk * BN + h * (BN / 2) + v);
                }
            };
            load(0, 0);
            #pragma unroll 1
            for (int kc = 0; kc < BK; kc += KCHUNK) {
                if (SPREAD && refill) fetch(x, t, (unsigned)kc / KCHUNK);
                #pragma unroll
                for (int kk = 0; kk < KCHUNK; ++kk) {
                    const bool more = kk + 1 < KCHUNK || kc + KCHUNK < BK;
                    if (LOADPOS == 0 && more) load((kk + 1) % 2, kc + kk + 1);
                    fma_rows<0, TM / 2>(acc, af[kk % 2], bf[kk % 2]);
                    if (LOADPOS == 1 && more) load((kk + 1) % 2, kc + kk + 1);
                    fma_rows<TM / 2, TM>(acc, af[kk % 2], bf[kk % 2]);
                }
            }
            cp_commit();
            stage = stage + 1 == STAGES ? 0 : stage + 1;
            stage_ahead = stage_ahead + 1 == STAGES ? 0 : stage_ahead + 1;
        }
        cp_wait<0>();
        __syncthreads();  // the next segment's prologue refills stages others may still read
    }

    static DEV void epilogue(const Ctx& x, int tm, int tn, const float (&acc)[TM][TN], float alpha, float beta) {
        const int c_row0 = tm * BM, c_col0 = tn * BN;
        const bool whole_mn = x.M - c_row0 >= BM && x.N - c_col0 >= BN;
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = i / (TM / 2) * (BM / 2) + x.thread_row * (TM / 2) + i % (TM / 2);
            #pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int col = j / (TN / 2) * (BN / 2) + x.thread_col * (TN / 2) + j % (TN / 2);
                float* dst = x.c + (c_row0 + row) * x.c_ld + c_col0 + col;
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
                        if (c_row0 + row < x.M && c_col0 + col + q < x.N)
                            dst[q] = beta == 0.0f ? alpha * acc[i][j + q] : alpha * acc[i][j + q] + beta * dst[q];
                }
            }
        }
    }

    // one block per tile
    static DEV void run(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                        float alpha, float beta, int M, int K, int N, int a_ld, int b_ld, int c_ld) {
        Ctx x;
        init(x, a, b, c, M, K, N, a_ld, b_ld, c_ld);
        float acc[TM][TN] = {};
        mainloop(x, blockIdx.y, blockIdx.x, 0, (K + BK - 1) / BK, acc);
        epilogue(x, blockIdx.y, blockIdx.x, acc, alpha, beta);
    }

    // stream-K: gridDim.x persistent blocks; all but the last full round of tiles data-parallel,
    // the rest split evenly by k iterations. A tile's k = 0 segment owner adds the others' partials.
    static DEV void run_sk(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           float alpha, float beta, int M, int K, int N, int a_ld, int b_ld, int c_ld,
                           float* __restrict__ partials, int* __restrict__ flags) {
        Ctx x;
        init(x, a, b, c, M, K, N, a_ld, b_ld, c_ld);
        const int tiles_n = (N + BN - 1) / BN, tiles = (M + BM - 1) / BM * tiles_n;
        const int k_tiles = (K + BK - 1) / BK;
        const int G = gridDim.x, blk = blockIdx.x;
        const int rounds = tiles / G;
        const int dp_tiles = tiles % G == 0 ? tiles : (rounds >= 2 ? (rounds - 1) * G : 0);
        for (int t = blk; t < dp_tiles; t += G) {
            float acc[TM][TN] = {};
            mainloop(x, t / tiles_n, t % tiles_n, 0, k_tiles, acc);
            epilogue(x, t / tiles_n, t % tiles_n, acc, alpha, beta);
        }
        const long long sk_iters = (long long)(tiles - dp_tiles) * k_tiles;
        auto begin_of = [&](int g) { return (long long)(sk_iters * g / G); };
        long long it = begin_of(blk);
        const long long it_end = begin_of(blk + 1);
        while (it < it_end) {
            const int t = (int)(it / k_tiles), kb = (int)(it % k_tiles);
            const int ke = (int)min((long long)k_tiles, kb + (it_end - it));
            const int tile = dp_tiles + t;
            float acc[TM][TN] = {};
            mainloop(x, tile / tiles_n, tile % tiles_n, kb, ke, acc);
            float4* mine = reinterpret_cast<float4*>(partials + (size_t)blk * BM * BN) + x.tid;
            if (kb > 0) {
                // not the tile's first segment: leave the partial sums for the k = 0 owner
                #pragma unroll
                for (int i = 0; i < TM; ++i)
                    #pragma unroll
                    for (int j = 0; j < TN; j += 4)
                        __stcg(mine + (i * TN + j) / 4 * THREADS, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
                __threadfence();
                __syncthreads();
                if (x.tid == 0) atomicExch(flags + blk, 1);
            } else {
                // the k = 0 owner: add the partials of the blocks that cover the rest of this tile
                const long long tile_end = (long long)(t + 1) * k_tiles;
                for (int g = blk + 1; g < G && begin_of(g) < tile_end; ++g) {
                    if (begin_of(g) == begin_of(g + 1)) continue;  // an empty range writes nothing
                    if (x.tid == 0) {
                        while (atomicAdd(flags + g, 0) == 0) {}
                        flags[g] = 0;
                    }
                    __syncthreads();
                    __threadfence();
                    const float4* theirs = reinterpret_cast<const float4*>(partials + (size_t)g * BM * BN) + x.tid;
                    #pragma unroll
                    for (int i = 0; i < TM; ++i)
                        #pragma unroll
                        for (int j = 0; j < TN; j += 4) {
                            const float4 v = __ldcg(theirs + (i * TN + j) / 4 * THREADS);
                            acc[i][j] += v.x; acc[i][j + 1] += v.y; acc[i][j + 2] += v.z; acc[i][j + 3] += v.w;
                        }
                }
                epilogue(x, tile / tiles_n, tile % tiles_n, acc, alpha, beta);
            }
            it += ke - kb;
        }
    }
};
