//! Queuing a loaded kernel: its parameters by address through `cuLaunchKernelEx`, so that a
//! kernel that waits for the grid before it ([`tessera_dsl::Kernel::waits_for_prior_grid`]) is
//! launched as a programmatic dependent of that grid on sm_90 and later — its launch overlaps
//! the previous kernel's last blocks instead of following their end.

use std::ffi::c_void;

use cudarc::driver::{sys, CudaFunction, CudaStream, DriverError};

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchShape {
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) dynamic_shared_bytes: u32,
}

/// Queues `function` on `stream`; `dependent` asks for a programmatic dependent launch.
///
/// # Safety
/// `parameters` holds one pointer per kernel parameter, in order, each to a live value of the
/// parameter's type (device addresses, scalars, tensor maps); every address the kernel reaches
/// through them is a live allocation the kernel may access as it does. With `dependent`, the
/// kernel must wait for the grid before it (`griddepcontrol.wait`) before touching memory.
pub(crate) unsafe fn launch(
    stream: &CudaStream,
    function: &CudaFunction,
    shape: LaunchShape,
    parameters: &mut [*mut c_void],
    dependent: bool,
) -> Result<(), DriverError> {
    stream.context().bind_to_thread()?;
    // SAFETY: a zeroed attribute is a valid one (all of its fields are plain integers)
    let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: shape.grid[0],
        gridDimY: shape.grid[1],
        gridDimZ: shape.grid[2],
        blockDimX: shape.block[0],
        blockDimY: shape.block[1],
        blockDimZ: shape.block[2],
        sharedMemBytes: shape.dynamic_shared_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attribute,
        numAttrs: u32::from(dependent),
    };
    // SAFETY: the caller's contract on `parameters`; `config` and `attribute` outlive the call
    unsafe { sys::cuLaunchKernelEx(&config, function.cu_function(), parameters.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
}
