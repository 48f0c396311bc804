//! Per-thread code → CUDA C: a small printer, one C construct per Rust construct, typed by
//! the same rules that validated it ([`TypeEnv`]).

use tessera_dsl::{
    ElementType, FragmentSlots, Intrinsic, Kernel, SlotQuery, Statement, ThreadExpr, ThreadExprKind, ThreadOp,
    ThreadStatement, ThreadStatementKind, ThreadType, TypeEnv, UnaryOp, VectorStart,
};

use crate::operand::round_to_half;
use crate::statement::{indent, invalid, no_vector_type};
use crate::RenderError;

/// Whether the thread code of `kernel` reduces across its cluster (`cluster_sum`, `cluster_max`,
/// `cluster_softmax_scale`).
pub(crate) fn reduces_across_cluster(kernel: &Kernel) -> bool {
    kernel.thread_calls().iter().any(|(function, _)| function.is_cluster_collective())
}

/// The device functions the thread code of `kernel` calls, defined before the kernel.
pub(crate) fn helpers(kernel: &Kernel) -> Vec<&'static str> {
    let mut used = Vec::new();
    // a persistent kernel's clusters sync once its mbarriers are initialised
    if kernel.cluster_tiles().is_some() {
        used.push(CLUSTER);
    }
    for statement in kernel.statements() {
        if let Statement::Thread(thread) = statement {
            thread.walk_statements(&mut |s| {
                if let ThreadStatementKind::BlockReductions { function, .. } = &s.kind {
                    match function {
                        Intrinsic::BlockMax => used.extend([WARP_MAX, BLOCK_MAXIMA]),
                        _ => used.extend([WARP_SUM, BLOCK_SUMS]),
                    }
                }
            });
        }
        let expressions = match statement {
            Statement::Thread(thread) => thread.expressions(),
            Statement::Copy(tessera_dsl::TileCopy { map: Some(map), .. }) => vec![&map.body],
            _ => continue,
        };
        for expr in expressions {
            expr.walk(&mut |e| match &e.kind {
                ThreadExprKind::Call { function: Intrinsic::WarpSum, .. } => used.push(WARP_SUM),
                ThreadExprKind::Call { function: Intrinsic::WarpMax, .. } => used.push(WARP_MAX),
                ThreadExprKind::Call { function: Intrinsic::BlockSum, .. } => used.extend([WARP_SUM, BLOCK_SUM]),
                ThreadExprKind::Call { function: Intrinsic::BlockMax, .. } => used.extend([WARP_MAX, BLOCK_MAX]),
                ThreadExprKind::Call { function: Intrinsic::LastBlockOf, .. } => used.push(LAST_BLOCK_OF),
                ThreadExprKind::Call { function: Intrinsic::ClusterSum, .. } => {
                    used.extend(CLUSTER_REDUCTION.into_iter().chain([WARP_SUM, BLOCK_SUM, CLUSTER_SUM]))
                }
                ThreadExprKind::Call { function: Intrinsic::ClusterMax, .. } => {
                    used.extend(CLUSTER_REDUCTION.into_iter().chain([WARP_MAX, BLOCK_MAX, CLUSTER_MAX]))
                }
                ThreadExprKind::Call { function: Intrinsic::ClusterSoftmaxScale, .. } => {
                    used.extend(CLUSTER_REDUCTION.into_iter().chain([
                        WARP_SUM,
                        WARP_MAX,
                        BLOCK_SUM,
                        BLOCK_MAX,
                        CLUSTER_SOFTMAX_SCALE,
                    ]))
                }
                ThreadExprKind::Call { function: Intrinsic::ClusterRank, .. } => used.push(CLUSTER),
                ThreadExprKind::VectorSum(_) => used.push(VECTOR_SUM),
                // one-element accesses at VECTOR 1 need no helper
                ThreadExprKind::VectorLoad { start: VectorStart::Element, .. } | ThreadExprKind::AlignOffset { .. }
                    if kernel.config.vector.get() > 1 =>
                {
                    used.push(VECTOR_AT)
                }
                ThreadExprKind::VectorLoad { start: VectorStart::AnyElement, .. } if kernel.config.vector.get() > 1 => {
                    used.push(VECTOR_FROM)
                }
                ThreadExprKind::Call { function: Intrinsic::Dot, .. } => used.push(DOT),
                ThreadExprKind::Call { function: Intrinsic::Gelu, .. } => used.extend([EXP2_FTZ, GELU]),
                ThreadExprKind::Call { function: Intrinsic::Exp2Ftz, .. } => used.push(EXP2_FTZ),
                ThreadExprKind::Call { function: Intrinsic::Silu, .. } => used.push(SILU),
                ThreadExprKind::FragmentSlot { query: SlotQuery::RowMax, .. } => used.push(ROW_MAX),
                ThreadExprKind::FragmentSlot { query: SlotQuery::RowSum, .. } => used.push(ROW_SUM),
                _ => {}
            });
        }
    }
    let mut helpers = Vec::new();
    for helper in [
        WARP_SUM,
        WARP_MAX,
        BLOCK_SUM,
        BLOCK_MAX,
        BLOCK_SUMS,
        BLOCK_MAXIMA,
        LAST_BLOCK_OF,
        CLUSTER,
        CLUSTER_EXCHANGE_PRIMITIVES,
        CLUSTER_EXCHANGE,
        CLUSTER_SUM,
        CLUSTER_MAX,
        CLUSTER_SOFTMAX_SCALE,
        VECTOR_SUM,
        VECTOR_AT,
        VECTOR_FROM,
        DOT,
        EXP2_FTZ,
        GELU,
        SILU,
        ROW_MAX,
        ROW_SUM,
    ] {
        if used.contains(&helper) {
            helpers.push(helper);
        }
    }
    helpers
}

const WARP_SUM: &str = "// warp_sum(v): every lane gets the sum over the warp's 32 lanes (a shuffle-xor butterfly:
// all lanes add the same pairs in the same order, so they agree to the bit); warp_sum(v, LANES)
// over each aligned group of LANES lanes, masks below LANES keeping the groups apart
template <int LANES = 32, typename T>
__device__ __forceinline__ T tessera_warp_sum(T v)
{
#pragma unroll
    for (int mask = LANES / 2; mask > 0; mask /= 2) {
        v += __shfl_xor_sync(0xffffffff, v, mask);
    }
    return v;
}";

const WARP_MAX: &str = "// warp_max(v): every lane gets the maximum over the warp's 32 lanes; warp_max(v, LANES) over
// each aligned group of LANES lanes
template <int LANES = 32, typename T>
__device__ __forceinline__ T tessera_warp_max(T v)
{
#pragma unroll
    for (int mask = LANES / 2; mask > 0; mask /= 2) {
        v = max(v, __shfl_xor_sync(0xffffffff, v, mask));
    }
    return v;
}";

const LAST_BLOCK_OF: &str = "// last_block_of(group, blocks): true in every thread of the block that is the last of the
// `blocks` blocks calling it with `group` to get here; that block then sees the others' writes.
// Each block makes its writes visible device-wide, then counts itself on the group's counter
// (the workspace's, zero as the launch starts); the last one resets it for the next launch,
// and a barrier tells the whole block. The whole block calls it (two barriers).
__device__ __forceinline__ bool tessera_last_block_of(int group, int blocks, int* counters, int tid)
{
    __threadfence();  // this thread's writes before the block's count
    __syncthreads();
    int last = 0;
    if (tid == 0) {
        // the workspace holds a counter per block of the grid: a group past them is a bug
        if (group < 0 || group >= static_cast<int>(gridDim.x * gridDim.y * gridDim.z)) {
            __trap();
        }
        last = atomicAdd(&counters[group], 1) == blocks - 1;
        if (last) {
            counters[group] = 0;
        }
    }
    if (!__syncthreads_or(last)) {
        return false;
    }
    __threadfence();  // the others' writes after their counts
    return true;
}";

const BLOCK_SUM: &str = "// block_sum(v): every thread gets the sum over the block's `threads` threads: each warp's
// sum, then the warps' sums through shared memory; the whole block calls it (two barriers)
template <typename T>
__device__ __forceinline__ T tessera_block_sum(T v, int tid, int threads)
{
    __shared__ T warp_sums[32];
    v = tessera_warp_sum(v);
    if (threads <= 32) {
        return v;
    }
    if (tid % 32 == 0) {
        warp_sums[tid / 32] = v;
    }
    __syncthreads();
    v = tid % 32 < (threads + 31) / 32 ? warp_sums[tid % 32] : T(0);
    v = tessera_warp_sum(v);
    __syncthreads();  // the next block reduction may overwrite warp_sums
    return v;
}";

const BLOCK_MAX: &str = "// block_max(v): every thread gets the maximum over the block's `threads` threads
template <typename T>
__device__ __forceinline__ T tessera_block_max(T v, int tid, int threads)
{
    __shared__ T warp_maxima[32];
    v = tessera_warp_max(v);
    if (threads <= 32) {
        return v;
    }
    if (tid % 32 == 0) {
        warp_maxima[tid / 32] = v;
    }
    __syncthreads();
    // lanes past the last warp repeat warp 0's maximum, which changes nothing
    v = warp_maxima[tid % 32 < (threads + 31) / 32 ? tid % 32 : 0];
    v = tessera_warp_max(v);
    __syncthreads();  // the next block reduction may overwrite warp_maxima
    return v;
}";

const BLOCK_SUMS: &str = "// block sums made together (consecutive `let`s, none reading another's): every thread gets
// each of the N values summed over the block's `threads` threads — each warp's sums, then all
// the warps' sums through shared memory in one round (two barriers for the N, where one
// block_sum at a time takes two each)
template <int N, typename T>
__device__ __forceinline__ void tessera_block_sums(T (&v)[N], int tid, int threads)
{
    __shared__ T warp_sums[N][32];
#pragma unroll
    for (int n = 0; n < N; ++n) {
        v[n] = tessera_warp_sum(v[n]);
    }
    if (threads <= 32) {
        return;
    }
    if (tid % 32 == 0) {
#pragma unroll
        for (int n = 0; n < N; ++n) {
            warp_sums[n][tid / 32] = v[n];
        }
    }
    __syncthreads();
#pragma unroll
    for (int n = 0; n < N; ++n) {
        v[n] = tid % 32 < (threads + 31) / 32 ? warp_sums[n][tid % 32] : T(0);
        v[n] = tessera_warp_sum(v[n]);
    }
    __syncthreads();  // the next block reduction may overwrite warp_sums
}";

const BLOCK_MAXIMA: &str = "// block maxima made together: each of the N values' maximum over the block, in one round
template <int N, typename T>
__device__ __forceinline__ void tessera_block_maxima(T (&v)[N], int tid, int threads)
{
    __shared__ T warp_maxima[N][32];
#pragma unroll
    for (int n = 0; n < N; ++n) {
        v[n] = tessera_warp_max(v[n]);
    }
    if (threads <= 32) {
        return;
    }
    if (tid % 32 == 0) {
#pragma unroll
        for (int n = 0; n < N; ++n) {
            warp_maxima[n][tid / 32] = v[n];
        }
    }
    __syncthreads();
#pragma unroll
    for (int n = 0; n < N; ++n) {
        // lanes past the last warp repeat warp 0's maximum, which changes nothing
        v[n] = warp_maxima[n][tid % 32 < (threads + 31) / 32 ? tid % 32 : 0];
        v[n] = tessera_warp_max(v[n]);
    }
    __syncthreads();  // the next block reduction may overwrite warp_maxima
}";

const CLUSTER: &str = include_str!("../templates/cluster_helpers.cu").trim_ascii_end();

/// The helpers every cluster reduction's exchange takes (mbarrier_helpers.cu comes with them:
/// [`reduces_across_cluster`]).
const CLUSTER_REDUCTION: [&str; 3] = [CLUSTER, CLUSTER_EXCHANGE_PRIMITIVES, CLUSTER_EXCHANGE];

/// What a cluster reduction takes beside its value: the kernel's exchange slots, mbarriers and count
/// (declared in kernel.cu).
const CLUSTER_STATE: &str = "tessera_cluster_slots, tessera_cluster_full, tessera_cluster_exchanges";

const CLUSTER_EXCHANGE_PRIMITIVES: &str = include_str!("../templates/cluster_exchange_helpers.cu").trim_ascii_end();

const CLUSTER_EXCHANGE: &str =
    "// The cluster's blocks exchange one value each (V: a number, or a (maximum, sum) pair): thread
// r pushes this block's `value` into block r's slot for this block's rank, counted on block r's
// mbarrier; then every thread waits on its own block's mbarrier and takes the values from its own
// shared memory, in rank order (`absent` for ranks past the cluster's blocks). The kernel's two
// sets of slots (16 bytes each) and mbarriers are used in turn: a block pushes into a set again
// only after every block has pushed into the other, which each does after reading this one (the
// block reduction before each exchange has a barrier between). The first exchange waits for the
// cluster barrier the kernel arrived at as it started, once its mbarriers were initialised.
template <typename V>
__device__ __forceinline__ void tessera_cluster_exchange(V value, V absent, V (&values)[8], int tid, int threads,
                                                         unsigned char* slots, tessera_mbarrier* full, int& exchanges)
{
    const int blocks = tessera_cluster_blocks();
    const int set = exchanges % 2;
    unsigned char* own = slots + set * 8 * 16;
    if (exchanges == 0) {
        tessera_cluster_wait();
    }
    if (tid == 0) {
        tessera_mbarrier_expect_bytes(&full[set], blocks * static_cast<unsigned>(sizeof(V)));
    }
    for (int rank = tid; rank < blocks; rank += threads) {
        tessera_cluster_push(reinterpret_cast<V*>(own + tessera_cluster_rank() * 16), value, &full[set], rank);
    }
    tessera_mbarrier_wait(&full[set], (exchanges / 2) % 2);
#pragma unroll
    for (int rank = 0; rank < 8; ++rank) {
        values[rank] = rank < blocks ? *reinterpret_cast<const V*>(own + rank * 16) : absent;
    }
    ++exchanges;
}";

const CLUSTER_SUM: &str =
    "// cluster_sum(v): every thread of the cluster gets the sum over all its blocks' threads: each
// block's sum (block_sum), exchanged, added in rank order, so every block adds the same numbers
// in the same order
template <typename T>
__device__ __forceinline__ T tessera_cluster_sum(T v, int tid, int threads, unsigned char* slots,
                                                 tessera_mbarrier* full, int& exchanges)
{
    T part[8];
    tessera_cluster_exchange(tessera_block_sum(v, tid, threads), T(0), part, tid, threads, slots, full, exchanges);
    T total = T(0);
#pragma unroll
    for (int rank = 0; rank < 8; ++rank) {
        total += part[rank];
    }
    return total;
}";

const CLUSTER_MAX: &str = "// cluster_max(v): every thread of the cluster gets the maximum over all its blocks' threads
template <typename T>
__device__ __forceinline__ T tessera_cluster_max(T v, int tid, int threads, unsigned char* slots,
                                                 tessera_mbarrier* full, int& exchanges)
{
    const T block_maximum = tessera_block_max(v, tid, threads);
    T part[8];
    tessera_cluster_exchange(block_maximum, block_maximum, part, tid, threads, slots, full, exchanges);
    T maximum = part[0];
#pragma unroll
    for (int rank = 1; rank < 8; ++rank) {
        maximum = max(maximum, part[rank]);
    }
    return maximum;
}";

const CLUSTER_SOFTMAX_SCALE: &str =
    "// cluster_softmax_scale(m, s): a thread whose values x have s = Σ exp(x − m) gets exp(m − M) / S,
// M the maximum of every m in the cluster and S = Σ s·exp(m − M) over its threads: what turns
// the thread's exp(x − m) into the softmax of all the cluster's values. Each block's (maximum,
// sum) pair, exchanged in one access and combined in rank order: one exchange, where cluster_max
// then cluster_sum take two. A thread with no values (m = −∞, s = 0) adds nothing.
__device__ __forceinline__ float tessera_exp_of(float v) { return expf(v); }
__device__ __forceinline__ double tessera_exp_of(double v) { return exp(v); }
// s·exp(m − maximum); 1·s where m is the maximum (also where both are −∞, whose difference is
// NaN) — chosen in the exponent, so that the exps take no branch and issue together
template <typename T>
__device__ __forceinline__ T tessera_rescaled(T s, T m, T maximum)
{
    return s * tessera_exp_of(m == maximum ? T(0) : m - maximum);
}
template <typename T> struct tessera_pair_of;
template <> struct tessera_pair_of<float> { using type = float2; };
template <> struct tessera_pair_of<double> { using type = double2; };
template <typename T>
__device__ __forceinline__ T tessera_cluster_softmax_scale(T m, T s, int tid, int threads, unsigned char* slots,
                                                           tessera_mbarrier* full, int& exchanges)
{
    using Pair = typename tessera_pair_of<T>::type;
    Pair block_pair, absent, pairs[8];
    block_pair.x = tessera_block_max(m, tid, threads);
    block_pair.y = tessera_block_sum(tessera_rescaled(s, m, block_pair.x), tid, threads);
    absent.x = block_pair.x;
    absent.y = T(0);
    tessera_cluster_exchange(block_pair, absent, pairs, tid, threads, slots, full, exchanges);
    T maximum = pairs[0].x;
#pragma unroll
    for (int rank = 1; rank < 8; ++rank) {
        maximum = max(maximum, pairs[rank].x);
    }
    T total = T(0);
#pragma unroll
    for (int rank = 0; rank < 8; ++rank) {
        total += tessera_rescaled(pairs[rank].y, pairs[rank].x, maximum);
    }
    return tessera_rescaled(T(1), m, maximum) / total;
}";

const VECTOR_SUM: &str = "// v.sum(): the elements of one vector access, added left to right
__device__ __forceinline__ float tessera_sum(float v) { return v; }
__device__ __forceinline__ float tessera_sum(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float tessera_sum(float4 v) { return v.x + v.y + v.z + v.w; }
__device__ __forceinline__ double tessera_sum(double v) { return v; }
__device__ __forceinline__ double tessera_sum(double2 v) { return v.x + v.y; }
__device__ __forceinline__ int tessera_sum(int v) { return v; }
__device__ __forceinline__ int tessera_sum(int2 v) { return v.x + v.y; }
__device__ __forceinline__ int tessera_sum(int4 v) { return v.x + v.y + v.z + v.w; }
__device__ __forceinline__ unsigned int tessera_sum(unsigned int v) { return v; }
__device__ __forceinline__ unsigned int tessera_sum(uint2 v) { return v.x + v.y; }
__device__ __forceinline__ unsigned int tessera_sum(uint4 v) { return v.x + v.y + v.z + v.w; }";

const VECTOR_AT: &str = include_str!("../templates/vector_at_helpers.cu").trim_ascii_end();

const VECTOR_FROM: &str = include_str!("../templates/vector_from_helpers.cu").trim_ascii_end();

const DOT: &str = "// dot(a, b): the products of two vector accesses' elements, added left to right
__device__ __forceinline__ float tessera_dot(float a, float b) { return a * b; }
__device__ __forceinline__ float tessera_dot(float2 a, float2 b) { return a.x * b.x + a.y * b.y; }
__device__ __forceinline__ float tessera_dot(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
__device__ __forceinline__ double tessera_dot(double a, double b) { return a * b; }
__device__ __forceinline__ double tessera_dot(double2 a, double2 b) { return a.x * b.x + a.y * b.y; }";

const GELU: &str = "// gelu(x) = x·Φ(x), PyTorch's default (erf) GELU. Φ through the Mills ratio: for a = |x|,
// 1 − Φ(a) = e^(−a²/2)·R(a)/√(2π), R a degree-7 polynomial in t = 1/(1 + a/4) fitted here (relative
// error 1.2e-7 to a = 9.5). Two MUFU ops and 15 others where 0.5·x·(1 + erff(x/√2)) takes ~35, and
// no cancellation below x ≈ −3, where 1 + erff(x/√2) loses the digits of a small Φ(x)
__device__ __forceinline__ float tessera_gelu(float x)
{
    const float t = __fdividef(1.0f, fmaf(0.25f, fabsf(x), 1.0f));
    float ratio = -0.0983789638f;  // R(|x|)/√(2π), by Horner in t
    ratio = fmaf(ratio, t, 0.374605089f);
    ratio = fmaf(ratio, t, -0.334010988f);
    ratio = fmaf(ratio, t, 0.354501337f);
    ratio = fmaf(ratio, t, -0.0216687489f);
    ratio = fmaf(ratio, t, 0.129151151f);
    ratio = fmaf(ratio, t, 0.0955456942f);
    ratio = fmaf(ratio, t, 0.000255492516f);
    const float tail = tessera_exp2_ftz(x * -0.721347520f * x) * ratio;  // 1 − Φ(|x|)
    return x * (x >= 0.0f ? 1.0f - tail : tail);
}
__device__ __forceinline__ double tessera_gelu(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752)); }";

const EXP2_FTZ: &str = "// exp2_ftz(x): 2^x with results below 2^-126 flushed to zero — one MUFU.EX2, where exp2f's
// ex2.approx.f32 adds the instructions that keep subnormal results (the simulator defines the same)
#ifndef TESSERA_SIM_H
__device__ __forceinline__ float tessera_exp2_ftz(float x)
{
    float y;
    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));
    return y;
}
#endif  // TESSERA_SIM_H";

const SILU: &str = "// silu(x) = x·σ(x) = x / (1 + e^-x)
__device__ __forceinline__ float tessera_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ double tessera_silu(double x) { return x / (1.0 + exp(-x)); }";

const ROW_MAX: &str = "// acc.row_max(i) on a warp-tile fragment in mma.sync's accumulator layout: the maximum over
// the block-tile row of row slot i: this lane's values of it, then the 4 lanes sharing the row
// (lanes 4r .. 4r + 3: shuffle-xor 1, then 2); every one of them gets the result
template <int M_TILES, int N_TILES>
__device__ __forceinline__ float tessera_row_max(const float (&acc)[M_TILES][N_TILES][4], int i)
{
    float v = acc[i / 2][0][i % 2 * 2];
#pragma unroll
    for (int j = 1; j < N_TILES * 2; ++j) {
        v = fmaxf(v, acc[i / 2][j / 2][i % 2 * 2 + j % 2]);
    }
    v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, 1));
    v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, 2));
    return v;
}";

const ROW_SUM: &str = "// acc.row_sum(i) on a warp-tile fragment: the sum over the block-tile row of row slot i, in a
// fixed order: this lane's values left to right, then the 4 lanes sharing the row by
// shuffle-xor 1 and 2 (each pair adds the same two values, so the lanes agree to the bit)
template <int M_TILES, int N_TILES>
__device__ __forceinline__ float tessera_row_sum(const float (&acc)[M_TILES][N_TILES][4], int i)
{
    float v = acc[i / 2][0][i % 2 * 2];
#pragma unroll
    for (int j = 1; j < N_TILES * 2; ++j) {
        v += acc[i / 2][j / 2][i % 2 * 2 + j % 2];
    }
    v += __shfl_xor_sync(0xffffffff, v, 1);
    v += __shfl_xor_sync(0xffffffff, v, 2);
    return v;
}";

/// The intrinsic that computes `op` on two 16-bit floats of type `ty` with its own rounding.
fn half_arithmetic(op: ThreadOp, ty: ThreadType) -> Option<&'static str> {
    if !ty.is_half() {
        return None;
    }
    match op {
        ThreadOp::Add => Some("__hadd_rn"),
        ThreadOp::Sub => Some("__hsub_rn"),
        ThreadOp::Mul => Some("__hmul_rn"),
        ThreadOp::Div => Some("__hdiv"),
        _ => None,
    }
}

/// `text` of type `from` as an f32 expression (for the conversions to 16 bits).
fn as_float(from: ThreadType, text: &str) -> String {
    if from == ThreadType::F32 {
        text.to_string()
    } else {
        format!("static_cast<float>({text})")
    }
}

/// Renders a thread expression where the context expects `wanted` (an epilogue's element map).
pub(crate) fn expression_source(
    kernel: &Kernel,
    expr: &ThreadExpr,
    env: &TypeEnv,
    wanted: Option<ThreadType>,
) -> Result<String, RenderError> {
    Printer { kernel }.expr(expr, env, wanted)
}

/// Renders one top-level thread statement; `env` holds what the statements before it bound.
pub(crate) fn thread_source(
    kernel: &Kernel,
    statement: &ThreadStatement,
    env: &mut TypeEnv,
) -> Result<String, RenderError> {
    let printer = Printer { kernel };
    let mut lines = Vec::new();
    // Loops and branches get the line they came from; a plain statement reads the same in C.
    if matches!(statement.kind, ThreadStatementKind::If { .. } | ThreadStatementKind::For { .. }) {
        lines.push(format!("// {statement}"));
    }
    printer.statement(statement, env, &mut lines)?;
    Ok(lines.join("\n"))
}

struct Printer<'a> {
    kernel: &'a Kernel,
}

impl Printer<'_> {
    fn fail(&self, origin: tessera_dsl::Origin, message: &str) -> RenderError {
        invalid(self.kernel, origin, message)
    }

    fn type_of(&self, env: &TypeEnv, expr: &ThreadExpr, wanted: Option<ThreadType>) -> Result<ThreadType, RenderError> {
        env.type_with(expr, wanted).map_err(|d| self.fail(d.origin, &d.message))
    }

    fn c_type(&self, ty: ThreadType, origin: tessera_dsl::Origin) -> Result<&'static str, RenderError> {
        match ty {
            ThreadType::Scalar(element) => Ok(element.cuda_name()),
            ThreadType::Bool => Ok("bool"),
            ThreadType::Vector(element) => {
                let width = self.kernel.config.vector;
                element.vector_type(width).ok_or_else(|| self.fail(origin, &no_vector_type(element, width)))
            }
        }
    }

    fn block(&self, body: &[ThreadStatement], env: &TypeEnv, out: &mut Vec<String>) -> Result<(), RenderError> {
        let mut inner = env.clone();
        let mut lines = Vec::new();
        for statement in body {
            self.statement(statement, &mut inner, &mut lines)?;
        }
        out.push(indent(&lines.join("\n"), 1));
        Ok(())
    }

    fn statement(
        &self,
        statement: &ThreadStatement,
        env: &mut TypeEnv,
        out: &mut Vec<String>,
    ) -> Result<(), RenderError> {
        match &statement.kind {
            ThreadStatementKind::Let { name, mutable, ty, init } => {
                let ty = match ty {
                    Some(ty) => *ty,
                    None => self.type_of(env, init, None)?,
                };
                let constness = if *mutable { "" } else { "const " };
                let value = self.expr(init, env, Some(ty))?;
                out.push(format!("{constness}{} {name} = {value};", self.c_type(ty, statement.origin)?));
                env.bind_value(name, ty, *mutable);
            }
            ThreadStatementKind::LetArray { name, mutable: _, len, init } => {
                let ty = self.type_of(env, init, None)?;
                let count = env.array_length(len).map_err(|message| self.fail(len.origin, &message))?;
                let c_type = self.c_type(ty, statement.origin)?;
                let value = self.expr(init, env, Some(ty))?;
                // the constant's name where the length is one (declared above as constexpr)
                let shown = match &len.kind {
                    tessera_dsl::ExprKind::Name(constant) => constant.clone(),
                    _ => count.to_string(),
                };
                out.push(format!("{c_type} {name}[{shown}];  // [{init}; {len}]: registers, as loops over it unroll"));
                out.push("#pragma unroll".into());
                out.push(format!(
                    "for (int tessera_i = 0; tessera_i < {shown}; ++tessera_i) {{ {name}[tessera_i] = {value}; }}"
                ));
                let element = match ty {
                    ThreadType::Scalar(element) => element,
                    _ => {
                        let message = format!("register array `{name}` holds numbers; `{init}` has type {ty}");
                        return Err(self.fail(init.origin, &message));
                    }
                };
                env.bind(name, tessera_dsl::Binding::Registers { element, len: Some(count), mutable: true });
            }
            ThreadStatementKind::BlockReductions { name, function, values } => {
                let ty = match values.first() {
                    Some(value) => self.type_of(env, value, None)?,
                    None => return Err(self.fail(statement.origin, &format!("`{name}` reduces no values"))),
                };
                let texts =
                    values.iter().map(|value| self.expr(value, env, Some(ty))).collect::<Result<Vec<_>, _>>()?;
                let helper = match function {
                    Intrinsic::BlockMax => "tessera_block_maxima",
                    _ => "tessera_block_sums",
                };
                let calls: Vec<String> = values.iter().map(|value| format!("{}({value})", function.name())).collect();
                out.push(format!(
                    "// {}: in one round through shared memory (one pair of barriers for all)",
                    calls.join(", ")
                ));
                out.push(format!(
                    "{} {name}[{}] = {{{}}};",
                    self.c_type(ty, statement.origin)?,
                    values.len(),
                    texts.join(", ")
                ));
                out.push(format!("{helper}({name}, tid, THREADS);"));
                let element = match ty {
                    ThreadType::Scalar(element) => element,
                    _ => return Err(self.fail(statement.origin, &format!("`{name}` reduces numbers; these are {ty}"))),
                };
                let len = Some(values.len() as i64);
                env.bind(name, tessera_dsl::Binding::Registers { element, len, mutable: false });
            }
            ThreadStatementKind::Assign { place, op, value } => {
                let ty = self.type_of(env, place, None)?;
                let (target, value) = (self.expr(place, env, None)?, self.expr(value, env, Some(ty))?);
                match op.and_then(|op| half_arithmetic(op, ty)) {
                    Some(function) => out.push(format!("{target} = {function}({target}, {value});")),
                    None => {
                        let symbol = op.map(ThreadOp::symbol).unwrap_or("");
                        out.push(format!("{target} {symbol}= {value};"));
                    }
                }
            }
            ThreadStatementKind::AtomicAdd { place, value } => {
                let ty = self.type_of(env, place, None)?;
                out.push(format!(
                    "atomicAdd(&{}, {});",
                    self.expr(place, env, None)?,
                    self.expr(value, env, Some(ty))?
                ));
            }
            ThreadStatementKind::If { condition, then, otherwise } => {
                out.push(format!("if ({}) {{", self.expr(condition, env, None)?));
                self.block(then, env, out)?;
                if otherwise.is_empty() {
                    out.push("}".into());
                } else {
                    out.push("} else {".into());
                    self.block(otherwise, env, out)?;
                    out.push("}".into());
                }
            }
            ThreadStatementKind::For { var, start, end, step, body } => {
                let int = Some(ThreadType::I32);
                let constant = |e: &ThreadExpr| {
                    let mut constant = true;
                    e.walk(&mut |e| match &e.kind {
                        ThreadExprKind::Int { .. } | ThreadExprKind::Binary { .. } => {}
                        ThreadExprKind::Name(name)
                            if self.kernel.config.constants.iter().any(|c| &c.name == name)
                                || name == "THREADS"
                                || name == "VECTOR" => {}
                        _ => constant = false,
                    });
                    constant
                };
                // Constant trip counts unroll: the loop body's registers become straight-line code.
                if constant(start) && constant(end) && step.as_ref().is_none_or(constant) {
                    out.push("#pragma unroll".into());
                }
                let advance = match step {
                    Some(step) => format!("{var} += {}", self.expr(step, env, int)?),
                    None => format!("++{var}"),
                };
                out.push(format!(
                    "for (int {var} = {}; {var} < {}; {advance}) {{",
                    self.expr(start, env, int)?,
                    self.expr(end, env, int)?
                ));
                let mut inner = env.clone();
                inner.bind_value(var, ThreadType::I32, false);
                self.block(body, &inner, out)?;
                out.push("}".into());
            }
        }
        Ok(())
    }

    fn expr(&self, expr: &ThreadExpr, env: &TypeEnv, wanted: Option<ThreadType>) -> Result<String, RenderError> {
        Ok(self.precedence(expr, env, wanted)?.0)
    }

    /// The C text of `expr` and how tightly it binds (`u8::MAX`: a primary expression).
    fn precedence(
        &self,
        expr: &ThreadExpr,
        env: &TypeEnv,
        wanted: Option<ThreadType>,
    ) -> Result<(String, u8), RenderError> {
        const PRIMARY: u8 = u8::MAX;
        const UNARY: u8 = 20;
        let ty = self.type_of(env, expr, wanted)?;
        let wrap = |(text, p): (String, u8), min: u8| if p < min { format!("({text})") } else { text };
        Ok(match &expr.kind {
            ThreadExprKind::Int { value, .. } => match ty {
                ThreadType::U32 => (format!("{value}u"), PRIMARY),
                // `-2147483648` is the negation of a literal too wide for int: C makes it a long
                _ if *value == i64::from(i32::MIN) => ("(-2147483647 - 1)".into(), PRIMARY),
                _ => (value.to_string(), PRIMARY),
            },
            ThreadExprKind::Float { text, .. } => {
                let text = if text.contains(['.', 'e', 'E']) { text.clone() } else { format!("{text}.0") };
                match ty {
                    ThreadType::F32 => (format!("{text}f"), PRIMARY),
                    // a 16-bit literal: the f32 literal rounded to nearest even, once
                    ThreadType::Scalar(element) if element.is_half() => {
                        (format!("{}({text}f)", round_to_half(element)), PRIMARY)
                    }
                    _ => (text, PRIMARY),
                }
            }
            ThreadExprKind::Bool(value) => (value.to_string(), PRIMARY),
            ThreadExprKind::Infinity(element) => match element {
                tessera_dsl::ElementType::F64 => ("__longlong_as_double(0x7ff0000000000000ll)".into(), PRIMARY),
                _ => ("__int_as_float(0x7f800000)".into(), PRIMARY),
            },
            ThreadExprKind::Name(name) => (name.clone(), PRIMARY),
            ThreadExprKind::Index { base, indices } => {
                let int = Some(ThreadType::I32);
                let index: Vec<String> = indices.iter().map(|i| self.expr(i, env, int)).collect::<Result<_, _>>()?;
                // a lane of a vector local: its k-th element
                if let Some(tessera_dsl::Binding::Value { ty: ThreadType::Vector(element), mutable }) = env.get(base) {
                    let k = index.first().cloned().unwrap_or_default();
                    if self.kernel.config.vector.get() == 1 {
                        return Ok((base.clone(), PRIMARY));
                    }
                    let constness = if *mutable { "" } else { "const " };
                    return Ok((
                        format!("reinterpret_cast<{constness}{}*>(&{base})[{k}]", element.cuda_name()),
                        PRIMARY,
                    ));
                }
                // a tensor-core fragment's value slot (i, j): m-tile i / 2, n-tile j / 2, and of
                // their four accumulators the row half i % 2 and the column j % 2
                if let Some(tessera_dsl::Binding::Fragment { slots: Some(slots), .. }) = env.get(base) {
                    if slots.layout.warp_tile.is_some() {
                        return Ok((self.fragment_register(base, slots, indices, env)?, PRIMARY));
                    }
                }
                let tensor = self.kernel.param(base).and_then(|p| p.tensor());
                match (tensor, index.as_slice()) {
                    (Some(_), [i]) => (format!("{base}[{i}]"), PRIMARY),
                    (Some(_), [_, _]) => {
                        // rows are the tensor's leading dimension apart (its column count when dense)
                        let ld = tessera_dsl::leading_dimension_name(base);
                        let row = wrap(self.precedence(&indices[0], env, int)?, 10);
                        let col = wrap(self.precedence(&indices[1], env, int)?, 10);
                        (format!("{base}[{row} * {ld} + {col}]"), PRIMARY)
                    }
                    (Some(tensor), [.., last]) if index.len() >= 3 && index.len() == tensor.rank() => {
                        // a batch of matrices: the row across all of them, Horner over the
                        // outer dimensions, ((i0 · S1 + i1) · ..), then rows ld apart
                        let ld = tessera_dsl::leading_dimension_name(base);
                        let mut row = format!("({})", index[0]);
                        for (i, (symbol, _)) in index[1..index.len() - 1].iter().zip(&tensor.shape[1..]) {
                            row = format!("({row} * {symbol} + ({i}))");
                        }
                        (format!("{base}[{row} * {ld} + ({last})]"), PRIMARY)
                    }
                    _ => (format!("{base}{}", index.iter().map(|i| format!("[{i}]")).collect::<String>()), PRIMARY),
                }
            }
            ThreadExprKind::Unary { op, operand } => {
                let symbol = match (op, ty) {
                    (UnaryOp::Neg, _) => "-",
                    (UnaryOp::Not, ThreadType::Bool) => "!",
                    (UnaryOp::Not, _) => "~",
                };
                (format!("{symbol}{}", wrap(self.precedence(operand, env, wanted)?, UNARY)), UNARY)
            }
            ThreadExprKind::Binary { op, lhs, rhs } => {
                let operand_wanted =
                    if op.is_comparison() || matches!(op, ThreadOp::And | ThreadOp::Or) { None } else { wanted };
                let (l, r) = env.pair(lhs, rhs, operand_wanted).map_err(|d| self.fail(d.origin, &d.message))?;
                // 16-bit + − × as the _rn intrinsics: each rounds on its own, never contracted
                // into an fma by the compiler (the simulation rounds each the same way)
                if let Some(function) = half_arithmetic(*op, l) {
                    let (left, right) = (self.expr(lhs, env, Some(l))?, self.expr(rhs, env, Some(r))?);
                    return Ok((format!("{function}({left}, {right})"), PRIMARY));
                }
                let p = op.precedence();
                let left = wrap(self.precedence(lhs, env, Some(l))?, p);
                let right = wrap(self.precedence(rhs, env, Some(r))?, p + 1);
                (format!("{left} {} {right}", op.symbol()), p)
            }
            ThreadExprKind::Cast { value, to } => {
                let from = self.type_of(env, value, None)?;
                let text = self.expr(value, env, None)?;
                if from == *to {
                    // `x as f32` of an f32: nothing to convert
                    return self.precedence(value, env, None);
                }
                let c_type = self.c_type(*to, expr.origin)?;
                // 16-bit floats convert through the conversions CUDA defines for them: to and
                // from f32 (and from f64) with one rounding to nearest even
                let converted = match (from, *to) {
                    (ThreadType::Scalar(ElementType::F64), ThreadType::Scalar(ElementType::F16)) => {
                        format!("__double2half({text})")
                    }
                    (ThreadType::Scalar(ElementType::F64), ThreadType::Scalar(ElementType::BF16)) => {
                        format!("__double2bfloat16({text})")
                    }
                    (_, ThreadType::Scalar(element)) if element.is_half() => {
                        format!("{}({})", round_to_half(element), as_float(from, &text))
                    }
                    (ThreadType::Scalar(ElementType::F16 | ElementType::BF16), ThreadType::F32) => {
                        format!("static_cast<float>({text})")
                    }
                    (ThreadType::Scalar(ElementType::F16 | ElementType::BF16), _) => {
                        format!("static_cast<{c_type}>(static_cast<float>({text}))")
                    }
                    _ => format!("static_cast<{c_type}>({text})"),
                };
                (converted, PRIMARY)
            }
            ThreadExprKind::Call { function, args } => self.call(*function, args, env, ty)?,
            ThreadExprKind::AlignOffset { tensor, row, column } => {
                let vector = self.kernel.config.vector.get();
                if vector == 1 {
                    // every element starts a one-element access
                    return Ok(("0".to_string(), PRIMARY));
                }
                let element = self.tensor_element(tensor, expr.origin)?;
                let bytes = (element.size_bytes() * vector).min(16);
                let at = self.element_address(tensor, row.as_deref(), column, env)?;
                (format!("tessera_align_offset<{bytes}>({at})"), PRIMARY)
            }
            ThreadExprKind::VectorLoad { tensor, row, index, start: VectorStart::Element } => {
                let at = self.element_address(tensor, row.as_deref(), index, env)?;
                if self.kernel.config.vector.get() == 1 {
                    (format!("*({at})"), PRIMARY)
                } else {
                    let vector_type = self.c_type(ty, expr.origin)?;
                    (format!("tessera_vector_at<{vector_type}>({at})"), PRIMARY)
                }
            }
            ThreadExprKind::VectorLoad { tensor, row, index, start: VectorStart::AnyElement } => {
                let at = self.element_address(tensor, row.as_deref(), index, env)?;
                if self.kernel.config.vector.get() == 1 {
                    (format!("*({at})"), PRIMARY)
                } else {
                    let vector_type = self.c_type(ty, expr.origin)?;
                    // the row's first element and the end of its columns bound the chunks
                    let first = self.row_start(tensor, row.as_deref(), env)?;
                    let columns = self
                        .kernel
                        .param(tensor)
                        .and_then(|p| p.tensor())
                        .and_then(|t| t.contiguous_symbol())
                        .ok_or_else(|| {
                            let what = self.parameter_kind(tensor);
                            let message =
                                format!("`.vector_from(..)` reads a tensor parameter's rows; `{tensor}` is {what}");
                            self.fail(expr.origin, &message)
                        })?;
                    (format!("tessera_vector_from<{vector_type}>({at}, {first}, {first} + {columns})"), PRIMARY)
                }
            }
            ThreadExprKind::VectorLoad { tensor, row, index, start: VectorStart::Vector } => {
                let index = self.expr(index, env, Some(ThreadType::I32))?;
                // row r of a 2-D tensor starts at tensor + r · ld (a multiple of VECTOR: the launch
                // narrows VECTOR where it is not)
                let start = self.row_start(tensor, row.as_deref(), env)?;
                if self.kernel.config.vector.get() == 1 {
                    match row {
                        Some(_) => (format!("({start})[{index}]"), PRIMARY),
                        None => (format!("{tensor}[{index}]"), PRIMARY),
                    }
                } else {
                    let vector_type = self.c_type(ty, expr.origin)?;
                    // writable tensors: the same text serves as the place of a vector store
                    let writable = self
                        .kernel
                        .param(tensor)
                        .and_then(|p| p.tensor())
                        .is_some_and(|t| t.access == tessera_dsl::Access::Writable);
                    let constness = if writable { "" } else { "const " };
                    (format!("reinterpret_cast<{constness}{vector_type}*>({start})[{index}]"), PRIMARY)
                }
            }
            ThreadExprKind::VectorSum(value) => (format!("tessera_sum({})", self.expr(value, env, None)?), PRIMARY),
            ThreadExprKind::LeadingDimension(tensor) => (tessera_dsl::leading_dimension_name(tensor), PRIMARY),
            ThreadExprKind::FragmentSlot { fragment, query, slot } => {
                self.fragment_slot(fragment, *query, slot, env)?
            }
        })
    }

    /// The address of row `row`'s first element, `tensor + row * ld` (`tensor` when 1-D).
    fn row_start(&self, tensor: &str, row: Option<&ThreadExpr>, env: &TypeEnv) -> Result<String, RenderError> {
        Ok(match row {
            Some(row) => {
                let (text, p) = self.precedence(row, env, Some(ThreadType::I32))?;
                let row = if p < 12 { format!("({text})") } else { text };
                format!("{tensor} + {row} * {}", tessera_dsl::leading_dimension_name(tensor))
            }
            None => tensor.to_string(),
        })
    }

    /// The address of element `column` of row `row` of `tensor` (of `tensor[column]` when 1-D).
    fn element_address(
        &self,
        tensor: &str,
        row: Option<&ThreadExpr>,
        column: &ThreadExpr,
        env: &TypeEnv,
    ) -> Result<String, RenderError> {
        let wrap = |(text, p): (String, u8), min: u8| if p < min { format!("({text})") } else { text };
        // a sum for the column is parenthesised: the address reads row, then column (none
        // for a row's first element)
        let column = match column.kind {
            ThreadExprKind::Int { value: 0, .. } if row.is_some() => String::new(),
            _ => format!(" + {}", self.precedence(column, env, Some(ThreadType::I32)).map(|c| wrap(c, 10))?),
        };
        Ok(format!("{}{column}", self.row_start(tensor, row, env)?))
    }

    /// The element type of tensor parameter `tensor`.
    fn tensor_element(&self, tensor: &str, origin: tessera_dsl::Origin) -> Result<ElementType, RenderError> {
        self.kernel.param(tensor).and_then(|p| p.tensor()).map(|t| t.element).ok_or_else(|| {
            let what = self.parameter_kind(tensor);
            let message = format!("`.align_offset(..)` takes a tensor parameter; `{tensor}` is {what}");
            self.fail(origin, &message)
        })
    }

    /// What the parameter `name` is, for a message about something that wanted a tensor: "a
    /// scalar f32 parameter", "a tensor parameter of rank 0" or "not a parameter of this kernel".
    fn parameter_kind(&self, name: &str) -> String {
        match self.kernel.param(name).map(|p| &p.kind) {
            Some(tessera_dsl::ParamKind::Scalar(element)) => format!("a scalar {element} parameter"),
            Some(tessera_dsl::ParamKind::Global(tensor)) => format!("a tensor parameter of rank {}", tensor.rank()),
            None => "not a parameter of this kernel".to_string(),
        }
    }

    /// The slot index as C text bound at least as tightly as `*` (or its value when a literal).
    fn slot_index(&self, slot: &ThreadExpr, env: &TypeEnv) -> Result<(String, Option<i64>), RenderError> {
        if let ThreadExprKind::Int { value, .. } = slot.kind {
            return Ok((value.to_string(), Some(value)));
        }
        let (text, p) = self.precedence(slot, env, Some(ThreadType::I32))?;
        Ok((if p < 10 { format!("({text})") } else { text }, None))
    }

    /// `acc[[i, j]]` on a warp-tile or warpgroup-tile fragment: `acc[i / 2][j / 2][i % 2 * 2 + j % 2]`.
    fn fragment_register(
        &self,
        base: &str,
        slots: &FragmentSlots,
        indices: &[ThreadExpr],
        env: &TypeEnv,
    ) -> Result<String, RenderError> {
        let [row, col] = indices else {
            let message =
                format!("fragment `{base}` takes two slot indices, `{base}[[i, j]]`; this one has {}", indices.len());
            return Err(self.fail(indices.first().map(|i| i.origin).unwrap_or_default(), &message));
        };
        let ((i, i_value), (j, j_value)) = (self.slot_index(row, env)?, self.slot_index(col, env)?);
        Ok(match (i_value, j_value) {
            (Some(i), Some(j)) => {
                let [mi, ni, v] = slots.layout.slot_register(i, j);
                format!("{base}[{mi}][{ni}][{v}]")
            }
            _ => format!("{base}[{i} / 2][{j} / 2][{i} % 2 * 2 + {j} % 2]"),
        })
    }

    /// `s.row(i)`, `s.col(j)`, `s.row_max(i)`, `s.row_sum(i)`.
    fn fragment_slot(
        &self,
        base: &str,
        query: SlotQuery,
        slot: &ThreadExpr,
        env: &TypeEnv,
    ) -> Result<(String, u8), RenderError> {
        let Some(tessera_dsl::Binding::Fragment { slots: Some(slots), .. }) = env.get(base) else {
            let found = match env.get(base) {
                Some(tessera_dsl::Binding::Fragment { .. }) => "a fragment whose layout is not constant",
                Some(_) => "not a fragment",
                None => "not declared here",
            };
            let message =
                format!("`{base}.{}(..)` needs a fragment with a constant layout; `{base}` is {found}", query.name());
            return Err(self.fail(slot.origin, &message));
        };
        let layout = &slots.layout;
        let (index, value) = self.slot_index(slot, env)?;
        const SUM: u8 = 9;
        // the fragment's own warp origins where the kernel has several warp-tile fragments
        let (warp_row0, warp_col0) = crate::tensor_core::warp_origin_names(self.kernel, base);
        let text = match (query, layout.warp_tile.is_some()) {
            (SlotQuery::RowMax, _) => return Ok((format!("tessera_row_max({base}, {index})"), u8::MAX)),
            (SlotQuery::RowSum, _) => return Ok((format!("tessera_row_sum({base}, {index})"), u8::MAX)),
            // rows lane / 4 (+ 8) of each 16-row mma tile, the tiles m_tile_spacing rows apart
            (SlotQuery::Row, true) => {
                let spacing = layout.m_tile_spacing();
                match value {
                    Some(i) => plus(&warp_row0, i / 2 * spacing + i % 2 * 8, "tid % 32 / 4"),
                    None => format!("{warp_row0} + {index} / 2 * {spacing} + {index} % 2 * 8 + tid % 32 / 4"),
                }
            }
            // columns 2 · (lane % 4) and the next of each 8-column mma tile
            (SlotQuery::Col, true) => match value {
                Some(j) => plus(&warp_col0, j / 2 * 8 + j % 2, "tid % 32 % 4 * 2"),
                None => format!("{warp_col0} + {index} / 2 * 8 + tid % 32 % 4 * 2 + {index} % 2"),
            },
            // a thread tile: value i of the thread's rows (split into sub-tiles a block part apart)
            (SlotQuery::Row, false) => thread_tile_position(
                "thread_row",
                &index,
                value,
                layout.sub_rows(),
                layout.rows / layout.split[0].max(1),
                layout.split[0],
            ),
            (SlotQuery::Col, false) => thread_tile_position(
                "thread_col",
                &index,
                value,
                layout.sub_cols(),
                layout.cols / layout.split[1].max(1),
                layout.split[1],
            ),
        };
        Ok((text, SUM))
    }

    fn call(
        &self,
        function: Intrinsic,
        args: &[ThreadExpr],
        env: &TypeEnv,
        ty: ThreadType,
    ) -> Result<(String, u8), RenderError> {
        const PRIMARY: u8 = u8::MAX;
        let arg = |i: usize, wanted: Option<ThreadType>| self.expr(&args[i], env, wanted);
        let float = |f32_name: &str, f64_name: &str| match ty {
            ThreadType::F64 => f64_name.to_string(),
            _ => f32_name.to_string(),
        };
        let text = match function {
            Intrinsic::ThreadIndex => "tid".to_string(),
            Intrinsic::Lane => return Ok(("tid % 32".into(), 10)),
            Intrinsic::WarpIndex => return Ok(("tid / 32".into(), 10)),
            Intrinsic::BlockIndex => "blockIdx.x".into(),
            Intrinsic::BlockCount => "gridDim.x".into(),
            // 16-bit floats: CUDA's own functions where it has them, else the f32 one rounded once
            Intrinsic::Sqrt if ty.is_half() => format!("hsqrt({})", arg(0, Some(ty))?),
            Intrinsic::Exp if ty.is_half() => format!("hexp({})", arg(0, Some(ty))?),
            Intrinsic::Exp2 if ty.is_half() => format!("hexp2({})", arg(0, Some(ty))?),
            Intrinsic::Log if ty.is_half() => format!("hlog({})", arg(0, Some(ty))?),
            Intrinsic::Abs if ty.is_half() => format!("__habs({})", arg(0, Some(ty))?),
            Intrinsic::Fma if ty.is_half() => {
                format!("__hfma({}, {}, {})", arg(0, Some(ty))?, arg(1, Some(ty))?, arg(2, Some(ty))?)
            }
            Intrinsic::Min | Intrinsic::Max if ty.is_half() => {
                let name = if function == Intrinsic::Min { "__hmin" } else { "__hmax" };
                format!("{name}({}, {})", arg(0, Some(ty))?, arg(1, Some(ty))?)
            }
            Intrinsic::Tanh | Intrinsic::Erf | Intrinsic::Gelu | Intrinsic::Silu if ty.is_half() => {
                let inner = match function {
                    Intrinsic::Tanh => "tanhf",
                    Intrinsic::Erf => "erff",
                    Intrinsic::Gelu => "tessera_gelu",
                    _ => "tessera_silu",
                };
                let round = round_to_half(if ty == ThreadType::Scalar(ElementType::F16) {
                    ElementType::F16
                } else {
                    ElementType::BF16
                });
                format!("{round}({inner}(static_cast<float>({})))", arg(0, Some(ty))?)
            }
            Intrinsic::Sqrt => format!("{}({})", float("sqrtf", "sqrt"), arg(0, Some(ty))?),
            Intrinsic::Exp => format!("{}({})", float("expf", "exp"), arg(0, Some(ty))?),
            Intrinsic::Exp2 => format!("{}({})", float("exp2f", "exp2"), arg(0, Some(ty))?),
            Intrinsic::Log => format!("{}({})", float("logf", "log"), arg(0, Some(ty))?),
            Intrinsic::Tanh => format!("{}({})", float("tanhf", "tanh"), arg(0, Some(ty))?),
            Intrinsic::Erf => format!("{}({})", float("erff", "erf"), arg(0, Some(ty))?),
            Intrinsic::Gelu => format!("tessera_gelu({})", arg(0, Some(ty))?),
            Intrinsic::Exp2Ftz => format!("tessera_exp2_ftz({})", arg(0, Some(ty))?),
            Intrinsic::Silu => format!("tessera_silu({})", arg(0, Some(ty))?),
            Intrinsic::Abs if ty.is_float() => format!("{}({})", float("fabsf", "fabs"), arg(0, Some(ty))?),
            Intrinsic::Abs => format!("abs({})", arg(0, Some(ty))?),
            Intrinsic::Min | Intrinsic::Max => {
                let (l, r) = env.pair(&args[0], &args[1], Some(ty)).map_err(|d| self.fail(d.origin, &d.message))?;
                let name = match (function, ty.is_float(), ty == ThreadType::F64) {
                    (Intrinsic::Min, true, false) => "fminf",
                    (Intrinsic::Min, true, true) => "fmin",
                    (Intrinsic::Max, true, false) => "fmaxf",
                    (Intrinsic::Max, true, true) => "fmax",
                    (Intrinsic::Min, false, _) => "min",
                    _ => "max",
                };
                format!("{name}({}, {})", arg(0, Some(l))?, arg(1, Some(r))?)
            }
            Intrinsic::Cdiv => {
                let (a, b) = (arg(0, Some(ty))?, arg(1, Some(ty))?);
                return Ok((format!("(({a}) + ({b}) - 1) / ({b})"), 10));
            }
            Intrinsic::Fma => {
                format!("{}({}, {}, {})", float("fmaf", "fma"), arg(0, Some(ty))?, arg(1, Some(ty))?, arg(2, Some(ty))?)
            }
            Intrinsic::Dot => format!("tessera_dot({}, {})", arg(0, None)?, arg(1, None)?),
            Intrinsic::Splat => {
                let ThreadType::Vector(element) = ty else {
                    return Err(
                        self.fail(args[0].origin, &format!("`vector(v)` makes a vector, not the {ty} wanted here"))
                    );
                };
                let value = arg(0, Some(ThreadType::Scalar(element)))?;
                let width = self.kernel.config.vector.get() as usize;
                let vector_type = self.c_type(ty, args[0].origin)?;
                if width == 1 {
                    value
                } else {
                    crate::operand::vector_of(vector_type, &vec![value.as_str(); width])
                }
            }
            Intrinsic::WarpSum | Intrinsic::WarpMax => {
                let helper = if function == Intrinsic::WarpSum { "tessera_warp_sum" } else { "tessera_warp_max" };
                match args.get(1) {
                    // the group's lane count is a constant: a template argument, so the butterfly unrolls
                    Some(_) => format!("{helper}<{}>({})", arg(1, Some(ThreadType::I32))?, arg(0, Some(ty))?),
                    None => format!("{helper}({})", arg(0, Some(ty))?),
                }
            }
            Intrinsic::WarpAny => format!("__any_sync(0xffffffff, {})", arg(0, Some(ThreadType::Bool))?),
            Intrinsic::WarpAll => format!("__all_sync(0xffffffff, {})", arg(0, Some(ThreadType::Bool))?),
            Intrinsic::BlockSum => format!("tessera_block_sum({}, tid, THREADS)", arg(0, Some(ty))?),
            Intrinsic::BlockMax => format!("tessera_block_max({}, tid, THREADS)", arg(0, Some(ty))?),
            Intrinsic::LastBlockOf => format!(
                "tessera_last_block_of({}, {}, tessera_tile_counters, tid)",
                arg(0, Some(ThreadType::I32))?,
                arg(1, Some(ThreadType::I32))?
            ),
            Intrinsic::ClusterSum => {
                format!("tessera_cluster_sum({}, tid, THREADS, {CLUSTER_STATE})", arg(0, Some(ty))?)
            }
            Intrinsic::ClusterMax => {
                format!("tessera_cluster_max({}, tid, THREADS, {CLUSTER_STATE})", arg(0, Some(ty))?)
            }
            Intrinsic::ClusterSoftmaxScale => {
                format!(
                    "tessera_cluster_softmax_scale({}, {}, tid, THREADS, {CLUSTER_STATE})",
                    arg(0, Some(ty))?,
                    arg(1, Some(ty))?
                )
            }
            Intrinsic::ClusterRank => "tessera_cluster_rank()".into(),
            Intrinsic::ShflUp => {
                format!("__shfl_up_sync(0xffffffff, {}, {})", arg(0, Some(ty))?, arg(1, Some(ThreadType::I32))?)
            }
            Intrinsic::ShflDown => {
                format!("__shfl_down_sync(0xffffffff, {}, {})", arg(0, Some(ty))?, arg(1, Some(ThreadType::I32))?)
            }
            Intrinsic::ShflXor => {
                format!("__shfl_xor_sync(0xffffffff, {}, {})", arg(0, Some(ty))?, arg(1, Some(ThreadType::I32))?)
            }
        };
        Ok((text, PRIMARY))
    }
}

/// `origin + offset + lane_part`, the constant left out when 0.
fn plus(origin: &str, offset: i64, lane_part: &str) -> String {
    if offset == 0 {
        format!("{origin} + {lane_part}")
    } else {
        format!("{origin} + {offset} + {lane_part}")
    }
}

/// Value `index` of a thread tile's `sub`-long sub-tiles spaced `part` apart (`split` of them),
/// the thread at `thread`: `index / sub * part + thread * sub + index % sub`.
fn thread_tile_position(thread: &str, index: &str, value: Option<i64>, sub: i64, part: i64, split: i64) -> String {
    match value {
        Some(v) => match v / sub * part + v % sub {
            0 => format!("{thread} * {sub}"),
            offset => format!("{thread} * {sub} + {offset}"),
        },
        None if split == 1 => format!("{thread} * {sub} + {index}"),
        None => format!("{index} / {sub} * {part} + {thread} * {sub} + {index} % {sub}"),
    }
}
