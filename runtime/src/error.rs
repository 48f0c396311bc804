use tessera_dsl::{ElementType, LaunchPlanError, VectorWidth};

use crate::{Location, Order};

/// Everything that can go wrong between a kernel definition and a finished launch.
///
/// Each variant carries the numbers needed to act on it; none of them is a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no CUDA driver: libcuda could not be loaded (tried {tried}); install the NVIDIA driver, or run without a GPU"
    )]
    DriverMissing { tried: String },
    #[error("no NVRTC: libnvrtc could not be loaded (tried {tried}); `pip install nvidia-cuda-nvrtc` and add its lib folder to LD_LIBRARY_PATH")]
    NvrtcMissing { tried: String },
    #[error("no CUDA GPU: the driver reports {count} device(s), so device {ordinal} does not exist")]
    NoGpu { ordinal: usize, count: i32 },
    #[error("CUDA driver call failed while {action}: {source}")]
    Driver { action: &'static str, source: cudarc::driver::DriverError },
    #[error(
        "the driver refused to launch `{kernel}` (grid {grid:?}, block {block:?}, {dynamic_shared_bytes} bytes of \
         dynamic shared memory{}): {source}",
        if *dependent { ", as a programmatic dependent" } else { "" }
    )]
    Launch {
        kernel: String,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared_bytes: u32,
        dependent: bool,
        source: cudarc::driver::DriverError,
    },
    #[error("NVRTC call {call} failed: {source}")]
    Nvrtc { call: &'static str, source: cudarc::nvrtc::result::NvrtcError },
    #[error("NVRTC could not compile `{kernel}` for {arch}:\n{log}\n{excerpt}")]
    Compile { kernel: String, arch: String, log: String, excerpt: String },
    #[error(
        "`{kernel}` includes <{header}>, but no CUDA include folder holding cuda_fp16.h was found \
         (searched {}); `./dev` installs them (the PyPI wheel nvidia-cuda-runtime, into \
         .tools/python) and sets TESSERA_CUDA_INCLUDE, or `python3 -m pip install nvidia-cuda-runtime` \
         and set TESSERA_CUDA_INCLUDE to its nvidia/cu13/include (or CUDA_HOME to a CUDA toolkit)",
        crate::headers::describe_searched(searched)
    )]
    CudaHeadersMissing { kernel: String, header: String, searched: Vec<std::path::PathBuf> },
    #[error("cannot render `{kernel}`: {source}")]
    Render { kernel: String, source: tessera_codegen::RenderError },
    #[error("the IR embedded for `{kernel}` does not parse ({message}); rebuild the crate that declares it")]
    Ir { kernel: String, message: String },
    #[error("launch of `{kernel}`: {source}")]
    Plan { kernel: String, source: LaunchPlanError },
    #[error(
        "launch of `{kernel}`: argument {position} is `{given}`, but the kernel's parameter there is `{expected}`"
    )]
    ArgumentOrder { kernel: String, position: usize, given: String, expected: String },
    #[error("launch of `{kernel}`: {given} arguments for {expected} parameters")]
    ArgumentCount { kernel: String, given: usize, expected: usize },
    #[error("launch of `{kernel}`: `{param}` is {given} but the kernel declares {expected}")]
    ElementMismatch { kernel: String, param: String, given: ElementType, expected: ElementType },
    #[error("`{param}` lives in {tensor} but the work runs on {launch}")]
    WrongDevice { param: String, tensor: Location, launch: Location },
    #[error("`{param}` at address {address:#x} is not aligned to its {element_bytes}-byte elements, so no vector width can access it")]
    Misaligned { param: String, address: u64, element_bytes: u32 },
    #[error("{what}: {len} host elements do not fill shape {shape:?} ({expected} elements)")]
    LengthMismatch { what: &'static str, len: usize, shape: Vec<usize>, expected: usize },
    #[error("a cudarc buffer of {len} elements cannot hold shape {shape:?} ({needed} elements)")]
    CudaBufferTooShort { len: usize, shape: Vec<usize>, needed: usize },
    #[error("slice {start}..{end} is outside a tensor of {len} elements")]
    SliceOutOfBounds { start: usize, end: usize, len: usize },
    #[error("sub-matrix rows {rows:?}, columns {cols:?} is not inside the {} × {} matrix", dims[0], dims[1])]
    SubmatrixOutOfBounds { rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, dims: [usize; 2] },
    #[error("a tensor of shape {dims:?} holds more elements than a usize counts")]
    ShapeTooLarge { dims: Vec<usize> },
    #[error("{what} needs a 2-D tensor, not one of shape {dims:?}")]
    NotAMatrix { what: &'static str, dims: Vec<usize> },
    #[error("{what} is {value}, more than a kernel's i32 scalar holds ({})", i32::MAX)]
    ScalarOutOfRange { what: &'static str, value: usize },
    #[error("leading dimension {ld} is less than the {cols} columns of a row: rows would overlap")]
    LeadingDimensionTooSmall { ld: usize, cols: usize },
    #[error(
        "a {rows} × {cols} matrix from element {start} with rows {ld} apart does not fit in a tensor of {len} elements"
    )]
    StridedViewOutOfBounds { start: usize, rows: usize, cols: usize, ld: usize, len: usize },
    #[error(
        "`{param}` is a matrix with rows {ld} elements apart but only {cols} columns; {what} needs contiguous elements"
    )]
    NotContiguous { what: &'static str, param: &'static str, cols: usize, ld: usize },
    #[error(
        "`{kernel}` wrote `{param}` outside its view, at element {offset} counted from the view's first; \
         the view is a {rows} × {cols} matrix whose rows are {ld} elements apart, and a kernel may write \
         only element r·{ld} + c with r < {rows}, c < {cols}"
    )]
    OutsideView { kernel: String, param: String, offset: i64, rows: usize, cols: usize, ld: usize },
    #[error("device copy between tensors of {src} and {dst} elements")]
    CopyLengthMismatch { src: usize, dst: usize },
    #[error(
        "launch of `{kernel}`: its shared memory, {bytes} B, exceeds the {device_max} B a block may opt in to on {device}; \
         shrink its tiles, padding or pipeline stages, or run it on a GPU with more (sm_80: 166912 B, sm_90: 232448 B)"
    )]
    SharedMemoryOverDevice { kernel: String, bytes: u32, device_max: u32, device: String },
    #[error(
        "`{kernel}` is compiled for sm_90a (wgmma, Hopper's own instructions), which this {device} GPU does not have; \
         launch a kernel without `target = sm_90a` here (the mma.sync ladder runs on every GPU since sm_80)"
    )]
    ArchSpecific { kernel: String, device: String },
    #[error(
        "`{kernel}` uses {feature}, which GPUs from sm_90 (Hopper) on have and this {device} GPU does not; \
         launch a kernel without it here (the cp.async pipelines without producers run on every GPU since sm_80)"
    )]
    NeedsHopper { kernel: String, feature: &'static str, device: String },
    #[error("`{kernel}` copies `{param}` by TMA, but no tensor map can describe it: {reason}")]
    TensorMap { kernel: String, param: String, reason: String },
    #[error("vector width {width} was asked for, but `{kernel}` declares at most {declared}")]
    VectorTooWide { kernel: String, width: VectorWidth, declared: VectorWidth },
    #[error("no backend: no GPU ({gpu}), and no CPU simulation ({simulator})")]
    NoBackend { gpu: Box<Error>, simulator: Box<Error> },
    #[error("TESSERA_BACKEND is `{value}`; use `gpu`, `simulator` or leave it unset (GPU if there is one)")]
    BackendChoice { value: String },

    // The CPU simulation.
    #[error("no host C++ compiler for the simulator: `{compiler}` could not be run ({reason}); install g++ or clang++, or set CXX to one")]
    HostCompilerMissing { compiler: String, reason: String },
    #[error("the host compiler {compiler} could not compile `{kernel}` for the simulator:\n{log}\n{excerpt}")]
    HostCompile { kernel: String, compiler: String, log: String, excerpt: String },
    #[error("the simulator cannot run `{kernel}`: line {line} uses {feature}, which it does not simulate (`{text}`); run it on a GPU")]
    SimUnsupported { kernel: String, feature: &'static str, line: usize, text: String },
    #[error("the source defines no kernel named `{kernel}` (or that is not a C identifier)")]
    KernelNotInSource { kernel: String },
    #[error("could not load the simulation library {path}: {reason}")]
    SimLoad { path: String, reason: String },
    #[error("could not map {bytes} bytes of host memory for a simulated tensor: {reason}")]
    HostAllocation { bytes: u128, reason: String },
    #[error("launch of `{kernel}`: argument {position} (`{param}`) is {given}, but the kernel's parameter there is `{expected}`")]
    ArgumentType { kernel: String, position: usize, param: String, given: String, expected: String },
    #[error("the simulator could not launch `{kernel}`: {message}")]
    SimLaunch { kernel: String, message: String },
    #[error(
        "data race in `{kernel}`: `{param}` differs between thread orders {} and {} at element \
         {first_difference_at} ({} vs {}); {differing} of {len} elements differ. Threads read \
         what others write with no __syncthreads between, or write the same element",
        orders[0], orders[1], values[0], values[1]
    )]
    Race {
        kernel: String,
        param: String,
        first_difference_at: usize,
        differing: usize,
        len: usize,
        orders: [Order; 2],
        values: [String; 2],
    },
    #[error(
        "barrier divergence in `{kernel}`, block {block:?}: {waiting} thread(s) wait at \
         __syncthreads while {finished} finished without reaching it (thread {finished_thread:?} \
         among them); every thread of a block must reach every __syncthreads"
    )]
    BarrierDivergence { kernel: String, block: [u32; 3], waiting: u32, finished: u32, finished_thread: [u32; 3] },
    #[error("warp divergence in `{kernel}`, block {block:?}: {detail}")]
    WarpDivergence {
        kernel: String,
        block: [u32; 3],
        waiting_thread: [u32; 3],
        missing_thread: [u32; 3],
        mask: u32,
        detail: String,
    },
    #[error("`{kernel}` faulted ({signal}) at address {address:#x}, block {block:?}, thread {thread:?}: {near}")]
    SimFault { kernel: String, block: [u32; 3], thread: [u32; 3], signal: &'static str, address: u64, near: String },
    #[error("`{kernel}`, block {block:?}, thread {thread:?}, overflowed its {stack_bytes}-byte simulated stack; raise it with Simulator::with_stack_bytes")]
    StackOverflow { kernel: String, block: [u32; 3], thread: [u32; 3], stack_bytes: usize },
    #[error("`{kernel}` stopped in block {block:?}, thread {thread:?}: {message}")]
    SimTrap { kernel: String, block: [u32; 3], thread: [u32; 3], message: String },
    #[error(
        "`{kernel}` wrote `{param}` out of bounds: element {element}, where the tensor spans {len} \
         (found in the red zone around it after the run, which does not record the thread; a \
         write past a row's end into the next row of a matrix is not out of bounds and goes unseen)"
    )]
    OutOfBounds { kernel: String, param: String, element: i64, len: usize },
    #[error("no cuBLAS: libcublas could not be loaded (tried {tried})")]
    CublasMissing { tried: String },
    #[error("cuBLAS failed while {action}: {source}")]
    Cublas { action: &'static str, source: cudarc::cublas::result::CublasError },
    #[error("GEMM shapes do not chain: A {a:?} · B {b:?} → C {c:?}")]
    GemmShape { a: Vec<usize>, b: Vec<usize>, c: Vec<usize> },
    #[error("no NCCL: libnccl could not be loaded (tried {tried}); NCCL ships as libnccl.so.2 (`pip install nvidia-nccl-cu13`, in nvidia/nccl/lib): link it as libnccl.so in a folder on LD_LIBRARY_PATH")]
    NcclMissing { tried: String },
    #[error("NCCL failed while {action}: {code}")]
    Nccl { action: &'static str, code: String },
    #[error("a device group needs at least one device")]
    EmptyGroup,
    #[error("GPU {ordinal} is named twice in the device group (NCCL gives each GPU one rank)")]
    DuplicateGpu { ordinal: usize },
    #[error("a tensor of dims {dims:?} cannot be {sharding}: rows need at least one dimension, columns a matrix")]
    ShardingShape { sharding: crate::Sharding, dims: Vec<usize> },
    #[error("`{param}` must be {expected} over {parts} devices, but is {found} over {found_parts}")]
    ShardingMismatch {
        param: &'static str,
        expected: crate::Sharding,
        parts: usize,
        found: crate::Sharding,
        found_parts: usize,
    },
    #[error("{what}: rows {rows:?} are outside 0..{total}")]
    CollectiveRows { what: &'static str, rows: std::ops::Range<usize>, total: usize },
    #[error("{what}: the input has dims {input:?} but the output {output:?}; they must be the same")]
    CollectiveShapes { what: &'static str, input: Vec<usize>, output: Vec<usize> },
    #[error("{what}: a shard holds {len} elements but the collective needs {needed}")]
    ShardTooSmall { what: &'static str, len: usize, needed: usize },
    #[error("a gather or scatter was issued without its input tensor")]
    CollectiveInput,
    #[error("timing over 0 repetitions measures nothing: ask for at least one")]
    NoRepetitions,
    #[error("the stream-K workspace could not be prepared: {message}")]
    Workspace { message: String },
    /// An error of a crate built on the runtime (tessera's catalog, for one), carried whole so
    /// the runtime need not know its kinds. Its message is the carried error's; read the error
    /// itself back with [`Error::library`] or [`Error::into_library`] (the `source()` chain
    /// starts at the carried error's source, not at it).
    #[error(transparent)]
    Library(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl Error {
    /// The library error of type `E` this error carries ([`Error::Library`]), if it is one.
    ///
    /// ```
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("row of {0} columns")]
    /// struct RowError(usize);
    /// let error = tessera_runtime::Error::Library(Box::new(RowError(9)));
    /// assert_eq!(error.library::<RowError>().map(|e| e.0), Some(9));
    /// assert!(tessera_runtime::Error::EmptyGroup.library::<RowError>().is_none());
    /// ```
    pub fn library<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Error::Library(error) => error.downcast_ref(),
            _ => None,
        }
    }

    /// The library error of type `E` this error carries, taken out of it; any other error
    /// back as it was. A library's `From<Error>` uses it, so that its own error sent through
    /// `?` into an [`Error`] and back is itself again, not wrapped twice.
    ///
    /// ```
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("row of {0} columns")]
    /// struct RowError(usize);
    /// let error = tessera_runtime::Error::Library(Box::new(RowError(9)));
    /// assert_eq!(error.into_library::<RowError>().map(|e| e.0).ok(), Some(9));
    /// assert!(tessera_runtime::Error::EmptyGroup.into_library::<RowError>().is_err());
    /// ```
    pub fn into_library<E: std::error::Error + 'static>(self) -> Result<E, Error> {
        match self {
            Error::Library(error) => error.downcast::<E>().map(|error| *error).map_err(Error::Library),
            other => Err(other),
        }
    }

    pub(crate) fn driver(action: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
        move |source| Error::Driver { action, source }
    }
}
