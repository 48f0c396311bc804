//! What names denote in thread code ([`Binding`]) and the types of its expressions
//! ([`TypeEnv`]): the same rules for validation and for rendering.

use super::*;

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
            format!(
                "{} gives each lane {rows} × {cols} values (2 rows of each m64 tile, of which its warp holds 16; WN / 4 columns)",
                self.declared
            )
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
    /// Locals whose value did not type: bound as f32 so that checking goes on, but a type
    /// error in an expression that reads one is a consequence of the first, not reported again.
    untyped: Vec<String>,
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

    /// The names every statement of the kernel sees: [`TypeEnv::of_kernel`]'s, block indices,
    /// loop variables, shared buffers and fragments (thread-code locals are added as they are
    /// declared).
    pub fn of_kernel_body(kernel: &Kernel) -> Self {
        let mut env = Self::of_kernel(kernel);
        for statement in kernel.statements() {
            match statement {
                Statement::Grid(grid) => grid.vars.iter().for_each(|v| env.bind_value(v, ThreadType::I32, false)),
                Statement::GridStride(stride) => env.bind_value(&stride.var, ThreadType::I32, false),
                Statement::Pipeline(pipeline) => env.bind_value(&pipeline.var, ThreadType::I32, false),
                Statement::Shared(buffer) => env.bind(&buffer.name, Binding::Shared { element: buffer.element }),
                Statement::Fragment(fragment) => env.bind(&fragment.name, Binding::fragment(fragment, kernel)),
                _ => {}
            }
        }
        env
    }

    /// Marks `name` as declared from a value that did not type (its error already reported).
    ///
    /// ```
    /// use tessera_dsl::{ThreadExpr, ThreadType, TypeEnv};
    /// let mut env = TypeEnv::default();
    /// env.bind_value("a", ThreadType::F32, false);
    /// env.mark_untyped("a");
    /// assert!(env.reads_untyped(&ThreadExpr::name("a")));
    /// ```
    pub fn mark_untyped(&mut self, name: &str) {
        if !self.untyped.iter().any(|n| n == name) {
            self.untyped.push(name.to_string());
        }
    }

    /// Whether `expr` reads a local [`TypeEnv::mark_untyped`] marked.
    pub fn reads_untyped(&self, expr: &ThreadExpr) -> bool {
        let mut found = false;
        expr.walk(&mut |e| {
            if let ThreadExprKind::Name(name) = &e.kind {
                found |= self.untyped.contains(name);
            }
        });
        found
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

    /// The lane count of `warp_sum(v, LANES)` / `warp_max(v, LANES)`: a literal or a constant,
    /// a power of two from 2 to 32 (the groups are aligned runs of lanes a butterfly keeps apart).
    pub fn lane_count(&self, function: Intrinsic, lanes: &ThreadExpr) -> Result<i64, Diagnostic> {
        let value = match &lanes.kind {
            ThreadExprKind::Int { value, .. } => Some(*value),
            ThreadExprKind::Name(name) => self.constants.get(name).copied(),
            _ => None,
        };
        let name = function.name();
        match value {
            Some(count @ 2..=32) if (count as u64).is_power_of_two() => Ok(count),
            Some(count) => {
                let upper = (count.clamp(2, 32) as u64).next_power_of_two() as i64;
                let hint = match upper / 2 {
                    lower if lower >= 2 && lower != count => {
                        format!("groups of {lower} or {upper} lanes, `{name}(v, {upper})`; `{name}(v)` reduces over the whole warp")
                    }
                    _ => format!("`{name}(v, {upper})`; `{name}(v)` reduces over the whole warp"),
                };
                Err(Diagnostic::new(
                    lanes.origin,
                    format!("`{name}(v, {count})`: the lanes of a group are a power of two from 2 to 32, not {count}"),
                )
                .with_hint(hint))
            }
            None => Err(Diagnostic::new(
                lanes.origin,
                format!(
                    "`{name}(v, lanes)` takes its lane count as a literal or a constant (`consts(..)`, `fixed(..)`)"
                ),
            )
            .with_hint(format!("e.g. `{name}(v, 8)`: each aligned group of 8 lanes"))),
        }
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
                        VectorStart::Element | VectorStart::AnyElement => {
                            format!("`{tensor}` is 2-D: `{tensor}.{method}([r, c])` is elements c .. of row r")
                        }
                    })),
                    (Some(Binding::Tensor { shape, .. }), _) if shape.len() > 2 => Err(error(format!(
                        "`{tensor}` has rank {}: `.{method}(..)` loads from a 1-D or 2-D tensor; index its elements with `{tensor}[[..]]`",
                        shape.len()
                    ))),
                    (Some(Binding::Tensor { .. }), Some(_)) => Err(error(match start {
                        VectorStart::Vector => format!("`{tensor}` is 1-D: `{tensor}.vector(i)` is elements i·VECTOR .."),
                        VectorStart::Element | VectorStart::AnyElement => {
                            format!("`{tensor}` is 1-D: `{tensor}.{method}(c)` is elements c ..")
                        }
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
        if !function.arity().contains(&args.len()) {
            return Err(error(format!(
                "`{}` takes {} argument(s); {} given",
                function.name(),
                function.arity_in_words(),
                args.len()
            )));
        }
        use Intrinsic::*;
        if let (WarpSum | WarpMax, Some(lanes)) = (function, args.get(1)) {
            self.lane_count(function, lanes)?;
        }
        match function {
            ThreadIndex | Lane | WarpIndex | BlockIndex | BlockCount | ClusterRank => Ok(ThreadType::I32),
            WarpAny | WarpAll => {
                let ty = self.typed(&args[0], Some(ThreadType::Bool))?;
                if ty != ThreadType::Bool {
                    let name = function.name();
                    return Err(error(format!("`{name}` takes a bool; this is {ty}"))
                        .with_hint(format!("a comparison, e.g. `{name}(v > 0.0)`")));
                }
                Ok(ThreadType::Bool)
            }
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
