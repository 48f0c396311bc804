//! The functions thread code may call ([`Intrinsic`]): their names, arities and which of
//! them the warp, the block or the cluster must call together.

use super::*;

/// The functions thread code may call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Intrinsic {
    Sqrt,
    Exp,
    /// `2^x` (`exp2f`; `h2exp2`-style `hexp2` for 16-bit floats): softmax and attention
    /// exponentiate `x · log2(e)` with it.
    Exp2,
    /// `exp2_ftz(x)`: `exp2` of an f32 with results below f32's smallest normal (x < −126)
    /// flushed to zero — one MUFU.EX2 (`ex2.approx.ftz`), where `exp2` adds the instructions
    /// that keep subnormal results. For a softmax, whose values that small vanish beside the
    /// row's maximum of 1.
    Exp2Ftz,
    /// The natural logarithm (`logf`; `hlog` for 16-bit floats): a log-sum-exp, an entropy.
    Log,
    Tanh,
    /// The error function.
    Erf,
    /// `x·Φ(x)` with the error function (PyTorch's default GELU, not the tanh approximation); on
    /// f32 within a few millionths of it, relatively, down to x = −9.5 (17 instructions, no `erff`).
    Gelu,
    /// `x·σ(x) = x / (1 + e^−x)` (SiLU, swish).
    Silu,
    Abs,
    Min,
    Max,
    /// `cdiv(a, b)`: ⌈a / b⌉ of two integers (a ≥ 0, b > 0), as in index expressions, so an
    /// index alias such as `let tiles = cdiv(SQ, BQ);` is thread code too.
    Cdiv,
    Fma,
    /// The sum over the 32 lanes of the warp, in every lane (a `__shfl_xor_sync` butterfly);
    /// `warp_sum(v, LANES)` the sum over each aligned group of `LANES` lanes (a constant power
    /// of two, 2 ..= 32), in every lane of the group — a short row per 8 lanes, 4 rows a warp.
    ///
    /// ```ignore
    /// let group_max = warp_max(m, 8);   // lanes 0..8, 8..16, 16..24, 24..32 apart
    /// ```
    WarpSum,
    /// The maximum over the warp, in every lane; `warp_max(v, LANES)` over each aligned group
    /// of `LANES` lanes.
    WarpMax,
    /// `warp_any(condition)`: whether the condition holds in any lane of the warp, in every lane
    /// (one `__any_sync` vote) — a branch on it is taken by the whole warp, so the shuffles
    /// inside it have every lane.
    ///
    /// ```ignore
    /// if warp_any(mean * mean >= 8.0 * variance) { /* the exact pass, warp_sum(.., LANES) */ }
    /// ```
    WarpAny,
    /// `warp_all(condition)`: whether the condition holds in every lane of the warp, in every
    /// lane (one `__all_sync` vote).
    ///
    /// ```ignore
    /// if warp_all(c + 32 <= C) { /* the warp's whole run of columns, no guard */ }
    /// ```
    WarpAll,
    /// The sum over every thread of the block, in every thread (warp butterflies, then the
    /// warps' sums through shared memory); the whole block must call it.
    BlockSum,
    /// The maximum over every thread of the block, in every thread.
    BlockMax,
    /// `last_block_of(group, blocks)`: true in every thread of the block that is the last of
    /// the `blocks` blocks calling it with `group` (0 ≤ group < the grid's blocks) to get
    /// there, false in the others' — and that block then sees every write the others made
    /// before their call. A split reduction in one launch: each block writes its partial, the
    /// last of a group adds them (in a fixed order, so the result does not depend on which block
    /// is last). The counters live in the kernel's workspace and are left zero. The whole block
    /// calls it.
    ///
    /// ```ignore
    /// partials[[by, col]] = t;
    /// if last_block_of(bx, S) { y[col] = partials[[0, col]] + partials[[1, col]]; }
    /// ```
    LastBlockOf,
    /// `cluster_sum(v)`: the sum over every thread of the block's cluster (`cluster = ..`),
    /// the blocks' sums added in rank order; every thread of the cluster calls it.
    ClusterSum,
    /// `cluster_max(v)`: the maximum over every thread of the block's cluster.
    ClusterMax,
    /// `cluster_softmax_scale(m, s)`: a thread whose values x have `s` = Σ exp(x − m) gets
    /// exp(m − M) / S, M the maximum of the cluster's threads' `m` and S = Σ s·exp(m − M) over
    /// them — the factor that turns its exp(x − m) into the softmax of all the cluster's values.
    /// The (maximum, sum) pairs cross the cluster in one exchange, where `cluster_max` then
    /// `cluster_sum` take two; every thread of the cluster calls it.
    ///
    /// ```ignore
    /// for j in 0..ITEMS { v[j] = exp(v[j] - m); s += v[j]; }
    /// let scale = cluster_softmax_scale(m, s);   // y[j] = v[j] · scale
    /// ```
    ClusterSoftmaxScale,
    /// `cluster_rank()`: the block's rank in its cluster, 0 .. the cluster's blocks − 1.
    ClusterRank,
    /// `__shfl_up_sync(0xffffffff, v, delta)`: lane l gets lane l − delta's value (lanes below
    /// delta keep their own), as a stencil takes its left neighbour's last element.
    ShflUp,
    /// `__shfl_down_sync(0xffffffff, v, delta)`
    ShflDown,
    /// `__shfl_xor_sync(0xffffffff, v, mask)`
    ShflXor,
    /// The linear thread index within the block (`tid`).
    ThreadIndex,
    /// `tid % 32`
    Lane,
    /// `tid / 32`
    WarpIndex,
    /// `blockIdx.x`
    BlockIndex,
    /// `gridDim.x`
    BlockCount,
    /// `dot(a, b)` or `a.dot(b)`: the sum of the products of two vectors' elements (or a · b).
    Dot,
    /// `vector(v)`: a vector of `VECTOR` copies of `v` (to fill lane by lane, then store).
    Splat,
}

impl Intrinsic {
    pub const ALL: [Intrinsic; 35] = [
        Self::Sqrt,
        Self::Exp,
        Self::Exp2,
        Self::Exp2Ftz,
        Self::Log,
        Self::Tanh,
        Self::Erf,
        Self::Gelu,
        Self::Silu,
        Self::Abs,
        Self::Min,
        Self::Max,
        Self::Cdiv,
        Self::Fma,
        Self::WarpSum,
        Self::WarpMax,
        Self::WarpAny,
        Self::WarpAll,
        Self::BlockSum,
        Self::BlockMax,
        Self::LastBlockOf,
        Self::ClusterSum,
        Self::ClusterMax,
        Self::ClusterSoftmaxScale,
        Self::ClusterRank,
        Self::ShflUp,
        Self::ShflDown,
        Self::ShflXor,
        Self::ThreadIndex,
        Self::Lane,
        Self::WarpIndex,
        Self::BlockIndex,
        Self::BlockCount,
        Self::Dot,
        Self::Splat,
    ];

    /// The name thread code calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqrt => "sqrt",
            Self::Exp => "exp",
            Self::Exp2 => "exp2",
            Self::Exp2Ftz => "exp2_ftz",
            Self::Log => "log",
            Self::Tanh => "tanh",
            Self::Erf => "erf",
            Self::Gelu => "gelu",
            Self::Silu => "silu",
            Self::Abs => "abs",
            Self::Min => "min",
            Self::Max => "max",
            Self::Cdiv => "cdiv",
            Self::Fma => "fma",
            Self::WarpSum => "warp_sum",
            Self::WarpMax => "warp_max",
            Self::WarpAny => "warp_any",
            Self::WarpAll => "warp_all",
            Self::BlockSum => "block_sum",
            Self::BlockMax => "block_max",
            Self::LastBlockOf => "last_block_of",
            Self::ClusterSum => "cluster_sum",
            Self::ClusterMax => "cluster_max",
            Self::ClusterSoftmaxScale => "cluster_softmax_scale",
            Self::ClusterRank => "cluster_rank",
            Self::ShflUp => "shfl_up",
            Self::ShflDown => "shfl_down",
            Self::ShflXor => "shfl_xor",
            Self::ThreadIndex => "thread_index",
            Self::Lane => "lane",
            Self::WarpIndex => "warp_index",
            Self::BlockIndex => "block_index",
            Self::BlockCount => "block_count",
            Self::Dot => "dot",
            Self::Splat => "vector",
        }
    }

    /// The intrinsic called `name`.
    ///
    /// ```
    /// use tessera_dsl::Intrinsic;
    /// assert_eq!(Intrinsic::from_name("warp_sum"), Some(Intrinsic::WarpSum));
    /// assert_eq!(Intrinsic::from_name("printf"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.name() == name)
    }

    /// How many arguments it takes: `warp_sum` and `warp_max` take a lane count or none.
    ///
    /// ```
    /// use tessera_dsl::Intrinsic;
    /// assert_eq!(Intrinsic::WarpSum.arity(), 1..=2);
    /// assert_eq!(Intrinsic::Fma.arity(), 3..=3);
    /// ```
    pub fn arity(self) -> std::ops::RangeInclusive<usize> {
        let fixed = match self {
            Self::ThreadIndex
            | Self::Lane
            | Self::WarpIndex
            | Self::BlockIndex
            | Self::BlockCount
            | Self::ClusterRank => 0,
            Self::Sqrt
            | Self::Exp
            | Self::Exp2
            | Self::Exp2Ftz
            | Self::Log
            | Self::Tanh
            | Self::Erf
            | Self::Gelu
            | Self::Silu
            | Self::Abs
            | Self::WarpAny
            | Self::WarpAll
            | Self::Splat => 1,
            Self::WarpSum | Self::WarpMax => return 1..=2,
            Self::BlockSum | Self::BlockMax | Self::ClusterSum | Self::ClusterMax => 1,
            Self::Min
            | Self::Max
            | Self::Cdiv
            | Self::ShflUp
            | Self::ShflDown
            | Self::ShflXor
            | Self::Dot
            | Self::ClusterSoftmaxScale
            | Self::LastBlockOf => 2,
            Self::Fma => 3,
        };
        fixed..=fixed
    }

    /// [`Intrinsic::arity`] in words, for the messages: "1", "1 or 2".
    pub fn arity_in_words(self) -> String {
        let arity = self.arity();
        if arity.start() == arity.end() {
            arity.start().to_string()
        } else {
            format!("{} or {}", arity.start(), arity.end())
        }
    }

    /// Whether every lane of the warp must call it together.
    pub fn is_warp_collective(self) -> bool {
        matches!(
            self,
            Self::WarpSum
                | Self::WarpMax
                | Self::WarpAny
                | Self::WarpAll
                | Self::ShflUp
                | Self::ShflDown
                | Self::ShflXor
        ) || self.is_block_collective()
    }

    /// Whether every thread of the block must call it together (it waits at `__syncthreads`).
    pub fn is_block_collective(self) -> bool {
        matches!(self, Self::BlockSum | Self::BlockMax | Self::LastBlockOf) || self.is_cluster_collective()
    }

    /// Whether every thread of the block gets the same result, whatever each passed in: a
    /// block or cluster reduction, `last_block_of`.
    pub fn result_is_block_uniform(self) -> bool {
        matches!(self, Self::BlockSum | Self::BlockMax | Self::LastBlockOf | Self::ClusterSum | Self::ClusterMax)
    }

    /// Whether every thread of every block of the cluster must call it together (it waits at
    /// the cluster's barrier).
    pub fn is_cluster_collective(self) -> bool {
        matches!(self, Self::ClusterSum | Self::ClusterMax | Self::ClusterSoftmaxScale)
    }

    /// Whether it needs the kernel to run in clusters (`cluster = ..`).
    pub fn needs_cluster(self) -> bool {
        self.is_cluster_collective() || self == Self::ClusterRank
    }

    /// Every name, for the messages.
    pub fn names() -> String {
        Self::ALL.iter().map(|i| format!("`{}`", i.name())).collect::<Vec<_>>().join(", ")
    }
}
