use tessera_dsl::{ElementType, LaunchPlanError, VectorWidth};

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
    #[error("NVRTC call {call} failed: {source}")]
    Nvrtc { call: &'static str, source: cudarc::nvrtc::result::NvrtcError },
    #[error("NVRTC could not compile `{kernel}` for {arch}:\n{log}\n{excerpt}")]
    Compile { kernel: String, arch: String, log: String, excerpt: String },
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
    #[error("`{param}` lives on GPU {tensor_device} but the launch is on GPU {gpu_device}")]
    WrongDevice { param: String, tensor_device: usize, gpu_device: usize },
    #[error("`{param}` at address {address:#x} is not aligned to its {element_bytes}-byte elements, so no vector width can access it")]
    Misaligned { param: String, address: u64, element_bytes: u32 },
    #[error("{what}: {len} host elements do not fill shape {shape:?} ({expected} elements)")]
    LengthMismatch { what: &'static str, len: usize, shape: Vec<usize>, expected: usize },
    #[error("slice {start}..{end} is outside a tensor of {len} elements")]
    SliceOutOfBounds { start: usize, end: usize, len: usize },
    #[error("device copy between tensors of {src} and {dst} elements")]
    CopyLengthMismatch { src: usize, dst: usize },
    #[error("no cuBLAS: libcublas could not be loaded (tried {tried})")]
    CublasMissing { tried: String },
    #[error("cuBLAS failed while {action}: {source}")]
    Cublas { action: &'static str, source: cudarc::cublas::result::CublasError },
    #[error("GEMM shapes do not chain: A {a:?} · B {b:?} → C {c:?}")]
    GemmShape { a: Vec<usize>, b: Vec<usize>, c: Vec<usize> },
    #[error("vector width {width} was asked for, but `{kernel}` declares at most {declared}")]
    VectorTooWide { kernel: String, width: VectorWidth, declared: VectorWidth },
}

impl Error {
    pub(crate) fn driver(action: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
        move |source| Error::Driver { action, source }
    }
}
