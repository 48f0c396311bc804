//! Device tensors that know their shape, and the borrowed views kernels take.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, ValidAsZeroBits};
use tessera_dsl::ElementType;

use crate::Error;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
}

/// An element type a tensor can hold; ties the Rust type to the IR's [`ElementType`].
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static + sealed::Sealed {
    const TYPE: ElementType;
}

impl Element for f32 {
    const TYPE: ElementType = ElementType::F32;
}
impl Element for f64 {
    const TYPE: ElementType = ElementType::F64;
}
impl Element for i32 {
    const TYPE: ElementType = ElementType::I32;
}
impl Element for u32 {
    const TYPE: ElementType = ElementType::U32;
}

/// A row-major tensor in GPU memory.
///
/// ```no_run
/// let gpu = tessera_runtime::Gpu::new(0)?;
/// let x = gpu.upload(&[1.0f32; 12], [3, 4])?;
/// assert_eq!(x.dims(), &[3, 4]);
/// let tail = x.slice(1..12)?;          // an unaligned view: launches pick a narrower width
/// assert_eq!(tail.dims(), &[11]);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceTensor<T: Element> {
    pub(crate) data: CudaSlice<T>,
    pub(crate) dims: Vec<usize>,
    pub(crate) device: usize,
}

impl<T: Element> DeviceTensor<T> {
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same elements under another shape with as many elements.
    pub fn reshape(mut self, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        let dims = dims.as_ref().to_vec();
        let expected: usize = dims.iter().product();
        if expected != self.len() {
            return Err(Error::LengthMismatch { what: "reshape", len: self.len(), shape: dims, expected });
        }
        self.dims = dims;
        Ok(self)
    }

    /// A 1-D view of elements `range` (any offset: launches check the alignment).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Result<TensorView<'_, T>, Error> {
        self.check_range(&range)?;
        Ok(TensorView { view: self.data.slice(range.clone()), dims: vec![range.len()], device: self.device })
    }

    /// A writable 1-D view of elements `range`.
    pub fn slice_mut(&mut self, range: std::ops::Range<usize>) -> Result<TensorViewMut<'_, T>, Error> {
        self.check_range(&range)?;
        let device = self.device;
        Ok(TensorViewMut { view: self.data.slice_mut(range.clone()), dims: vec![range.len()], device })
    }

    fn check_range(&self, range: &std::ops::Range<usize>) -> Result<(), Error> {
        if range.start > range.end || range.end > self.len() {
            return Err(Error::SliceOutOfBounds { start: range.start, end: range.end, len: self.len() });
        }
        Ok(())
    }
}

/// A borrowed, read-only part of a [`DeviceTensor`].
#[derive(Debug)]
pub struct TensorView<'a, T: Element> {
    pub(crate) view: CudaView<'a, T>,
    pub(crate) dims: Vec<usize>,
    pub(crate) device: usize,
}

/// A borrowed, writable part of a [`DeviceTensor`].
#[derive(Debug)]
pub struct TensorViewMut<'a, T: Element> {
    pub(crate) view: CudaViewMut<'a, T>,
    pub(crate) dims: Vec<usize>,
    pub(crate) device: usize,
}

impl<T: Element> TensorView<'_, T> {
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
}

impl<T: Element> TensorViewMut<'_, T> {
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
}

/// Something a kernel can read as a `Global<T, ..>` parameter.
pub trait Input<T: Element> {
    #[doc(hidden)]
    fn shape(&self) -> &[usize];
    #[doc(hidden)]
    fn device(&self) -> usize;
    #[doc(hidden)]
    fn cuda_view(&self) -> CudaView<'_, T>;
}

/// Something a kernel can write as a `GlobalMut<T, ..>` parameter.
pub trait Output<T: Element> {
    #[doc(hidden)]
    fn shape(&self) -> &[usize];
    #[doc(hidden)]
    fn device(&self) -> usize;
    #[doc(hidden)]
    fn cuda_view_mut(&mut self) -> CudaViewMut<'_, T>;
}

impl<T: Element> Input<T> for DeviceTensor<T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn device(&self) -> usize {
        self.device
    }
    fn cuda_view(&self) -> CudaView<'_, T> {
        self.data.slice(0..self.len())
    }
}

impl<T: Element> Input<T> for TensorView<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn device(&self) -> usize {
        self.device
    }
    fn cuda_view(&self) -> CudaView<'_, T> {
        self.view.slice(..)
    }
}

impl<T: Element> Input<T> for TensorViewMut<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn device(&self) -> usize {
        self.device
    }
    fn cuda_view(&self) -> CudaView<'_, T> {
        self.view.as_view()
    }
}

impl<T: Element> Output<T> for DeviceTensor<T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn device(&self) -> usize {
        self.device
    }
    fn cuda_view_mut(&mut self) -> CudaViewMut<'_, T> {
        let len = self.len();
        self.data.slice_mut(0..len)
    }
}

impl<T: Element> Output<T> for TensorViewMut<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn device(&self) -> usize {
        self.device
    }
    fn cuda_view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.view.slice_mut(..)
    }
}
