//! Where kernels run: a CUDA GPU, or the CPU simulation of the same emitted C. Both take the
//! same tensors and the same launches.

use crate::{DeviceTensor, Element, Error, Gpu, Input, Output, Simulator, Timing};

/// A GPU or the simulator, chosen at run time.
///
/// ```
/// use tessera_runtime::Backend;
/// let backend = Backend::detect()?;            // the GPU if there is one, else the simulator
/// println!("running on {backend}");            // says which, and why
/// let x = backend.upload(&[1.0f32, 2.0], [2])?;
/// assert_eq!(backend.download(&x)?, vec![1.0, 2.0]);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[derive(Debug)]
pub enum Backend {
    Gpu(Gpu),
    Simulator(Simulator),
}

/// Something kernels can be launched on: a [`Gpu`], a [`Simulator`] or a [`Backend`].
/// `#[tile_kernel]`'s `launch` takes `&impl Device`.
///
/// ```
/// use tessera_runtime::{Device, Simulator};
/// fn name_of(device: &impl Device) -> &'static str {
///     match device.device_ref() {
///         tessera_runtime::DeviceRef::Gpu(_) => "gpu",
///         tessera_runtime::DeviceRef::Simulator(_) => "simulator",
///     }
/// }
/// assert_eq!(name_of(&Simulator::new()?), "simulator");
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub trait Device: sealed::Sealed {
    #[doc(hidden)]
    fn device_ref(&self) -> DeviceRef<'_>;
}

/// A borrowed backend, as launches see it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum DeviceRef<'a> {
    Gpu(&'a Gpu),
    Simulator(&'a Simulator),
}

impl DeviceRef<'_> {
    /// A zeroed tensor of shape `dims` on this device (a launch's workspace).
    pub fn zeros<T: Element>(self, dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        match self {
            DeviceRef::Gpu(gpu) => gpu.zeros(dims),
            DeviceRef::Simulator(sim) => sim.zeros(dims),
        }
    }

    /// A tensor of shape `dims` for a launch to write before anything reads it: not zeroed on
    /// a GPU ([`Gpu::scratch`]), zeros on the simulation.
    pub fn scratch<T: Element>(self, dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        match self {
            DeviceRef::Gpu(gpu) => gpu.scratch(dims),
            DeviceRef::Simulator(sim) => sim.zeros(dims),
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Gpu {}
    impl Sealed for crate::Simulator {}
    impl Sealed for crate::Backend {}
}

impl Device for Gpu {
    fn device_ref(&self) -> DeviceRef<'_> {
        DeviceRef::Gpu(self)
    }
}

impl Device for Simulator {
    fn device_ref(&self) -> DeviceRef<'_> {
        DeviceRef::Simulator(self)
    }
}

impl Device for Backend {
    fn device_ref(&self) -> DeviceRef<'_> {
        match self {
            Backend::Gpu(gpu) => DeviceRef::Gpu(gpu),
            Backend::Simulator(sim) => DeviceRef::Simulator(sim),
        }
    }
}

impl From<Gpu> for Backend {
    fn from(gpu: Gpu) -> Self {
        Backend::Gpu(gpu)
    }
}

impl From<Simulator> for Backend {
    fn from(sim: Simulator) -> Self {
        Backend::Simulator(sim)
    }
}

impl Backend {
    /// GPU 0 if there is one, else the CPU simulation. `TESSERA_BACKEND=gpu` or
    /// `=simulator` insists on one. An error says what is missing for both.
    pub fn detect() -> Result<Self, Error> {
        match std::env::var("TESSERA_BACKEND").ok().as_deref() {
            None | Some("") => {}
            Some("gpu") => return Gpu::new(0).map(Backend::Gpu),
            Some("simulator") | Some("sim") => {
                return Simulator::new().map(|sim| Backend::Simulator(sim.because("TESSERA_BACKEND=simulator".into())))
            }
            Some(other) => return Err(Error::BackendChoice { value: other.into() }),
        }
        match Gpu::new(0) {
            Ok(gpu) => Ok(Backend::Gpu(gpu)),
            Err(no_gpu) => match Simulator::new() {
                Ok(sim) => Ok(Backend::Simulator(sim.because(no_gpu.to_string()))),
                Err(no_simulator) => Err(Error::NoBackend { gpu: Box::new(no_gpu), simulator: Box::new(no_simulator) }),
            },
        }
    }

    /// Whether launches run on the CPU simulation.
    pub fn is_simulated(&self) -> bool {
        matches!(self, Backend::Simulator(_))
    }

    /// The GPU, when launches run on one (for what only a GPU has: its name, SMs, cudarc stream).
    ///
    /// ```
    /// let backend = tessera_runtime::Backend::detect()?;
    /// if let Some(gpu) = backend.as_gpu() {
    ///     println!("{} SMs", gpu.sm_count());
    /// }
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn as_gpu(&self) -> Option<&Gpu> {
        match self {
            Backend::Gpu(gpu) => Some(gpu),
            Backend::Simulator(_) => None,
        }
    }

    /// The simulator, when launches run on the CPU simulation.
    ///
    /// ```
    /// use tessera_runtime::{Backend, Simulator};
    /// let backend = Backend::from(Simulator::new()?.with_resident_blocks(8));
    /// assert_eq!(backend.as_simulator().map(|sim| sim.resident_blocks()), Some(8));
    /// assert!(backend.as_gpu().is_none());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn as_simulator(&self) -> Option<&Simulator> {
        match self {
            Backend::Simulator(sim) => Some(sim),
            Backend::Gpu(_) => None,
        }
    }

    /// Copies `host` to the backend as a tensor of shape `dims`.
    pub fn upload<T: Element>(&self, host: &[T], dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        match self {
            Backend::Gpu(gpu) => gpu.upload(host, dims),
            Backend::Simulator(sim) => sim.upload(host, dims),
        }
    }

    /// A tensor of shape `dims` filled with zeros.
    pub fn zeros<T: Element>(&self, dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        match self {
            Backend::Gpu(gpu) => gpu.zeros(dims),
            Backend::Simulator(sim) => sim.zeros(dims),
        }
    }

    /// A tensor of shape `dims` with every element `value` (poison outputs with it).
    pub fn filled<T: Element>(&self, dims: impl AsRef<[usize]>, value: T) -> Result<DeviceTensor<T>, Error> {
        match self {
            Backend::Gpu(gpu) => gpu.filled(dims, value),
            Backend::Simulator(sim) => sim.filled(dims, value),
        }
    }

    /// Copies a tensor or view back to the host (after queued work).
    pub fn download<T: Element>(&self, tensor: &impl Input<T>) -> Result<Vec<T>, Error> {
        match self {
            Backend::Gpu(gpu) => gpu.download(tensor),
            Backend::Simulator(sim) => sim.download(tensor),
        }
    }

    /// Copies `src` into `dst` on the backend.
    pub fn copy<T: Element>(&self, src: &impl Input<T>, dst: &mut impl Output<T>) -> Result<(), Error> {
        match self {
            Backend::Gpu(gpu) => gpu.copy(src, dst),
            Backend::Simulator(sim) => sim.copy(src, dst),
        }
    }

    /// Waits for queued work.
    pub fn synchronize(&self) -> Result<(), Error> {
        match self {
            Backend::Gpu(gpu) => gpu.synchronize(),
            Backend::Simulator(sim) => sim.synchronize(),
        }
    }

    /// Times `work`: CUDA events on a GPU, the wall clock (of the simulation) otherwise.
    pub fn time(
        &self,
        warmup: usize,
        repetitions: usize,
        work: impl FnMut() -> Result<(), Error>,
    ) -> Result<Timing, Error> {
        match self {
            Backend::Gpu(gpu) => gpu.time(warmup, repetitions, work),
            Backend::Simulator(sim) => sim.time(warmup, repetitions, work),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Gpu(gpu) => {
                write!(f, "GPU {}: {} ({}, {} SMs)", gpu.ordinal(), gpu.name(), gpu.arch(), gpu.sm_count())
            }
            Backend::Simulator(sim) => sim.fmt(f),
        }
    }
}
