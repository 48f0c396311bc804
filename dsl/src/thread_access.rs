//! The memory accesses of thread code, for the static analysis: each warp of a block runs
//! the code abstractly, lane by lane (integers are computed, loaded values are unknown), and
//! every indexing of a shared buffer or global tensor becomes one warp instruction whose
//! lanes' addresses give its bank conflicts or sectors — as for the tile copies.
//!
//! Assumed where the code does not say: every shape symbol is [`ASSUMED_EXTENT`] (rows of
//! global tensors then start 32-byte aligned), every block index is 1 (a block away from
//! the grid's first edge), integer scalar parameters are 0, `block_count()` is unknown. Loops run to their end, at most
//! [`MAX_ITERATIONS`] times; a lane whose bounds are unknown runs a loop once, and a branch
//! whose condition is unknown runs both ways.

use std::collections::BTreeMap;

use crate::{
    ElementType, FragmentLayout, Intrinsic, Kernel, ParamKind, SharedLayout, SlotQuery, Statement, ThreadExpr,
    ThreadExprKind, ThreadOp, ThreadStatement, ThreadStatementKind, UnaryOp, VectorStart,
};

/// The value of every shape symbol in the analysis: a multiple of 32 elements.
pub const ASSUMED_EXTENT: i64 = 8192;
/// Iterations of one loop followed, at most.
pub const MAX_ITERATIONS: i64 = 256;
const WARP: i64 = 32;

/// One warp instruction: per lane, the 4-byte words it touches (empty: the lane is idle).
pub(crate) type Instruction = Vec<Vec<i64>>;

/// Where thread code reads or writes memory, and what each warp's instructions there touched.
#[derive(Clone, Debug)]
pub(crate) struct AccessSite {
    /// The innermost statement holding the access, as written.
    pub statement: String,
    /// The buffer or tensor indexed.
    pub operand: String,
    pub shared: bool,
    pub store: bool,
    /// Bytes per lane.
    pub lane_bytes: i64,
    pub instructions: Vec<Instruction>,
    /// The most instructions one warp issued here (so one thread's count).
    pub per_thread: i64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Int(i64),
    Bool(bool),
    Unknown,
}

type Env = BTreeMap<String, Value>;

struct Warp<'k> {
    kernel: &'k Kernel,
    /// Constants, THREADS, VECTOR, shape symbols and block indices.
    globals: Env,
    shared: BTreeMap<String, SharedLayout>,
    /// The fragments declared at kernel level, for `s.row(i)` and `s.col(j)`.
    fragments: BTreeMap<String, FragmentLayout>,
    tids: Vec<i64>,
    lanes: Vec<Env>,
    /// Sites by the address of their expression in the IR, in order of first use.
    sites: Vec<(usize, AccessSite)>,
    counts: BTreeMap<usize, i64>,
}

/// Every access of the kernel's top-level thread code, by site, over all warps of a block.
pub(crate) fn thread_accesses(kernel: &Kernel) -> Vec<AccessSite> {
    let threads = kernel.config.threads.count() as i64;
    let mut globals: Env = kernel.config.constants.iter().map(|c| (c.name.clone(), Value::Int(c.value))).collect();
    globals.insert("THREADS".into(), Value::Int(threads));
    globals.insert("VECTOR".into(), Value::Int(i64::from(kernel.config.vector.get())));
    for symbol in kernel.shape_symbols() {
        globals.insert(symbol.to_string(), Value::Int(ASSUMED_EXTENT));
    }
    for param in &kernel.params {
        if let ParamKind::Scalar(ElementType::I32 | ElementType::U32) = param.kind {
            globals.insert(param.name.clone(), Value::Int(0));
        }
    }
    let scope = kernel.constant_scope();
    let mut shared = BTreeMap::new();
    let mut fragments = BTreeMap::new();
    for statement in &kernel.body {
        match statement {
            Statement::Fragment(fragment) => {
                if let Some(layout) = FragmentLayout::with_scope(fragment, &scope) {
                    fragments.insert(fragment.name.clone(), layout);
                }
            }
            Statement::Grid(grid) => {
                for var in &grid.vars {
                    globals.insert(var.clone(), Value::Int(1));
                }
            }
            Statement::Shared(buffer) => {
                if let Some(layout) = SharedLayout::with_scope(buffer, &scope) {
                    shared.insert(buffer.name.clone(), layout);
                }
            }
            _ => {}
        }
    }
    let code: Vec<&ThreadStatement> = kernel
        .body
        .iter()
        .filter_map(|s| match s {
            Statement::Thread(t) => Some(t),
            _ => None,
        })
        .collect();
    if code.is_empty() {
        return Vec::new();
    }
    let mut sites: Vec<(usize, AccessSite)> = Vec::new();
    for warp in 0..(threads + WARP - 1) / WARP {
        let tids: Vec<i64> = (0..WARP).map(|lane| warp * WARP + lane).collect();
        let mask: Vec<bool> = tids.iter().map(|t| *t < threads).collect();
        let mut run = Warp {
            kernel,
            globals: globals.clone(),
            shared: shared.clone(),
            fragments: fragments.clone(),
            lanes: vec![Env::new(); WARP as usize],
            tids,
            sites: std::mem::take(&mut sites),
            counts: BTreeMap::new(),
        };
        for statement in &code {
            run.statement(statement, &mask);
        }
        for (key, count) in &run.counts {
            if let Some((_, site)) = run.sites.iter_mut().find(|(k, _)| k == key) {
                site.per_thread = site.per_thread.max(*count);
            }
        }
        sites = run.sites;
    }
    sites.into_iter().map(|(_, site)| site).collect()
}

impl Warp<'_> {
    fn statement(&mut self, statement: &ThreadStatement, mask: &[bool]) {
        let text = statement.to_string();
        match &statement.kind {
            ThreadStatementKind::Let { name, init, .. } => {
                let values = self.expr(init, mask, &text);
                self.bind(name, &values, mask);
            }
            // the registers' values are not followed: indexing them touches no memory
            ThreadStatementKind::LetArray { init, .. } => {
                self.expr(init, mask, &text);
            }
            ThreadStatementKind::BlockReductions { values, .. } => {
                for value in values {
                    self.expr(value, mask, &text);
                }
            }
            ThreadStatementKind::Assign { place, value, .. } => {
                let values = self.expr(value, mask, &text);
                match &place.kind {
                    ThreadExprKind::Name(name) => self.bind(name, &values, mask),
                    ThreadExprKind::Index { base, indices } => self.index(place, base, indices, mask, &text, true),
                    ThreadExprKind::VectorLoad { tensor, row, index, start } => {
                        self.vector_access(place, tensor, row.as_deref(), index, *start, mask, &text, true)
                    }
                    _ => {}
                }
            }
            ThreadStatementKind::AtomicAdd { place, value } => {
                self.expr(value, mask, &text);
                if let ThreadExprKind::Index { base, indices } = &place.kind {
                    self.index(place, base, indices, mask, &text, true);
                }
            }
            ThreadStatementKind::If { condition, then, otherwise } => {
                let values = self.expr(condition, mask, &statement.to_string());
                let branch = |taken: bool| -> Vec<bool> {
                    mask.iter()
                        .zip(&values)
                        .map(|(active, v)| *active && !matches!(v, Value::Bool(b) if *b != taken))
                        .collect()
                };
                let (then_mask, else_mask) = (branch(true), branch(false));
                for s in then {
                    self.statement(s, &then_mask);
                }
                for s in otherwise {
                    self.statement(s, &else_mask);
                }
            }
            ThreadStatementKind::For { var, start, end, step, body } => {
                let starts = self.expr(start, mask, &text);
                let ends = self.expr(end, mask, &text);
                let steps = match step {
                    Some(step) => self.expr(step, mask, &text),
                    None => vec![Value::Int(1); mask.len()],
                };
                for k in 0..MAX_ITERATIONS {
                    let mut values = vec![Value::Unknown; mask.len()];
                    let mut active = vec![false; mask.len()];
                    for lane in 0..mask.len() {
                        if !mask[lane] {
                            continue;
                        }
                        match (starts[lane], ends[lane], steps[lane]) {
                            (Value::Int(s), Value::Int(e), Value::Int(d)) if d > 0 => {
                                let i = s + k * d;
                                active[lane] = i < e;
                                values[lane] = Value::Int(i);
                            }
                            // unknown bounds: once, with the start if it is known
                            (s, _, _) => {
                                active[lane] = k == 0;
                                values[lane] = if matches!(s, Value::Int(_)) { s } else { Value::Unknown };
                            }
                        }
                    }
                    if !active.contains(&true) {
                        break;
                    }
                    self.bind(var, &values, &active);
                    for s in body {
                        self.statement(s, &active);
                    }
                }
            }
        }
    }

    fn bind(&mut self, name: &str, values: &[Value], mask: &[bool]) {
        for (lane, value) in values.iter().enumerate() {
            if mask[lane] {
                self.lanes[lane].insert(name.to_string(), *value);
            }
        }
    }

    fn lookup(&self, lane: usize, name: &str) -> Value {
        self.lanes[lane].get(name).or_else(|| self.globals.get(name)).copied().unwrap_or(Value::Unknown)
    }

    /// The expression's value in every lane (unknown where the lane is idle), recording the
    /// loads it makes.
    fn expr(&mut self, expr: &ThreadExpr, mask: &[bool], statement: &str) -> Vec<Value> {
        let n = mask.len();
        match &expr.kind {
            ThreadExprKind::Int { value, .. } => vec![Value::Int(*value); n],
            ThreadExprKind::Bool(b) => vec![Value::Bool(*b); n],
            ThreadExprKind::Float { .. } | ThreadExprKind::Infinity(_) => vec![Value::Unknown; n],
            ThreadExprKind::Name(name) => (0..n).map(|lane| self.lookup(lane, name)).collect(),
            // dense rows of ASSUMED_EXTENT elements, as the indexing below assumes
            ThreadExprKind::LeadingDimension(_) => vec![Value::Int(ASSUMED_EXTENT); n],
            ThreadExprKind::Index { base, indices } => {
                self.index(expr, base, indices, mask, statement, false);
                vec![Value::Unknown; n]
            }
            ThreadExprKind::VectorLoad { tensor, row, index, start } => {
                self.vector_access(expr, tensor, row.as_deref(), index, *start, mask, statement, false);
                vec![Value::Unknown; n]
            }
            // rows of ASSUMED_EXTENT elements start aligned: no element before the first vector
            ThreadExprKind::AlignOffset { row, column, .. } => {
                if let Some(row) = row {
                    self.expr(row, mask, statement);
                }
                self.expr(column, mask, statement);
                vec![Value::Int(0); n]
            }
            ThreadExprKind::Cast { value, to } => {
                let values = self.expr(value, mask, statement);
                if to.is_integer() {
                    values
                } else {
                    vec![Value::Unknown; n]
                }
            }
            ThreadExprKind::VectorSum(inner) => {
                self.expr(inner, mask, statement);
                vec![Value::Unknown; n]
            }
            // `s.row(i)` / `s.col(j)`: where the lane's value slot lies in the block tile, as
            // codegen computes it; the row reductions are loaded values
            ThreadExprKind::FragmentSlot { fragment, query, slot } => {
                let slots = self.expr(slot, mask, statement);
                let layout = self.fragments.get(fragment).copied();
                (0..n)
                    .map(|lane| match (query, slots[lane], layout) {
                        (SlotQuery::Row, Value::Int(i), Some(layout)) => {
                            Value::Int(layout.slot_row(self.tids[lane], i))
                        }
                        (SlotQuery::Col, Value::Int(j), Some(layout)) => {
                            Value::Int(layout.slot_col(self.tids[lane], j))
                        }
                        _ => Value::Unknown,
                    })
                    .collect()
            }
            ThreadExprKind::Unary { op, operand } => {
                let values = self.expr(operand, mask, statement);
                values
                    .into_iter()
                    .map(|v| match (op, v) {
                        (UnaryOp::Neg, Value::Int(i)) => Value::Int(-i),
                        (UnaryOp::Not, Value::Bool(b)) => Value::Bool(!b),
                        _ => Value::Unknown,
                    })
                    .collect()
            }
            ThreadExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs, mask, statement);
                let b = self.expr(rhs, mask, statement);
                a.into_iter().zip(b).map(|(a, b)| binary(*op, a, b)).collect()
            }
            ThreadExprKind::Call { function, args } => {
                let values: Vec<Vec<Value>> = args.iter().map(|a| self.expr(a, mask, statement)).collect();
                (0..n)
                    .map(|lane| {
                        let tid = self.tids[lane];
                        match (function, values.as_slice()) {
                            (Intrinsic::ThreadIndex, _) => Value::Int(tid),
                            (Intrinsic::Lane, _) => Value::Int(tid % WARP),
                            (Intrinsic::WarpIndex, _) => Value::Int(tid / WARP),
                            (Intrinsic::BlockIndex, _) => Value::Int(1),
                            (Intrinsic::Min | Intrinsic::Max, [a, b]) => match (a[lane], b[lane]) {
                                (Value::Int(a), Value::Int(b)) if *function == Intrinsic::Min => Value::Int(a.min(b)),
                                (Value::Int(a), Value::Int(b)) => Value::Int(a.max(b)),
                                _ => Value::Unknown,
                            },
                            _ => Value::Unknown,
                        }
                    })
                    .collect()
            }
        }
    }

    /// `x.vector(i)` or `x.vector([r, i])`: one access of VECTOR elements per lane (rows of
    /// ASSUMED_EXTENT elements, as for `x[[r, c]]`).
    #[allow(clippy::too_many_arguments)]
    fn vector_access(
        &mut self,
        expr: &ThreadExpr,
        tensor: &str,
        row: Option<&ThreadExpr>,
        index: &ThreadExpr,
        start: VectorStart,
        mask: &[bool],
        statement: &str,
        store: bool,
    ) {
        let indices = self.expr(index, mask, statement);
        let rows = row.map(|row| self.expr(row, mask, statement));
        let vector = i64::from(self.kernel.config.vector.get());
        // the first element: a vector index counts VECTOR elements, `vector_at` one
        let step = match start {
            VectorStart::Vector => vector,
            VectorStart::Element | VectorStart::AnyElement => 1,
        };
        let Some(element) = self.tensor_element(tensor) else { return };
        let offsets: Vec<Option<i64>> = (0..mask.len())
            .map(|lane| {
                let Value::Int(i) = indices[lane] else { return None };
                match &rows {
                    None => Some(i * step),
                    Some(rows) => match rows[lane] {
                        Value::Int(r) => Some(r * ASSUMED_EXTENT + i * step),
                        _ => None,
                    },
                }
            })
            .collect();
        self.record(expr, tensor, false, element, vector, &offsets, mask, statement, store);
    }

    /// Records `base[indices]` if `base` is a shared buffer or a global tensor.
    fn index(
        &mut self,
        expr: &ThreadExpr,
        base: &str,
        indices: &[ThreadExpr],
        mask: &[bool],
        statement: &str,
        store: bool,
    ) {
        let values: Vec<Vec<Value>> = indices.iter().map(|i| self.expr(i, mask, statement)).collect();
        let at = |lane: usize| -> Option<Vec<i64>> {
            values
                .iter()
                .map(|v| match v[lane] {
                    Value::Int(i) => Some(i),
                    _ => None,
                })
                .collect()
        };
        if let Some(layout) = self.shared.get(base).copied() {
            let offsets: Vec<Option<i64>> = (0..mask.len())
                .map(|lane| match at(lane)?.as_slice() {
                    [row, col] => Some(layout.offset(*row, *col)),
                    _ => None,
                })
                .collect();
            self.record(expr, base, true, layout.element, 1, &offsets, mask, statement, store);
        } else if let Some(element) = self.tensor_element(base) {
            let offsets: Vec<Option<i64>> = (0..mask.len())
                .map(|lane| match at(lane)?.as_slice() {
                    [i] => Some(*i),
                    // rows of every 2-D tensor are ASSUMED_EXTENT elements long, and so is
                    // every dimension of a batched one
                    [row, col] => Some(row * ASSUMED_EXTENT + col),
                    [first, rest @ ..] => Some(
                        rest.iter().fold(*first, |offset, i| offset.saturating_mul(ASSUMED_EXTENT).saturating_add(*i)),
                    ),
                    [] => None,
                })
                .collect();
            self.record(expr, base, false, element, 1, &offsets, mask, statement, store);
        }
    }

    fn tensor_element(&self, name: &str) -> Option<ElementType> {
        match &self.kernel.param(name)?.kind {
            ParamKind::Global(tensor) => Some(tensor.element),
            ParamKind::Scalar(_) => None,
        }
    }

    /// One warp instruction at `expr`: `elements` consecutive elements from each active
    /// lane's offset; lanes whose offset is unknown are left out.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        expr: &ThreadExpr,
        operand: &str,
        shared: bool,
        element: ElementType,
        elements: i64,
        offsets: &[Option<i64>],
        mask: &[bool],
        statement: &str,
        store: bool,
    ) {
        if !mask.contains(&true) {
            return;
        }
        let bytes = i64::from(element.size_bytes());
        let lane_bytes = bytes * elements;
        let instruction: Instruction = offsets
            .iter()
            .zip(mask)
            .map(|(offset, active)| match offset {
                Some(offset) if *active => {
                    ((offset * bytes).div_euclid(4)..(offset * bytes + lane_bytes + 3).div_euclid(4)).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        let key = (expr as *const ThreadExpr as usize) * 2 + usize::from(store);
        *self.counts.entry(key).or_default() += 1;
        if instruction.iter().all(Vec::is_empty) {
            return;
        }
        match self.sites.iter_mut().find(|(k, _)| *k == key) {
            Some((_, site)) => site.instructions.push(instruction),
            None => self.sites.push((
                key,
                AccessSite {
                    statement: statement.to_string(),
                    operand: operand.to_string(),
                    shared,
                    store,
                    lane_bytes,
                    instructions: vec![instruction],
                    per_thread: 0,
                },
            )),
        }
    }
}

/// C's integer and boolean operators on known values (division truncates, as in C).
fn binary(op: ThreadOp, a: Value, b: Value) -> Value {
    use ThreadOp::*;
    match (a, b) {
        (Value::Int(a), Value::Int(b)) => match op {
            Add => a.checked_add(b).map_or(Value::Unknown, Value::Int),
            Sub => a.checked_sub(b).map_or(Value::Unknown, Value::Int),
            Mul => a.checked_mul(b).map_or(Value::Unknown, Value::Int),
            Div => a.checked_div(b).map_or(Value::Unknown, Value::Int),
            Rem => a.checked_rem(b).map_or(Value::Unknown, Value::Int),
            Lt => Value::Bool(a < b),
            Le => Value::Bool(a <= b),
            Gt => Value::Bool(a > b),
            Ge => Value::Bool(a >= b),
            Eq => Value::Bool(a == b),
            Ne => Value::Bool(a != b),
            BitAnd => Value::Int(a & b),
            BitOr => Value::Int(a | b),
            BitXor => Value::Int(a ^ b),
            Shl => u32::try_from(b).ok().and_then(|s| a.checked_shl(s)).map_or(Value::Unknown, Value::Int),
            Shr => u32::try_from(b).ok().and_then(|s| a.checked_shr(s)).map_or(Value::Unknown, Value::Int),
            And | Or => Value::Unknown,
        },
        (Value::Bool(a), Value::Bool(b)) => match op {
            And => Value::Bool(a && b),
            Or => Value::Bool(a || b),
            Eq => Value::Bool(a == b),
            Ne => Value::Bool(a != b),
            _ => Value::Unknown,
        },
        // false && anything, true || anything
        (Value::Bool(false), _) if op == And => Value::Bool(false),
        (Value::Bool(true), _) if op == Or => Value::Bool(true),
        _ => Value::Unknown,
    }
}
