//! The function body → [`Statement`]s. The body is Rust syntax with a small vocabulary:
//! `grid(..)`, `grid_stride(..)`, `shared::<T>([..])`, `copy(..)`, `sync()`,
//! `x.tile([..], [..])`, `.t()`, `cdiv`, `min`, `max`.

use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr as RustExpr, GenericArgument, Lit, Pat, PathArguments, Stmt, Type};
use tessera_dsl::{
    Barrier, BinaryOp, ElementType, Expr, ExprKind, GridBinding, GridStrideLoop, ItemOrder, Operand, SharedBuffer,
    SharedOperand, Statement, TileCopy, TileOperand,
};

use crate::spans::SpanTable;

const STATEMENTS: &str = "expected `let (bx,) = grid(..);`, `let t = shared::<f32>([..]);`, \
`for t in grid_stride(..) { .. }`, `copy(src, dst);` or `sync();`";

pub(crate) fn parse(block: &Block, spans: &mut SpanTable) -> syn::Result<Vec<Statement>> {
    block.stmts.iter().map(|stmt| statement(stmt, spans)).collect()
}

fn unsupported(span: proc_macro2::Span) -> syn::Error {
    syn::Error::new(span, format!("unsupported statement: {STATEMENTS}"))
}

fn statement(stmt: &Stmt, spans: &mut SpanTable) -> syn::Result<Statement> {
    match stmt {
        Stmt::Local(local) => {
            let init = local.init.as_ref().ok_or_else(|| unsupported(local.span()))?;
            if let Some(buffer) = shared_buffer(&local.pat, &init.expr, spans)? {
                return Ok(Statement::Shared(buffer));
            }
            let (name, args) = call(&init.expr).ok_or_else(|| unsupported(init.expr.span()))?;
            if name != "grid" {
                return Err(syn::Error::new(
                    init.expr.span(),
                    format!("`let` binds block indices from `grid(..)` or a buffer from `shared::<T>([..])`; found `{name}(..)`"),
                ));
            }
            let vars = binding_names(&local.pat)?;
            let extents = args.iter().map(|a| expr(a, spans)).collect::<syn::Result<_>>()?;
            Ok(Statement::Grid(GridBinding { vars, extents, origin: spans.origin(local.span()) }))
        }
        Stmt::Expr(RustExpr::ForLoop(for_loop), _) => {
            let Pat::Ident(var) = &*for_loop.pat else {
                return Err(syn::Error::new(
                    for_loop.pat.span(),
                    "the loop variable is a plain name: `for t in grid_stride(..)`",
                ));
            };
            let args = call(&for_loop.expr)
                .filter(|(name, args)| name == "grid_stride" && args.len() == 1)
                .map(|(_, args)| args)
                .ok_or_else(|| syn::Error::new(for_loop.expr.span(), "tile kernels loop over `grid_stride(count)`"))?;
            Ok(Statement::GridStride(GridStrideLoop {
                var: var.ident.to_string(),
                count: expr(args[0], spans)?,
                body: parse(&for_loop.body, spans)?,
                origin: spans.origin(for_loop.for_token.span()),
            }))
        }
        Stmt::Expr(RustExpr::MethodCall(method), Some(_)) if matches!(&*method.receiver, RustExpr::Call(_)) => {
            let order = match method.method.to_string().as_str() {
                "column_major" if method.args.is_empty() => ItemOrder::ColumnMajor,
                "row_major" if method.args.is_empty() => ItemOrder::RowMajor,
                other => {
                    return Err(syn::Error::new(
                        method.method.span(),
                        format!("unknown copy option `{other}`: expected `.column_major()` or `.row_major()`"),
                    ))
                }
            };
            match call_statement(&method.receiver, spans)? {
                Statement::Copy(mut copy) => {
                    copy.order = order;
                    Ok(Statement::Copy(copy))
                }
                _ => Err(syn::Error::new(method.span(), "only `copy(..)` takes `.column_major()`")),
            }
        }
        Stmt::Expr(e @ RustExpr::Call(_), Some(_)) => call_statement(e, spans),
        other => Err(unsupported(other.span())),
    }
}

/// `copy(src, dst)` or `sync()`.
fn call_statement(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Statement> {
    let (name, args) = call(e).ok_or_else(|| unsupported(e.span()))?;
    match name.as_str() {
        "sync" if args.is_empty() => Ok(Statement::Sync(Barrier { reason: None, origin: spans.origin(e.span()) })),
        "copy" => {
            let [src, dst] = args[..] else {
                return Err(syn::Error::new(
                    e.span(),
                    "`copy` takes a source and a destination: `copy(x.tile(..), &t)`",
                ));
            };
            Ok(Statement::Copy(TileCopy {
                src: operand(src, spans)?,
                dst: operand(dst, spans)?,
                order: ItemOrder::RowMajor,
                origin: spans.origin(e.span()),
            }))
        }
        _ => Err(syn::Error::new(e.span(), format!("unknown operation `{name}`: {STATEMENTS}"))),
    }
}

/// `let t = shared::<f32>([R, C])` with optional `.pad(n)` and `.swizzle(unit)`; `None`
/// when the initializer is something else.
fn shared_buffer(pat: &Pat, init: &RustExpr, spans: &mut SpanTable) -> syn::Result<Option<SharedBuffer>> {
    let mut modifiers = Vec::new();
    let mut current = init;
    while let RustExpr::MethodCall(method) = current {
        modifiers.push(method);
        current = &method.receiver;
    }
    let RustExpr::Call(call_expr) = current else { return Ok(None) };
    let RustExpr::Path(path) = &*call_expr.func else { return Ok(None) };
    let Some(segment) = path.path.segments.last() else { return Ok(None) };
    if segment.ident != "shared" {
        return Ok(None);
    }
    let element = match &segment.arguments {
        PathArguments::AngleBracketed(args) => match args.args.first() {
            Some(GenericArgument::Type(Type::Path(t))) => {
                t.path.get_ident().and_then(|i| ElementType::from_rust_name(&i.to_string()))
            }
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| {
        syn::Error::new(segment.span(), "a shared buffer names its element type: `shared::<f32>([ROWS, COLS])`")
    })?;
    let Pat::Ident(name) = pat else {
        return Err(syn::Error::new(
            pat.span(),
            "a shared buffer is bound to a plain name: `let t = shared::<f32>([T, T]);`",
        ));
    };
    let shape = match call_expr.args.first() {
        Some(RustExpr::Array(array)) if call_expr.args.len() == 1 => {
            array.elems.iter().map(|e| expr(e, spans)).collect::<syn::Result<Vec<_>>>()?
        }
        _ => {
            return Err(syn::Error::new(
                call_expr.span(),
                "`shared::<T>` takes its shape as a list: `shared::<f32>([ROWS, COLS])`",
            ))
        }
    };
    let origin = spans.origin(init.span());
    let mut buffer = SharedBuffer { name: name.ident.to_string(), element, shape, pad: 0, swizzle: None, origin };
    for method in modifiers.into_iter().rev() {
        let value = match method.args.first() {
            Some(RustExpr::Lit(lit)) if method.args.len() == 1 => match &lit.lit {
                Lit::Int(int) => int.base10_parse::<u32>()?,
                other => return Err(syn::Error::new(other.span(), "expected an integer")),
            },
            _ => return Err(syn::Error::new(method.span(), format!("`.{}` takes one integer literal", method.method))),
        };
        match method.method.to_string().as_str() {
            "pad" => buffer.pad = value,
            "swizzle" => buffer.swizzle = Some(value),
            other => {
                return Err(syn::Error::new(
                    method.method.span(),
                    format!("unknown shared-buffer option `{other}`: expected `.pad(n)` or `.swizzle(unit)`"),
                ))
            }
        }
    }
    Ok(Some(buffer))
}

/// One side of a copy: `x.tile([..], [..])`, `x.tile(..).t()`, `&t`, `&t.t()`, `&mut t`.
fn operand(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Operand> {
    let origin = spans.origin(e.span());
    let strip_t = |e: &'_ RustExpr| -> Option<RustExpr> {
        match e {
            RustExpr::MethodCall(method) if method.method == "t" && method.args.is_empty() => {
                Some((*method.receiver).clone())
            }
            _ => None,
        }
    };
    let mut inner = e.clone();
    let mut transposed = false;
    // `&t.t()` parses as `&(t.t())`, `x.tile(..).t()` as a method call: peel both in any order.
    loop {
        if let Some(receiver) = strip_t(&inner) {
            transposed = !transposed;
            inner = receiver;
        } else if let RustExpr::Reference(reference) = &inner {
            inner = (*reference.expr).clone();
        } else {
            break;
        }
    }
    match &inner {
        RustExpr::Path(path) => {
            let name =
                path.path.get_ident().ok_or_else(|| syn::Error::new(path.span(), "expected a shared buffer's name"))?;
            Ok(Operand::Shared(SharedOperand { buffer: name.to_string(), transposed, origin }))
        }
        RustExpr::MethodCall(_) => {
            let mut tile = tile(&inner, spans)?;
            tile.transposed = transposed;
            tile.origin = origin;
            Ok(Operand::Global(tile))
        }
        other => Err(syn::Error::new(
            other.span(),
            "expected a tile `x.tile([..], [..])` or a shared buffer `&t`, either optionally `.t()`",
        )),
    }
}

/// `f(a, b)` with `f` a plain name → (`f`, [a, b]).
fn call(e: &RustExpr) -> Option<(String, Vec<&RustExpr>)> {
    let RustExpr::Call(call) = e else { return None };
    let RustExpr::Path(path) = &*call.func else {
        return None;
    };
    let ident = path.path.get_ident()?;
    Some((ident.to_string(), call.args.iter().collect()))
}

fn binding_names(pat: &Pat) -> syn::Result<Vec<String>> {
    match pat {
        Pat::Ident(ident) => Ok(vec![ident.ident.to_string()]),
        Pat::Tuple(tuple) => tuple
            .elems
            .iter()
            .map(|p| match p {
                Pat::Ident(ident) => Ok(ident.ident.to_string()),
                other => Err(syn::Error::new(other.span(), "block indices are plain names: `let (bx, by) = grid(..)`")),
            })
            .collect(),
        other => Err(syn::Error::new(other.span(), "block indices are plain names: `let (bx, by) = grid(..)`")),
    }
}

/// `x.tile([index..], [extent..])`
fn tile(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<TileOperand> {
    let wrong = || syn::Error::new(e.span(), "expected a tile: `x.tile([bx], [TILE])`");
    let RustExpr::MethodCall(method) = e else {
        return Err(wrong());
    };
    let RustExpr::Path(receiver) = &*method.receiver else {
        return Err(wrong());
    };
    let tensor = receiver.path.get_ident().ok_or_else(wrong)?;
    if method.method != "tile" || method.args.len() != 2 {
        return Err(syn::Error::new(
            method.method.span(),
            format!("unknown tile method `{}`: expected `.tile([index..], [extent..])`", method.method),
        ));
    }
    let list = |e: &RustExpr, spans: &mut SpanTable| -> syn::Result<Vec<Expr>> {
        match e {
            RustExpr::Array(array) => array.elems.iter().map(|item| expr(item, spans)).collect(),
            other => Err(syn::Error::new(other.span(), "expected a list in brackets, e.g. `[bx]`")),
        }
    };
    Ok(TileOperand {
        tensor: tensor.to_string(),
        index: list(&method.args[0], spans)?,
        extent: list(&method.args[1], spans)?,
        transposed: false,
        origin: spans.origin(e.span()),
    })
}

/// An integer expression: literals, names, `+ - * / %`, parentheses, `cdiv`, `min`, `max`.
fn expr(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Expr> {
    let kind = match e {
        RustExpr::Lit(lit) => match &lit.lit {
            Lit::Int(int) => ExprKind::Int(int.base10_parse()?),
            other => return Err(syn::Error::new(other.span(), "only integer literals appear in index expressions")),
        },
        RustExpr::Path(path) => match path.path.get_ident() {
            Some(ident) => ExprKind::Name(ident.to_string()),
            None => return Err(syn::Error::new(path.span(), "expected a plain name")),
        },
        RustExpr::Paren(paren) => return expr(&paren.expr, spans),
        RustExpr::Binary(binary) => {
            let op = match binary.op {
                BinOp::Add(_) => BinaryOp::Add,
                BinOp::Sub(_) => BinaryOp::Sub,
                BinOp::Mul(_) => BinaryOp::Mul,
                BinOp::Div(_) => BinaryOp::Div,
                BinOp::Rem(_) => BinaryOp::Rem,
                other => return Err(syn::Error::new(other.span(), "index expressions use + - * / %")),
            };
            ExprKind::Binary {
                op,
                lhs: Box::new(expr(&binary.left, spans)?),
                rhs: Box::new(expr(&binary.right, spans)?),
            }
        }
        RustExpr::Call(_) => {
            let Some((name, args)) = call(e) else {
                return Err(syn::Error::new(e.span(), "expected `cdiv(a, b)`, `min(a, b)` or `max(a, b)`"));
            };
            let [a, b] = args[..] else {
                return Err(syn::Error::new(e.span(), format!("`{name}` takes two arguments")));
            };
            let (a, b) = (Box::new(expr(a, spans)?), Box::new(expr(b, spans)?));
            match name.as_str() {
                "cdiv" => ExprKind::CeilDiv(a, b),
                "min" => ExprKind::Min(a, b),
                "max" => ExprKind::Max(a, b),
                other => {
                    return Err(syn::Error::new(
                        e.span(),
                        format!("unknown function `{other}`: expected `cdiv`, `min` or `max`"),
                    ))
                }
            }
        }
        other => {
            return Err(syn::Error::new(
                other.span(),
                "unsupported index expression: use integers, names, + - * / %, cdiv, min, max",
            ))
        }
    };
    Ok(Expr { kind, origin: spans.origin(e.span()) })
}
