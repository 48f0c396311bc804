//! Thread-level code inside a tile kernel: `let` bindings, assignments, `if`, `for` over
//! ranges, arithmetic, indexing of tensors and shared buffers, math intrinsics, warp
//! shuffles and atomics — each with one CUDA C counterpart. Plain data, typed by [`TypeEnv`]
//! (the same rules for validation and for rendering).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Access, Diagnostic, ElementType, Kernel, Origin, ParamKind, Statement};

mod check;
mod display;
mod intrinsic;
mod reduction_group;
mod typing;

pub(crate) use check::check_body;
pub use check::{check_thread_statement, is_varying, Guard, GuardKind, Varying};
pub use intrinsic::Intrinsic;
pub use reduction_group::{with_block_reduction_rounds, BlockReductionGroup, MAX_REDUCED_TOGETHER};
pub use typing::{Binding, FragmentSlots, TypeEnv};

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
    /// `let name = [block_sum(a), block_sum(b)];`: each value reduced over the block
    /// (`function`: `BlockSum` or `BlockMax`), all of them in one round through shared memory,
    /// into the register array `name`. Consecutive `let`s that reduce independent values become
    /// one (see [`BlockReductionGroup`]); they then read `name[i]`.
    BlockReductions { name: String, function: Intrinsic, values: Vec<ThreadExpr> },
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
    /// those of row `r` of a 2-D tensor; `x.vector_at([r, c])`: elements `c ..` of row `r`;
    /// `x.vector_from([r, c])` the same from any element (see [`VectorStart`]). As the place
    /// of an assignment (not `vector_from`), one vector store.
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

/// Where a vector access starts: at a vector index, at an aligned element, or at any element.
///
/// ```
/// use tessera_dsl::VectorStart;
/// assert_eq!(VectorStart::Element.method(), "vector_at");
/// assert_eq!(VectorStart::AnyElement.method(), "vector_from");
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
    /// `x.vector_from([r, c])`: elements c .. of row r, from any element — the aligned
    /// 16-byte chunks that hold them loaded and shifted into place (element by element where a
    /// chunk would reach outside the row, or for vectors of other than 16 bytes). A load only:
    /// for a weight or bias whose vectors do not start where a row's do.
    AnyElement,
}

impl VectorStart {
    /// The method thread code writes it with.
    pub fn method(self) -> &'static str {
        match self {
            Self::Vector => "vector",
            Self::Element => "vector_at",
            Self::AnyElement => "vector_from",
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

    /// This expression with each sub-expression for which `replace` gives one replaced by it
    /// (outermost first: a replaced node's own sub-expressions are not visited).
    ///
    /// ```
    /// use tessera_dsl::{ThreadExpr, ThreadExprKind};
    /// let read = ThreadExpr::new(ThreadExprKind::Index { base: "r".into(), indices: vec![ThreadExpr::name("i")] });
    /// let named = read.replaced(&|e| matches!(&e.kind, ThreadExprKind::Index { .. }).then(|| ThreadExpr::name("r_i")));
    /// assert_eq!(named, ThreadExpr::name("r_i"));
    /// ```
    pub fn replaced(&self, replace: &impl Fn(&ThreadExpr) -> Option<ThreadExpr>) -> ThreadExpr {
        if let Some(replacement) = replace(self) {
            return replacement;
        }
        let boxed = |e: &ThreadExpr| Box::new(e.replaced(replace));
        let kind = match &self.kind {
            ThreadExprKind::Int { .. }
            | ThreadExprKind::Float { .. }
            | ThreadExprKind::Bool(_)
            | ThreadExprKind::Infinity(_)
            | ThreadExprKind::Name(_)
            | ThreadExprKind::LeadingDimension(_) => self.kind.clone(),
            ThreadExprKind::Index { base, indices } => ThreadExprKind::Index {
                base: base.clone(),
                indices: indices.iter().map(|i| i.replaced(replace)).collect(),
            },
            ThreadExprKind::Unary { op, operand } => ThreadExprKind::Unary { op: *op, operand: boxed(operand) },
            ThreadExprKind::Binary { op, lhs, rhs } => {
                ThreadExprKind::Binary { op: *op, lhs: boxed(lhs), rhs: boxed(rhs) }
            }
            ThreadExprKind::Cast { value, to } => ThreadExprKind::Cast { value: boxed(value), to: *to },
            ThreadExprKind::Call { function, args } => {
                ThreadExprKind::Call { function: *function, args: args.iter().map(|a| a.replaced(replace)).collect() }
            }
            ThreadExprKind::VectorLoad { tensor, row, index, start } => ThreadExprKind::VectorLoad {
                tensor: tensor.clone(),
                row: row.as_deref().map(boxed),
                index: boxed(index),
                start: *start,
            },
            ThreadExprKind::AlignOffset { tensor, row, column } => ThreadExprKind::AlignOffset {
                tensor: tensor.clone(),
                row: row.as_deref().map(boxed),
                column: boxed(column),
            },
            ThreadExprKind::VectorSum(value) => ThreadExprKind::VectorSum(boxed(value)),
            ThreadExprKind::FragmentSlot { fragment, query, slot } => {
                ThreadExprKind::FragmentSlot { fragment: fragment.clone(), query: *query, slot: boxed(slot) }
            }
        };
        ThreadExpr { kind, origin: self.origin }
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
            ThreadStatementKind::BlockReductions { values, .. } => out.extend(values),
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

    /// This statement and every statement inside it (an `if`'s branches, a loop's body), outermost first.
    pub fn walk_statements<'a>(&'a self, visit: &mut impl FnMut(&'a ThreadStatement)) {
        visit(self);
        match &self.kind {
            ThreadStatementKind::If { then, otherwise, .. } => {
                then.iter().chain(otherwise).for_each(|s| s.walk_statements(visit))
            }
            ThreadStatementKind::For { body, .. } => body.iter().for_each(|s| s.walk_statements(visit)),
            _ => {}
        }
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
            ThreadStatementKind::Let { .. }
            | ThreadStatementKind::LetArray { .. }
            | ThreadStatementKind::BlockReductions { .. } => {}
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
            ThreadStatementKind::BlockReductions { values, .. } => values.iter().for_each(&mut look),
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
    fn a_warp_reduction_over_groups_of_lanes_takes_a_constant_power_of_two() {
        let mut env = TypeEnv::default().with_constant("LANES", 8).with_constant("ODD", 12);
        env.bind_value("s", ThreadType::F32, false);
        env.bind_value("n", ThreadType::I32, false);
        let group = |function, lanes: ThreadExpr| call(function, vec![ThreadExpr::name("s"), lanes]);
        assert_eq!(env.type_of(&group(Intrinsic::WarpSum, ThreadExpr::name("LANES"))), Ok(ThreadType::F32));
        assert_eq!(env.type_of(&group(Intrinsic::WarpMax, ThreadExpr::int(32))), Ok(ThreadType::F32));
        assert_eq!(env.type_of(&call(Intrinsic::WarpSum, vec![ThreadExpr::name("s")])), Ok(ThreadType::F32));
        let odd = env.type_of(&group(Intrinsic::WarpSum, ThreadExpr::name("ODD"))).unwrap_err();
        assert!(odd.message.contains("power of two from 2 to 32, not 12"), "{}", odd.message);
        let wide = env.type_of(&group(Intrinsic::WarpMax, ThreadExpr::int(64))).unwrap_err();
        assert!(wide.message.contains("not 64"), "{}", wide.message);
        let varying = env.type_of(&group(Intrinsic::WarpSum, ThreadExpr::name("n"))).unwrap_err();
        assert!(varying.message.contains("a literal or a constant"), "{}", varying.message);
        let three =
            env.type_of(&call(Intrinsic::WarpSum, vec![ThreadExpr::name("s"), ThreadExpr::int(8), ThreadExpr::int(8)]));
        assert!(three.unwrap_err().message.contains("takes 1 or 2 argument(s); 3 given"));
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
        check_thread_statement(&guarded, &mut fragments(64, 64), &mut Varying::default(), None, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].message.contains("`s.row_sum` runs under a condition"), "{}", out[0].message);
    }

    fn let_(name: &str, init: ThreadExpr) -> ThreadStatement {
        ThreadStatement::new(ThreadStatementKind::Let { name: name.into(), mutable: false, ty: None, init })
    }

    fn under(condition: ThreadExpr, then: Vec<ThreadStatement>) -> ThreadStatement {
        ThreadStatement::new(ThreadStatementKind::If { condition, then, otherwise: vec![] })
    }

    /// The diagnostics of `statements` checked in order, with f32 `v` in scope, a value of each
    /// lane's own (as one loaded at `thread_index()`).
    fn diagnostics(statements: &[ThreadStatement]) -> Vec<String> {
        let mut env = TypeEnv::default();
        env.bind_value("v", ThreadType::F32, false);
        let mut varying = Varying { lanes: vec!["v".into()], warps: vec![] };
        let mut out = Vec::new();
        for statement in statements {
            check_thread_statement(statement, &mut env, &mut varying, None, &mut out);
        }
        out.into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn a_whole_warps_reduction_is_the_same_in_every_lane_but_not_in_every_warp() {
        let zero = || float("0.0");
        let warp_max = call(Intrinsic::WarpMax, vec![ThreadExpr::name("v")]);
        // a warp reduction under a condition on the warp's own maximum: every lane takes the branch
        let lanes_agree = under(
            binary(ThreadOp::Gt, warp_max.clone(), zero()),
            vec![let_("s", call(Intrinsic::WarpSum, vec![ThreadExpr::name("v")]))],
        );
        assert_eq!(diagnostics(&[lanes_agree]), Vec::<String>::new());
        // .. and one on the warp's vote
        let vote = call(Intrinsic::WarpAny, vec![binary(ThreadOp::Gt, ThreadExpr::name("v"), zero())]);
        let voted =
            under(vote, vec![let_("s", call(Intrinsic::WarpSum, vec![ThreadExpr::name("v"), ThreadExpr::int(8)]))]);
        assert_eq!(diagnostics(&[voted]), Vec::<String>::new());
        // .. a block reduction there: the warps may choose differently, also through a local
        let block_sum = || call(Intrinsic::BlockSum, vec![ThreadExpr::name("v")]);
        let warps_differ = under(binary(ThreadOp::Gt, warp_max.clone(), zero()), vec![let_("t", block_sum())]);
        let through_a_local = [
            let_("w", call(Intrinsic::WarpIndex, vec![])),
            under(binary(ThreadOp::Lt, ThreadExpr::name("w"), ThreadExpr::int(4)), vec![let_("t", block_sum())]),
        ];
        for found in [diagnostics(&[warps_differ]), diagnostics(&through_a_local)] {
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].contains("may differ between the warps of the block"), "{}", found[0]);
        }
        // a group of 8 lanes' reduction differs between lanes
        let group_max = call(Intrinsic::WarpMax, vec![ThreadExpr::name("v"), ThreadExpr::int(8)]);
        let groups_differ = under(
            binary(ThreadOp::Gt, group_max, zero()),
            vec![let_("s", call(Intrinsic::WarpSum, vec![ThreadExpr::name("v")]))],
        );
        let found = diagnostics(&[groups_differ]);
        assert!(found.len() == 1 && found[0].contains("may differ between the lanes of a warp"), "{found:?}");
    }

    #[test]
    fn a_collective_on_the_right_of_a_short_circuit_needs_a_left_side_its_threads_share() {
        let zero = || float("0.0");
        let positive =
            |reduction: Intrinsic| binary(ThreadOp::Gt, call(reduction, vec![ThreadExpr::name("v")]), zero());
        let lane_lt = binary(ThreadOp::Lt, call(Intrinsic::Lane, vec![]), ThreadExpr::int(5));
        let warp_lt = binary(ThreadOp::Lt, call(Intrinsic::WarpIndex, vec![]), ThreadExpr::int(2));
        let and = |lhs: &ThreadExpr, rhs| binary(ThreadOp::And, lhs.clone(), rhs);
        let or = |lhs: &ThreadExpr, rhs| binary(ThreadOp::Or, lhs.clone(), rhs);
        // the lanes of a warp may disagree: no collective on the right
        for expr in [and(&lane_lt, positive(Intrinsic::WarpSum)), or(&lane_lt, positive(Intrinsic::BlockSum))] {
            let found = diagnostics(&[let_("t", expr)]);
            assert!(found.len() == 1 && found[0].contains("may differ between the lanes of a warp"), "{found:?}");
        }
        // the warps may disagree: a warp's collective is fine there, a block's is not
        assert_eq!(diagnostics(&[let_("t", and(&warp_lt, positive(Intrinsic::WarpSum)))]), Vec::<String>::new());
        let found = diagnostics(&[let_("t", and(&warp_lt, positive(Intrinsic::BlockMax)))]);
        assert!(found.len() == 1 && found[0].contains("may differ between the warps of the block"), "{found:?}");
        // the left side on a block reduction: every thread agrees
        let agreed = binary(ThreadOp::Gt, call(Intrinsic::BlockSum, vec![ThreadExpr::name("v")]), zero());
        assert_eq!(diagnostics(&[let_("t", and(&agreed, positive(Intrinsic::BlockMax)))]), Vec::<String>::new());
    }

    #[test]
    fn a_loop_whose_trip_count_differs_between_warps_may_hold_a_warps_collective_but_not_a_blocks() {
        let per_warp = |body: ThreadStatement| {
            ThreadStatement::new(ThreadStatementKind::For {
                var: "j".into(),
                start: ThreadExpr::int(0),
                end: call(Intrinsic::WarpIndex, vec![]),
                step: None,
                body: vec![body],
            })
        };
        let sum = |function| let_("s", call(function, vec![ThreadExpr::name("v")]));
        assert_eq!(diagnostics(&[per_warp(sum(Intrinsic::WarpSum))]), Vec::<String>::new());
        let found = diagnostics(&[per_warp(sum(Intrinsic::BlockSum))]);
        assert!(
            found.len() == 1 && found[0].contains("in a loop whose trip count may differ between the warps"),
            "{found:?}"
        );
        // per lane: neither
        let per_lane = ThreadStatement::new(ThreadStatementKind::For {
            var: "j".into(),
            start: ThreadExpr::int(0),
            end: call(Intrinsic::Lane, vec![]),
            step: None,
            body: vec![sum(Intrinsic::WarpSum)],
        });
        let found = diagnostics(&[per_lane]);
        assert!(
            found.len() == 1 && found[0].contains("in a loop whose trip count may differ between the lanes"),
            "{found:?}"
        );
    }

    #[test]
    fn a_register_array_set_in_some_lanes_differs_between_lanes() {
        let marks = ThreadStatement::new(ThreadStatementKind::LetArray {
            name: "marks".into(),
            mutable: true,
            len: crate::Expr::int(4),
            init: float("0.0"),
        });
        let mark = ThreadStatement::new(ThreadStatementKind::Assign {
            place: ThreadExpr::new(ThreadExprKind::Index { base: "marks".into(), indices: vec![ThreadExpr::int(0)] }),
            op: None,
            value: float("1.0"),
        });
        let marked = binary(
            ThreadOp::Gt,
            ThreadExpr::new(ThreadExprKind::Index { base: "marks".into(), indices: vec![ThreadExpr::int(0)] }),
            float("0.0"),
        );
        let sum = let_("s", call(Intrinsic::WarpSum, vec![ThreadExpr::name("v")]));
        let in_some_lanes =
            under(binary(ThreadOp::Lt, call(Intrinsic::Lane, vec![]), ThreadExpr::int(3)), vec![mark.clone()]);
        let found = diagnostics(&[marks.clone(), in_some_lanes, under(marked.clone(), vec![sum.clone()])]);
        assert!(found.len() == 1 && found[0].contains("; `marks` was computed from"), "{found:?}");
        // set where every lane is: the lanes agree
        assert_eq!(diagnostics(&[marks, mark, under(marked, vec![sum])]), Vec::<String>::new());
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
            check_thread_statement(statement, &mut TypeEnv::default(), &mut Varying::default(), None, &mut out);
            out
        };
        assert_eq!(diagnostics(&shuffle(Intrinsic::Lane)).len(), 1);
        assert!(diagnostics(&shuffle(Intrinsic::WarpIndex)).is_empty());
    }
}
