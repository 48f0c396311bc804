//! The tessera runtime: compiles kernels with NVRTC to a cubin for the GPU in hand, caches
//! them in memory and on disk, and launches them with typed, shape-checked arguments. Without
//! a GPU, the [`Simulator`] runs the same emitted CUDA C on the CPU, deterministically.
//!
//! Layering follows cudarc's: [`nvrtc`] wraps the compiler, [`DiskCache`] the files,
//! [`Gpu`] the device, [`Simulator`] the CPU simulation, [`Backend`] either of them, and
//! [`KernelDefinition`] (what `#[tile_kernel]` emits) puts them together for a launch.
//!
//! ```no_run
//! use tessera_runtime::Gpu;
//! let gpu = Gpu::new(0)?;                         // Err, not a panic, without a driver or GPU
//! let x = gpu.upload(&[1.0f32, 2.0, 3.0], [3])?;
//! assert_eq!(gpu.download(&x)?, vec![1.0, 2.0, 3.0]);
//! # Ok::<(), tessera_runtime::Error>(())
//! ```

mod argument;
mod backend;
mod cache;
mod compiled;
mod cubin;
mod cublas;
mod definition;
mod error;
mod excerpt;
mod gpu;
mod group;
pub mod headers;
mod launch;
mod libraries;
pub mod nvrtc;
mod ptxas;
pub mod sim;
mod source;
mod tensor;
mod tensor_map;
mod timing;
pub mod tune;
mod workspace;

pub use argument::{Argument, ScalarValue};
pub use backend::{Backend, Device, DeviceRef};
pub use cache::DiskCache;
pub use compiled::{Arch, ArchParseError, CompiledKernel};
pub use cubin::{cubin_figures, CubinFigures};
pub use cublas::{Cublas, GemmExInput, GemmExOutput};
pub use cudarc;
pub use definition::{KernelDefinition, Launched};
pub use error::Error;
pub use gpu::Gpu;
pub use group::{
    split_evenly, Collective, CollectiveRecord, CommunicationOptions, CommunicationPriority, DeviceGroup, Pending,
    ReduceOp, Reducible, ShardedTensor, Sharding,
};
pub use libraries::{driver_available, nccl_available, nvrtc_available};
pub use ptxas::PtxasReport;
pub use sim::{HostCompiler, Order, SimCompiled, SimulatedRun, Simulator};
pub use tensor::{span_len, DeviceTensor, Element, Input, Location, Output, TensorView, TensorViewMut};
pub use timing::Timing;
pub use tune::{Lookup, TuneCache};
