//! The function body → [`Statement`]s. The body is Rust syntax with a small vocabulary:
//! `grid(..)`, `grid_stride(..)`, `copy(..)`, `x.tile([..], [..])`, `cdiv`, `min`, `max`.

use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr as RustExpr, Lit, Pat, Stmt};
use tessera_dsl::{
    BinaryOp, Expr, ExprKind, GridBinding, GridStrideLoop, Statement, TileCopy, TileOperand,
};

use crate::spans::SpanTable;

const STATEMENTS: &str =
    "expected `let (bx,) = grid(..);`, `for t in grid_stride(..) { .. }` or `copy(src.tile(..), dst.tile(..));`";

pub(crate) fn parse(block: &Block, spans: &mut SpanTable) -> syn::Result<Vec<Statement>> {
    block
        .stmts
        .iter()
        .map(|stmt| statement(stmt, spans))
        .collect()
}

fn statement(stmt: &Stmt, spans: &mut SpanTable) -> syn::Result<Statement> {
    match stmt {
        Stmt::Local(local) => {
            let init = local.init.as_ref().ok_or_else(|| {
                syn::Error::new(local.span(), format!("unsupported statement: {STATEMENTS}"))
            })?;
            let (name, args) = call(&init.expr).ok_or_else(|| {
                syn::Error::new(
                    init.expr.span(),
                    format!("unsupported statement: {STATEMENTS}"),
                )
            })?;
            if name != "grid" {
                return Err(syn::Error::new(
                    init.expr.span(),
                    format!("`let` binds block indices from `grid(..)`; found `{name}(..)`"),
                ));
            }
            let vars = binding_names(&local.pat)?;
            let extents = args
                .iter()
                .map(|a| expr(a, spans))
                .collect::<syn::Result<_>>()?;
            Ok(Statement::Grid(GridBinding {
                vars,
                extents,
                origin: spans.origin(local.span()),
            }))
        }
        Stmt::Expr(RustExpr::ForLoop(for_loop), _) => {
            let Pat::Ident(var) = &*for_loop.pat else {
                return Err(syn::Error::new(
                    for_loop.pat.span(),
                    "the loop variable is a plain name: `for t in grid_stride(..)`",
                ));
            };
            let (name, args) = call(&for_loop.expr)
                .filter(|(name, args)| name == "grid_stride" && args.len() == 1)
                .ok_or_else(|| {
                    syn::Error::new(
                        for_loop.expr.span(),
                        "tile kernels loop over `grid_stride(count)`",
                    )
                })?;
            debug_assert_eq!(name, "grid_stride");
            Ok(Statement::GridStride(GridStrideLoop {
                var: var.ident.to_string(),
                count: expr(args[0], spans)?,
                body: parse(&for_loop.body, spans)?,
                origin: spans.origin(for_loop.for_token.span()),
            }))
        }
        Stmt::Expr(e @ RustExpr::Call(_), Some(_)) => {
            let (name, args) = call(e).ok_or_else(|| {
                syn::Error::new(e.span(), format!("unsupported statement: {STATEMENTS}"))
            })?;
            if name != "copy" {
                return Err(syn::Error::new(
                    e.span(),
                    format!("unknown operation `{name}`: {STATEMENTS}"),
                ));
            }
            let [src, dst] = args[..] else {
                return Err(syn::Error::new(
                    e.span(),
                    "`copy` takes a source and a destination: `copy(x.tile(..), y.tile(..))`",
                ));
            };
            Ok(Statement::Copy(TileCopy {
                src: tile(src, spans)?,
                dst: tile(dst, spans)?,
                origin: spans.origin(e.span()),
            }))
        }
        other => Err(syn::Error::new(
            other.span(),
            format!("unsupported statement: {STATEMENTS}"),
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
                other => Err(syn::Error::new(
                    other.span(),
                    "block indices are plain names: `let (bx, by) = grid(..)`",
                )),
            })
            .collect(),
        other => Err(syn::Error::new(
            other.span(),
            "block indices are plain names: `let (bx, by) = grid(..)`",
        )),
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
            format!(
                "unknown tile method `{}`: expected `.tile([index..], [extent..])`",
                method.method
            ),
        ));
    }
    let list = |e: &RustExpr, spans: &mut SpanTable| -> syn::Result<Vec<Expr>> {
        match e {
            RustExpr::Array(array) => array.elems.iter().map(|item| expr(item, spans)).collect(),
            other => Err(syn::Error::new(
                other.span(),
                "expected a list in brackets, e.g. `[bx]`",
            )),
        }
    };
    Ok(TileOperand {
        tensor: tensor.to_string(),
        index: list(&method.args[0], spans)?,
        extent: list(&method.args[1], spans)?,
        origin: spans.origin(e.span()),
    })
}

/// An integer expression: literals, names, `+ - * / %`, parentheses, `cdiv`, `min`, `max`.
fn expr(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Expr> {
    let kind = match e {
        RustExpr::Lit(lit) => match &lit.lit {
            Lit::Int(int) => ExprKind::Int(int.base10_parse()?),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "only integer literals appear in index expressions",
                ))
            }
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
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "index expressions use + - * / %",
                    ))
                }
            };
            ExprKind::Binary {
                op,
                lhs: Box::new(expr(&binary.left, spans)?),
                rhs: Box::new(expr(&binary.right, spans)?),
            }
        }
        RustExpr::Call(_) => {
            let Some((name, args)) = call(e) else {
                return Err(syn::Error::new(
                    e.span(),
                    "expected `cdiv(a, b)`, `min(a, b)` or `max(a, b)`",
                ));
            };
            let [a, b] = args[..] else {
                return Err(syn::Error::new(
                    e.span(),
                    format!("`{name}` takes two arguments"),
                ));
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
    Ok(Expr {
        kind,
        origin: spans.origin(e.span()),
    })
}
