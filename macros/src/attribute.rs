//! `#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]` → [`Config`].

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, ExprLit, Ident, Lit, LitInt, Token};
use tessera_dsl::{Config, Constant, Relation, Requirement, ThreadBlock, VectorWidth};

use crate::spans::SpanTable;

enum Item {
    Threads(Expr),
    Vector(LitInt),
    MinBlocks(LitInt),
    /// `cluster = 8` or `cluster = (2, 1)`.
    Cluster(Expr),
    /// `target = sm_90` (or `"sm_90"`), kept with its span.
    Target(String, proc_macro2::Span),
    /// `precision = tf32`, kept with its span.
    Precision(Ident),
    /// `consts(BM = 128, ..)`, or with `true` `fixed(D = 64, ..)`: constants the tuner leaves alone.
    Consts(Punctuated<ConstItem, Token![,]>, bool),
    /// `require(TR % 8 == 0, ..)`: comparisons the body relies on.
    Require(Punctuated<Expr, Token![,]>),
}

struct ConstItem {
    name: Ident,
    value: LitInt,
}

impl Parse for ConstItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name = input.parse()?;
        input.parse::<Token![=]>()?;
        let value = input.parse()?;
        Ok(Self { name, value })
    }
}

impl Parse for Item {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        match key.to_string().as_str() {
            "threads" => {
                input.parse::<Token![=]>()?;
                Ok(Item::Threads(input.parse()?))
            }
            "vector" => {
                input.parse::<Token![=]>()?;
                Ok(Item::Vector(input.parse()?))
            }
            "min_blocks" => {
                input.parse::<Token![=]>()?;
                Ok(Item::MinBlocks(input.parse()?))
            }
            "cluster" => {
                input.parse::<Token![=]>()?;
                Ok(Item::Cluster(input.parse()?))
            }
            "target" => {
                input.parse::<Token![=]>()?;
                if input.peek(syn::LitStr) {
                    let lit: syn::LitStr = input.parse()?;
                    Ok(Item::Target(lit.value(), lit.span()))
                } else {
                    let ident: Ident = input.parse()?;
                    Ok(Item::Target(ident.to_string(), ident.span()))
                }
            }
            "precision" => {
                input.parse::<Token![=]>()?;
                Ok(Item::Precision(input.parse()?))
            }
            "consts" => {
                let content;
                syn::parenthesized!(content in input);
                Ok(Item::Consts(content.parse_terminated(ConstItem::parse, Token![,])?, false))
            }
            "fixed" => {
                let content;
                syn::parenthesized!(content in input);
                Ok(Item::Consts(content.parse_terminated(ConstItem::parse, Token![,])?, true))
            }
            "require" => {
                let content;
                syn::parenthesized!(content in input);
                Ok(Item::Require(content.parse_terminated(Expr::parse, Token![,])?))
            }
            other => Err(syn::Error::new(
                key.span(),
                format!(
                    "unknown tile_kernel option `{other}`; expected `threads`, `vector`, `min_blocks`, `cluster`, `target`, `precision`, `consts(..)`, `fixed(..)` or `require(..)`"
                ),
            )),
        }
    }
}

/// Parses the attribute into a configuration; `threads` is required.
pub(crate) fn parse(attr: TokenStream, spans: &mut SpanTable) -> syn::Result<Config> {
    let items = syn::parse::Parser::parse2(Punctuated::<Item, Token![,]>::parse_terminated, attr)?;
    let mut config = Config::default();
    let mut threads_seen = false;
    for item in items {
        match item {
            Item::Threads(expr) => {
                config.threads_origin = spans.origin(expr.span());
                config.threads = thread_block(&expr)?;
                threads_seen = true;
            }
            Item::Vector(lit) => {
                let width: u32 = lit.base10_parse()?;
                config.vector = VectorWidth::new(width).ok_or_else(|| {
                    syn::Error::new(
                        lit.span(),
                        format!("vector = {width}: an access moves 1, 2 or 4 elements (up to 16 bytes)\nhint: use vector = 4 for 128-bit accesses of f32"),
                    )
                })?;
                config.vector_origin = spans.origin(lit.span());
            }
            Item::MinBlocks(lit) => {
                let blocks: u32 = lit.base10_parse()?;
                if blocks == 0 || blocks > 32 {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!("min_blocks = {blocks}: an SM keeps 1 to 32 blocks resident"),
                    ));
                }
                config.min_blocks = Some(blocks);
                config.min_blocks_origin = spans.origin(lit.span());
            }
            Item::Cluster(expr) => {
                // the sizes' limits (at most 8 blocks, sm_90) are validation's to report
                config.cluster = Some(dimensions(&expr, "cluster", "cluster = 8 or cluster = (2, 1)")?);
                config.cluster_origin = spans.origin(expr.span());
            }
            Item::Target(name, span) => {
                // An unknown sm_XY is validation's to report (with the known ones); only the
                // shape of the name is checked here.
                let (digits, arch_specific) = match name.strip_suffix('a') {
                    Some(digits) => (digits, true),
                    None => (name.as_str(), false),
                };
                let cc = digits.strip_prefix("sm_").and_then(|digits| digits.parse::<u32>().ok()).ok_or_else(|| {
                    syn::Error::new(
                        span,
                        format!(
                            "target = {name}: expected an architecture like sm_90 (tessera knows {})",
                            tessera_dsl::Target::known_names()
                        ),
                    )
                })?;
                config.target = Some(cc);
                config.arch_specific = arch_specific;
                config.target_origin = spans.origin(span);
            }
            Item::Precision(name) => {
                config.precision = match name.to_string().as_str() {
                    "tf32" => tessera_dsl::Precision::Tf32,
                    "exact" => tessera_dsl::Precision::Exact,
                    other => {
                        return Err(syn::Error::new(
                            name.span(),
                            format!("precision = {other}: expected `tf32` (f32 operands of a warp-tile mma on tensor cores, 10-bit mantissa) or `exact`"),
                        ))
                    }
                };
                config.precision_origin = spans.origin(name.span());
            }
            Item::Consts(list, fixed) => {
                for item in list {
                    config.constants.push(Constant {
                        name: item.name.to_string(),
                        value: item.value.base10_parse()?,
                        fixed,
                        origin: spans.origin(item.name.span()),
                    });
                }
            }
            Item::Require(list) => {
                for expr in list {
                    config.requirements.push(requirement(&expr, spans)?);
                }
            }
        }
    }
    if !threads_seen {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "tile_kernel needs `threads = ..`, the threads per block (e.g. threads = 256 or threads = (32, 8))",
        ));
    }
    Ok(config)
}

/// `lhs == rhs` (or `!= < <= > >=`) over integer expressions; whether it holds is
/// validation's to say, for this configuration and every other one tried.
fn requirement(expr: &Expr, spans: &mut SpanTable) -> syn::Result<Requirement> {
    let comparison = || syn::Error::new(expr.span(), "require(..) takes comparisons, e.g. require(TR % 8 == 0)");
    let Expr::Binary(binary) = expr else { return Err(comparison()) };
    let relation = match binary.op {
        BinOp::Eq(_) => Relation::Eq,
        BinOp::Ne(_) => Relation::Ne,
        BinOp::Lt(_) => Relation::Lt,
        BinOp::Le(_) => Relation::Le,
        BinOp::Gt(_) => Relation::Gt,
        BinOp::Ge(_) => Relation::Ge,
        _ => return Err(comparison()),
    };
    Ok(Requirement {
        lhs: crate::body::expr(&binary.left, spans)?,
        relation,
        rhs: crate::body::expr(&binary.right, spans)?,
        origin: spans.origin(expr.span()),
    })
}

fn thread_block(expr: &Expr) -> syn::Result<ThreadBlock> {
    let [x, y, z] = dimensions(expr, "threads", "threads = 256 or threads = (32, 8)")?;
    Ok(ThreadBlock { x, y, z })
}

/// `option = 256` or `option = (32, 8)`: 1 to 3 integer literals, the missing ones 1.
fn dimensions(expr: &Expr, option: &str, example: &str) -> syn::Result<[u32; 3]> {
    // `threads = $threads` with a macro_rules! `$threads:literal` arrives wrapped in a group
    let mut expr = expr;
    while let Expr::Group(group) = expr {
        expr = &group.expr;
    }
    let dims: Vec<&Expr> = match expr {
        Expr::Tuple(tuple) => tuple.elems.iter().collect(),
        Expr::Paren(paren) => vec![&*paren.expr],
        other => vec![other],
    };
    if dims.is_empty() || dims.len() > 3 {
        return Err(syn::Error::new(expr.span(), format!("{option} takes 1 to 3 dimensions: {example}")));
    }
    let mut values = [1u32; 3];
    for (slot, dim) in values.iter_mut().zip(&dims) {
        let mut dim = *dim;
        while let Expr::Group(group) = dim {
            dim = &group.expr;
        }
        match dim {
            Expr::Lit(ExprLit { lit: Lit::Int(lit), .. }) => *slot = lit.base10_parse()?,
            other => {
                return Err(syn::Error::new(other.span(), format!("{option} takes integer literals, e.g. {example}")));
            }
        }
    }
    Ok(values)
}
