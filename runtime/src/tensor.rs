//! Tensors that know their shape, on either backend, and the borrowed views kernels take.

use std::ops::Range;

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, ValidAsZeroBits};
use tessera_dsl::ElementType;

use crate::sim::HostBuffer;
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

/// Where a tensor's elements live: on a GPU, or in host memory for the [`Simulator`](crate::Simulator).
///
/// ```
/// use tessera_runtime::Location;
/// assert_eq!(Location::Gpu(0).to_string(), "GPU 0");
/// assert_eq!(Location::Host.to_string(), "host memory (the simulator)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    Gpu(usize),
    Host,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Gpu(ordinal) => write!(f, "GPU {ordinal}"),
            Location::Host => f.write_str("host memory (the simulator)"),
        }
    }
}

/// A tensor's elements: a CUDA allocation or a simulator's host buffer.
#[derive(Debug)]
pub(crate) enum Storage<T: Element> {
    Cuda(CudaSlice<T>),
    Host(HostBuffer<T>),
}

/// A row-major tensor on a backend: GPU memory, or host memory for the simulator.
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
    pub(crate) storage: Storage<T>,
    pub(crate) dims: Vec<usize>,
    pub(crate) location: Location,
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

    /// Where the elements live.
    pub fn location(&self) -> Location {
        self.location
    }

    /// The same elements under another shape with as many elements.
    pub fn reshape(mut self, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        self.dims = checked_dims("reshape", self.len(), dims.as_ref())?;
        Ok(self)
    }

    /// A 1-D view of elements `range` (any offset: launches check the alignment).
    pub fn slice(&self, range: Range<usize>) -> Result<TensorView<'_, T>, Error> {
        self.check_range(&range)?;
        let view = match &self.storage {
            Storage::Cuda(data) => View::Cuda(data.slice(range.clone())),
            Storage::Host(buffer) => View::Host { buffer, range: range.clone() },
        };
        Ok(TensorView { view, dims: vec![range.len()], location: self.location })
    }

    /// A writable 1-D view of elements `range`.
    pub fn slice_mut(&mut self, range: Range<usize>) -> Result<TensorViewMut<'_, T>, Error> {
        self.check_range(&range)?;
        let location = self.location;
        let view = match &mut self.storage {
            Storage::Cuda(data) => ViewMut::Cuda(data.slice_mut(range.clone())),
            Storage::Host(buffer) => ViewMut::Host { buffer, range: range.clone() },
        };
        Ok(TensorViewMut { view, dims: vec![range.len()], location })
    }

    fn check_range(&self, range: &Range<usize>) -> Result<(), Error> {
        if range.start > range.end || range.end > self.len() {
            return Err(Error::SliceOutOfBounds { start: range.start, end: range.end, len: self.len() });
        }
        Ok(())
    }
}

#[derive(Debug)]
enum View<'a, T: Element> {
    Cuda(CudaView<'a, T>),
    Host { buffer: &'a HostBuffer<T>, range: Range<usize> },
}

#[derive(Debug)]
enum ViewMut<'a, T: Element> {
    Cuda(CudaViewMut<'a, T>),
    Host { buffer: &'a mut HostBuffer<T>, range: Range<usize> },
}

/// A borrowed, read-only part of a [`DeviceTensor`].
#[derive(Debug)]
pub struct TensorView<'a, T: Element> {
    view: View<'a, T>,
    dims: Vec<usize>,
    location: Location,
}

/// A borrowed, writable part of a [`DeviceTensor`].
#[derive(Debug)]
pub struct TensorViewMut<'a, T: Element> {
    view: ViewMut<'a, T>,
    dims: Vec<usize>,
    location: Location,
}

impl<T: Element> TensorView<'_, T> {
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The same elements under another shape with as many elements (a 2-D view at any offset).
    pub fn reshape(mut self, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        self.dims = checked_dims("reshape", self.dims.iter().product(), dims.as_ref())?;
        Ok(self)
    }
}

impl<T: Element> TensorViewMut<'_, T> {
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The same elements under another shape with as many elements (a 2-D view at any offset).
    pub fn reshape(mut self, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        self.dims = checked_dims("reshape", self.dims.iter().product(), dims.as_ref())?;
        Ok(self)
    }
}

/// `dims`, if they hold exactly `len` elements.
fn checked_dims(what: &'static str, len: usize, dims: &[usize]) -> Result<Vec<usize>, Error> {
    let expected: usize = dims.iter().product();
    if expected != len {
        return Err(Error::LengthMismatch { what, len, shape: dims.to_vec(), expected });
    }
    Ok(dims.to_vec())
}

/// The elements an argument reads, on its backend (how launches and copies reach them).
#[doc(hidden)]
pub enum Memory<'a, T: Element> {
    Cuda(CudaView<'a, T>),
    Host { buffer: &'a HostBuffer<T>, range: Range<usize> },
}

/// The elements an argument writes, on its backend.
#[doc(hidden)]
pub enum MemoryMut<'a, T: Element> {
    Cuda(CudaViewMut<'a, T>),
    Host { buffer: &'a mut HostBuffer<T>, range: Range<usize> },
}

impl<'a, T: Element> Memory<'a, T> {
    /// The host elements, or `None` for GPU memory.
    pub(crate) fn host(&self) -> Option<&'a [T]> {
        match self {
            Memory::Host { buffer, range } => Some(&buffer.as_slice()[range.clone()]),
            Memory::Cuda(_) => None,
        }
    }
}

/// Something a kernel can read as a `Global<T, ..>` parameter.
pub trait Input<T: Element> {
    #[doc(hidden)]
    fn shape(&self) -> &[usize];
    #[doc(hidden)]
    fn location(&self) -> Location;
    #[doc(hidden)]
    fn memory(&self) -> Memory<'_, T>;
}

/// Something a kernel can write as a `GlobalMut<T, ..>` parameter.
pub trait Output<T: Element> {
    #[doc(hidden)]
    fn shape(&self) -> &[usize];
    #[doc(hidden)]
    fn location(&self) -> Location;
    #[doc(hidden)]
    fn memory_mut(&mut self) -> MemoryMut<'_, T>;
}

impl<T: Element> Input<T> for DeviceTensor<T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory(&self) -> Memory<'_, T> {
        match &self.storage {
            Storage::Cuda(data) => Memory::Cuda(data.slice(0..self.len())),
            Storage::Host(buffer) => Memory::Host { buffer, range: 0..self.len() },
        }
    }
}

impl<T: Element> Input<T> for TensorView<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory(&self) -> Memory<'_, T> {
        match &self.view {
            View::Cuda(view) => Memory::Cuda(view.slice(..)),
            View::Host { buffer, range } => Memory::Host { buffer, range: range.clone() },
        }
    }
}

impl<T: Element> Input<T> for TensorViewMut<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory(&self) -> Memory<'_, T> {
        match &self.view {
            ViewMut::Cuda(view) => Memory::Cuda(view.as_view()),
            ViewMut::Host { buffer, range } => Memory::Host { buffer, range: range.clone() },
        }
    }
}

impl<T: Element> Output<T> for DeviceTensor<T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory_mut(&mut self) -> MemoryMut<'_, T> {
        let len = self.len();
        match &mut self.storage {
            Storage::Cuda(data) => MemoryMut::Cuda(data.slice_mut(0..len)),
            Storage::Host(buffer) => MemoryMut::Host { buffer, range: 0..len },
        }
    }
}

impl<T: Element> Output<T> for TensorViewMut<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory_mut(&mut self) -> MemoryMut<'_, T> {
        match &mut self.view {
            ViewMut::Cuda(view) => MemoryMut::Cuda(view.slice_mut(..)),
            ViewMut::Host { buffer, range } => MemoryMut::Host { buffer, range: range.clone() },
        }
    }
}
