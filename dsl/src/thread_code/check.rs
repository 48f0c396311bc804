//! The checks on thread statements: types, places that may be written, register arrays, and
//! collectives (warp, block, cluster) that every thread must reach.

use super::*;

/// The most elements one register array may hold: past this, registers spill to local memory.
pub const MAX_REGISTER_ARRAY: i64 = 128;

/// The thread-code locals whose values can differ between the threads of a block: between the
/// lanes of a warp (`lanes`: computed from `thread_index()`, `lane()`, ..), or only between its
/// warps (`warps`: from `warp_index()`, a warp's reduction, or set under a condition that differs
/// between warps). A collective under a condition on them is an error (see [`is_varying`]).
///
/// ```
/// use tessera_dsl::{check_thread_statement, ThreadExpr, ThreadExprKind, ThreadStatement, ThreadStatementKind, TypeEnv, Varying, Intrinsic};
/// let warp = ThreadStatement::new(ThreadStatementKind::Let {
///     name: "w".into(), mutable: false, ty: None,
///     init: ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::WarpIndex, args: vec![] }),
/// });
/// let mut varying = Varying::default();
/// check_thread_statement(&warp, &mut TypeEnv::default(), &mut varying, None, &mut Vec::new());
/// assert_eq!((varying.lanes.len(), varying.warps), (0, vec!["w".to_string()]));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Varying {
    pub lanes: Vec<String>,
    pub warps: Vec<String>,
}

impl Varying {
    /// Records `name` as set from `value`: varying between lanes, between warps, or neither.
    fn bind(&mut self, name: &str, value: &ThreadExpr) {
        if is_varying(value, &self.lanes) {
            self.lanes.push(name.to_string());
        } else if differs_between_warps(value, self) {
            self.warps.push(name.to_string());
        }
    }
}

/// Checks thread statements in `env`, binding their `let`s; every problem is pushed.
pub fn check_thread_statement(
    statement: &ThreadStatement,
    env: &mut TypeEnv,
    varying: &mut Varying,
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
                    out.push(skipped_by_lanes(&collective, e.origin, condition));
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
            varying.bind(name, init);
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
                Ok(n) if (1..=MAX_REGISTER_ARRAY).contains(n) => {}
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
            if divergent.is_some() {
                varying.lanes.push(name.clone());
            } else {
                varying.bind(name, init);
            }
            env.bind(name, Binding::Registers { element, len: length.ok(), mutable: *mutable });
        }
        ThreadStatementKind::BlockReductions { name, function, values } => {
            let mut element = None;
            for value in values {
                check_expr(value, None, env, out);
                match env.type_of(value) {
                    Ok(ThreadType::Scalar(found)) if element.is_none_or(|e| e == found) => element = Some(found),
                    Ok(other) => out.push(Diagnostic::new(
                        value.origin,
                        format!("`{name}`'s block reductions take numbers of one type; `{value}` is {other}"),
                    )),
                    Err(_) => {}
                }
            }
            if !matches!(function, Intrinsic::BlockSum | Intrinsic::BlockMax) {
                out.push(Diagnostic::new(
                    statement.origin,
                    format!("`{name}` reduces with `block_sum` or `block_max`, not `{}`", function.name()),
                ));
            }
            if let Some(condition) = divergent {
                out.push(skipped_by_lanes(function.name(), statement.origin, condition));
            }
            let len = Some(values.len() as i64);
            env.bind(name, Binding::Registers { element: element.unwrap_or(ElementType::F32), len, mutable: false });
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
                        if divergent.is_some() {
                            varying.lanes.push(name.clone());
                        } else {
                            varying.bind(name, value);
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
                ThreadExprKind::VectorLoad { tensor, start: VectorStart::AnyElement, .. } if !atomic => out.push(
                    Diagnostic::new(place.origin, format!("`{tensor}.vector_from(..)` loads; it cannot be stored to"))
                        .with_hint(format!("store whole vectors with `{tensor}.vector_at(..)` from an aligned element (`{tensor}.align_offset(..)` finds it), the rest element by element")),
                ),
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
            let inner_divergent =
                divergent.or_else(|| is_varying(condition, &varying.lanes).then_some(condition.origin));
            let between_warps =
                divergent.is_none() && inner_divergent.is_none() && differs_between_warps(condition, varying);
            if between_warps {
                for s in then.iter().chain(otherwise) {
                    if let ThreadStatementKind::BlockReductions { function, .. } = &s.kind {
                        out.push(skipped_by_warps(function.name(), s.origin, condition.origin));
                    }
                    for expr in s.expressions() {
                        expr.walk(&mut |e| match &e.kind {
                            ThreadExprKind::Call { function, .. } if function.is_block_collective() => {
                                out.push(skipped_by_warps(function.name(), e.origin, condition.origin))
                            }
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
            // a local set in only some warps differs between warps after the `if`
            if between_warps {
                for s in then.iter().chain(otherwise) {
                    s.walk_statements(&mut |s| {
                        if let ThreadStatementKind::Assign {
                            place: ThreadExpr { kind: ThreadExprKind::Name(name), .. },
                            ..
                        } = &s.kind
                        {
                            if !varying.lanes.contains(name) && !varying.warps.contains(name) {
                                varying.warps.push(name.clone());
                            }
                        }
                    });
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
                [Some(start), Some(end), step.as_ref()].into_iter().flatten().any(|b| is_varying(b, &varying.lanes));
            if bounds_vary {
                varying.lanes.push(var.clone());
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

/// A warp collective at `origin` under the condition at `condition` that differs between lanes.
fn skipped_by_lanes(collective: &str, origin: Origin, condition: Origin) -> Diagnostic {
    Diagnostic::new(
        origin,
        format!(
            "`{collective}` runs under a condition that differs between the lanes of a warp (line {}): the lanes that skip it leave the shuffle waiting",
            condition.line
        ),
    )
    .with_hint("call it where the whole warp is, e.g. before the `if`, or make the condition depend on `warp_index()` only")
}

/// A block collective at `origin` under the condition at `condition` that differs between warps.
fn skipped_by_warps(collective: &str, origin: Origin, condition: Origin) -> Diagnostic {
    Diagnostic::new(
        origin,
        format!(
            "`{collective}` runs under a condition that differs between the warps of the block (line {}): the threads that skip it leave `__syncthreads` waiting",
            condition.line
        ),
    )
    .with_hint("call it where the whole block is, before or after the `if`")
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
/// same across a warp, and so is a reduction's or `warp_any`'s over the whole warp or block,
/// whatever it reduced.)
pub fn is_varying(expr: &ThreadExpr, varying: &[String]) -> bool {
    // every lane gets the same result: what it reduced does not matter
    let uniform = expr.replaced(&|e| match &e.kind {
        ThreadExprKind::Call { function, args }
            if function.result_is_block_uniform() || is_the_same_in_every_lane(*function, args) =>
        {
            Some(ThreadExpr::int(0))
        }
        _ => None,
    });
    let mut found = false;
    uniform.walk(&mut |e| match &e.kind {
        ThreadExprKind::Call { function: Intrinsic::ThreadIndex | Intrinsic::Lane, .. } => found = true,
        ThreadExprKind::FragmentSlot { .. } => found = true,
        ThreadExprKind::Name(name) if varying.contains(name) => found = true,
        _ => {}
    });
    found
}

/// `warp_any(..)`, and `warp_sum(v)` / `warp_max(v)` over the whole warp (no lane count, or
/// 32): every lane of the warp gets the same result.
fn is_the_same_in_every_lane(function: Intrinsic, args: &[ThreadExpr]) -> bool {
    match function {
        Intrinsic::WarpAny => true,
        Intrinsic::WarpSum | Intrinsic::WarpMax => match args.get(1) {
            None => true,
            Some(lanes) => matches!(lanes.kind, ThreadExprKind::Int { value: 32, .. }),
        },
        _ => false,
    }
}

/// Whether `expr` can differ between the warps of a block: it can differ between lanes, or it
/// mentions `warp_index()`, a warp's reduction or a local that differs between warps.
fn differs_between_warps(expr: &ThreadExpr, varying: &Varying) -> bool {
    if is_varying(expr, &varying.lanes) {
        return true;
    }
    // a block's reduction is the same in every warp
    let uniform = expr.replaced(&|e| match &e.kind {
        ThreadExprKind::Call { function, .. } if function.result_is_block_uniform() => Some(ThreadExpr::int(0)),
        _ => None,
    });
    let mut found = false;
    uniform.walk(&mut |e| match &e.kind {
        ThreadExprKind::Call { function: Intrinsic::WarpIndex, .. } => found = true,
        ThreadExprKind::Call { function, .. } if function.is_warp_collective() => found = true,
        ThreadExprKind::Name(name) if varying.warps.contains(name) => found = true,
        _ => {}
    });
    found
}

/// The thread statements of a body, with the bindings they see: for validation of the whole
/// kernel (see [`crate::validate`]).
pub(crate) fn check_body(kernel: &Kernel, body: &[Statement], env: &mut TypeEnv, out: &mut Vec<Diagnostic>) {
    let mut varying = Varying::default();
    walk(kernel, body, env, &mut varying, out);
}

fn walk(kernel: &Kernel, body: &[Statement], env: &mut TypeEnv, varying: &mut Varying, out: &mut Vec<Diagnostic>) {
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

/// A write to the read-only tensor `name`.
fn read_only(origin: Origin, name: &str) -> Diagnostic {
    Diagnostic::new(origin, format!("`{name}` is read-only (`Global`); it cannot be written"))
        .with_hint("declare the parameter `GlobalMut<..>` to write it")
}
