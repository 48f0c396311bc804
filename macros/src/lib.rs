//! `#[tile_kernel]`: turns a Rust function written in tessera's tile language into a module
//! holding the CUDA C it stands for, the configuration, and a typed `launch`.
//!
//! This crate only parses and reports: syn → [`tessera_dsl::Kernel`] → validation →
//! [`tessera_codegen::render`] → tokens. Use it through the `tessera` crate, which
//! documents the surface language.

mod attribute;
mod body;
mod expand;
mod signature;
mod spans;
mod thread_code;

use proc_macro::TokenStream;

/// Declares a tile kernel. See the `tessera` crate for the language and examples.
#[proc_macro_attribute]
pub fn tile_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand::tile_kernel(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}
