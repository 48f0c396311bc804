//! Thread-level code inside a tile kernel: `let` bindings, assignments, `if`, `for` over
//! ranges, arithmetic, indexing of tensors and shared buffers, math intrinsics, warp
//! shuffles and atomics — each with one CUDA C counterpart. Plain data, typed by [`TypeEnv`]
//! (the same rules for validation and for rendering).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Access, Diagnostic, ElementType, Kernel, Origin, ParamKind, Statement};

/// One statement of per-thread code.
///
/// ```
/// use tessera_dsl::{ThreadExpr, ThreadStatement, ThreadStatementKind};
/// let s = ThreadStatement::new(ThreadStatementKind::Assign {
///     place: ThreadExpr::name("s"), op: Some(tessera_dsl::ThreadOp::Add), value: ThreadExpr::name("v"),
/// });
/// assert_eq!(s.to_string(), "s += v;");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStatement {
    pub kind: ThreadStatementKind,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadStatementKind {
    /// `let mut s = 0.0f32;` or `let s: f64 = ..;`
    Let { name: String, mutable: bool, ty: Option<ThreadType>, init: ThreadExpr },
    /// `place = value;` or, with `op`, `place op= value;`
    Assign { place: ThreadExpr, op: Option<ThreadOp>, value: ThreadExpr },
    /// `if condition { .. } else { .. }`
    If { condition: ThreadExpr, then: Vec<ThreadStatement>, otherwise: Vec<ThreadStatement> },
    /// `for var in start..end { .. }` or `for var in (start..end).step_by(step) { .. }`
    For { var: String, start: ThreadExpr, end: ThreadExpr, step: Option<ThreadExpr>, body: Vec<ThreadStatement> },
    /// `atomic_add(&y[i], value);`
    AtomicAdd { place: ThreadExpr, value: ThreadExpr },
    /// `let mut v = [0.0f32; ITEMS];`: `len` registers of the thread, each starting at `init`,
    /// indexed `v[j]` (held in registers when every index is known after unrolling: loops
    /// with constant bounds unroll).
    LetArray { name: String, mutable: bool, len: crate::Expr, init: ThreadExpr },
}

/// The type of a thread-level value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadType {
    Scalar(ElementType),
    Bool,
    /// `VECTOR` elements loaded at once by `x.vector(i)` (`float4` at vector = 4).
    Vector(ElementType),
}

impl ThreadType {
    pub const F32: Self = Self::Scalar(ElementType::F32);
    pub const F64: Self = Self::Scalar(ElementType::F64);
    pub const I32: Self = Self::Scalar(ElementType::I32);
    pub const U32: Self = Self::Scalar(ElementType::U32);

    /// `f32`, `f64`, `i32`, `u32` or `bool`.
    pub fn from_rust_name(name: &str) -> Option<Self> {
        if name == "bool" {
            return Some(Self::Bool);
        }
        ElementType::from_rust_name(name).map(Self::Scalar)
    }

    /// `f32`, `f64`, `f16` or `bf16`: float literals take it, the float functions accept it.
    pub fn is_float(self) -> bool {
        matches!(self, Self::Scalar(ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16))
    }

    /// `f16` or `bf16`: arithmetic rounds to 16 bits after each operation, as CUDA's
    /// `__half` / `__nv_bfloat16` operators do.
    pub fn is_half(self) -> bool {
        matches!(self, Self::Scalar(ElementType::F16 | ElementType::BF16))
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Self::Scalar(ElementType::I32 | ElementType::U32))
    }
}

impl std::fmt::Display for ThreadType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scalar(element) => element.fmt(f),
            Self::Bool => f.write_str("bool"),
            Self::Vector(element) => write!(f, "vector of {element}"),
        }
    }
}

/// A thread-level expression.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadExpr {
    pub kind: ThreadExprKind,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadExprKind {
    /// `3`, `3u32`: without a suffix an integer literal takes the integer type beside it (i32 alone).
    Int {
        value: i64,
        suffix: Option<ElementType>,
    },
    /// `0.5`, `0.5f64`, kept as written: without a suffix it takes the float type beside it (f32 alone).
    Float {
        text: String,
        suffix: Option<ElementType>,
    },
    Bool(bool),
    /// `f32::INFINITY` or `f64::INFINITY` (negate it for −∞).
    Infinity(ElementType),
    /// A local, a parameter, a constant, a shape symbol, a block index or a loop variable.
    Name(String),
    /// `x[i]` (1-D tensor), `u[[r, c]]` (2-D tensor or shared buffer).
    Index {
        base: String,
        indices: Vec<ThreadExpr>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<ThreadExpr>,
    },
    Binary {
        op: ThreadOp,
        lhs: Box<ThreadExpr>,
        rhs: Box<ThreadExpr>,
    },
    /// `value as f32`
    Cast {
        value: Box<ThreadExpr>,
        to: ThreadType,
    },
    Call {
        function: Intrinsic,
        args: Vec<ThreadExpr>,
    },
    /// `x.vector(i)`: elements `i * VECTOR ..` of a 1-D tensor in one access; `x.vector([r, i])`:
    /// those of row `r` of a 2-D tensor; `x.vector_at([r, c])`: elements `c ..` of row `r`
    /// (see [`VectorStart`]). As the place of an assignment, one vector store.
    VectorLoad {
        tensor: String,
        row: Option<Box<ThreadExpr>>,
        index: Box<ThreadExpr>,
        start: VectorStart,
    },
    /// `x.align_offset([r, c])` (`x.align_offset(c)` for a 1-D tensor): how many elements from
    /// element c of row r to the first one where a VECTOR access is aligned (an `i32`, 0 ..
    /// VECTOR − 1; 0 when VECTOR is 1) — like Rust's `pointer::align_offset`. Rows whose leading
    /// dimension is not a multiple of VECTOR start at different offsets; a kernel reads a
    /// row's first `x.align_offset([r, 0])` elements one by one and vectors from there on.
    AlignOffset {
        tensor: String,
        row: Option<Box<ThreadExpr>>,
        column: Box<ThreadExpr>,
    },
    /// `v.sum()`: the sum of a vector's elements.
    VectorSum(Box<ThreadExpr>),
    /// `y.leading_dimension()`: elements from one row of a 2-D tensor to the next (an `i32`;
    /// the column count when dense), e.g. to find where a row's 32-byte sectors start.
    LeadingDimension(String),
    /// `s.row(i)`, `s.col(j)`, `s.row_max(i)`, `s.row_sum(i)`: about value slot `slot` of the
    /// calling thread's share of fragment `fragment` (see [`SlotQuery`]).
    FragmentSlot {
        fragment: String,
        query: SlotQuery,
        slot: Box<ThreadExpr>,
    },
}

/// Where a vector access starts: at a vector index, or at an element.
///
/// ```
/// use tessera_dsl::VectorStart;
/// assert_eq!(VectorStart::Element.method(), "vector_at");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VectorStart {
    /// `x.vector([r, i])`: elements i·VECTOR .. of row r. Every row must start aligned for a
    /// VECTOR access: the launch narrows VECTOR for a tensor whose rows do not.
    Vector,
    /// `x.vector_at([r, c])`: elements c .. of row r, at an element the kernel found aligned
    /// (from `x.align_offset([r, 0])` on, in steps of VECTOR); a misaligned one faults on the
    /// GPU and stops the simulation. Rows need not start aligned.
    Element,
}

impl VectorStart {
    /// The method thread code writes it with.
    pub fn method(self) -> &'static str {
        match self {
            Self::Vector => "vector",
            Self::Element => "vector_at",
        }
    }
}

/// What thread code asks of a fragment's value slot: where it lies in the block tile, or a
/// reduction over its block-tile row.
///
/// A thread holds `slots` values of a fragment, `acc[[i, j]]` with i < row slots and
/// j < column slots: the thread tile for `.thread_tile([TM, TN])`, WM / 8 × WN / 4 per lane for
/// `.warp_tile([WM, WN])` (two rows of each 16-row mma tile, two columns of each 8-column one)
/// and 2 × WN / 4 for `.warpgroup_tile([64, WN])`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlotQuery {
    /// `s.row(i)`: the block-tile row of row slot i (an `i32`).
    Row,
    /// `s.col(j)`: the block-tile column of column slot j (an `i32`).
    Col,
    /// `s.row_max(i)`: the maximum over the whole block-tile row of row slot i, in every lane
    /// that holds part of it (a warp collective).
    RowMax,
    /// `s.row_sum(i)`: the sum over that row, in a fixed order (a warp collective).
    RowSum,
}

impl SlotQuery {
    pub const ALL: [SlotQuery; 4] = [Self::Row, Self::Col, Self::RowMax, Self::RowSum];

    /// The method name thread code calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::Row => "row",
            Self::Col => "col",
            Self::RowMax => "row_max",
            Self::RowSum => "row_sum",
        }
    }

    /// The query called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|q| q.name() == name)
    }

    /// Whether the slot is a column slot (`col`) rather than a row slot.
    pub fn is_column(self) -> bool {
        self == Self::Col
    }

    /// Whether the lanes sharing a row must call it together (it shuffles between them).
    pub fn is_warp_collective(self) -> bool {
        matches!(self, Self::RowMax | Self::RowSum)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnaryOp {
    Neg,
    Not,
}

/// Binary operators, with C's (and Rust's) precedence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl ThreadOp {
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Add => "+",
            Self::Sub => "-",
            Self::Mul => "*",
            Self::Div => "/",
            Self::Rem => "%",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::And => "&&",
            Self::Or => "||",
            Self::BitAnd => "&",
            Self::BitOr => "|",
            Self::BitXor => "^",
            Self::Shl => "<<",
            Self::Shr => ">>",
        }
    }

    /// C's binding strength (higher binds tighter).
    pub fn precedence(self) -> u8 {
        match self {
            Self::Mul | Self::Div | Self::Rem => 10,
            Self::Add | Self::Sub => 9,
            Self::Shl | Self::Shr => 8,
            Self::Lt | Self::Le | Self::Gt | Self::Ge => 7,
            Self::Eq | Self::Ne => 6,
            Self::BitAnd => 5,
            Self::BitXor => 4,
            Self::BitOr => 3,
            Self::And => 2,
            Self::Or => 1,
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, Self::Lt | Self::Le | Self::Gt | Self::Ge | Self::Eq | Self::Ne)
    }

    pub fn is_arithmetic(self) -> bool {
        matches!(self, Self::Add | Self::Sub | Self::Mul | Self::Div | Self::Rem)
    }
}

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
    /// `x·Φ(x)` with the error function (PyTorch's default GELU, not the tanh approximation).
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
    /// The sum over the 32 lanes of the warp, in every lane (a `__shfl_xor_sync` butterfly).
    WarpSum,
    /// The maximum over the warp, in every lane.
    WarpMax,
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
    pub const ALL: [Intrinsic; 33] = [
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

    pub fn arity(self) -> usize {
        match self {
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
            | Self::Splat => 1,
            Self::WarpSum | Self::WarpMax | Self::BlockSum | Self::BlockMax | Self::ClusterSum | Self::ClusterMax => 1,
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
        }
    }

    /// Whether every lane of the warp must call it together.
    pub fn is_warp_collective(self) -> bool {
        matches!(self, Self::WarpSum | Self::WarpMax | Self::ShflUp | Self::ShflDown | Self::ShflXor)
            || self.is_block_collective()
    }

    /// Whether every thread of the block must call it together (it waits at `__syncthreads`).
    pub fn is_block_collective(self) -> bool {
        matches!(self, Self::BlockSum | Self::BlockMax | Self::LastBlockOf) || self.is_cluster_collective()
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

impl ThreadExpr {
    pub fn new(kind: ThreadExprKind) -> Self {
        Self { kind, origin: Origin::default() }
    }

    pub fn name(name: impl Into<String>) -> Self {
        Self::new(ThreadExprKind::Name(name.into()))
    }

    pub fn int(value: i64) -> Self {
        Self::new(ThreadExprKind::Int { value, suffix: None })
    }

    /// Every sub-expression, this one first.
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(&'a ThreadExpr)) {
        visit(self);
        match &self.kind {
            ThreadExprKind::Int { .. }
            | ThreadExprKind::Float { .. }
            | ThreadExprKind::Bool(_)
            | ThreadExprKind::Infinity(_) => {}
            ThreadExprKind::Name(_) | ThreadExprKind::LeadingDimension(_) => {}
            ThreadExprKind::Index { indices, .. } => indices.iter().for_each(|i| i.walk(visit)),
            ThreadExprKind::Unary { operand, .. } => operand.walk(visit),
            ThreadExprKind::Binary { lhs, rhs, .. } => {
                lhs.walk(visit);
                rhs.walk(visit);
            }
            ThreadExprKind::Cast { value, .. } => value.walk(visit),
            ThreadExprKind::Call { args, .. } => args.iter().for_each(|a| a.walk(visit)),
            ThreadExprKind::VectorLoad { row, index, .. } | ThreadExprKind::AlignOffset { row, column: index, .. } => {
                if let Some(row) = row {
                    row.walk(visit);
                }
                index.walk(visit)
            }
            ThreadExprKind::VectorSum(value) => value.walk(visit),
            ThreadExprKind::FragmentSlot { slot, .. } => slot.walk(visit),
        }
    }

    /// The name of the warp collective this node is (`warp_sum`, `s.row_max`, ..), if it is
    /// one: every lane of the warp must evaluate it together.
    pub fn warp_collective(&self) -> Option<String> {
        match &self.kind {
            ThreadExprKind::Call { function, .. } if function.is_warp_collective() => Some(function.name().to_string()),
            ThreadExprKind::FragmentSlot { fragment, query, .. } if query.is_warp_collective() => {
                Some(format!("{fragment}.{}", query.name()))
            }
            _ => None,
        }
    }
}

impl ThreadStatement {
    pub fn new(kind: ThreadStatementKind) -> Self {
        Self { kind, origin: Origin::default() }
    }

    /// Every expression of the statement and of the statements inside it.
    pub fn expressions(&self) -> Vec<&ThreadExpr> {
        let mut out = Vec::new();
        match &self.kind {
            ThreadStatementKind::Let { init, .. } | ThreadStatementKind::LetArray { init, .. } => out.push(init),
            ThreadStatementKind::Assign { place, value, .. } | ThreadStatementKind::AtomicAdd { place, value } => {
                out.push(place);
                out.push(value);
            }
            ThreadStatementKind::If { condition, then, otherwise } => {
                out.push(condition);
                for s in then.iter().chain(otherwise) {
                    out.extend(s.expressions());
                }
            }
            ThreadStatementKind::For { start, end, step, body, .. } => {
                out.push(start);
                out.push(end);
                out.extend(step);
                for s in body {
                    out.extend(s.expressions());
                }
            }
        }
        out
    }

    /// The names indexed (read or written) anywhere in the statement, and those written.
    pub fn indexed(&self) -> (Vec<String>, Vec<String>) {
        let mut all = Vec::new();
        for expr in self.expressions() {
            expr.walk(&mut |e| match &e.kind {
                ThreadExprKind::Index { base, .. } => all.push(base.clone()),
                ThreadExprKind::VectorLoad { tensor, .. } => all.push(tensor.clone()),
                _ => {}
            });
        }
        let mut written = Vec::new();
        self.collect_written(&mut written);
        let read = all.into_iter().filter(|name| !written.contains(name) || self.reads_back(name)).collect();
        (read, written)
    }

    fn collect_written(&self, out: &mut Vec<String>) {
        match &self.kind {
            ThreadStatementKind::Assign { place, .. } | ThreadStatementKind::AtomicAdd { place, .. } => {
                if let ThreadExprKind::Index { base, .. } | ThreadExprKind::VectorLoad { tensor: base, .. } =
                    &place.kind
                {
                    out.push(base.clone());
                }
            }
            ThreadStatementKind::If { then, otherwise, .. } => {
                then.iter().chain(otherwise).for_each(|s| s.collect_written(out))
            }
            ThreadStatementKind::For { body, .. } => body.iter().for_each(|s| s.collect_written(out)),
            ThreadStatementKind::Let { .. } | ThreadStatementKind::LetArray { .. } => {}
        }
    }

    /// Whether `name` is read anywhere other than as the place of an assignment.
    fn reads_back(&self, name: &str) -> bool {
        let mut found = false;
        let mut look = |e: &ThreadExpr| {
            e.walk(&mut |e| {
                if matches!(&e.kind, ThreadExprKind::Index { base, .. } | ThreadExprKind::VectorLoad { tensor: base, .. } if base == name) {
                    found = true;
                }
            })
        };
        match &self.kind {
            ThreadStatementKind::Let { init, .. } | ThreadStatementKind::LetArray { init, .. } => look(init),
            ThreadStatementKind::Assign { place, op, value } => {
                look(value);
                if op.is_some() {
                    look(place);
                }
                if let ThreadExprKind::Index { indices, .. } = &place.kind {
                    indices.iter().for_each(&mut look);
                }
            }
            ThreadStatementKind::AtomicAdd { place, value } => {
                look(value);
                if let ThreadExprKind::Index { indices, .. } = &place.kind {
                    indices.iter().for_each(&mut look);
                }
            }
            ThreadStatementKind::If { condition, then, otherwise } => {
                look(condition);
                found |= then.iter().chain(otherwise).any(|s| s.reads_back(name));
            }
            ThreadStatementKind::For { start, end, step, body, .. } => {
                look(start);
                look(end);
                step.iter().for_each(&mut look);
                found |= body.iter().any(|s| s.reads_back(name));
            }
        }
        found
    }
}

/// What a name denotes in thread code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A global tensor of this element type and rank; `writable` for `GlobalMut`.
    Tensor { element: ElementType, shape: Vec<String>, writable: bool },
    /// A shared buffer (2-D).
    Shared { element: ElementType },
    /// A register fragment: thread code indexes the calling thread's own values,
    /// `acc[[i, j]]` with i < its row slots and j < its column slots (see [`FragmentSlots`]),
    /// e.g. for an epilogue, and asks `acc.row(i)`, `acc.col(j)`, `acc.row_max(i)`,
    /// `acc.row_sum(i)`.
    Fragment { element: ElementType, slots: Option<FragmentSlots> },
    /// A value: a local (mutable or not), a scalar parameter, a constant, an index.
    Value { ty: ThreadType, mutable: bool },
    /// A register array `let mut v = [0.0f32; ITEMS];` of `len` elements (when constant).
    Registers { element: ElementType, len: Option<i64>, mutable: bool },
}

/// The value slots each thread holds of a fragment whose layout is constant: its thread tile
/// `[TM, TN]`, or per lane WM / 8 × WN / 4 of a `.warp_tile([WM, WN])` (2 × WN / 4 of a
/// `.warpgroup_tile([64, WN])`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FragmentSlots {
    /// The distribution as written, for messages: `thread_tile([TM, TN])`, `warp_tile([WM, WN])`.
    pub declared: String,
    /// Row slots and column slots of one thread.
    pub values: [i64; 2],
    /// The fragment's resolved geometry.
    pub layout: crate::FragmentLayout,
}

impl FragmentSlots {
    /// "a thread's tile", or "a lane's values" for the tensor-core layouts (for messages).
    fn holder(&self) -> &'static str {
        if self.layout.warp_tile.is_some() {
            "this lane's values"
        } else {
            "this thread's tile"
        }
    }

    /// The out-of-range message for a literal `what` slot `value` (`bound` slots exist).
    fn outside(&self, base: &str, what: &str, value: i64, bound: i64) -> String {
        let [rows, cols] = self.values;
        let per = if self.layout.warpgroup_tile.is_some() {
            format!("{} gives each lane 2 × {cols} values (its warp's 16 rows: 2; WN / 4 columns)", self.declared)
        } else if self.layout.warp_tile.is_some() {
            format!("{} gives each lane {rows} × {cols} values (WM / 8 rows, WN / 4 columns)", self.declared)
        } else {
            format!("{} is {rows} × {cols}", self.declared)
        };
        format!(
            "{what} {value} of fragment `{base}` is outside {}: {per}, so {what}s 0 to {}",
            self.holder(),
            bound - 1
        )
    }
}

impl Binding {
    /// The binding of a fragment declaration, its slots resolved when its layout is constant.
    pub fn fragment(fragment: &crate::Fragment, kernel: &Kernel) -> Self {
        let list = |extents: &[crate::Expr]| extents.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
        let declared = match (&fragment.warpgroup_tile, &fragment.warp_tile) {
            (Some(tile), _) => format!("warpgroup_tile([{}])", list(tile)),
            (None, Some(tile)) => format!("warp_tile([{}])", list(tile)),
            (None, None) => format!("thread_tile([{}])", list(&fragment.thread_tile)),
        };
        let slots = crate::FragmentLayout::of(fragment, kernel)
            .filter(|layout| layout.thread_rows > 0 && layout.thread_cols > 0)
            .map(|layout| FragmentSlots { declared, values: [layout.thread_rows, layout.thread_cols], layout });
        Binding::Fragment { element: fragment.element, slots }
    }
}

/// The names in scope and their types; the type rules of thread code.
///
/// ```
/// use tessera_dsl::{ThreadExpr, ThreadExprKind, ThreadType, TypeEnv};
/// let mut env = TypeEnv::default();
/// env.bind_value("s", ThreadType::F64, true);
/// let half = ThreadExpr::new(ThreadExprKind::Float { text: "0.5".into(), suffix: None });
/// let sum = ThreadExpr::new(ThreadExprKind::Binary {
///     op: tessera_dsl::ThreadOp::Mul, lhs: Box::new(ThreadExpr::name("s")), rhs: Box::new(half),
/// });
/// assert_eq!(env.type_of(&sum), Ok(ThreadType::F64)); // the literal takes f64 from `s`
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeEnv {
    names: BTreeMap<String, Binding>,
    /// The values of `THREADS`, `VECTOR` and the kernel's constants (register array lengths).
    constants: BTreeMap<String, i64>,
}

impl TypeEnv {
    /// Parameters, shape symbols, constants, `THREADS` and `VECTOR`.
    pub fn of_kernel(kernel: &Kernel) -> Self {
        let mut env = Self::default();
        for name in ["THREADS", "VECTOR"] {
            env.bind_value(name, ThreadType::I32, false);
        }
        env.constants.insert("THREADS".into(), kernel.config.threads.count() as i64);
        env.constants.insert("VECTOR".into(), i64::from(kernel.config.vector.get()));
        for constant in &kernel.config.constants {
            env.bind_value(&constant.name, ThreadType::I32, false);
            env.constants.insert(constant.name.clone(), constant.value);
        }
        for symbol in kernel.shape_symbols() {
            env.bind_value(symbol, ThreadType::I32, false);
        }
        for param in &kernel.params {
            let binding = match &param.kind {
                ParamKind::Global(tensor) => Binding::Tensor {
                    element: tensor.element,
                    shape: tensor.shape.iter().map(|(s, _)| s.clone()).collect(),
                    writable: tensor.access == Access::Writable,
                },
                ParamKind::Scalar(element) => Binding::Value { ty: ThreadType::Scalar(*element), mutable: false },
            };
            env.names.insert(param.name.clone(), binding);
        }
        env
    }

    pub fn bind_value(&mut self, name: &str, ty: ThreadType, mutable: bool) {
        self.names.insert(name.to_string(), Binding::Value { ty, mutable });
    }

    pub fn bind(&mut self, name: &str, binding: Binding) {
        self.names.insert(name.to_string(), binding);
    }

    pub fn get(&self, name: &str) -> Option<&Binding> {
        self.names.get(name)
    }

    /// The number of elements of a register array declared `[init; len]`, or why it has none.
    ///
    /// ```
    /// use tessera_dsl::{Expr, TypeEnv};
    /// let env = TypeEnv::default().with_constant("ITEMS", 16);
    /// let len = Expr::binary(tessera_dsl::BinaryOp::Div, Expr::name("ITEMS"), Expr::int(4));
    /// assert_eq!(env.array_length(&len), Ok(4));
    /// assert!(env.array_length(&Expr::name("N")).is_err()); // not a constant
    /// ```
    pub fn array_length(&self, len: &crate::Expr) -> Result<i64, String> {
        let mut scope = crate::Scope::default();
        for (name, value) in &self.constants {
            scope.insert(name.clone(), *value);
        }
        len.eval(&scope).map_err(|_| {
            format!("the length of a register array is a constant (`consts(..)`, `THREADS`, `VECTOR`); `{len}` is not")
        })
    }

    /// This environment with constant `name` = `value` (for tests and examples).
    pub fn with_constant(mut self, name: &str, value: i64) -> Self {
        self.bind_value(name, ThreadType::I32, false);
        self.constants.insert(name.into(), value);
        self
    }

    /// Names in scope, for messages.
    pub fn known(&self) -> String {
        self.names.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The type of `expr`, or why it has none.
    pub fn type_of(&self, expr: &ThreadExpr) -> Result<ThreadType, Diagnostic> {
        self.typed(expr, None)
    }

    /// The type of `expr` where the context expects `wanted` (unsuffixed literals take it).
    pub fn type_with(&self, expr: &ThreadExpr, wanted: Option<ThreadType>) -> Result<ThreadType, Diagnostic> {
        self.typed(expr, wanted)
    }

    fn typed(&self, expr: &ThreadExpr, wanted: Option<ThreadType>) -> Result<ThreadType, Diagnostic> {
        let error = |message: String| Diagnostic::new(expr.origin, message);
        match &expr.kind {
            ThreadExprKind::Int { suffix: Some(element), .. } => Ok(ThreadType::Scalar(*element)),
            ThreadExprKind::Int { .. } => Ok(match wanted {
                Some(t) if t.is_integer() => t,
                _ => ThreadType::I32,
            }),
            ThreadExprKind::Float { suffix: Some(element), .. } => Ok(ThreadType::Scalar(*element)),
            ThreadExprKind::Float { .. } => Ok(match wanted {
                Some(t) if t.is_float() => t,
                _ => ThreadType::F32,
            }),
            ThreadExprKind::Bool(_) => Ok(ThreadType::Bool),
            ThreadExprKind::Infinity(element) => match element {
                ElementType::F32 | ElementType::F64 => Ok(ThreadType::Scalar(*element)),
                other => Err(error(format!("{other} has no infinity; `f32::INFINITY` or `f64::INFINITY`"))),
            },
            ThreadExprKind::Name(name) => {
                match self.names.get(name) {
                    Some(Binding::Value { ty, .. }) => Ok(*ty),
                    Some(Binding::Tensor { .. }) => Err(error(format!(
                    "`{name}` is a tensor; thread code reads its elements: `{name}[i]` (1-D) or `{name}[[r, c]]` (2-D)"
                ))),
                    Some(Binding::Shared { .. }) => Err(error(format!(
                        "`{name}` is a shared buffer; thread code reads its elements: `{name}[[r, c]]`"
                    ))),
                    Some(Binding::Fragment { .. }) => Err(error(format!(
                        "`{name}` is a fragment; thread code reads this thread's values: `{name}[[i, j]]`"
                    ))),
                    Some(Binding::Registers { .. }) => Err(error(format!(
                        "`{name}` is a register array; thread code reads and writes its elements: `{name}[j]`"
                    ))),
                    None => Err(error(format!("unknown name `{name}`"))
                        .with_hint(format!("names in scope here: {}", self.known()))),
                }
            }
            ThreadExprKind::Index { base, indices } => {
                for index in indices {
                    let ty = self.typed(index, Some(ThreadType::I32))?;
                    if !ty.is_integer() {
                        return Err(Diagnostic::new(index.origin, format!("an index is an integer; this is {ty}"))
                            .with_hint("convert it with `as i32`"));
                    }
                }
                match self.names.get(base) {
                    Some(Binding::Tensor { element, shape, .. }) => {
                        if indices.len() != shape.len() {
                            let form = match shape.len() {
                                1 => format!("{base}[i]"),
                                2 => format!("{base}[[r, c]]"),
                                _ => format!(
                                    "{base}[[{}]]",
                                    shape.iter().map(|s| s.to_lowercase()).collect::<Vec<_>>().join(", ")
                                ),
                            };
                            return Err(error(format!(
                                "`{base}` has {} dimension(s) but is indexed with {}",
                                shape.len(),
                                indices.len()
                            ))
                            .with_hint(format!("write `{form}`")));
                        }
                        Ok(ThreadType::Scalar(*element))
                    }
                    Some(Binding::Shared { element }) => {
                        if indices.len() != 2 {
                            return Err(error(format!("shared buffer `{base}` is 2-D; index it as `{base}[[r, c]]`")));
                        }
                        Ok(ThreadType::Scalar(*element))
                    }
                    Some(Binding::Fragment { element, slots }) => {
                        if indices.len() != 2 {
                            return Err(error(format!(
                                "fragment `{base}` is indexed by this thread's row and column slot: `{base}[[i, j]]`"
                            )));
                        }
                        // a literal index past the slots names a register the thread does not have
                        if let Some(slots) = slots {
                            for ((index, bound), what) in indices.iter().zip(slots.values).zip(["row", "column"]) {
                                if let ThreadExprKind::Int { value, .. } = index.kind {
                                    if value < 0 || value >= bound {
                                        return Err(Diagnostic::new(
                                            index.origin,
                                            slots.outside(base, what, value, bound),
                                        ));
                                    }
                                }
                            }
                        }
                        Ok(ThreadType::Scalar(*element))
                    }
                    Some(Binding::Registers { element, len, .. }) => {
                        if indices.len() != 1 {
                            return Err(error(format!("register array `{base}` is 1-D; index it as `{base}[j]`")));
                        }
                        if let (ThreadExprKind::Int { value, .. }, Some(len)) = (&indices[0].kind, len) {
                            if *value < 0 || value >= len {
                                return Err(Diagnostic::new(
                                    indices[0].origin,
                                    format!("index {value} is outside register array `{base}` of {len} elements"),
                                ));
                            }
                        }
                        Ok(ThreadType::Scalar(*element))
                    }
                    Some(Binding::Value { ty: ThreadType::Vector(element), .. }) => {
                        if indices.len() != 1 {
                            return Err(error(format!("vector `{base}` has lanes `{base}[k]`, k < VECTOR")));
                        }
                        Ok(ThreadType::Scalar(*element))
                    }
                    Some(Binding::Value { ty, .. }) => Err(error(format!(
                        "`{base}` is a {ty} value, not a tensor or shared buffer: it has no elements"
                    ))),
                    None => Err(error(format!("unknown tensor `{base}`"))
                        .with_hint(format!("names in scope here: {}", self.known()))),
                }
            }
            ThreadExprKind::Unary { op: UnaryOp::Neg, operand } => {
                let ty = self.typed(operand, wanted)?;
                match ty {
                    ThreadType::Scalar(ElementType::U32) | ThreadType::Bool | ThreadType::Vector(_) => {
                        Err(error(format!("`-` needs a signed number; this is {ty}")))
                    }
                    _ => Ok(ty),
                }
            }
            ThreadExprKind::Unary { op: UnaryOp::Not, operand } => {
                let ty = self.typed(operand, wanted)?;
                match ty {
                    ThreadType::Bool | ThreadType::Scalar(ElementType::I32 | ElementType::U32) => Ok(ty),
                    _ => Err(error(format!("`!` needs a bool or an integer; this is {ty}"))),
                }
            }
            ThreadExprKind::Binary { op, lhs, rhs } => {
                let operand_wanted =
                    if op.is_comparison() || matches!(op, ThreadOp::And | ThreadOp::Or) { None } else { wanted };
                let (l, r) = self.pair(lhs, rhs, operand_wanted)?;
                if matches!(op, ThreadOp::And | ThreadOp::Or) {
                    if l != ThreadType::Bool || r != ThreadType::Bool {
                        return Err(error(format!("`{}` joins two bools; these are {l} and {r}", op.symbol())));
                    }
                    return Ok(ThreadType::Bool);
                }
                if l != r {
                    return Err(error(format!("mismatched types: `{}` between {l} and {r}", op.symbol())).with_hint(
                        format!("convert one side with `as {l}` or `as {r}`: thread code never converts implicitly"),
                    ));
                }
                if matches!(l, ThreadType::Vector(_)) {
                    return Err(error(
                        "vectors from `.vector(i)` support `.sum()` only; there is no vector arithmetic".into(),
                    ));
                }
                if op.is_comparison() {
                    return Ok(ThreadType::Bool);
                }
                let bitwise =
                    matches!(op, ThreadOp::BitAnd | ThreadOp::BitOr | ThreadOp::BitXor | ThreadOp::Shl | ThreadOp::Shr);
                if bitwise
                    && !l.is_integer()
                    && !(l == ThreadType::Bool && !matches!(op, ThreadOp::Shl | ThreadOp::Shr))
                {
                    return Err(error(format!("`{}` needs integers; these are {l}", op.symbol())));
                }
                if op.is_arithmetic() && l == ThreadType::Bool {
                    return Err(error(format!("`{}` needs numbers; these are bools", op.symbol())));
                }
                if *op == ThreadOp::Rem && l.is_half() {
                    return Err(error(format!("`%` of {l} values: CUDA has no 16-bit remainder"))
                        .with_hint("compute it in f32"));
                }
                Ok(l)
            }
            ThreadExprKind::Cast { value, to } => {
                let from = self.typed(value, None)?;
                match (from, to) {
                    (ThreadType::Scalar(_), ThreadType::Scalar(_)) | (ThreadType::Bool, ThreadType::Scalar(_)) => {
                        Ok(*to)
                    }
                    _ => Err(error(format!("cannot convert {from} to {to}"))),
                }
            }
            ThreadExprKind::Call { function, args } => self.call(expr, *function, args, wanted),
            ThreadExprKind::AlignOffset { tensor, row, column } => {
                for index in row.iter().map(|r| &**r).chain([&**column]) {
                    let ty = self.typed(index, Some(ThreadType::I32))?;
                    if !ty.is_integer() {
                        return Err(Diagnostic::new(index.origin, format!("an index is an integer; this is {ty}")));
                    }
                }
                match (self.names.get(tensor), row) {
                    (Some(Binding::Tensor { shape, .. }), None) if shape.len() == 1 => Ok(ThreadType::I32),
                    (Some(Binding::Tensor { shape, .. }), Some(_)) if shape.len() == 2 => Ok(ThreadType::I32),
                    (Some(Binding::Tensor { shape, .. }), _) if shape.len() == 2 => Err(error(format!(
                        "`{tensor}` is 2-D: `{tensor}.align_offset([r, c])` counts from element c of row r"
                    ))),
                    (Some(Binding::Tensor { .. }), _) => Err(error(format!(
                        "`.align_offset(..)` is for a 1-D tensor (`{tensor}.align_offset(c)`) or a 2-D one (`{tensor}.align_offset([r, c])`)"
                    ))),
                    _ => Err(error(format!("`.align_offset(..)` is about a tensor parameter; `{tensor}` is not one"))),
                }
            }
            ThreadExprKind::VectorLoad { tensor, row, index, start } => {
                let method = start.method();
                for index in row.iter().map(|r| &**r).chain([&**index]) {
                    let ty = self.typed(index, Some(ThreadType::I32))?;
                    if !ty.is_integer() {
                        return Err(Diagnostic::new(index.origin, format!("an index is an integer; this is {ty}")));
                    }
                }
                match (self.names.get(tensor), row) {
                    (Some(Binding::Tensor { element, shape, .. }), None) if shape.len() == 1 => {
                        Ok(ThreadType::Vector(*element))
                    }
                    (Some(Binding::Tensor { element, shape, .. }), Some(_)) if shape.len() == 2 => {
                        Ok(ThreadType::Vector(*element))
                    }
                    (Some(Binding::Tensor { shape, .. }), _) if shape.len() == 2 => Err(error(match start {
                        VectorStart::Vector => format!("`{tensor}` is 2-D: `{tensor}.vector([r, i])` is elements i·VECTOR .. of row r"),
                        VectorStart::Element => format!("`{tensor}` is 2-D: `{tensor}.vector_at([r, c])` is elements c .. of row r"),
                    })),
                    (Some(Binding::Tensor { shape, .. }), _) if shape.len() > 2 => Err(error(format!(
                        "`{tensor}` has rank {}: `.{method}(..)` loads from a 1-D or 2-D tensor; index its elements with `{tensor}[[..]]`",
                        shape.len()
                    ))),
                    (Some(Binding::Tensor { .. }), Some(_)) => Err(error(match start {
                        VectorStart::Vector => format!("`{tensor}` is 1-D: `{tensor}.vector(i)` is elements i·VECTOR .."),
                        VectorStart::Element => format!("`{tensor}` is 1-D: `{tensor}.vector_at(c)` is elements c .."),
                    })),
                    _ => Err(error(format!("`.{method}(..)` loads from a tensor parameter; `{tensor}` is not one"))),
                }
            }
            ThreadExprKind::LeadingDimension(tensor) => match self.names.get(tensor) {
                Some(Binding::Tensor { shape, .. }) if shape.len() >= 2 => Ok(ThreadType::I32),
                _ => Err(error(format!(
                    "`.leading_dimension()` is the row stride of a tensor parameter of rank 2 or more; `{tensor}` is not one"
                ))),
            },
            ThreadExprKind::FragmentSlot { fragment, query, slot } => self.fragment_slot(expr, fragment, *query, slot),
            ThreadExprKind::VectorSum(value) => match self.typed(value, None)? {
                ThreadType::Vector(element @ (ElementType::F16 | ElementType::BF16)) => {
                    Err(error(format!("`.sum()` of a {element} vector: a sum rounded to 16 bits; add them as f32")))
                }
                ThreadType::Vector(element) => Ok(ThreadType::Scalar(element)),
                other => Err(error(format!("`.sum()` adds up a vector from `x.vector(i)`; this is {other}"))),
            },
        }
    }

    /// `s.row(i)`, `s.col(j)` (i32) and `s.row_max(i)`, `s.row_sum(i)` (the fragment's type).
    fn fragment_slot(
        &self,
        expr: &ThreadExpr,
        base: &str,
        query: SlotQuery,
        slot: &ThreadExpr,
    ) -> Result<ThreadType, Diagnostic> {
        let method = format!("{base}.{}(..)", query.name());
        let ty = self.typed(slot, Some(ThreadType::I32))?;
        if !ty.is_integer() {
            return Err(Diagnostic::new(slot.origin, format!("a slot index is an integer; this is {ty}"))
                .with_hint("convert it with `as i32`"));
        }
        let (element, slots) = match self.names.get(base) {
            Some(Binding::Fragment { element, slots }) => (*element, slots),
            Some(_) => {
                return Err(Diagnostic::new(
                    expr.origin,
                    format!("`.{}(..)` asks about a fragment's value slot; `{base}` is not a fragment", query.name()),
                ))
            }
            None => {
                return Err(Diagnostic::new(expr.origin, format!("unknown fragment `{base}`"))
                    .with_hint(format!("names in scope here: {}", self.known())))
            }
        };
        let Some(slots) = slots else {
            return Err(Diagnostic::new(expr.origin, format!("`{method}`: the layout of `{base}` is not constant")));
        };
        let (what, bound) = if query.is_column() { ("column", slots.values[1]) } else { ("row", slots.values[0]) };
        if let ThreadExprKind::Int { value, .. } = slot.kind {
            if value < 0 || value >= bound {
                return Err(Diagnostic::new(slot.origin, slots.outside(base, what, value, bound)));
            }
        }
        if !query.is_warp_collective() {
            return Ok(ThreadType::I32);
        }
        let layout = &slots.layout;
        let Some([_, warp_cols]) = layout.warp_tile else {
            return Err(Diagnostic::new(
                expr.origin,
                format!(
                    "`{method}` reduces a row across the lanes of one warp, in mma.sync's accumulator layout; `{base}` is a {} fragment, whose rows are spread over threads",
                    slots.declared
                ),
            )
            .with_hint("lay it out with `.warp_tile([WM, WN])`, or reduce the values `acc[[i, j]]` with `warp_sum` / `block_sum`"));
        };
        if warp_cols < layout.cols {
            let warps = layout.cols / warp_cols.max(1);
            let unit = if layout.warpgroup_tile.is_some() { "warpgroups" } else { "warps" };
            return Err(Diagnostic::new(
                expr.origin,
                format!(
                    "`{method}` reduces a block-tile row within one warp, but `{base}` is {} columns wide and {} gives each warp {warp_cols} of them: each row is split across {warps} {unit}",
                    layout.cols, slots.declared
                ),
            )
            .with_hint(format!("make the tile as wide as the fragment (WN = {}) and stack the warps down its rows", layout.cols)));
        }
        if element.is_half() && query == SlotQuery::RowSum {
            return Err(Diagnostic::new(expr.origin, format!("`{method}` of a {element} fragment: reduce in f32")));
        }
        Ok(ThreadType::Scalar(element))
    }

    /// Both operands' types, unsuffixed literals taking the other side's type.
    pub fn pair(
        &self,
        lhs: &ThreadExpr,
        rhs: &ThreadExpr,
        wanted: Option<ThreadType>,
    ) -> Result<(ThreadType, ThreadType), Diagnostic> {
        let l = self.typed(lhs, wanted)?;
        let r = self.typed(rhs, Some(l))?;
        if is_literal(lhs) && !is_literal(rhs) {
            return Ok((self.typed(lhs, Some(r))?, r));
        }
        Ok((l, r))
    }

    fn call(
        &self,
        expr: &ThreadExpr,
        function: Intrinsic,
        args: &[ThreadExpr],
        wanted: Option<ThreadType>,
    ) -> Result<ThreadType, Diagnostic> {
        let error = |message: String| Diagnostic::new(expr.origin, message);
        if args.len() != function.arity() {
            return Err(error(format!(
                "`{}` takes {} argument(s); {} given",
                function.name(),
                function.arity(),
                args.len()
            )));
        }
        use Intrinsic::*;
        match function {
            ThreadIndex | Lane | WarpIndex | BlockIndex | BlockCount | ClusterRank => Ok(ThreadType::I32),
            Sqrt | Exp | Exp2 | Log | Tanh | Erf | Gelu | Silu => {
                let ty = self.typed(&args[0], wanted)?;
                if !ty.is_float() {
                    return Err(error(format!("`{}` takes an f32, f64, f16 or bf16; this is {ty}", function.name()))
                        .with_hint("convert it with `as f32`"));
                }
                Ok(ty)
            }
            Exp2Ftz => {
                let ty = self.typed(&args[0], wanted)?;
                if ty != ThreadType::F32 {
                    return Err(error(format!("`exp2_ftz` takes an f32; this is {ty}"))
                        .with_hint("`exp2` takes the other float types"));
                }
                Ok(ty)
            }
            Abs | WarpSum | WarpMax | BlockSum | BlockMax | ClusterSum | ClusterMax => {
                let ty = self.typed(&args[0], wanted)?;
                if !matches!(ty, ThreadType::Scalar(_)) {
                    return Err(error(format!("`{}` takes a number; this is {ty}", function.name())));
                }
                // a sum of 32 or 1024 values rounded to 8 or 11 bits at every step loses the row
                if ty.is_half() && function != Abs {
                    return Err(error(format!(
                        "`{}` of {ty}: a reduction rounded to 16 bits at every step; reduce in f32",
                        function.name()
                    ))
                    .with_hint(format!("`{}(v as f32)`", function.name())));
                }
                if function == Abs && ty == ThreadType::U32 {
                    return Err(error("`abs` of a u32 is the value itself".into()));
                }
                Ok(ty)
            }
            LastBlockOf => {
                let (group, blocks) = self.pair(&args[0], &args[1], Some(ThreadType::I32))?;
                if group != ThreadType::I32 || blocks != ThreadType::I32 {
                    return Err(error(format!(
                        "`last_block_of` takes a group and its count of blocks, two i32; these are {group} and {blocks}"
                    ))
                    .with_hint("e.g. `last_block_of(bx, S)`: the S blocks of column band bx"));
                }
                Ok(ThreadType::Bool)
            }
            ClusterSoftmaxScale => {
                let (m, s) = self.pair(&args[0], &args[1], wanted)?;
                if m != s || !matches!(m, ThreadType::F32 | ThreadType::F64) {
                    return Err(error(format!(
                        "`cluster_softmax_scale` takes a maximum and a sum of one type, f32 or f64; these are {m} and {s}"
                    ))
                    .with_hint("keep the statistics in f32: `cluster_softmax_scale(m as f32, s as f32)`"));
                }
                Ok(m)
            }
            Min | Max => {
                let (l, r) = self.pair(&args[0], &args[1], wanted)?;
                if l != r || !matches!(l, ThreadType::Scalar(_)) {
                    return Err(error(format!(
                        "`{}` takes two numbers of one type; these are {l} and {r}",
                        function.name()
                    )));
                }
                Ok(l)
            }
            Cdiv => {
                let (l, r) = self.pair(&args[0], &args[1], wanted)?;
                if l != r || !matches!(l, ThreadType::I32 | ThreadType::U32) {
                    return Err(error(format!("`cdiv` takes two integers of one type; these are {l} and {r}")));
                }
                Ok(l)
            }
            Fma => {
                let ty = self.typed(&args[0], wanted)?;
                for arg in &args[1..] {
                    let other = self.typed(arg, Some(ty))?;
                    if other != ty {
                        return Err(error(format!("`fma` takes three values of one type; found {ty} and {other}")));
                    }
                }
                if !ty.is_float() {
                    return Err(error(format!("`fma` takes f32, f64, f16 or bf16; this is {ty}")));
                }
                Ok(ty)
            }
            Dot => {
                let (l, r) = self.pair(&args[0], &args[1], None)?;
                if let ThreadType::Vector(element @ (ElementType::F16 | ElementType::BF16)) = l {
                    return Err(error(format!("`dot` of {element} vectors: convert the elements to f32 first")));
                }
                match (l, r) {
                    (ThreadType::Vector(a), ThreadType::Vector(b)) | (ThreadType::Scalar(a), ThreadType::Scalar(b))
                        if a == b =>
                    {
                        Ok(ThreadType::Scalar(a))
                    }
                    _ => Err(error(format!("`dot` takes two vectors (or numbers) of one type; these are {l} and {r}"))),
                }
            }
            Splat => match self.typed(&args[0], None)? {
                ThreadType::Scalar(element) => Ok(ThreadType::Vector(element)),
                other => Err(error(format!("`vector(v)` repeats a number VECTOR times; this is {other}"))),
            },
            ShflUp | ShflDown | ShflXor => {
                let ty = self.typed(&args[0], wanted)?;
                let delta = self.typed(&args[1], Some(ThreadType::I32))?;
                if !matches!(ty, ThreadType::Scalar(_)) || !delta.is_integer() {
                    return Err(error(format!(
                        "`{}(value, lanes)` shuffles a number by an integer lane distance; found {ty} and {delta}",
                        function.name()
                    )));
                }
                Ok(ty)
            }
        }
    }
}

fn is_literal(expr: &ThreadExpr) -> bool {
    match &expr.kind {
        ThreadExprKind::Int { suffix: None, .. } | ThreadExprKind::Float { suffix: None, .. } => true,
        ThreadExprKind::Unary { op: UnaryOp::Neg, operand } => is_literal(operand),
        _ => false,
    }
}

/// The most elements one register array may hold: past this, registers spill to local memory.
pub const MAX_REGISTER_ARRAY: i64 = 128;

/// Checks thread statements in `env`, binding their `let`s; every problem is pushed.
pub fn check_thread_statement(
    statement: &ThreadStatement,
    env: &mut TypeEnv,
    varying: &mut Vec<String>,
    divergent: Option<Origin>,
    out: &mut Vec<Diagnostic>,
) {
    let check_expr = |expr: &ThreadExpr, wanted: Option<ThreadType>, env: &TypeEnv, out: &mut Vec<Diagnostic>| {
        if let Err(d) = env.type_with(expr, wanted) {
            out.push(d);
        }
        if let Some(condition) = divergent {
            expr.walk(&mut |e| {
                if let Some(collective) = e.warp_collective() {
                    out.push(
                        Diagnostic::new(
                            e.origin,
                            format!(
                                "`{collective}` runs under a condition that differs between the lanes of a warp (line {}): the lanes that skip it leave the shuffle waiting",
                                condition.line
                            ),
                        )
                        .with_hint("call it where the whole warp is, e.g. before the `if`, or make the condition depend on `warp_index()` only"),
                    );
                }
            });
        }
    };
    match &statement.kind {
        ThreadStatementKind::Let { name, mutable, ty, init } => {
            check_expr(init, *ty, env, out);
            let found = env.type_with(init, *ty).ok();
            if let (Some(declared), Some(found)) = (ty, found) {
                if *declared != found {
                    out.push(
                        Diagnostic::new(
                            init.origin,
                            format!("mismatched types: `{name}` is declared {declared} but its value is {found}"),
                        )
                        .with_hint(format!("convert it with `as {declared}`")),
                    );
                }
            }
            if env.get(name).is_some() {
                out.push(
                    Diagnostic::new(
                        statement.origin,
                        format!("`{name}` is already declared; thread code does not shadow names"),
                    )
                    .with_hint("give the new value its own name"),
                );
            }
            if is_varying(init, varying) {
                varying.push(name.clone());
            }
            env.bind_value(name, ty.or(found).unwrap_or(ThreadType::F32), *mutable);
        }
        ThreadStatementKind::LetArray { name, mutable, len, init } => {
            check_expr(init, None, env, out);
            let element = match env.type_of(init) {
                Ok(ThreadType::Scalar(element)) => element,
                Ok(other) => {
                    out.push(Diagnostic::new(
                        init.origin,
                        format!("a register array holds numbers; `{init}` is {other}"),
                    ));
                    ElementType::F32
                }
                Err(_) => ElementType::F32,
            };
            let length = env.array_length(len);
            match &length {
                Ok(n) if (1..=MAX_REGISTER_ARRAY).contains(&n) => {}
                Ok(n) => out.push(
                    Diagnostic::new(
                        len.origin,
                        format!("register array `{name}` has {n} elements ({len}); it takes 1 to {MAX_REGISTER_ARRAY}"),
                    )
                    .with_hint("hold more per thread in shared memory, or give the work more threads"),
                ),
                Err(message) => out.push(Diagnostic::new(len.origin, message.clone())),
            }
            if env.get(name).is_some() {
                out.push(Diagnostic::new(
                    statement.origin,
                    format!("`{name}` is already declared; thread code does not shadow names"),
                ));
            }
            if is_varying(init, varying) || divergent.is_some() {
                varying.push(name.clone());
            }
            env.bind(name, Binding::Registers { element, len: length.ok(), mutable: *mutable });
        }
        ThreadStatementKind::Assign { place, value, .. } | ThreadStatementKind::AtomicAdd { place, value } => {
            let op = op_of(&statement.kind);
            let atomic = matches!(statement.kind, ThreadStatementKind::AtomicAdd { .. });
            check_expr(place, None, env, out);
            let place_ty = env.type_of(place).ok();
            check_expr(value, place_ty, env, out);
            let value_ty = env.type_with(value, place_ty).ok();
            if let (Some(p), Some(v)) = (place_ty, value_ty) {
                if p != v {
                    out.push(
                        Diagnostic::new(value.origin, format!("mismatched types: assigning {v} to {p}"))
                            .with_hint(format!("convert it with `as {p}`")),
                    );
                } else if op.is_some_and(|o| !o.is_arithmetic() && p != ThreadType::Bool && !p.is_integer()) {
                    out.push(Diagnostic::new(statement.origin, format!("bitwise assignment on {p}")));
                }
            }
            match &place.kind {
                ThreadExprKind::Name(name) => match env.get(name) {
                    Some(Binding::Value { mutable: true, .. }) if !atomic => {
                        if divergent.is_some() || is_varying(value, varying) {
                            varying.push(name.clone());
                        }
                    }
                    Some(Binding::Value { .. }) if !atomic => out.push(
                        Diagnostic::new(place.origin, format!("cannot assign to `{name}`: it is not a `let mut` local"))
                            .with_hint(format!("declare it `let mut {name} = ..;`")),
                    ),
                    _ => out.push(Diagnostic::new(
                        place.origin,
                        format!("`atomic_add` adds to an element of a writable tensor or shared buffer: `atomic_add(&y[i], v)`; `{name}` is not one"),
                    )),
                },
                ThreadExprKind::VectorLoad { tensor, .. } if !atomic => {
                    if let Some(Binding::Tensor { writable: false, .. }) = env.get(tensor) {
                        out.push(read_only(place.origin, tensor));
                    }
                }
                ThreadExprKind::Index { base, .. } => {
                    if let Some(Binding::Value { ty: ThreadType::Vector(_), mutable: false }) = env.get(base) {
                        out.push(
                            Diagnostic::new(place.origin, format!("cannot assign to a lane of `{base}`: it is not a `let mut` vector"))
                                .with_hint(format!("declare it `let mut {base} = ..;`")),
                        );
                    }
                    if let Some(Binding::Tensor { writable: false, .. }) = env.get(base) {
                        out.push(read_only(place.origin, base));
                    }
                    if let Some(Binding::Registers { mutable: false, .. }) = env.get(base) {
                        out.push(
                            Diagnostic::new(place.origin, format!("cannot assign to `{base}`: it is not a `let mut` register array"))
                                .with_hint(format!("declare it `let mut {base} = [..; N];`")),
                        );
                    }
                    if atomic && matches!(env.get(base), Some(Binding::Fragment { .. } | Binding::Registers { .. })) {
                        out.push(Diagnostic::new(
                            place.origin,
                            format!("`atomic_add` on `{base}`: a fragment is the thread's own registers; add to it with `{base}[[i, j]] += v`"),
                        ));
                    }
                    if atomic && value_ty.is_some_and(ThreadType::is_half) {
                        out.push(Diagnostic::new(
                            value.origin,
                            "`atomic_add` of a 16-bit float: accumulate in an f32 tensor".to_string(),
                        ));
                    }
                    if atomic && !matches!(value_ty, Some(ThreadType::Scalar(_))) {
                        out.push(Diagnostic::new(value.origin, "`atomic_add` adds a number".to_string()));
                    }
                }
                _ => out.push(Diagnostic::new(
                    place.origin,
                    "the left side of an assignment is a `let mut` local or an element: `s`, `y[i]`, `t[[r, c]]`"
                        .to_string(),
                )),
            }
        }
        ThreadStatementKind::If { condition, then, otherwise } => {
            check_expr(condition, None, env, out);
            if let Ok(ty) = env.type_of(condition) {
                if ty != ThreadType::Bool {
                    out.push(Diagnostic::new(condition.origin, format!("an `if` condition is a bool; this is {ty}")));
                }
            }
            let inner_divergent = divergent.or_else(|| is_varying(condition, varying).then_some(condition.origin));
            if divergent.is_none() && inner_divergent.is_none() && differs_between_warps(condition, varying) {
                for s in then.iter().chain(otherwise) {
                    for expr in s.expressions() {
                        expr.walk(&mut |e| match &e.kind {
                            ThreadExprKind::Call { function, .. } if function.is_block_collective() => out.push(
                                Diagnostic::new(
                                    e.origin,
                                    format!(
                                        "`{}` runs under a condition that differs between the warps of the block (line {}): the threads that skip it leave `__syncthreads` waiting",
                                        function.name(),
                                        condition.origin.line
                                    ),
                                )
                                .with_hint("call it where the whole block is, before or after the `if`"),
                            ),
                            _ => {}
                        });
                    }
                }
            }
            for branch in [then, otherwise] {
                let mut inner = env.clone();
                for s in branch {
                    check_thread_statement(s, &mut inner, varying, inner_divergent, out);
                }
            }
        }
        ThreadStatementKind::For { var, start, end, step, body } => {
            for bound in [Some(start), Some(end), step.as_ref()].into_iter().flatten() {
                check_expr(bound, Some(ThreadType::I32), env, out);
                if let Ok(ty) = env.type_with(bound, Some(ThreadType::I32)) {
                    if ty != ThreadType::I32 {
                        out.push(Diagnostic::new(bound.origin, format!("loop bounds are i32; this is {ty}")));
                    }
                }
            }
            let bounds_vary =
                [Some(start), Some(end), step.as_ref()].into_iter().flatten().any(|b| is_varying(b, varying));
            if bounds_vary {
                varying.push(var.clone());
            }
            let inner_divergent = divergent.or_else(|| bounds_vary.then_some(statement.origin));
            if env.get(var).is_some() {
                out.push(Diagnostic::new(
                    statement.origin,
                    format!("`{var}` is already declared; thread code does not shadow names"),
                ));
            }
            let mut inner = env.clone();
            inner.bind_value(var, ThreadType::I32, false);
            for s in body {
                check_thread_statement(s, &mut inner, varying, inner_divergent, out);
            }
        }
    }
}

fn op_of(kind: &ThreadStatementKind) -> Option<ThreadOp> {
    match kind {
        ThreadStatementKind::Assign { op, .. } => *op,
        ThreadStatementKind::AtomicAdd { .. } => Some(ThreadOp::Add),
        _ => None,
    }
}

/// Whether `expr` can differ between the lanes of one warp: it mentions `thread_index()`,
/// `lane()`, a fragment slot's position or row reduction (`s.row(i)`, `s.row_max(i)`: each
/// lane has its own rows and columns) or a local computed from them. (`warp_index()` is the
/// same across a warp.)
pub fn is_varying(expr: &ThreadExpr, varying: &[String]) -> bool {
    let mut found = false;
    expr.walk(&mut |e| match &e.kind {
        ThreadExprKind::Call { function: Intrinsic::ThreadIndex | Intrinsic::Lane, .. } => found = true,
        ThreadExprKind::FragmentSlot { .. } => found = true,
        ThreadExprKind::Name(name) if varying.contains(name) => found = true,
        _ => {}
    });
    found
}

/// Whether `expr` can differ between the warps of a block: it mentions `warp_index()`,
/// `thread_index()`, `lane()` or a local computed from them.
fn differs_between_warps(expr: &ThreadExpr, varying: &[String]) -> bool {
    let mut found = is_varying(expr, varying);
    expr.walk(&mut |e| {
        if let ThreadExprKind::Call { function: Intrinsic::WarpIndex, .. } = &e.kind {
            found = true;
        }
    });
    found
}

/// The thread statements of a body, with the bindings they see: for validation of the whole
/// kernel (see [`crate::validate`]).
pub(crate) fn check_body(kernel: &Kernel, body: &[Statement], env: &mut TypeEnv, out: &mut Vec<Diagnostic>) {
    let mut varying = Vec::new();
    walk(kernel, body, env, &mut varying, out);
}

fn walk(kernel: &Kernel, body: &[Statement], env: &mut TypeEnv, varying: &mut Vec<String>, out: &mut Vec<Diagnostic>) {
    for statement in body {
        match statement {
            Statement::Grid(grid) => {
                for var in &grid.vars {
                    env.bind_value(var, ThreadType::I32, false);
                }
            }
            Statement::GridStride(stride) => {
                let mut inner = env.clone();
                inner.bind_value(&stride.var, ThreadType::I32, false);
                walk(kernel, &stride.body, &mut inner, varying, out);
            }
            Statement::Pipeline(pipeline) => {
                let mut inner = env.clone();
                inner.bind_value(&pipeline.var, ThreadType::I32, false);
                walk(kernel, &pipeline.body, &mut inner, varying, out);
            }
            Statement::Shared(buffer) => env.bind(&buffer.name, Binding::Shared { element: buffer.element }),
            Statement::Fragment(fragment) => env.bind(&fragment.name, Binding::fragment(fragment, kernel)),
            Statement::Thread(thread) => check_thread_statement(thread, env, varying, None, out),
            Statement::Copy(_) | Statement::Mma(_) | Statement::Sync(_) => {}
        }
    }
}

/// Rust-like rendering, as written (for messages and the comments of the CUDA source).
impl std::fmt::Display for ThreadExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |exprs: &[ThreadExpr]| exprs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
        match &self.kind {
            ThreadExprKind::Int { value, suffix } => {
                write!(f, "{value}{}", suffix.map(ElementType::rust_name).unwrap_or(""))
            }
            ThreadExprKind::Float { text, suffix } => {
                write!(f, "{text}{}", suffix.map(ElementType::rust_name).unwrap_or(""))
            }
            ThreadExprKind::Bool(value) => write!(f, "{value}"),
            ThreadExprKind::Infinity(element) => write!(f, "{element}::INFINITY"),
            ThreadExprKind::Name(name) => f.write_str(name),
            ThreadExprKind::Index { base, indices } if indices.len() == 1 => write!(f, "{base}[{}]", indices[0]),
            ThreadExprKind::Index { base, indices } => write!(f, "{base}[[{}]]", list(indices)),
            ThreadExprKind::Unary { op: UnaryOp::Neg, operand } => write!(f, "-{}", wrap(operand, u8::MAX)),
            ThreadExprKind::Unary { op: UnaryOp::Not, operand } => write!(f, "!{}", wrap(operand, u8::MAX)),
            ThreadExprKind::Binary { op, lhs, rhs } => {
                write!(f, "{} {} {}", wrap(lhs, op.precedence()), op.symbol(), wrap(rhs, op.precedence() + 1))
            }
            ThreadExprKind::Cast { value, to } => write!(f, "{} as {to}", wrap(value, u8::MAX)),
            ThreadExprKind::Call { function, args } => write!(f, "{}({})", function.name(), list(args)),
            ThreadExprKind::VectorLoad { tensor, row: None, index, start } => {
                write!(f, "{tensor}.{}({index})", start.method())
            }
            ThreadExprKind::VectorLoad { tensor, row: Some(row), index, start } => {
                write!(f, "{tensor}.{}([{row}, {index}])", start.method())
            }
            ThreadExprKind::AlignOffset { tensor, row: None, column } => write!(f, "{tensor}.align_offset({column})"),
            ThreadExprKind::AlignOffset { tensor, row: Some(row), column } => {
                write!(f, "{tensor}.align_offset([{row}, {column}])")
            }
            ThreadExprKind::LeadingDimension(tensor) => write!(f, "{tensor}.leading_dimension()"),
            ThreadExprKind::VectorSum(value) => write!(f, "{}.sum()", wrap(value, u8::MAX)),
            ThreadExprKind::FragmentSlot { fragment, query, slot } => write!(f, "{fragment}.{}({slot})", query.name()),
        }
    }
}

fn wrap(expr: &ThreadExpr, parent: u8) -> String {
    match &expr.kind {
        ThreadExprKind::Binary { op, .. } if op.precedence() < parent => format!("({expr})"),
        ThreadExprKind::Cast { .. } if parent == u8::MAX => format!("({expr})"),
        _ => expr.to_string(),
    }
}

impl std::fmt::Display for ThreadStatement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ThreadStatementKind::Let { name, mutable, ty, init } => {
                let ty = ty.map(|t| format!(": {t}")).unwrap_or_default();
                write!(f, "let {}{name}{ty} = {init};", if *mutable { "mut " } else { "" })
            }
            ThreadStatementKind::Assign { place, op, value } => {
                write!(f, "{place} {}= {value};", op.map(ThreadOp::symbol).unwrap_or(""))
            }
            ThreadStatementKind::AtomicAdd { place, value } => write!(f, "atomic_add(&{place}, {value});"),
            ThreadStatementKind::LetArray { name, mutable, len, init } => {
                write!(f, "let {}{name} = [{init}; {len}];", if *mutable { "mut " } else { "" })
            }
            ThreadStatementKind::If { condition, otherwise, .. } => {
                write!(f, "if {condition} {{ .. }}{}", if otherwise.is_empty() { "" } else { " else { .. }" })
            }
            ThreadStatementKind::For { var, start, end, step: None, .. } => {
                write!(f, "for {var} in {start}..{end} {{ .. }}")
            }
            ThreadStatementKind::For { var, start, end, step: Some(step), .. } => {
                write!(f, "for {var} in ({start}..{end}).step_by({step}) {{ .. }}")
            }
        }
    }
}

/// A write to the read-only tensor `name`.
fn read_only(origin: Origin, name: &str) -> Diagnostic {
    Diagnostic::new(origin, format!("`{name}` is read-only (`Global`); it cannot be written"))
        .with_hint("declare the parameter `GlobalMut<..>` to write it")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(text: &str) -> ThreadExpr {
        ThreadExpr::new(ThreadExprKind::Float { text: text.into(), suffix: None })
    }

    fn binary(op: ThreadOp, lhs: ThreadExpr, rhs: ThreadExpr) -> ThreadExpr {
        ThreadExpr::new(ThreadExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) })
    }

    fn call(function: Intrinsic, args: Vec<ThreadExpr>) -> ThreadExpr {
        ThreadExpr::new(ThreadExprKind::Call { function, args })
    }

    fn slot(fragment: &str, query: SlotQuery, index: ThreadExpr) -> ThreadExpr {
        ThreadExpr::new(ThreadExprKind::FragmentSlot { fragment: fragment.into(), query, slot: Box::new(index) })
    }

    /// `s` of [rows, cols] in warp tiles of [16, warp_cols] (4 warps when 64 × 64 × 64), and
    /// `t` of the same shape in 4 × 4 thread tiles.
    fn fragments(cols: i64, warp_cols: i64) -> TypeEnv {
        let warp = crate::FragmentLayout {
            rows: 64,
            cols,
            thread_rows: 2,
            thread_cols: warp_cols / 4,
            split: [1, 1],
            warp_layout: None,
            warp_tile: Some([16, warp_cols]),
            warpgroup_tile: None,
            element: ElementType::F32,
        };
        let thread = crate::FragmentLayout { thread_rows: 4, thread_cols: 4, warp_tile: None, ..warp };
        let mut env = TypeEnv::default();
        let slots = |declared: &str, layout: crate::FragmentLayout| FragmentSlots {
            declared: declared.into(),
            values: [layout.thread_rows, layout.thread_cols],
            layout,
        };
        env.bind("s", Binding::Fragment { element: ElementType::F32, slots: Some(slots("warp_tile([16, WN])", warp)) });
        env.bind(
            "t",
            Binding::Fragment { element: ElementType::F32, slots: Some(slots("thread_tile([4, 4])", thread)) },
        );
        env.bind_value("i", ThreadType::I32, false);
        env
    }

    #[test]
    fn slot_positions_are_i32_and_row_reductions_take_the_fragments_type() {
        let env = fragments(64, 64);
        assert_eq!(env.type_of(&slot("s", SlotQuery::Row, ThreadExpr::name("i"))), Ok(ThreadType::I32));
        assert_eq!(env.type_of(&slot("s", SlotQuery::Col, ThreadExpr::int(15))), Ok(ThreadType::I32));
        assert_eq!(env.type_of(&slot("t", SlotQuery::Col, ThreadExpr::int(3))), Ok(ThreadType::I32));
        assert_eq!(env.type_of(&slot("s", SlotQuery::RowMax, ThreadExpr::name("i"))), Ok(ThreadType::F32));
        assert_eq!(env.type_of(&slot("s", SlotQuery::RowSum, ThreadExpr::int(1))), Ok(ThreadType::F32));
        let not_a_fragment = env.type_of(&slot("i", SlotQuery::Row, ThreadExpr::int(0))).unwrap_err();
        assert!(not_a_fragment.message.contains("not a fragment"), "{}", not_a_fragment.message);
        let float_slot = env.type_of(&slot("s", SlotQuery::Row, float("1.0"))).unwrap_err();
        assert!(float_slot.message.contains("slot index is an integer"), "{}", float_slot.message);
    }

    #[test]
    fn a_literal_slot_past_the_lanes_values_is_an_error_with_the_bounds() {
        let env = fragments(64, 64);
        let row = env.type_of(&slot("s", SlotQuery::RowMax, ThreadExpr::int(2))).unwrap_err();
        assert!(
            row.message.contains("row 2 of fragment `s`") && row.message.contains("rows 0 to 1"),
            "{}",
            row.message
        );
        let col = env.type_of(&slot("s", SlotQuery::Col, ThreadExpr::int(16))).unwrap_err();
        assert!(col.message.contains("2 × 16 values") && col.message.contains("columns 0 to 15"), "{}", col.message);
        let index = ThreadExpr::new(ThreadExprKind::Index {
            base: "s".into(),
            indices: vec![ThreadExpr::int(0), ThreadExpr::int(16)],
        });
        assert!(env.type_of(&index).is_err());
    }

    #[test]
    fn a_row_reduction_needs_each_row_in_one_warp_of_a_warp_tile() {
        let split = fragments(64, 32).type_of(&slot("s", SlotQuery::RowMax, ThreadExpr::int(0))).unwrap_err();
        assert!(
            split.message.contains("64 columns wide") && split.message.contains("split across 2 warps"),
            "{}",
            split.message
        );
        let thread_tile = fragments(64, 64).type_of(&slot("t", SlotQuery::RowSum, ThreadExpr::int(0))).unwrap_err();
        assert!(thread_tile.message.contains("thread_tile([4, 4])"), "{}", thread_tile.message);
    }

    #[test]
    fn a_row_reduction_is_a_warp_collective_and_a_slot_position_varies_between_lanes() {
        let sum = slot("s", SlotQuery::RowSum, ThreadExpr::int(0));
        assert_eq!(sum.warp_collective().as_deref(), Some("s.row_sum"));
        assert_eq!(slot("s", SlotQuery::Col, ThreadExpr::int(0)).warp_collective(), None);
        assert!(is_varying(&slot("s", SlotQuery::Col, ThreadExpr::int(0)), &[]));
        let guarded = ThreadStatement::new(ThreadStatementKind::If {
            condition: binary(ThreadOp::Lt, slot("s", SlotQuery::Row, ThreadExpr::int(0)), ThreadExpr::int(8)),
            then: vec![ThreadStatement::new(ThreadStatementKind::Let {
                name: "l".into(),
                mutable: false,
                ty: None,
                init: sum,
            })],
            otherwise: vec![],
        });
        let mut out = Vec::new();
        check_thread_statement(&guarded, &mut fragments(64, 64), &mut Vec::new(), None, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].message.contains("`s.row_sum` runs under a condition"), "{}", out[0].message);
    }

    #[test]
    fn exp2_takes_and_gives_a_float() {
        let env = fragments(64, 64);
        assert_eq!(env.type_of(&call(Intrinsic::Exp2, vec![float("0.5")])), Ok(ThreadType::F32));
        assert_eq!(Intrinsic::from_name("exp2"), Some(Intrinsic::Exp2));
        assert!(env.type_of(&call(Intrinsic::Exp2, vec![ThreadExpr::name("i")])).is_err());
    }

    #[test]
    fn an_unsuffixed_literal_takes_the_type_of_the_other_operand() {
        let mut env = TypeEnv::default();
        env.bind_value("d", ThreadType::F64, false);
        env.bind_value("u", ThreadType::U32, false);
        assert_eq!(env.type_of(&binary(ThreadOp::Mul, float("0.5"), ThreadExpr::name("d"))), Ok(ThreadType::F64));
        assert_eq!(env.type_of(&binary(ThreadOp::Add, ThreadExpr::name("u"), ThreadExpr::int(1))), Ok(ThreadType::U32));
        assert_eq!(env.type_of(&float("0.5")), Ok(ThreadType::F32));
    }

    #[test]
    fn mixing_floats_and_integers_is_a_mismatch() {
        let mut env = TypeEnv::default();
        env.bind_value("i", ThreadType::I32, false);
        let error = env.type_of(&binary(ThreadOp::Mul, float("0.5"), ThreadExpr::name("i"))).unwrap_err();
        assert!(error.message.contains("mismatched types"), "{}", error.message);
    }

    #[test]
    fn a_shuffle_under_a_lane_dependent_if_is_reported_and_under_a_warp_dependent_one_is_not() {
        let shuffle = |condition_on: Intrinsic| {
            ThreadStatement::new(ThreadStatementKind::If {
                condition: binary(ThreadOp::Lt, call(condition_on, vec![]), ThreadExpr::int(16)),
                then: vec![ThreadStatement::new(ThreadStatementKind::Let {
                    name: "s".into(),
                    mutable: false,
                    ty: None,
                    init: call(Intrinsic::WarpSum, vec![float("1.0")]),
                })],
                otherwise: vec![],
            })
        };
        let diagnostics = |statement: &ThreadStatement| {
            let mut out = Vec::new();
            check_thread_statement(statement, &mut TypeEnv::default(), &mut Vec::new(), None, &mut out);
            out
        };
        assert_eq!(diagnostics(&shuffle(Intrinsic::Lane)).len(), 1);
        assert!(diagnostics(&shuffle(Intrinsic::WarpIndex)).is_empty());
    }
}
