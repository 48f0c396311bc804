//! The function's parameters → [`Param`]s: `Global<T, (dims)>`, `GlobalMut<T, (dims)>` or a
//! scalar `f32`/`f64`/`i32`/`u32`.

use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Pat, PathArguments, Type};
use tessera_dsl::{Access, ElementType, GlobalTensor, Param, ParamKind};

use crate::spans::SpanTable;

const EXPECTED: &str =
    "expected `Global<T, (dims..)>`, `GlobalMut<T, (dims..)>` or a scalar `f32`, `f64`, `i32` or `u32`";

pub(crate) fn parse(
    inputs: &syn::punctuated::Punctuated<FnArg, syn::Token![,]>,
    spans: &mut SpanTable,
) -> syn::Result<Vec<Param>> {
    inputs.iter().map(|input| parameter(input, spans)).collect()
}

fn parameter(input: &FnArg, spans: &mut SpanTable) -> syn::Result<Param> {
    let FnArg::Typed(typed) = input else {
        return Err(syn::Error::new(input.span(), "a tile kernel takes no `self`"));
    };
    let Pat::Ident(ident) = &*typed.pat else {
        return Err(syn::Error::new(
            typed.pat.span(),
            "kernel parameters are plain names, e.g. `x: Global<f32, (N,)>`",
        ));
    };
    let name = ident.ident.to_string();
    let origin = spans.origin(ident.ident.span());
    let kind = parameter_kind(&typed.ty, spans)?;
    Ok(Param { name, kind, origin })
}

fn parameter_kind(ty: &Type, spans: &mut SpanTable) -> syn::Result<ParamKind> {
    let unsupported =
        || syn::Error::new(ty.span(), format!("unsupported parameter type `{}`: {EXPECTED}", type_text(ty)));
    let Type::Path(path) = ty else {
        return Err(unsupported());
    };
    let segment = path.path.segments.last().ok_or_else(unsupported)?;
    let wrapper = segment.ident.to_string();
    let access = match wrapper.as_str() {
        "Global" => Access::ReadOnly,
        "GlobalMut" => Access::Writable,
        scalar => {
            return match (ElementType::from_rust_name(scalar), &segment.arguments) {
                (Some(element), PathArguments::None) => Ok(ParamKind::Scalar(element)),
                _ => Err(unsupported()),
            };
        }
    };
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return Err(syn::Error::new(
            segment.span(),
            format!("`{wrapper}` needs an element type and a shape: `{wrapper}<f32, (N,)>`"),
        ));
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    let [element, shape] = types[..] else {
        return Err(syn::Error::new(
            args.span(),
            format!("`{wrapper}` takes two arguments, an element type and a shape: `{wrapper}<f32, (M, N)>`"),
        ));
    };
    let element = element_type(element)?;
    Ok(ParamKind::Global(GlobalTensor { element, shape: shape_symbols(shape, spans)?, access }))
}

fn element_type(ty: &Type) -> syn::Result<ElementType> {
    let name = match ty {
        Type::Path(path) if path.path.segments.len() == 1 => path.path.segments[0].ident.to_string(),
        _ => String::new(),
    };
    ElementType::from_rust_name(&name).ok_or_else(|| {
        let known: Vec<&str> = ElementType::ALL.iter().map(|t| t.rust_name()).collect();
        syn::Error::new(
            ty.span(),
            format!("unsupported element type `{}`: expected one of {}", type_text(ty), known.join(", ")),
        )
    })
}

/// `(M, N)`, `(N,)`, `(N)` or `N`: one shape symbol per dimension.
fn shape_symbols(ty: &Type, spans: &mut SpanTable) -> syn::Result<Vec<(String, tessera_dsl::Origin)>> {
    let dims: Vec<&Type> = match ty {
        Type::Tuple(tuple) => tuple.elems.iter().collect(),
        Type::Paren(paren) => vec![&*paren.elem],
        other => vec![other],
    };
    if dims.is_empty() {
        return Err(syn::Error::new(ty.span(), "a tensor needs at least one dimension: `(N,)`"));
    }
    dims.into_iter()
        .map(|dim| match dim {
            Type::Path(path) if path.path.segments.len() == 1 && path.path.segments[0].arguments.is_none() => {
                let ident = &path.path.segments[0].ident;
                Ok((ident.to_string(), spans.origin(ident.span())))
            }
            other => Err(syn::Error::new(
                other.span(),
                "a dimension is a shape symbol such as `N`, bound from the argument's shape at launch",
            )),
        })
        .collect()
}

/// A type as the user wrote it, without the token spacing of `quote` (`Vec<f32>`).
fn type_text(ty: &Type) -> String {
    quote::quote!(#ty).to_string().replace(" < ", "<").replace("< ", "<").replace(" >", ">").replace(" ,", ",")
}
