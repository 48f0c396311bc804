//! Per-thread code in a kernel body → [`ThreadStatement`]s: `let`, assignments, `if`,
//! `for` over ranges, `atomic_add`, and expressions over numbers, tensors and intrinsics.
//! Anything else is an error at its span saying what is supported.

use syn::spanned::Spanned;
use syn::{BinOp, Expr as RustExpr, Lit, Pat, Stmt, Type, UnOp};
use tessera_dsl::{
    ElementType, Intrinsic, SlotQuery, ThreadExpr, ThreadExprKind, ThreadOp, ThreadStatement, ThreadStatementKind,
    ThreadType, UnaryOp, VectorStart,
};

use crate::spans::SpanTable;

const THREAD_STATEMENTS: &str =
    "thread code supports `let` (and `let mut`), `x = ..;`, `x += ..;` (and `-= *= /= %= &= |= ^=`), \
`if .. { .. } else { .. }`, `for i in a..b { .. }`, `for i in (a..b).step_by(s) { .. }` and `atomic_add(&y[i], v);`";

const EXPRESSIONS: &str =
    "thread code supports literals, names, `x[i]`, `u[[r, c]]`, arithmetic, comparisons, `&&`, `||`, `!`, \
`as` conversions, `f32::INFINITY` / `NEG_INFINITY`, `i32::MIN` / `MAX`, `u32::MAX`, `x.vector(i)`, `v.sum()` and the intrinsics";

fn error(span: proc_macro2::Span, message: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, message)
}

/// `let [mut] name[: T] = value;`
pub(crate) fn local(local: &syn::Local, spans: &mut SpanTable) -> syn::Result<ThreadStatement> {
    let init = local
        .init
        .as_ref()
        .ok_or_else(|| error(local.span(), "a `let` in thread code needs a value: `let mut s = 0.0f32;`"))?;
    if let Some((_, diverge)) = &init.diverge {
        return Err(error(diverge.span(), "`let .. else` is not part of thread code"));
    }
    let (pat, ty) = match &local.pat {
        Pat::Type(typed) => (&*typed.pat, Some(thread_type(&typed.ty)?)),
        other => (other, None),
    };
    let Pat::Ident(ident) = pat else {
        return Err(error(pat.span(), "thread code binds one plain name: `let s = ..;` or `let mut s: f32 = ..;`"));
    };
    if let RustExpr::Repeat(repeat) = &*init.expr {
        if ty.is_some() {
            return Err(error(
                local.pat.span(),
                "a register array takes its type from its value: `let mut v = [0.0f32; ITEMS];`",
            ));
        }
        return Ok(ThreadStatement {
            kind: ThreadStatementKind::LetArray {
                name: ident.ident.to_string(),
                mutable: ident.mutability.is_some(),
                len: crate::body::expr(&repeat.len, spans)?,
                init: expr(&repeat.expr, spans)?,
            },
            origin: spans.origin(local.span()),
        });
    }
    Ok(ThreadStatement {
        kind: ThreadStatementKind::Let {
            name: ident.ident.to_string(),
            mutable: ident.mutability.is_some(),
            ty,
            init: expr(&init.expr, spans)?,
        },
        origin: spans.origin(local.span()),
    })
}

fn thread_type(ty: &Type) -> syn::Result<ThreadType> {
    let name = match ty {
        Type::Path(path) => path.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    name.as_deref()
        .and_then(ThreadType::from_rust_name)
        .ok_or_else(|| error(ty.span(), "thread code has the types f32, f64, i32, u32 and bool"))
}

/// A statement inside the body of a thread-level `if` or `for`.
pub(crate) fn statement(stmt: &Stmt, spans: &mut SpanTable) -> syn::Result<ThreadStatement> {
    match stmt {
        Stmt::Local(l) => local(l, spans),
        Stmt::Expr(e, semi) => expression_statement(e, semi.is_some(), spans)?
            .ok_or_else(|| error(e.span(), format!("unsupported statement: {THREAD_STATEMENTS}"))),
        Stmt::Macro(m) => Err(error(m.span(), format!("macros are not part of thread code: {THREAD_STATEMENTS}"))),
        Stmt::Item(item) => Err(error(item.span(), format!("items are not part of thread code: {THREAD_STATEMENTS}"))),
    }
}

/// An assignment, `if`, `for` or `atomic_add(..)`; `None` when `e` is none of them.
pub(crate) fn expression_statement(
    e: &RustExpr,
    has_semicolon: bool,
    spans: &mut SpanTable,
) -> syn::Result<Option<ThreadStatement>> {
    let origin = spans.origin(e.span());
    let kind = match e {
        RustExpr::Assign(assign) => ThreadStatementKind::Assign {
            place: place(&assign.left, spans)?,
            op: None,
            value: expr(&assign.right, spans)?,
        },
        RustExpr::Binary(binary) if compound(&binary.op).is_some() => ThreadStatementKind::Assign {
            place: place(&binary.left, spans)?,
            op: compound(&binary.op),
            value: expr(&binary.right, spans)?,
        },
        RustExpr::If(branch) => {
            let otherwise = match &branch.else_branch {
                None => vec![],
                Some((_, else_expr)) => match &**else_expr {
                    RustExpr::Block(block) => block_statements(&block.block, spans)?,
                    nested @ RustExpr::If(_) => vec![expression_statement(nested, false, spans)?
                        .ok_or_else(|| error(nested.span(), "expected `else if`"))?],
                    other => return Err(error(other.span(), "expected `else { .. }`")),
                },
            };
            ThreadStatementKind::If {
                condition: expr(&branch.cond, spans)?,
                then: block_statements(&branch.then_branch, spans)?,
                otherwise,
            }
        }
        RustExpr::ForLoop(for_loop) => return for_statement(for_loop, spans).map(Some),
        RustExpr::While(w) => {
            return Err(error(
                w.while_token.span(),
                "`while` loops are not part of thread code: a loop has a trip count known on entry, `for i in (start..end).step_by(step) { .. }`",
            ))
        }
        RustExpr::Loop(l) => {
            return Err(error(l.loop_token.span(), "`loop` is not part of thread code: use `for i in (start..end).step_by(step) { .. }`"))
        }
        RustExpr::Call(call) if has_semicolon => {
            let name = match &*call.func {
                RustExpr::Path(path) => path.path.get_ident().map(|i| i.to_string()),
                _ => None,
            };
            if name.as_deref() != Some("atomic_add") {
                return Ok(None);
            }
            let args: Vec<&RustExpr> = call.args.iter().collect();
            let [target, value] = args[..] else {
                return Err(error(call.span(), "`atomic_add` takes an element and a value: `atomic_add(&y[0], v)`"));
            };
            let RustExpr::Reference(reference) = target else {
                return Err(error(target.span(), "`atomic_add` takes the element by reference: `atomic_add(&y[0], v)`"));
            };
            ThreadStatementKind::AtomicAdd { place: place(&reference.expr, spans)?, value: expr(value, spans)? }
        }
        _ => return Ok(None),
    };
    Ok(Some(ThreadStatement { kind, origin }))
}

fn block_statements(block: &syn::Block, spans: &mut SpanTable) -> syn::Result<Vec<ThreadStatement>> {
    block.stmts.iter().map(|s| statement(s, spans)).collect()
}

/// `for i in a..b { .. }` or `for i in (a..b).step_by(s) { .. }`.
pub(crate) fn for_statement(for_loop: &syn::ExprForLoop, spans: &mut SpanTable) -> syn::Result<ThreadStatement> {
    let usage = "a thread-level loop runs over a range: `for i in a..b { .. }` or `for i in (a..b).step_by(s) { .. }` (or `grid_stride(..)` / `pipeline(..)` for tiles)";
    let Pat::Ident(var) = &*for_loop.pat else {
        return Err(error(for_loop.pat.span(), "the loop variable is a plain name: `for i in 0..n`"));
    };
    let (range, step) = match &*for_loop.expr {
        RustExpr::Range(range) => (range, None),
        // `for i in (a..b)`: Rust takes it (with an unused-parentheses lint), so does tessera
        RustExpr::Paren(paren) if matches!(&*paren.expr, RustExpr::Range(_)) => {
            let RustExpr::Range(range) = &*paren.expr else { return Err(error(paren.span(), usage)) };
            (range, None)
        }
        RustExpr::MethodCall(method) if method.method == "step_by" && method.args.len() == 1 => {
            let inner = match &*method.receiver {
                RustExpr::Paren(paren) => &*paren.expr,
                other => other,
            };
            let RustExpr::Range(range) = inner else { return Err(error(method.receiver.span(), usage)) };
            (range, Some(expr(&method.args[0], spans)?))
        }
        other => return Err(error(other.span(), usage)),
    };
    let (Some(start), Some(end), syn::RangeLimits::HalfOpen(_)) =
        (range.start.as_deref(), range.end.as_deref(), &range.limits)
    else {
        return Err(error(range.span(), "a loop range has both ends and excludes the last: `a..b`"));
    };
    Ok(ThreadStatement {
        kind: ThreadStatementKind::For {
            var: var.ident.to_string(),
            start: expr(start, spans)?,
            end: expr(end, spans)?,
            step,
            body: block_statements(&for_loop.body, spans)?,
        },
        origin: spans.origin(for_loop.for_token.span()),
    })
}

fn compound(op: &BinOp) -> Option<ThreadOp> {
    Some(match op {
        BinOp::AddAssign(_) => ThreadOp::Add,
        BinOp::SubAssign(_) => ThreadOp::Sub,
        BinOp::MulAssign(_) => ThreadOp::Mul,
        BinOp::DivAssign(_) => ThreadOp::Div,
        BinOp::RemAssign(_) => ThreadOp::Rem,
        BinOp::BitAndAssign(_) => ThreadOp::BitAnd,
        BinOp::BitOrAssign(_) => ThreadOp::BitOr,
        BinOp::BitXorAssign(_) => ThreadOp::BitXor,
        BinOp::ShlAssign(_) => ThreadOp::Shl,
        BinOp::ShrAssign(_) => ThreadOp::Shr,
        _ => return None,
    })
}

/// The left side of an assignment: a local or an element.
fn place(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<ThreadExpr> {
    let parsed = expr(e, spans)?;
    match parsed.kind {
        ThreadExprKind::Name(_) | ThreadExprKind::Index { .. } | ThreadExprKind::VectorLoad { .. } => Ok(parsed),
        _ => Err(error(
            e.span(),
            "the left side of an assignment is a `let mut` local, an element or a vector: `s`, `y[i]`, `t[[r, c]]`, `y.vector([r, i])`",
        )),
    }
}

/// `f32::INFINITY` / `f64::INFINITY`, and `NEG_INFINITY` as its negation.
fn infinity(path: &syn::Path, spans: &mut SpanTable) -> Option<ThreadExprKind> {
    let [ty, constant] = [path.segments.first()?, path.segments.last()?];
    let negative = match constant.ident.to_string().as_str() {
        "INFINITY" => false,
        "NEG_INFINITY" => true,
        _ => return None,
    };
    if path.segments.len() != 2 {
        return None;
    }
    let infinity = match ElementType::from_rust_name(&ty.ident.to_string())? {
        element @ (ElementType::F32 | ElementType::F64) => ThreadExprKind::Infinity(element),
        _ => return None,
    };
    Some(if negative {
        let operand = ThreadExpr { kind: infinity, origin: spans.origin(path.span()) };
        ThreadExprKind::Unary { op: UnaryOp::Neg, operand: Box::new(operand) }
    } else {
        infinity
    })
}

/// `i32::MIN`, `i32::MAX`, `u32::MIN`, `u32::MAX`: a literal of that type (a `block_max`'s
/// starting value, a search's sentinel).
fn integer_bound(path: &syn::Path) -> Option<ThreadExprKind> {
    let [ty, constant] = [path.segments.first()?, path.segments.last()?];
    if path.segments.len() != 2 {
        return None;
    }
    let (element, value) =
        match (ElementType::from_rust_name(&ty.ident.to_string())?, constant.ident.to_string().as_str()) {
            (element @ ElementType::I32, "MIN") => (element, i64::from(i32::MIN)),
            (element @ ElementType::I32, "MAX") => (element, i64::from(i32::MAX)),
            (element @ ElementType::U32, "MIN") => (element, 0),
            (element @ ElementType::U32, "MAX") => (element, i64::from(u32::MAX)),
            _ => return None,
        };
    Some(ThreadExprKind::Int { value, suffix: Some(element) })
}

fn element_suffix(suffix: &str, span: proc_macro2::Span) -> syn::Result<Option<ElementType>> {
    if suffix.is_empty() {
        return Ok(None);
    }
    ElementType::from_rust_name(suffix).map(Some).ok_or_else(|| {
        error(span, format!("literal suffix `{suffix}`: thread code has the types f32, f64, i32 and u32"))
    })
}

/// A thread-level expression.
pub(crate) fn expr(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<ThreadExpr> {
    let kind = match e {
        RustExpr::Lit(lit) => match &lit.lit {
            Lit::Int(int) => match element_suffix(int.suffix(), int.span())? {
                Some(float @ (ElementType::F32 | ElementType::F64)) => {
                    ThreadExprKind::Float { text: int.base10_digits().to_string(), suffix: Some(float) }
                }
                suffix => ThreadExprKind::Int { value: int.base10_parse()?, suffix },
            },
            Lit::Float(float) => {
                let suffix = element_suffix(float.suffix(), float.span())?;
                if matches!(suffix, Some(ElementType::I32 | ElementType::U32)) {
                    return Err(error(float.span(), "a float literal has the suffix f32 or f64"));
                }
                ThreadExprKind::Float { text: float.base10_digits().to_string(), suffix }
            }
            Lit::Bool(b) => ThreadExprKind::Bool(b.value),
            other => return Err(error(other.span(), format!("unsupported literal: {EXPRESSIONS}"))),
        },
        RustExpr::Path(path) => match path.path.get_ident() {
            Some(ident) => ThreadExprKind::Name(ident.to_string()),
            None => infinity(&path.path, spans).or_else(|| integer_bound(&path.path)).ok_or_else(|| {
                error(
                    path.span(),
                    "expected a plain name (or `f32::INFINITY`, `f32::NEG_INFINITY` and f64's, `i32::MIN`, `i32::MAX`, `u32::MAX`)",
                )
            })?,
        },
        RustExpr::Paren(paren) => return expr(&paren.expr, spans),
        // an `$e:expr` of a macro_rules! arrives wrapped in invisible delimiters
        RustExpr::Group(group) => return expr(&group.expr, spans),
        RustExpr::Unary(unary) => {
            let op = match unary.op {
                UnOp::Neg(_) => UnaryOp::Neg,
                UnOp::Not(_) => UnaryOp::Not,
                _ => return Err(error(unary.span(), format!("unsupported operator: {EXPRESSIONS}"))),
            };
            ThreadExprKind::Unary { op, operand: Box::new(expr(&unary.expr, spans)?) }
        }
        RustExpr::Binary(binary) => {
            let op = match binary.op {
                BinOp::Add(_) => ThreadOp::Add,
                BinOp::Sub(_) => ThreadOp::Sub,
                BinOp::Mul(_) => ThreadOp::Mul,
                BinOp::Div(_) => ThreadOp::Div,
                BinOp::Rem(_) => ThreadOp::Rem,
                BinOp::Lt(_) => ThreadOp::Lt,
                BinOp::Le(_) => ThreadOp::Le,
                BinOp::Gt(_) => ThreadOp::Gt,
                BinOp::Ge(_) => ThreadOp::Ge,
                BinOp::Eq(_) => ThreadOp::Eq,
                BinOp::Ne(_) => ThreadOp::Ne,
                BinOp::And(_) => ThreadOp::And,
                BinOp::Or(_) => ThreadOp::Or,
                BinOp::BitAnd(_) => ThreadOp::BitAnd,
                BinOp::BitOr(_) => ThreadOp::BitOr,
                BinOp::BitXor(_) => ThreadOp::BitXor,
                BinOp::Shl(_) => ThreadOp::Shl,
                BinOp::Shr(_) => ThreadOp::Shr,
                other => return Err(error(other.span(), "an assignment is a statement, not a value")),
            };
            ThreadExprKind::Binary {
                op,
                lhs: Box::new(expr(&binary.left, spans)?),
                rhs: Box::new(expr(&binary.right, spans)?),
            }
        }
        RustExpr::Index(index) => {
            let RustExpr::Path(base) = &*index.expr else {
                if let RustExpr::Index(_) = &*index.expr {
                    return Err(error(
                        index.span(),
                        "index a 2-D tensor or shared buffer as `u[[r, c]]`, not `u[r][c]`",
                    ));
                }
                return Err(error(
                    index.expr.span(),
                    "only tensors and shared buffers are indexed: `x[i]`, `u[[r, c]]`",
                ));
            };
            let base = base.path.get_ident().ok_or_else(|| error(base.span(), "expected a plain name"))?.to_string();
            let indices = match &*index.index {
                RustExpr::Array(array) => array.elems.iter().map(|i| expr(i, spans)).collect::<syn::Result<_>>()?,
                RustExpr::Range(range) => {
                    return Err(error(range.span(), "slices are not part of thread code: index one element"))
                }
                single => vec![expr(single, spans)?],
            };
            ThreadExprKind::Index { base, indices }
        }
        RustExpr::Cast(cast) => {
            ThreadExprKind::Cast { value: Box::new(expr(&cast.expr, spans)?), to: thread_type(&cast.ty)? }
        }
        RustExpr::Call(call) => {
            let name = match &*call.func {
                RustExpr::Path(path) => path.path.get_ident().map(|i| i.to_string()),
                _ => None,
            }
            .ok_or_else(|| error(call.func.span(), "thread code calls intrinsics by name, e.g. `sqrt(x)`"))?;
            let function = Intrinsic::from_name(&name).ok_or_else(|| {
                let extra = if name == "atomic_add" { " (`atomic_add(&y[i], v);` is a statement)" } else { "" };
                error(
                    call.func.span(),
                    format!("unknown function `{name}`{extra}: thread code calls {}", Intrinsic::names()),
                )
            })?;
            let args = call.args.iter().map(|a| expr(a, spans)).collect::<syn::Result<Vec<_>>>()?;
            if !function.arity().contains(&args.len()) {
                return Err(error(
                    call.span(),
                    format!("`{name}` takes {} argument(s); {} given", function.arity_in_words(), args.len()),
                ));
            }
            ThreadExprKind::Call { function, args }
        }
        RustExpr::MethodCall(method) => {
            let name = method.method.to_string();
            let receiver_name = match &*method.receiver {
                RustExpr::Path(path) => path.path.get_ident().map(|i| i.to_string()),
                _ => None,
            };
            match (name.as_str(), method.args.len(), receiver_name) {
                // `x.vector(i)`, or `x.vector([r, i])` for row r of a 2-D tensor; `x.vector_at(..)`
                // the same from an aligned element, `x.vector_from(..)` from any;
                // `x.align_offset(..)` where vectors may start
                (method_name @ ("vector" | "vector_at" | "vector_from" | "align_offset"), 1, Some(tensor)) => {
                    let (row, index) = match &method.args[0] {
                        RustExpr::Array(array) if array.elems.len() == 2 => {
                            (Some(Box::new(expr(&array.elems[0], spans)?)), Box::new(expr(&array.elems[1], spans)?))
                        }
                        RustExpr::Array(array) => {
                            let wanted = match method_name {
                                "vector" => "`.vector([r, i])` takes a row and a vector index",
                                "vector_at" => "`.vector_at([r, c])` takes a row and a column",
                                "vector_from" => "`.vector_from([r, c])` takes a row and a column",
                                _ => "`.align_offset([r, c])` takes a row and a column",
                            };
                            return Err(error(array.span(), wanted));
                        }
                        index => (None, Box::new(expr(index, spans)?)),
                    };
                    match method_name {
                        "vector" => ThreadExprKind::VectorLoad { tensor, row, index, start: VectorStart::Vector },
                        "vector_at" => ThreadExprKind::VectorLoad { tensor, row, index, start: VectorStart::Element },
                        "vector_from" => ThreadExprKind::VectorLoad { tensor, row, index, start: VectorStart::AnyElement },
                        _ => ThreadExprKind::AlignOffset { tensor, row, column: index },
                    }
                }
                ("sum", 0, _) => ThreadExprKind::VectorSum(Box::new(expr(&method.receiver, spans)?)),
                ("leading_dimension", 0, Some(tensor)) => ThreadExprKind::LeadingDimension(tensor),
                // `s.row(i)`, `s.col(j)`, `s.row_max(i)`, `s.row_sum(i)` on a fragment
                (query @ ("row" | "col" | "row_max" | "row_sum"), 1, Some(fragment)) => ThreadExprKind::FragmentSlot {
                    fragment,
                    query: SlotQuery::from_name(query).unwrap_or(SlotQuery::Row),
                    slot: Box::new(expr(&method.args[0], spans)?),
                },
                (function @ ("sqrt" | "exp" | "exp2" | "log" | "tanh" | "erf" | "gelu" | "silu" | "abs" | "min" | "max" | "dot"), _, _) => {
                    let function = Intrinsic::from_name(function).unwrap_or(Intrinsic::Sqrt);
                    let mut args = vec![expr(&method.receiver, spans)?];
                    for arg in &method.args {
                        args.push(expr(arg, spans)?);
                    }
                    if !function.arity().contains(&args.len()) {
                        let arguments = function.arity().start() - 1;
                        return Err(error(method.span(), format!("`.{name}(..)` takes {arguments} argument(s)")));
                    }
                    ThreadExprKind::Call { function, args }
                }
                _ => {
                    return Err(error(
                        method.method.span(),
                        format!("unsupported method `.{name}(..)` in thread code: tensors have `.vector(i)` / `.vector([r, i])` (VECTOR elements at once), `.vector_at(..)` and `.align_offset(..)` (vectors from an aligned element), `.vector_from(..)` (a vector from any element) and `.leading_dimension()` (2-D), vectors `.sum()` and `.dot(w)`, fragments `.row(i)`, `.col(j)`, `.row_max(i)` and `.row_sum(i)`, numbers `.sqrt()`, `.exp()`, `.exp2()`, `.log()`, `.tanh()`, `.abs()`, `.min(b)`, `.max(b)`"),
                    ))
                }
            }
        }
        RustExpr::Reference(r) => {
            return Err(error(r.span(), "references appear only in `atomic_add(&y[i], v)`"));
        }
        other => return Err(error(other.span(), format!("unsupported expression: {EXPRESSIONS}"))),
    };
    // A binary expression points at its operator: where a mismatch between its sides is.
    let origin = match e {
        RustExpr::Binary(binary) => spans.origin(binary.op.span()),
        // a fragment query points at its method: `s.row_max(i)` underlines `row_max`
        RustExpr::MethodCall(method) if matches!(kind, ThreadExprKind::FragmentSlot { .. }) => {
            spans.origin(method.method.span())
        }
        _ => spans.origin_of(e),
    };
    Ok(ThreadExpr { kind, origin })
}
