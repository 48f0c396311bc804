//! The function body → [`Statement`]s. The body is Rust syntax with a small vocabulary:
//! `grid(..)`, `grid_stride(..)`, `shared::<T>([..])`, `copy(..)`, `sync()`,
//! `x.tile([..], [..])`, `.t()`, `cdiv`, `min`, `max`.

use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr as RustExpr, GenericArgument, Lit, Pat, PathArguments, Stmt, Type};
use tessera_dsl::{
    Barrier, BinaryOp, CopyMechanism, ElementMap, ElementType, Expr, ExprKind, Fragment, FragmentOperand, GridBinding,
    GridStrideLoop, ItemOrder, Mma, Operand, Origin, PipelineLoop, SharedBuffer, SharedOperand, Statement, TileCopy,
    TileOperand,
};

use crate::spans::SpanTable;

const STATEMENTS: &str = "expected `let (bx,) = grid(..);`, `let t = shared::<f32>([..]);`, \
`for t in grid_stride(..) { .. }`, `copy(src, dst);`, `sync();` or thread code (`let`, assignments, `if`, \
`for i in a..b`, `atomic_add(&y[i], v);`)";

pub(crate) fn parse(block: &Block, spans: &mut SpanTable) -> syn::Result<Vec<Statement>> {
    let mut body = statements(block, spans)?;
    // `&acc` parses like a shared buffer; what it names decides which it is.
    let fragments: Vec<String> = collect_fragments(&body);
    mark_fragments(&mut body, &fragments);
    Ok(body)
}

fn statements(block: &Block, spans: &mut SpanTable) -> syn::Result<Vec<Statement>> {
    let mut aliases: Vec<(String, Expr)> = Vec::new();
    let mut body = Vec::with_capacity(block.stmts.len());
    for stmt in &block.stmts {
        let mut statement = statement(stmt, spans)?;
        resolve_aliases(&mut statement, &aliases);
        if let Some((name, value)) = index_alias(stmt, spans) {
            // a later `let` of the same name shadows the earlier one, as in Rust
            aliases.retain(|(known, _)| *known != name);
            let value = aliases.iter().rev().fold(value, |value, (known, earlier)| value.substitute(known, earlier));
            aliases.push((name, value));
        } else if let Stmt::Local(local) = stmt {
            // a `let` of something else (a float, a fragment row) shadows an alias of its name
            if let Ok(names) = binding_names(&local.pat) {
                aliases.retain(|(known, _)| !names.contains(known));
            }
        }
        body.push(statement);
    }
    Ok(body)
}

/// `let first = CAUSAL * min(kt * BKV / BQ, NQT);`: an immutable local whose value is an
/// integer index expression. Tile indices and pipeline counts after it may name it; they see
/// its expression (substituted here, so every later stage — validation, analysis, the
/// simulation — evaluates it as written), while thread code sees the local.
fn index_alias(stmt: &Stmt, spans: &mut SpanTable) -> Option<(String, Expr)> {
    let Stmt::Local(local) = stmt else { return None };
    let Pat::Ident(ident) = &local.pat else { return None };
    if ident.mutability.is_some() || ident.by_ref.is_some() || ident.subpat.is_some() {
        return None;
    }
    let init = local.init.as_ref().filter(|init| init.diverge.is_none())?;
    expr(&init.expr, spans).ok().map(|value| (ident.ident.to_string(), value))
}

/// Every index expression of `statement` (tile indices and extents, batch indices, loop
/// counts, nested bodies) with the aliases declared before it replaced by their values.
fn resolve_aliases(statement: &mut Statement, aliases: &[(String, Expr)]) {
    if aliases.is_empty() {
        return;
    }
    // the latest first: an alias's value names what its names meant where it was declared
    let resolve = |e: &mut Expr| {
        for (name, value) in aliases.iter().rev() {
            *e = e.substitute(name, value);
        }
    };
    // a loop variable shadows an alias of its name in the loop's body
    let inner =
        |var: &str| -> Vec<(String, Expr)> { aliases.iter().filter(|(name, _)| name != var).cloned().collect() };
    let resolve_operand = |operand: &mut Operand| {
        if let Operand::Global(tile) = operand {
            tile.at.iter_mut().chain(&mut tile.index).chain(&mut tile.extent).for_each(resolve);
        }
    };
    match statement {
        Statement::Copy(copy) => {
            resolve_operand(&mut copy.src);
            resolve_operand(&mut copy.dst);
        }
        Statement::Pipeline(pipeline) => {
            resolve(&mut pipeline.count);
            let aliases = inner(&pipeline.var);
            pipeline.body.iter_mut().for_each(|s| resolve_aliases(s, &aliases));
        }
        Statement::GridStride(grid_stride) => {
            resolve(&mut grid_stride.count);
            let aliases = inner(&grid_stride.var);
            grid_stride.body.iter_mut().for_each(|s| resolve_aliases(s, &aliases));
        }
        _ => {}
    }
}

fn collect_fragments(body: &[Statement]) -> Vec<String> {
    body.iter()
        .flat_map(|s| match s {
            Statement::Fragment(f) => vec![f.name.clone()],
            Statement::GridStride(l) => collect_fragments(&l.body),
            Statement::Pipeline(p) => collect_fragments(&p.body),
            _ => vec![],
        })
        .collect()
}

fn mark_fragments(body: &mut [Statement], fragments: &[String]) {
    let fix = |operand: &mut Operand| {
        if let Operand::Shared(shared) = operand {
            if fragments.contains(&shared.buffer) {
                *operand = Operand::Fragment(FragmentOperand {
                    fragment: shared.buffer.clone(),
                    transposed: shared.transposed,
                    origin: shared.origin,
                });
            }
        }
    };
    for statement in body {
        match statement {
            Statement::Copy(copy) => {
                fix(&mut copy.src);
                fix(&mut copy.dst);
            }
            // `mma(&p, &v_s, &mut o)`: a register operand (validation says where one may be)
            Statement::Mma(mma) => {
                fix(&mut mma.a);
                fix(&mut mma.b);
            }
            Statement::GridStride(l) => mark_fragments(&mut l.body, fragments),
            Statement::Pipeline(p) => mark_fragments(&mut p.body, fragments),
            _ => {}
        }
    }
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
            if let Some(fragment) = fragment(&local.pat, &init.expr, spans)? {
                return Ok(Statement::Fragment(fragment));
            }
            // `grid(..)`, optionally `.stream_k()`, `.grouped(n)`, `.zigzag()` and `.dynamic()`
            let mut grid_call = &*init.expr;
            let (mut stream_k, mut grouped, mut zigzag, mut dynamic) = (false, None, false, false);
            while let RustExpr::MethodCall(method) = grid_call {
                match (method.method.to_string().as_str(), method.args.len()) {
                    ("stream_k", 0) => stream_k = true,
                    ("zigzag", 0) => zigzag = true,
                    ("dynamic", 0) => dynamic = true,
                    ("grouped", 1) => {
                        grouped = Some(integer_literal(&method.args[0], "`.grouped(n)` takes a number of tile rows")?)
                    }
                    _ if call(&method.receiver).is_some_and(|(name, _)| name == "grid")
                        || matches!(&*method.receiver, RustExpr::MethodCall(_)) =>
                    {
                        return Err(syn::Error::new(
                            method.method.span(),
                            format!(
                                "unknown grid option `{}`: expected `.stream_k()`, `.grouped(n)`, `.zigzag()` or `.dynamic()`",
                                method.method
                            ),
                        ))
                    }
                    _ => break,
                }
                grid_call = &method.receiver;
            }
            let Some((name, args)) = call(grid_call).filter(|(name, _)| name == "grid") else {
                // Any other `let` is per-thread code: `let mut s = 0.0f32;`
                return crate::thread_code::local(local, spans).map(Statement::Thread);
            };
            debug_assert_eq!(name, "grid");
            let vars = binding_names(&local.pat)?;
            let extents = args.iter().map(|a| expr(a, spans)).collect::<syn::Result<_>>()?;
            Ok(Statement::Grid(GridBinding {
                vars,
                extents,
                stream_k,
                grouped,
                zigzag,
                dynamic,
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
            if let Some((name, args)) = call(&for_loop.expr).filter(|(name, _)| name == "pipeline") {
                debug_assert_eq!(name, "pipeline");
                return pipeline(var.ident.to_string(), &args, for_loop, spans);
            }
            let Some(args) = call(&for_loop.expr)
                .filter(|(name, args)| name == "grid_stride" && args.len() == 1)
                .map(|(_, args)| args)
            else {
                // A loop over a range is per-thread code: `for j in 0..4 { .. }`
                return crate::thread_code::for_statement(for_loop, spans).map(Statement::Thread);
            };
            Ok(Statement::GridStride(GridStrideLoop {
                var: var.ident.to_string(),
                count: expr(args[0], spans)?,
                body: parse(&for_loop.body, spans)?,
                origin: spans.origin(for_loop.for_token.span()),
            }))
        }
        Stmt::Expr(RustExpr::MethodCall(method), Some(_)) if is_mma_with_options(method) => {
            mma_with_options(method, spans)
        }
        Stmt::Expr(RustExpr::MethodCall(method), Some(_)) if copy_chain(method).is_some() => {
            let Some((call, methods)) = copy_chain(method) else { unreachable!("checked by the guard") };
            let mut copy = match call_statement(call, spans)? {
                Statement::Copy(copy) => copy,
                _ => {
                    return Err(syn::Error::new(
                        method.span(),
                        "only `copy(..)` and `mma(..)` take options such as `.column_major()`",
                    ))
                }
            };
            for method in methods {
                copy_option(&mut copy, method, spans)?;
            }
            Ok(Statement::Copy(copy))
        }
        Stmt::Expr(e @ RustExpr::Call(_), Some(_)) if call(e).is_some_and(|(name, _)| name != "atomic_add") => {
            call_statement(e, spans)
        }
        Stmt::Expr(e, semicolon) => match crate::thread_code::expression_statement(e, semicolon.is_some(), spans)? {
            Some(thread) => Ok(Statement::Thread(thread)),
            None => Err(unsupported(e.span())),
        },
        other => Err(unsupported(other.span())),
    }
}

/// Whether `method` is `mma(..)` followed by one or more options: `.double_buffer_fragments()`, `.unroll(8)`, `.deferred()`, `.overwrite()`.
fn is_mma_with_options(method: &syn::ExprMethodCall) -> bool {
    let mut receiver = &*method.receiver;
    while let RustExpr::MethodCall(inner) = receiver {
        receiver = &inner.receiver;
    }
    call(receiver).is_some_and(|(name, _)| name == "mma")
}

/// `mma(a, b, &mut acc).double_buffer_fragments().unroll(8)`: the options in any order, each once.
fn mma_with_options(method: &syn::ExprMethodCall, spans: &mut SpanTable) -> syn::Result<Statement> {
    let mut options = vec![method];
    let mut receiver = &*method.receiver;
    while let RustExpr::MethodCall(inner) = receiver {
        options.push(inner);
        receiver = &inner.receiver;
    }
    let Statement::Mma(mut mma) = call_statement(receiver, spans)? else {
        return Err(syn::Error::new(method.span(), "expected `mma(..)` before its options"));
    };
    for option in options.into_iter().rev() {
        let name = option.method.to_string();
        match (name.as_str(), option.args.len()) {
            ("double_buffer_fragments", 0) if !mma.double_buffered_fragments => mma.double_buffered_fragments = true,
            ("deferred", 0) if !mma.deferred => mma.deferred = true,
            ("overwrite", 0) if !mma.overwrite => mma.overwrite = true,
            ("unroll", 1) if mma.unroll.is_none() => {
                let steps = match &option.args[0] {
                    RustExpr::Lit(syn::ExprLit { lit: syn::Lit::Int(int), .. }) => int.base10_parse::<u32>().ok(),
                    _ => None,
                }
                .filter(|steps| *steps > 0)
                .ok_or_else(|| {
                    syn::Error::new(
                        option.args.span(),
                        "`.unroll(n)` takes a positive integer literal: the k-steps per loop trip",
                    )
                })?;
                mma.unroll = Some(steps);
                mma.unroll_origin = spans.origin(option.args.span());
            }
            ("double_buffer_fragments" | "unroll" | "deferred" | "overwrite", _) => {
                return Err(syn::Error::new(
                    option.method.span(),
                    format!("`.{name}` is given twice or with the wrong arguments: `.double_buffer_fragments()`, `.unroll(8)`, `.deferred()`, `.overwrite()`"),
                ));
            }
            _ => {
                return Err(syn::Error::new(
                    option.method.span(),
                    format!("unknown mma option `{name}`: expected `.double_buffer_fragments()`, `.unroll(n)`, `.deferred()` or `.overwrite()`"),
                ));
            }
        }
    }
    Ok(Statement::Mma(mma))
}

/// `copy(..).a(..).b(..)`: the call at the root and the methods in the order written.
fn copy_chain(method: &syn::ExprMethodCall) -> Option<(&RustExpr, Vec<&syn::ExprMethodCall>)> {
    let mut methods = vec![method];
    let mut receiver = &*method.receiver;
    loop {
        match receiver {
            RustExpr::Call(_) => {
                methods.reverse();
                return Some((receiver, methods));
            }
            RustExpr::MethodCall(inner) => {
                methods.push(inner);
                receiver = &inner.receiver;
            }
            _ => return None,
        }
    }
}

/// One option of a copy: `.column_major()`, `.row_major()`, `.axpby(alpha, beta)`, `.map(|v, row, col| ..)`,
/// `.by_tma()`.
fn copy_option(copy: &mut TileCopy, method: &syn::ExprMethodCall, spans: &mut SpanTable) -> syn::Result<()> {
    match method.method.to_string().as_str() {
        "column_major" if method.args.is_empty() => copy.order = ItemOrder::ColumnMajor,
        "row_major" if method.args.is_empty() => copy.order = ItemOrder::RowMajor,
        "by_tma" if method.args.is_empty() => copy.by_tma = true,
        "axpby" if method.args.len() == 2 => {
            let name = |e: &RustExpr| match e {
                RustExpr::Path(path) => path.path.get_ident().map(|i| i.to_string()),
                _ => None,
            };
            match (name(&method.args[0]), name(&method.args[1])) {
                (Some(alpha), Some(beta)) => copy.axpby = Some((alpha, beta)),
                _ => {
                    return Err(syn::Error::new(
                        method.args.span(),
                        "`.axpby(alpha, beta)` takes two scalar parameters by name",
                    ))
                }
            }
        }
        "map" if method.args.len() == 1 => {
            let RustExpr::Closure(closure) = &method.args[0] else {
                return Err(syn::Error::new(
                    method.args.span(),
                    "`.map(..)` takes a closure of the value and its place: `.map(|v, row, col| gelu(v + bias[col]))`",
                ));
            };
            let mut names = Vec::new();
            for input in &closure.inputs {
                match input {
                    syn::Pat::Ident(ident) if ident.by_ref.is_none() && ident.mutability.is_none() => {
                        names.push(ident.ident.to_string())
                    }
                    // unused: the C lambda's parameter goes unnamed
                    syn::Pat::Wild(_) => names.push("_".into()),
                    other => {
                        return Err(syn::Error::new(other.span(), "a parameter of `.map(|v, row, col| ..)` is a plain name"))
                    }
                }
            }
            let [value, row, col] = <[String; 3]>::try_from(names).map_err(|names| {
                syn::Error::new(
                    closure.inputs.span(),
                    format!(
                        "`.map(..)` takes a closure of three parameters — the value, its row and its column: `|v, row, col|`; this one has {}",
                        names.len()
                    ),
                )
            })?;
            if copy.axpby.is_some() {
                return Err(syn::Error::new(
                    method.method.span(),
                    "`.map(..)` comes before `.axpby(..)`: the map applies to the product, then α and β",
                ));
            }
            copy.map = Some(ElementMap {
                value,
                row,
                col,
                body: crate::thread_code::expr(&closure.body, spans)?,
                origin: spans.origin(method.method.span()),
            });
        }
        other => {
            return Err(syn::Error::new(
                method.method.span(),
                format!(
                    "unknown copy option `{other}`: expected `.column_major()`, `.row_major()`, `.axpby(alpha, beta)`, `.map(|v, row, col| ..)` or `.by_tma()`"
                ),
            ))
        }
    }
    Ok(())
}

/// `copy(src, dst)` or `sync()`.
fn call_statement(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Statement> {
    let (name, args) = call(e).ok_or_else(|| unsupported(e.span()))?;
    match name.as_str() {
        "sync" if args.is_empty() => Ok(Statement::Sync(Barrier { reason: None, origin: spans.origin(e.span()) })),
        "mma" => {
            let [a, b, acc] = args[..] else {
                return Err(syn::Error::new(
                    e.span(),
                    "`mma` takes two operands and the fragment: `mma(&a_s.t(), &b_s, &mut acc)`",
                ));
            };
            let acc = match acc {
                RustExpr::Reference(r) if r.mutability.is_some() => match &*r.expr {
                    RustExpr::Path(path) => path.path.get_ident().map(|i| i.to_string()),
                    _ => None,
                },
                _ => None,
            }
            .ok_or_else(|| syn::Error::new(acc.span(), "the accumulator is a fragment passed as `&mut acc`"))?;
            Ok(Statement::Mma(Mma {
                a: operand(a, spans)?,
                b: operand(b, spans)?,
                acc,
                double_buffered_fragments: false,
                unroll: None,
                unroll_origin: Origin::default(),
                deferred: false,
                overwrite: false,
                origin: spans.origin_of(e),
            }))
        }
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
                axpby: None,
                map: None,
                by_tma: false,
                origin: spans.origin_of(e),
            }))
        }
        _ => Err(syn::Error::new(e.span(), format!("unknown operation `{name}`: {STATEMENTS}"))),
    }
}

/// A call `name::<T>(args)` followed by option methods, e.g. `shared::<f32>([T, T]).pad(1)`.
struct TypedConstructor<'a> {
    call: &'a syn::ExprCall,
    /// `T`, when it is an element type tessera knows.
    element: Option<ElementType>,
    /// The option methods, outermost first.
    modifiers: Vec<&'a syn::ExprMethodCall>,
}

/// `init` as a call of the constructor `name`; `None` when it calls something else.
fn typed_constructor<'a>(init: &'a RustExpr, name: &str) -> Option<TypedConstructor<'a>> {
    let mut modifiers = Vec::new();
    let mut current = init;
    while let RustExpr::MethodCall(method) = current {
        modifiers.push(method);
        current = &method.receiver;
    }
    let RustExpr::Call(call) = current else { return None };
    let RustExpr::Path(path) = &*call.func else { return None };
    let segment = path.path.segments.last()?;
    if segment.ident != name {
        return None;
    }
    let element = match &segment.arguments {
        PathArguments::AngleBracketed(args) => match args.args.first() {
            Some(GenericArgument::Type(Type::Path(t))) => {
                t.path.get_ident().and_then(|i| ElementType::from_rust_name(&i.to_string()))
            }
            _ => None,
        },
        _ => None,
    };
    Some(TypedConstructor { call, element, modifiers })
}

/// `let t = shared::<f32>([R, C])` with optional `.pad(n)` and `.swizzle(unit)`; `None`
/// when the initializer is something else.
fn shared_buffer(pat: &Pat, init: &RustExpr, spans: &mut SpanTable) -> syn::Result<Option<SharedBuffer>> {
    let Some(TypedConstructor { call: call_expr, element, modifiers }) = typed_constructor(init, "shared") else {
        return Ok(None);
    };
    let element = element.ok_or_else(|| {
        syn::Error::new(call_expr.func.span(), "a shared buffer names its element type: `shared::<f32>([ROWS, COLS])`")
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
    let origin = spans.origin_of(init);
    let mut buffer = SharedBuffer {
        name: name.ident.to_string(),
        element,
        shape,
        pad: 0,
        swizzle: None,
        swizzle_bytes: None,
        panels: false,
        origin,
    };
    for method in modifiers.into_iter().rev() {
        if method.method == "panels" {
            if !method.args.is_empty() {
                return Err(syn::Error::new(method.args.span(), "`.panels()` takes no arguments"));
            }
            buffer.panels = true;
            continue;
        }
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
            "swizzle_bytes" => match value {
                32 | 64 | 128 => buffer.swizzle_bytes = Some(value),
                other => {
                    return Err(syn::Error::new(
                        method.args.span(),
                        format!("`.swizzle_bytes({other})`: the XOR swizzle spans 32, 64 or 128 bytes (TMA's modes)"),
                    ))
                }
            },
            other => {
                return Err(syn::Error::new(
                    method.method.span(),
                    format!(
                        "unknown shared-buffer option `{other}`: expected `.pad(n)`, `.swizzle(unit)`, `.swizzle_bytes(128)` or `.panels()`"
                    ),
                ))
            }
        }
    }
    Ok(Some(buffer))
}

/// `pipeline(0..count, stages = n)` and its body.
fn pipeline(
    var: String,
    args: &[&RustExpr],
    for_loop: &syn::ExprForLoop,
    spans: &mut SpanTable,
) -> syn::Result<Statement> {
    let usage =
        "expected `pipeline(0..count, stages = n)`, optionally followed by `producers = 128`, `copies = tma` and `consumers = 2`";
    let Some((range, named)) = args.split_first() else {
        return Err(syn::Error::new(for_loop.expr.span(), usage));
    };
    // named arguments in any order after the range, each once
    let mut stages = None;
    let mut producers = None;
    let mut copies = None;
    let mut consumers = None;
    for arg in named {
        let name = match arg {
            RustExpr::Assign(assign) => match &*assign.left {
                RustExpr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                _ => None,
            },
            _ => None,
        };
        let slot = match name.as_deref() {
            Some("stages") => &mut stages,
            Some("producers") => &mut producers,
            Some("copies") => &mut copies,
            Some("consumers") => &mut consumers,
            _ => return Err(syn::Error::new(arg.span(), usage)),
        };
        if slot.replace(*arg).is_some() {
            return Err(syn::Error::new(arg.span(), format!("`{}` is given twice", name.unwrap_or_default())));
        }
    }
    let Some(stages) = stages else { return Err(syn::Error::new(for_loop.expr.span(), usage)) };
    let RustExpr::Range(range) = range else { return Err(syn::Error::new(range.span(), usage)) };
    let starts_at_zero = matches!(range.start.as_deref(), Some(RustExpr::Lit(l)) if matches!(&l.lit, Lit::Int(i) if i.base10_digits() == "0"));
    let (true, Some(end), syn::RangeLimits::HalfOpen(_)) = (starts_at_zero, range.end.as_deref(), &range.limits) else {
        return Err(syn::Error::new(range.span(), "a pipeline runs over `0..count`"));
    };
    let stages = named_integer(stages, "stages", usage)?;
    let producers = producers.map(|p| named_integer(p, "producers", usage)).transpose()?;
    let copies = copies.map(copy_mechanism).transpose()?.unwrap_or_default();
    let consumers = consumers.map(|c| named_integer(c, "consumers", usage)).transpose()?;
    Ok(Statement::Pipeline(PipelineLoop {
        var,
        count: expr(end, spans)?,
        stages,
        producers,
        copies,
        consumers,
        body: statements(&for_loop.body, spans)?,
        origin: spans.origin(for_loop.expr.span()),
    }))
}

/// A `u32` literal (`8` in `.grouped(8)`).
fn integer_literal(arg: &RustExpr, what: &str) -> syn::Result<u32> {
    match arg {
        RustExpr::Lit(lit) => match &lit.lit {
            Lit::Int(int) => int.base10_parse::<u32>(),
            other => Err(syn::Error::new(other.span(), what)),
        },
        other => Err(syn::Error::new(other.span(), what)),
    }
}

/// `copies = tma` or `copies = cp_async` in a pipeline's arguments.
fn copy_mechanism(arg: &RustExpr) -> syn::Result<CopyMechanism> {
    let expected = "expected `copies = tma` (TMA bulk tensor copies) or `copies = cp_async`";
    let RustExpr::Assign(assign) = arg else { return Err(syn::Error::new(arg.span(), expected)) };
    if !matches!(&*assign.left, RustExpr::Path(p) if p.path.is_ident("copies")) {
        return Err(syn::Error::new(assign.left.span(), expected));
    }
    match &*assign.right {
        RustExpr::Path(p) if p.path.is_ident("tma") => Ok(CopyMechanism::Tma),
        RustExpr::Path(p) if p.path.is_ident("cp_async") => Ok(CopyMechanism::AsyncCopy),
        other => Err(syn::Error::new(other.span(), expected)),
    }
}

/// `name = <integer literal>` in a call's arguments (`stages = 3`).
fn named_integer(arg: &RustExpr, name: &str, usage: &str) -> syn::Result<u32> {
    match arg {
        RustExpr::Assign(assign) if matches!(&*assign.left, RustExpr::Path(p) if p.path.is_ident(name)) => {
            // a literal passed through a macro_rules! `$n:literal` arrives wrapped in an
            // invisible group
            let mut right = &*assign.right;
            while let RustExpr::Group(group) = right {
                right = &group.expr;
            }
            match right {
                RustExpr::Lit(lit) => match &lit.lit {
                    Lit::Int(int) => int.base10_parse::<u32>(),
                    other => Err(syn::Error::new(other.span(), format!("{name} is an integer"))),
                },
                other => Err(syn::Error::new(other.span(), format!("{name} is an integer literal"))),
            }
        }
        other => Err(syn::Error::new(other.span(), usage)),
    }
}

/// `let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN])` with optional `.split([2, 2])`.
fn fragment(pat: &Pat, init: &RustExpr, spans: &mut SpanTable) -> syn::Result<Option<Fragment>> {
    let Some(TypedConstructor { call: call_expr, element, modifiers }) = typed_constructor(init, "fragment") else {
        return Ok(None);
    };
    let element = element.ok_or_else(|| {
        syn::Error::new(call_expr.func.span(), "a fragment names its element type: `fragment::<f32>([BM, BN])`")
    })?;
    let Pat::Ident(name) = pat else {
        return Err(syn::Error::new(
            pat.span(),
            "a fragment is bound to a plain name: `let mut acc = fragment::<f32>(..)`",
        ));
    };
    let list = |e: &RustExpr, spans: &mut SpanTable| -> syn::Result<Vec<Expr>> {
        match e {
            RustExpr::Array(array) => array.elems.iter().map(|item| expr(item, spans)).collect(),
            other => Err(syn::Error::new(other.span(), "expected a list in brackets, e.g. `[BM, BN]`")),
        }
    };
    let shape = match call_expr.args.first() {
        Some(first) if call_expr.args.len() == 1 => list(first, spans)?,
        _ => {
            return Err(syn::Error::new(
                call_expr.span(),
                "`fragment::<T>` takes its shape: `fragment::<f32>([BM, BN])`",
            ))
        }
    };
    let origin = spans.origin_of(init);
    let mut fragment = Fragment {
        name: name.ident.to_string(),
        element,
        shape,
        thread_tile: vec![],
        split: [1, 1],
        warp_layout: None,
        warp_tile: None,
        warpgroup_tile: None,
        origin,
    };
    for method in modifiers.into_iter().rev() {
        let [argument] = method.args.iter().collect::<Vec<_>>()[..] else {
            return Err(syn::Error::new(method.span(), format!("`.{}` takes one list", method.method)));
        };
        match method.method.to_string().as_str() {
            "thread_tile" => fragment.thread_tile = list(argument, spans)?,
            "warp_tile" => fragment.warp_tile = Some(list(argument, spans)?),
            "warpgroup_tile" => fragment.warpgroup_tile = Some(list(argument, spans)?),
            "split" => {
                let parts = list(argument, spans)?;
                let value = |e: &Expr| match e.kind {
                    tessera_dsl::ExprKind::Int(v) if (1..=64).contains(&v) => Some(v as u32),
                    _ => None,
                };
                match parts.as_slice() {
                    [a, b] => match (value(a), value(b)) {
                        (Some(a), Some(b)) => fragment.split = [a, b],
                        _ => {
                            return Err(syn::Error::new(
                                argument.span(),
                                "split takes two small integer literals, e.g. `.split([2, 2])`",
                            ))
                        }
                    },
                    _ => {
                        return Err(syn::Error::new(argument.span(), "split takes two integers, e.g. `.split([2, 2])`"))
                    }
                }
            }
            "warp_layout" => {
                let parts = list(argument, spans)?;
                let value = |e: &Expr| match e.kind {
                    tessera_dsl::ExprKind::Int(v) if (1..=32).contains(&v) => Some(v as u32),
                    _ => None,
                };
                match parts.as_slice() {
                    [a, b] => match (value(a), value(b)) {
                        (Some(a), Some(b)) => fragment.warp_layout = Some([a, b]),
                        _ => {
                            return Err(syn::Error::new(
                                argument.span(),
                                "warp_layout takes two small integers, e.g. `.warp_layout([4, 8])`",
                            ))
                        }
                    },
                    _ => {
                        return Err(syn::Error::new(
                            argument.span(),
                            "warp_layout takes two integers, e.g. `.warp_layout([4, 8])`",
                        ))
                    }
                }
            }
            "zeroed" => {}
            other => {
                return Err(syn::Error::new(
                    method.method.span(),
                    format!(
                        "unknown fragment option `{other}`: expected `.thread_tile([TM, TN])`, `.warp_tile([WM, WN])`, `.warpgroup_tile([64, WN])` or `.split([2, 2])`"
                    ),
                ))
            }
        }
    }
    let layouts = [!fragment.thread_tile.is_empty(), fragment.warp_tile.is_some(), fragment.warpgroup_tile.is_some()];
    match layouts.iter().filter(|&&given| given).count() {
        0 => {
            return Err(syn::Error::new(
                init.span(),
                "a fragment needs `.thread_tile([TM, TN])` (values each thread holds, for FFMA), `.warp_tile([WM, WN])` (values each warp holds, for mma.sync) or `.warpgroup_tile([64, WN])` (values each warpgroup holds, for wgmma)",
            ))
        }
        1 => {}
        _ => {
            return Err(syn::Error::new(
                init.span(),
                "a fragment is laid out per thread (`.thread_tile(..)`), per warp (`.warp_tile(..)`) or per warpgroup (`.warpgroup_tile(..)`): one of them",
            ))
        }
    }
    if (fragment.warp_tile.is_some() || fragment.warpgroup_tile.is_some())
        && (fragment.split != [1, 1] || fragment.warp_layout.is_some())
    {
        return Err(syn::Error::new(
            init.span(),
            "`.split(..)` and `.warp_layout(..)` arrange thread tiles; a tensor-core fragment has the instruction's own lane layout",
        ));
    }
    Ok(Some(fragment))
}

/// One side of a copy: `x.tile([..], [..])`, `x.tile(..).t()`, `&t`, `&t.t()`, `&mut t`.
fn operand(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Operand> {
    let origin = spans.origin_of(e);
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

/// `x.tile([index..], [extent..])`, or `x.at([b, h]).tile([index..], [extent..])` on a tensor of
/// rank 3 or 4 (the leading indices select one matrix).
fn tile(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<TileOperand> {
    let wrong = || syn::Error::new(e.span(), "expected a tile: `x.tile([bx], [TILE])` or `q.at([b, h]).tile(..)`");
    let RustExpr::MethodCall(method) = e else {
        return Err(wrong());
    };
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
    // `q.at([b, h])`: the batch indices before the tile
    let (receiver, at) = match &*method.receiver {
        RustExpr::MethodCall(at) if at.method == "at" => {
            if at.args.len() != 1 {
                return Err(syn::Error::new(
                    at.method.span(),
                    "`.at(..)` takes one list of batch indices: `q.at([b, h]).tile(..)`",
                ));
            }
            (&*at.receiver, list(&at.args[0], spans)?)
        }
        RustExpr::MethodCall(other) => {
            return Err(syn::Error::new(
                other.method.span(),
                format!("unknown tensor method `{}`: expected `.at([..])` before `.tile(..)`", other.method),
            ))
        }
        receiver => (receiver, Vec::new()),
    };
    let RustExpr::Path(receiver) = receiver else {
        return Err(wrong());
    };
    let tensor = receiver.path.get_ident().ok_or_else(wrong)?;
    Ok(TileOperand {
        tensor: tensor.to_string(),
        at,
        index: list(&method.args[0], spans)?,
        extent: list(&method.args[1], spans)?,
        transposed: false,
        origin: spans.origin_of(e),
    })
}

/// An integer expression: literals, names, `+ - * / %`, parentheses, `cdiv`, `min`, `max`.
pub(crate) fn expr(e: &RustExpr, spans: &mut SpanTable) -> syn::Result<Expr> {
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
        // an `$e:expr` of a macro_rules! arrives wrapped in invisible delimiters
        RustExpr::Group(group) => return expr(&group.expr, spans),
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
    Ok(Expr { kind, origin: spans.origin_of(e) })
}
