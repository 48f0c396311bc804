//! The expansion: `pub mod <name> { CUDA_SOURCE, configuration consts, KERNEL, launch }`.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};
use syn::ItemFn;
use tessera_dsl::{validate, Access, Diagnostics, Kernel, ParamKind};

use crate::spans::SpanTable;
use crate::{attribute, body, signature};

pub(crate) fn tile_kernel(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let function: ItemFn = syn::parse2(item)?;
    let mut spans = SpanTable::default();
    let config = attribute::parse(attr, &mut spans)?;
    let origin = spans.origin(function.sig.ident.span());
    let kernel = Kernel {
        name: function.sig.ident.to_string(),
        doc: doc_comment(&function),
        params: signature::parse(&function.sig.inputs, &mut spans)?,
        config,
        body: body::parse(&function.block, &mut spans)?,
        origin,
    };
    validate(&kernel, &kernel.target()).map_err(|d| to_syn_error(&d, &spans))?;
    let source =
        tessera_codegen::render(&kernel).map_err(|e| syn::Error::new(function.sig.ident.span(), e.to_string()))?;
    let ir_json = serde_json_string(&kernel)?;
    let report = tessera_dsl::analyze(&kernel).map_err(|d| to_syn_error(&d, &spans))?.to_string();
    Ok(module(&function, &kernel, &source, &ir_json, &report))
}

fn doc_comment(function: &ItemFn) -> Option<String> {
    let lines: Vec<String> = function
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn to_syn_error(diagnostics: &Diagnostics, spans: &SpanTable) -> syn::Error {
    let mut errors = diagnostics.iter().map(|d| spans.error(d.origin, d));
    let mut first = errors.next().unwrap_or_else(|| syn::Error::new(Span::call_site(), "invalid kernel"));
    for error in errors {
        first.combine(error);
    }
    first
}

fn serde_json_string(kernel: &Kernel) -> syn::Result<String> {
    serde_json::to_string(kernel)
        .map_err(|e| syn::Error::new(Span::call_site(), format!("tessera could not serialize the kernel IR: {e}")))
}

/// A raw string literal (`r#"..."#`), so `cargo expand` shows the CUDA line by line.
fn raw_string(text: &str) -> Literal {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    format!("r{hashes}\"{text}\"{hashes}").parse().unwrap_or_else(|_| Literal::string(text))
}

fn module(function: &ItemFn, kernel: &Kernel, source: &str, ir_json: &str, report: &str) -> TokenStream {
    let vis = &function.vis;
    let name = &function.sig.ident;
    let name_text = name.to_string();
    let docs = function.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let cuda_source = raw_string(source);
    let cuda_doc = format!("The CUDA C of `{name_text}` at its declared configuration:\n\n```cuda\n{source}```");
    let ir = Literal::string(ir_json);
    let report_literal = raw_string(report);
    let threads = kernel.config.threads;
    let (tx, ty, tz) = (threads.x, threads.y, threads.z);
    let vector = kernel.config.vector.get();
    let constants = kernel.config.constants.iter().map(|c| {
        let ident = Ident::new(&c.name, Span::call_site());
        let value = c.value;
        let doc = format!("`consts({} = {})`", c.name, c.value);
        quote! { #[doc = #doc] pub const #ident: i64 = #value; }
    });
    let mut params = Vec::new();
    let mut arguments = Vec::new();
    for param in &kernel.params {
        let ident = format_ident!("{}", param.name);
        let label = &param.name;
        match &param.kind {
            ParamKind::Global(tensor) => {
                let element = host_type(tensor.element);
                if tensor.access == Access::ReadOnly {
                    params.push(quote! { #ident: &impl ::tessera::Input<#element> });
                    arguments.push(quote! { ::tessera::Argument::input(#label, #ident) });
                } else {
                    params.push(quote! { #ident: &mut impl ::tessera::Output<#element> });
                    arguments.push(quote! { ::tessera::Argument::output(#label, #ident) });
                }
            }
            ParamKind::Scalar(element) => {
                let element = host_type(*element);
                params.push(quote! { #ident: #element });
                arguments.push(quote! { ::tessera::Argument::scalar(#label, #ident) });
            }
        }
    }
    quote! {
        #(#docs)*
        #[allow(non_snake_case)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            /// The kernel's name, as in the CUDA source.
            pub const NAME: &str = #name_text;
            #[doc = #cuda_doc]
            pub const CUDA_SOURCE: &str = #cuda_source;
            /// What the static analysis says about this configuration: shared memory, the
            /// bank-conflict ways of every shared access, global sectors per warp request.
            pub const REPORT: &str = #report_literal;
            /// The tile IR, serialized; the runtime re-renders it for other configurations.
            pub const IR_JSON: &str = #ir;
            /// Threads per block as (x, y, z).
            pub const THREADS: (u32, u32, u32) = (#tx, #ty, #tz);
            /// Elements per vector access at the declared configuration.
            pub const VECTOR: u32 = #vector;
            #(#constants)*

            /// The kernel for the runtime: source, IR and compiled-module cache.
            pub static KERNEL: ::tessera::KernelDefinition = ::tessera::KernelDefinition::declared_in(NAME, CUDA_SOURCE, IR_JSON, ::core::file!());

            /// Launches the kernel on `device`: a `Gpu`, the CPU `Simulator` or a `Backend`.
            /// Shape symbols are bound from the arguments and must agree; the grid follows
            /// from them. Returns once the launch is queued (on a GPU) or has run (simulated).
            pub fn launch(device: &impl ::tessera::Device, #(#params),*) -> ::core::result::Result<::tessera::Launched, ::tessera::Error> {
                KERNEL.launch(device, &mut [#(#arguments),*])
            }

            /// Launches the kernel as `launch` does, as a programmatic dependent of the kernel
            /// queued just before it on the same stream (sm_90 on): for a small later pass (a
            /// finish adding partial results) whose earlier pass was the last launch. Its launch
            /// overlaps that kernel's last blocks; it waits for that kernel, and sees its
            /// writes, before it touches memory.
            pub fn launch_dependent(device: &impl ::tessera::Device, #(#params),*) -> ::core::result::Result<::tessera::Launched, ::tessera::Error> {
                KERNEL.launch_dependent(device, &mut [#(#arguments),*])
            }
        }
    }
}

/// The Rust type that holds an element on the host: the primitive of the same name, or the
/// `half` crate's `f16`/`bf16` (re-exported as `tessera::half`).
fn host_type(element: tessera_dsl::ElementType) -> proc_macro2::TokenStream {
    let ident = format_ident!("{}", element.rust_name());
    if element.is_half() {
        quote! { ::tessera::half::#ident }
    } else {
        quote! { #ident }
    }
}
