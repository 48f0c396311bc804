use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceSlice};
use tessera_dsl::ElementType;

use crate::sim::HostRegion;
use crate::tensor::{Memory, MemoryMut};
use crate::{Element, Input, Location, Output};

/// A value passed by value to a kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    F32(f32),
    F64(f64),
    I32(i32),
    U32(u32),
    F16(half::f16),
    BF16(half::bf16),
}

impl ScalarValue {
    /// The element type of the value, which a launch checks against the scalar parameter's.
    ///
    /// ```
    /// use tessera_runtime::ScalarValue;
    /// assert_eq!(ScalarValue::from(3i32).element(), tessera_dsl::ElementType::I32);
    /// ```
    pub fn element(&self) -> ElementType {
        match self {
            Self::F32(_) => ElementType::F32,
            Self::F64(_) => ElementType::F64,
            Self::I32(_) => ElementType::I32,
            Self::U32(_) => ElementType::U32,
            Self::F16(_) => ElementType::F16,
            Self::BF16(_) => ElementType::BF16,
        }
    }
}

/// One argument of a launch, named after its parameter. `#[tile_kernel]`'s `launch` builds
/// these from typed references; the borrow keeps each tensor alive until the launch is queued.
///
/// ```no_run
/// use tessera_runtime::{Argument, Gpu};
/// let gpu = Gpu::new(0)?;
/// let x = gpu.upload(&[1.0f32; 8], [8])?;
/// let argument = Argument::input("x", &x);
/// assert_eq!(argument.param(), "x");
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[derive(Debug)]
pub enum Argument<'a> {
    /// A tensor or view, lent for the launch: built by [`Argument::input`] / [`Argument::output`]
    /// only (its address must be the borrowed memory's).
    #[non_exhaustive]
    Tensor {
        param: &'static str,
        element: ElementType,
        dims: Vec<usize>,
        /// Elements from the start of one row to the next: the last dimension when dense,
        /// more for a sub-matrix. Kernels receive it as `<param>_ld` (2-D tensors).
        leading_dimension: usize,
        location: Location,
        address: u64,
        /// The stream the memory's earlier work is ordered on (GPU tensors): a launch on
        /// another stream is joined to it both ways.
        stream: Option<Arc<CudaStream>>,
        writable: bool,
        /// The simulator's red zones and guard pages around the elements (host tensors).
        host: Option<HostRegion>,
        borrow: PhantomData<&'a ()>,
    },
    /// A scalar parameter's value ([`Argument::scalar`]).
    Scalar { param: &'static str, value: ScalarValue },
}

impl<'a> Argument<'a> {
    /// Lends `tensor` (a tensor or a view) as parameter `param`, read-only: for a kernel's
    /// `Global<T, ..>` parameters. A launch checks the name, the order and the element type.
    ///
    /// ```
    /// use tessera_runtime::{Argument, Simulator};
    /// let sim = Simulator::new()?;
    /// let a = sim.upload(&[1.0f32; 12], [3, 4])?;
    /// let top = a.submatrix(0..2, 0..4)?;
    /// assert_eq!(Argument::input("a", &top).param(), "a");
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn input<T: Element>(param: &'static str, tensor: &'a impl Input<T>) -> Self {
        let (address, host, stream) = match tensor.memory() {
            Memory::Cuda(view) => {
                let (address, _sync) = view.device_ptr(view.stream());
                (address, None, Some(view.stream().clone()))
            }
            Memory::Host { buffer, range } => {
                let region = buffer.region();
                let address = region.data_start() + range.start * size_of::<T>();
                (address as u64, Some(region), None)
            }
        };
        Argument::Tensor {
            param,
            element: T::TYPE,
            dims: tensor.shape().to_vec(),
            leading_dimension: tensor.row_stride(),
            location: tensor.location(),
            address,
            stream,
            writable: false,
            host,
            borrow: PhantomData,
        }
    }

    /// Lends `tensor` (a tensor or a view) as parameter `param`, writable: for a kernel's
    /// `GlobalMut<T, ..>` parameters. The mutable borrow lasts as long as the argument.
    ///
    /// ```
    /// use tessera_runtime::{Argument, Simulator};
    /// let sim = Simulator::new()?;
    /// let mut y = sim.zeros::<f32>([8])?;
    /// assert_eq!(Argument::output("y", &mut y).param(), "y");
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn output<T: Element>(param: &'static str, tensor: &'a mut impl Output<T>) -> Self {
        let dims = tensor.shape().to_vec();
        let leading_dimension = tensor.row_stride();
        let location = tensor.location();
        let (address, host, stream) = match tensor.memory_mut() {
            MemoryMut::Cuda(mut view) => {
                let stream = view.stream().clone();
                let address = view.device_ptr_mut(&stream).0;
                (address, None, Some(stream))
            }
            MemoryMut::Host { buffer, range } => {
                let region = buffer.region();
                let address = region.data_start() + range.start * size_of::<T>();
                (address as u64, Some(region), None)
            }
        };
        Argument::Tensor {
            param,
            element: T::TYPE,
            dims,
            leading_dimension,
            location,
            address,
            stream,
            writable: true,
            host,
            borrow: PhantomData,
        }
    }

    /// Scalar parameter `param`, passed by value; the Rust type picks the element type, which
    /// must be the parameter's (`3i32` for an `int`, `1.5f32` for a `float`).
    ///
    /// ```
    /// use tessera_runtime::{Argument, ScalarValue};
    /// let n = Argument::scalar("n", 1024i32);
    /// assert!(matches!(n, Argument::Scalar { value: ScalarValue::I32(1024), .. }));
    /// ```
    pub fn scalar<T: Into<ScalarValue>>(param: &'static str, value: T) -> Self {
        Argument::Scalar { param, value: value.into() }
    }

    /// The name of the parameter this argument is for.
    ///
    /// ```
    /// assert_eq!(tessera_runtime::Argument::scalar("alpha", 2.0f32).param(), "alpha");
    /// ```
    pub fn param(&self) -> &'static str {
        match self {
            Argument::Tensor { param, .. } | Argument::Scalar { param, .. } => param,
        }
    }

    /// Whether a tensor's address and each of its rows start on a multiple of `bytes` (a
    /// scalar is aligned): what a kernel's `bytes`-wide accesses need, short of which a launch
    /// narrows them.
    ///
    /// ```no_run
    /// use tessera_runtime::{Argument, Gpu};
    /// let gpu = Gpu::new(0)?;
    /// let x = gpu.zeros::<f32>([4, 5])?;
    /// assert!(Argument::input("x", &x).rows_aligned(4));
    /// assert!(!Argument::input("x", &x).rows_aligned(16)); // rows 20 bytes apart
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn rows_aligned(&self, bytes: u64) -> bool {
        match self {
            Argument::Tensor { element, dims, leading_dimension, address, .. } => {
                let row_bytes =
                    if dims.len() >= 2 { *leading_dimension as u64 * u64::from(element.size_bytes()) } else { 0 };
                // every address is aligned to a width of 0 or 1 byte
                bytes <= 1 || address % bytes == 0 && row_bytes % bytes == 0
            }
            Argument::Scalar { .. } => true,
        }
    }
}

impl From<half::f16> for ScalarValue {
    fn from(v: half::f16) -> Self {
        Self::F16(v)
    }
}

impl From<half::bf16> for ScalarValue {
    fn from(v: half::bf16) -> Self {
        Self::BF16(v)
    }
}

impl From<f32> for ScalarValue {
    fn from(v: f32) -> Self {
        Self::F32(v)
    }
}
impl From<f64> for ScalarValue {
    fn from(v: f64) -> Self {
        Self::F64(v)
    }
}
impl From<i32> for ScalarValue {
    fn from(v: i32) -> Self {
        Self::I32(v)
    }
}
impl From<u32> for ScalarValue {
    fn from(v: u32) -> Self {
        Self::U32(v)
    }
}
