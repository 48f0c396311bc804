//! # tessera
//!
//! Tile kernels in Rust syntax. A function annotated with [`tile_kernel`] describes a tiled
//! GPU computation; at compile time the macro checks the configuration, renders readable
//! CUDA C and embeds it; at run time the kernel is compiled with NVRTC to a cubin for the
//! GPU in hand, cached, and launched with typed, shape-checked arguments.
//!
//! ```ignore
//! use tessera::prelude::*;
//!
//! /// y = x, 128-bit accesses, one tile of 1024 elements per block.
//! #[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
//! pub fn copy_f32x4(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
//!     let (bx,) = grid(cdiv(N, TILE));
//!     copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
//! }
//!
//! let gpu = Gpu::new(0)?;
//! let x = gpu.upload(&host, [n])?;
//! let mut y = gpu.zeros::<f32>([n])?;
//! copy_f32x4::launch(&gpu, &x, &mut y)?;      // grid from the shapes; Err on a mismatch
//! println!("{}", copy_f32x4::CUDA_SOURCE);   // or `cargo expand`
//!
//! let backend = Backend::detect()?;           // the GPU, else the CPU simulation of the same C
//! copy_f32x4::launch(&backend, &x2, &mut y2)?;
//! ```
//!
//! ## The language
//!
//! - Attribute: `threads = 256` or `threads = (32, 8)`; `vector = 1 | 2 | 4` (elements per
//!   access, at most 16 bytes); `consts(NAME = value, ..)`, emitted as `constexpr int`.
//! - Parameters: `Global<T, (dims..)>` (read-only), `GlobalMut<T, (dims..)>` (writable) with
//!   `T` one of `f32 f64 i32 u32` and dims named shape symbols, bound at launch; or a scalar.
//! - Body: `let (bx,) = grid(extent..);` maps blocks to tiles one to one;
//!   `for t in grid_stride(count) { .. }` spreads `count` tiles over the resident blocks;
//!   `copy(x.tile([index], [extent]), y.tile([index], [extent]));` copies a tile with the
//!   configured vector width, whole tiles without bounds checks and the last one guarded.
//!   Index expressions use integers, names, `+ - * / %`, `cdiv`, `min`, `max`.
//!
//! Every configuration error that can be known at compile time is a compile error at the
//! offending token, with the numbers. See `tests/ui` for each.

// The catalog below uses the macro, whose expansion names `::tessera`.
extern crate self as tessera;

pub mod bench;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod gemm_dispatch;
mod library_error;

pub use gemm_dispatch::{
    gemm, gemm_bias_gelu, gemm_bias_residual, gemm_bt, gemm_bt_bias, gemm_bt_bias_gelu, gemm_bt_bias_residual,
};
pub use half;
pub use tessera_codegen as codegen;
pub use tessera_dsl as dsl;
pub use tessera_macros::tile_kernel;
pub use tessera_runtime as runtime;
/// The cudarc tessera is built on, for programs that pass their own CUDA memory and streams
/// (`DeviceTensor::from_cuda_slice`, `Gpu::on_stream`).
pub use tessera_runtime::cudarc;
pub use tessera_runtime::{
    nvrtc, sim, Arch, Argument, Backend, CompiledKernel, Device, DeviceGroup, DeviceTensor, DiskCache, Error, Gpu,
    HostCompiler, Input, KernelDefinition, Launched, Location, Lookup, Order, Output, PtxasReport, ReduceOp,
    ShardedTensor, Sharding, SimCompiled, SimulatedRun, Simulator, TensorView, TensorViewMut, Timing, TuneCache,
};

/// What kernel files and programs that launch them need.
pub mod prelude {
    pub use crate::{tile_kernel, Backend, DeviceTensor, Error, Gpu, Launched, Simulator};
    pub use half::{bf16, f16};
}
