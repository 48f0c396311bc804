//! The tessera runtime: compiles kernels with NVRTC to a cubin for the GPU in hand, caches
//! them in memory and on disk, and launches them with typed, shape-checked arguments.
//!
//! Layering follows cudarc's: [`nvrtc`] wraps the compiler, [`DiskCache`] the files,
//! [`Gpu`] the device, and [`KernelDefinition`] (what `#[tile_kernel]` emits) puts them
//! together for a launch.
//!
//! ```no_run
//! use tessera_runtime::Gpu;
//! let gpu = Gpu::new(0)?;                         // Err, not a panic, without a driver or GPU
//! let x = gpu.upload(&[1.0f32, 2.0, 3.0], [3])?;
//! assert_eq!(gpu.download(&x)?, vec![1.0, 2.0, 3.0]);
//! # Ok::<(), tessera_runtime::Error>(())
//! ```

mod argument;
mod cache;
mod compiled;
mod cubin;
mod cublas;
mod definition;
mod error;
mod gpu;
mod libraries;
pub mod nvrtc;
mod ptxas;
mod tensor;
mod timing;

pub use argument::{Argument, ScalarValue};
pub use cache::DiskCache;
pub use compiled::{Arch, CompiledKernel};
pub use cubin::{cubin_figures, CubinFigures};
pub use cublas::Cublas;
pub use definition::{KernelDefinition, Launched};
pub use error::Error;
pub use gpu::Gpu;
pub use libraries::{driver_available, nvrtc_available};
pub use ptxas::PtxasReport;
pub use tensor::{DeviceTensor, Element, Input, Output, TensorView, TensorViewMut};
pub use timing::Timing;
