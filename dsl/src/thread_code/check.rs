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
    /// Records `name` as set from `reads` (a value, and for an element its place): varying
    /// between lanes, between warps, or neither.
    fn bind(&mut self, name: &str, reads: &[&ThreadExpr]) {
        if reads.iter().any(|read| is_varying(read, &self.lanes)) {
            self.lane(name);
        } else if reads.iter().any(|read| differs_between_warps(read, self)) {
            self.warp(name);
        }
    }

    /// Records `name` (a local, a register array, a writable tensor) as differing between lanes.
    fn lane(&mut self, name: &str) {
        if !self.lanes.iter().any(|n| n == name) {
            self.lanes.push(name.to_string());
        }
    }

    /// Records `name` as differing between warps, unless it already differs between lanes.
    fn warp(&mut self, name: &str) {
        if !self.lanes.iter().any(|n| n == name) && !self.warps.iter().any(|n| n == name) {
            self.warps.push(name.to_string());
        }
    }

    /// The names `expr` reads that differ between lanes, for a message.
    fn lane_names_in(&self, expr: &ThreadExpr) -> Vec<String> {
        let mut found = Vec::new();
        expr.walk(&mut |e| {
            let name = match &e.kind {
                ThreadExprKind::Name(name) => name,
                ThreadExprKind::Index { base, .. } => base,
                ThreadExprKind::VectorLoad { tensor, .. } => tensor,
                _ => return,
            };
            if self.lanes.contains(name) && !found.contains(name) {
                found.push(name.clone());
            }
        });
        found
    }
}

/// Why the statements under it may run in only some threads: an `if` whose condition, or a
/// loop whose trip count, may differ between the lanes of a warp. A collective under one is an
/// error whose message says which and why.
///
/// ```
/// use tessera_dsl::*;
/// // for j in 0..lane() { let s = warp_sum(v); }
/// let loop_per_lane = ThreadStatement::new(ThreadStatementKind::For {
///     var: "j".into(),
///     start: ThreadExpr::int(0),
///     end: ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::Lane, args: vec![] }),
///     step: None,
///     body: vec![ThreadStatement::new(ThreadStatementKind::Let {
///         name: "s".into(), mutable: false, ty: None,
///         init: ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::WarpSum, args: vec![ThreadExpr::int(1)] }),
///     })],
/// });
/// let mut out = Vec::new();
/// check_thread_statement(&loop_per_lane, &mut TypeEnv::default(), &mut Varying::default(), None, &mut out);
/// assert!(out[0].message.contains("in a loop whose trip count may differ between the lanes of a warp"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guard {
    pub origin: Origin,
    pub kind: GuardKind,
    /// Why it differs where the condition or bounds read locals or tensors, for the message:
    /// `flag` (computed from ..), or `y`, a tensor the kernel writes; empty where they call
    /// `thread_index()` or `lane()` themselves.
    pub through: String,
}

impl Guard {
    fn new(origin: Origin, kind: GuardKind, reads: &[&ThreadExpr], varying: &Varying, env: &TypeEnv) -> Self {
        let mut names: Vec<String> = Vec::new();
        for expr in reads {
            for name in varying.lane_names_in(expr) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let (tensors, locals): (Vec<&String>, Vec<&String>) =
            names.iter().partition(|name| matches!(env.get(name), Some(Binding::Tensor { .. })));
        let quoted = |names: &[&String]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        let mut reasons = Vec::new();
        if !locals.is_empty() {
            reasons.push(format!(
                "{} {} computed from `thread_index()` or `lane()`, or set under a condition or in a loop that differs between lanes",
                quoted(&locals),
                if locals.len() == 1 { "was" } else { "were" }
            ));
        }
        if !tensors.is_empty() {
            reasons.push(format!(
                "{} {} written by this kernel, so an element may hold another thread's write or not yet",
                quoted(&tensors),
                if tensors.len() == 1 { "is" } else { "are" }
            ));
        }
        Self { origin, kind, through: reasons.join("; ") }
    }
}

/// The statement a [`Guard`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardKind {
    If,
    Loop,
}

/// Checks thread statements in `env`, binding their `let`s; every problem is pushed.
pub fn check_thread_statement(
    statement: &ThreadStatement,
    env: &mut TypeEnv,
    varying: &mut Varying,
    divergent: Option<&Guard>,
    out: &mut Vec<Diagnostic>,
) {
    let check_expr =
        |expr: &ThreadExpr, wanted: Option<ThreadType>, env: &TypeEnv, varying: &Varying, out: &mut Vec<Diagnostic>| {
            // an expression reading a local whose own value did not type is already reported
            if let Err(d) = env.type_with(expr, wanted) {
                if !env.reads_untyped(expr) {
                    out.push(d);
                }
            }
            if let Some(guard) = divergent {
                expr.walk(&mut |e| {
                    if let Some(collective) = e.warp_collective() {
                        out.push(skipped_by_lanes(&collective, e.origin, guard));
                    }
                });
            }
            check_short_circuits(expr, varying, out);
        };
    match &statement.kind {
        ThreadStatementKind::Let { name, mutable, ty, init } => {
            check_expr(init, *ty, env, varying, out);
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
            varying.bind(name, &[init]);
            env.bind_value(name, ty.or(found).unwrap_or(ThreadType::F32), *mutable);
            if ty.is_none() && found.is_none() {
                env.mark_untyped(name);
            }
        }
        ThreadStatementKind::LetArray { name, mutable, len, init } => {
            check_expr(init, None, env, varying, out);
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
                varying.lane(name);
            } else {
                varying.bind(name, &[init]);
            }
            env.bind(name, Binding::Registers { element, len: length.ok(), mutable: *mutable });
        }
        ThreadStatementKind::BlockReductions { name, function, values } => {
            let mut element = None;
            for value in values {
                check_expr(value, None, env, varying, out);
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
            if let Some(guard) = divergent {
                out.push(skipped_by_lanes(function.name(), statement.origin, guard));
            }
            let len = Some(values.len() as i64);
            env.bind(name, Binding::Registers { element: element.unwrap_or(ElementType::F32), len, mutable: false });
        }
        ThreadStatementKind::Assign { place, value, .. } | ThreadStatementKind::AtomicAdd { place, value } => {
            let op = op_of(&statement.kind);
            let atomic = matches!(statement.kind, ThreadStatementKind::AtomicAdd { .. });
            check_expr(place, None, env, varying, out);
            let place_ty = env.type_of(place).ok();
            check_expr(value, place_ty, env, varying, out);
            let value_ty = env.type_with(value, place_ty).ok();
            if let (Some(p), Some(v)) = (place_ty, value_ty) {
                if env.reads_untyped(place) || env.reads_untyped(value) {
                    // the first error was the local's own
                } else if p != v {
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
                            varying.lane(name);
                        } else {
                            varying.bind(name, &[value]);
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
                    // a register array (or vector) with an element set under a condition on the
                    // lanes, or to a value of each lane's own, differs between lanes
                    if matches!(env.get(base), Some(Binding::Registers { .. } | Binding::Value { .. })) && !atomic {
                        if divergent.is_some() {
                            varying.lane(base);
                        } else {
                            varying.bind(base, &[value, place]);
                        }
                    }
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
            check_expr(condition, None, env, varying, out);
            if let Ok(ty) = env.type_of(condition) {
                if ty != ThreadType::Bool && !env.reads_untyped(condition) {
                    out.push(Diagnostic::new(condition.origin, format!("an `if` condition is a bool; this is {ty}")));
                }
            }
            let own_guard = (divergent.is_none() && is_varying(condition, &varying.lanes))
                .then(|| Guard::new(condition.origin, GuardKind::If, &[condition], varying, env));
            let inner_divergent = divergent.or(own_guard.as_ref());
            let between_warps = inner_divergent.is_none() && differs_between_warps(condition, varying);
            let branches: Vec<&ThreadStatement> = then.iter().chain(otherwise).collect();
            if between_warps {
                block_collectives_skipped_by_warps(&branches, GuardKind::If, condition.origin, out);
            }
            for branch in [then, otherwise] {
                let mut inner = env.clone();
                for s in branch {
                    check_thread_statement(s, &mut inner, varying, inner_divergent, out);
                }
            }
            // a local set in only some warps differs between warps after the `if`
            if between_warps {
                set_in_only_some_warps(&branches, varying);
            }
        }
        ThreadStatementKind::For { var, start, end, step, body } => {
            let bounds: Vec<&ThreadExpr> = [Some(start), Some(end), step.as_ref()].into_iter().flatten().collect();
            for bound in &bounds {
                check_expr(bound, Some(ThreadType::I32), env, varying, out);
                if let Ok(ty) = env.type_with(bound, Some(ThreadType::I32)) {
                    if ty != ThreadType::I32 && !env.reads_untyped(bound) {
                        out.push(Diagnostic::new(bound.origin, format!("loop bounds are i32; this is {ty}")));
                    }
                }
            }
            let bounds_vary = bounds.iter().any(|b| is_varying(b, &varying.lanes));
            let bounds_differ_between_warps = !bounds_vary && bounds.iter().any(|b| differs_between_warps(b, varying));
            if bounds_vary {
                varying.lane(var);
            } else if bounds_differ_between_warps {
                varying.warp(var);
            }
            let own_guard = (divergent.is_none() && bounds_vary)
                .then(|| Guard::new(statement.origin, GuardKind::Loop, &bounds, varying, env));
            let inner_divergent = divergent.or(own_guard.as_ref());
            let between_warps = inner_divergent.is_none() && bounds_differ_between_warps;
            let inside: Vec<&ThreadStatement> = body.iter().collect();
            if between_warps {
                block_collectives_skipped_by_warps(&inside, GuardKind::Loop, statement.origin, out);
            }
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
            // a local set in a loop that some warps run more often than others differs between warps
            if between_warps {
                set_in_only_some_warps(&inside, varying);
            }
        }
    }
}

/// The block collectives among `statements` (nested ones included), under an `if` or a loop
/// (`guard` at `origin`) that may differ between warps: each an error.
fn block_collectives_skipped_by_warps(
    statements: &[&ThreadStatement],
    guard: GuardKind,
    origin: Origin,
    out: &mut Vec<Diagnostic>,
) {
    for statement in statements {
        statement.walk_statements(&mut |s| {
            if let ThreadStatementKind::BlockReductions { function, .. } = &s.kind {
                out.push(skipped_by_warps(function.name(), s.origin, guard, origin));
            }
        });
        for expr in statement.expressions() {
            expr.walk(&mut |e| match &e.kind {
                ThreadExprKind::Call { function, .. } if function.is_block_collective() => {
                    out.push(skipped_by_warps(function.name(), e.origin, guard, origin))
                }
                _ => {}
            });
        }
    }
}

/// The locals and register arrays `statements` assign (nested ones included), when some warps
/// run them and others do not: they differ between warps afterwards.
fn set_in_only_some_warps(statements: &[&ThreadStatement], varying: &mut Varying) {
    for statement in statements {
        statement.walk_statements(&mut |s| {
            if let ThreadStatementKind::Assign { place, .. } = &s.kind {
                match &place.kind {
                    ThreadExprKind::Name(name) | ThreadExprKind::Index { base: name, .. } => varying.warp(name),
                    _ => {}
                }
            }
        });
    }
}

/// A collective on the right of `&&` or `||` runs only where the left side lets it: an error
/// where the left side may differ between the lanes of a warp (any collective) or between the
/// warps of the block (a block collective).
fn check_short_circuits(expr: &ThreadExpr, varying: &Varying, out: &mut Vec<Diagnostic>) {
    let mut found: Vec<Diagnostic> = Vec::new();
    expr.walk(&mut |e| {
        let ThreadExprKind::Binary { op: op @ (ThreadOp::And | ThreadOp::Or), lhs, rhs } = &e.kind else { return };
        let between_lanes = is_varying(lhs, &varying.lanes);
        let between_warps = !between_lanes && differs_between_warps(lhs, varying);
        if !between_lanes && !between_warps {
            return;
        }
        rhs.walk(&mut |inner| {
            let Some(collective) = inner.warp_collective() else { return };
            let block = matches!(&inner.kind, ThreadExprKind::Call { function, .. } if function.is_block_collective());
            if !between_lanes && !block {
                return;
            }
            let (who, waiting) = if between_lanes {
                ("lanes of a warp", format!("the lanes that skip it leave the {} waiting", collective_noun(&collective)))
            } else {
                ("warps of the block", "the threads that skip it leave `__syncthreads` waiting".to_string())
            };
            let runs = if *op == ThreadOp::And { "holds" } else { "fails" };
            let diagnostic = Diagnostic::new(
                inner.origin,
                format!(
                    "`{collective}` is on the right of `{}`, which runs it only where `{lhs}` {runs}, and that may differ between the {who}: {waiting}",
                    op.symbol()
                ),
            )
            .with_hint(format!(
                "compute it first, in a `let` of its own where every thread is (`let total = {collective}(..);`), then combine: `{lhs} {} total ..`",
                op.symbol()
            ));
            if !found.iter().any(|d| d.origin == diagnostic.origin) {
                found.push(diagnostic);
            }
        });
    });
    out.extend(found);
}

/// What a collective's lanes wait at: `warp_any` and `warp_all` vote, the others shuffle.
fn collective_noun(collective: &str) -> &'static str {
    if collective == Intrinsic::WarpAny.name() || collective == Intrinsic::WarpAll.name() {
        "vote"
    } else {
        "shuffle"
    }
}

/// A collective at `origin` under `guard`, an `if` or a loop that may differ between lanes.
fn skipped_by_lanes(collective: &str, origin: Origin, guard: &Guard) -> Diagnostic {
    let noun = collective_noun(collective);
    let line = guard.origin.line;
    let through = if guard.through.is_empty() { String::new() } else { format!("; {}", guard.through) };
    let place = match guard.kind {
        GuardKind::If => {
            format!("under a condition that may differ between the lanes of a warp (line {line}{through})")
        }
        GuardKind::Loop => {
            format!("in a loop whose trip count may differ between the lanes of a warp (line {line}{through})")
        }
    };
    let skip = match guard.kind {
        GuardKind::If => "the lanes that skip it",
        GuardKind::Loop => "the lanes that leave the loop early",
    };
    let block = Intrinsic::from_name(collective).is_some_and(Intrinsic::is_block_collective);
    let hint = match (guard.kind, block) {
        _ if guard.through.contains("written by this kernel") => {
            "a value every thread must agree on comes from a block reduction, or goes through a shared buffer (thread code that writes it and reads it gets a `__syncthreads()` between)"
        }
        (GuardKind::If, false) => {
            "call it where the whole warp is, e.g. before the `if`, or make the condition depend on `warp_index()` only"
        }
        (GuardKind::If, true) => "call it where the whole block is, before or after the `if`",
        (GuardKind::Loop, false) => {
            "give the loop bounds every lane of the warp shares (from `warp_index()`, the grid's indices, shape symbols, constants), or reduce after the loop"
        }
        (GuardKind::Loop, true) => {
            "give the loop bounds every thread of the block shares (the grid's indices, shape symbols, constants), or reduce after the loop"
        }
    };
    Diagnostic::new(origin, format!("`{collective}` runs {place}: {skip} leave the {noun} waiting")).with_hint(hint)
}

/// A block collective at `origin` under an `if` or a loop at `condition` that may differ between warps.
fn skipped_by_warps(collective: &str, origin: Origin, guard: GuardKind, condition: Origin) -> Diagnostic {
    let (place, hint) = match guard {
        GuardKind::If => (
            format!("under a condition that may differ between the warps of the block (line {})", condition.line),
            "call it where the whole block is, before or after the `if`",
        ),
        GuardKind::Loop => (
            format!("in a loop whose trip count may differ between the warps of the block (line {})", condition.line),
            "give the loop bounds every thread of the block shares (the grid's indices, shape symbols, constants), or reduce after the loop",
        ),
    };
    Diagnostic::new(
        origin,
        format!("`{collective}` runs {place}: the threads that skip it leave `__syncthreads` waiting"),
    )
    .with_hint(hint)
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
        // an element of a register array, or of a tensor, that differs between lanes
        ThreadExprKind::Index { base, .. } if varying.contains(base) => found = true,
        ThreadExprKind::VectorLoad { tensor, .. } if varying.contains(tensor) => found = true,
        _ => {}
    });
    found
}

/// `warp_any(..)`, `warp_all(..)`, and `warp_sum(v)` / `warp_max(v)` over the whole warp (no lane count, or
/// 32): every lane of the warp gets the same result.
fn is_the_same_in_every_lane(function: Intrinsic, args: &[ThreadExpr]) -> bool {
    match function {
        Intrinsic::WarpAny | Intrinsic::WarpAll => true,
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
        ThreadExprKind::Index { base, .. } if varying.warps.contains(base) => found = true,
        _ => {}
    });
    found
}

/// The thread statements of a body, with the bindings they see: for validation of the whole
/// kernel (see [`crate::validate`]).
pub(crate) fn check_body(kernel: &Kernel, body: &[Statement], env: &mut TypeEnv, out: &mut Vec<Diagnostic>) {
    let mut varying = Varying::default();
    // a tensor the kernel writes may hold another thread's write, or not yet: its elements
    // can differ between the threads that read them
    for param in &kernel.params {
        if param.tensor().is_some_and(|tensor| tensor.access == Access::Writable) {
            varying.lane(&param.name);
        }
    }
    walk(kernel, body, env, &mut varying, out);
    // a warp's collectives shuffle across all 32 lanes: a partial last warp has none to give
    let threads = kernel.launch_threads();
    if !threads.is_multiple_of(32) {
        if let Some((function, origin)) = kernel.thread_calls().into_iter().find(|(f, _)| f.is_warp_collective()) {
            out.push(
                Diagnostic::new(
                    origin,
                    format!(
                        "`{}` needs whole warps: the block's {threads} threads are {} warp{} and {} lanes, and the missing lanes of the last warp would give it undefined values",
                        function.name(),
                        threads / 32,
                        if threads / 32 == 1 { "" } else { "s" },
                        threads % 32
                    ),
                )
                .with_hint(format!("make `threads` a multiple of 32 (e.g. {}), and guard the extra threads' work", threads.div_ceil(32) * 32)),
            );
        }
    }
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
