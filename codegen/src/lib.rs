//! Renders the tessera tile IR to CUDA C through askama templates (`codegen/templates/*.cu`).
//!
//! Codegen knows no GPU and no syn: it takes a validated [`tessera_dsl::Kernel`] and returns
//! the source text. The same function runs inside the `#[tile_kernel]` macro (the default
//! configuration) and inside the runtime (other configurations).
//!
//! ```
//! use tessera_dsl::{Expr, BinaryOp};
//! let tiles = Expr::ceil_div(Expr::name("N"), Expr::name("TILE"));
//! assert_eq!(tessera_codegen::c_expr(&tiles), "(N + TILE - 1) / TILE");
//! ```

mod async_copy;
mod c_expr;
mod deferred_mma;
mod gemm;
mod operand;
mod render;
mod statement;
mod stream_k;
mod tensor_core;
mod thread_code;
mod tiles;
mod tma;
mod tma_store;
mod warp_specialized;

pub use c_expr::c_expr;
pub use render::{attribute_text, render, RenderError};
