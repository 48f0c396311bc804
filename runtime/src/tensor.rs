//! Tensors that know their shape, on either backend, and the borrowed views kernels take.

use std::ops::Range;

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, DeviceSlice, ValidAsZeroBits};
use tessera_dsl::ElementType;

use crate::sim::HostBuffer;
use crate::Error;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// An element type a tensor can hold; ties the Rust type to the IR's [`ElementType`].
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static + sealed::Sealed {
    /// The IR's element type for `Self` (`ElementType::F32` for `f32`).
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
impl Element for half::f16 {
    const TYPE: ElementType = ElementType::F16;
}
impl Element for half::bf16 {
    const TYPE: ElementType = ElementType::BF16;
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
    /// A tensor of shape `dims` over memory the program already owns — a cudarc
    /// `CudaSlice` from its own code, candle or burn — without copying. The slice may be
    /// longer than the shape (the first elements are the tensor's); its stream orders the
    /// tensor's work ([`Gpu::on_stream`](crate::Gpu::on_stream) shares it, or launches on
    /// another stream are joined to it). [`into_cuda_slice`](Self::into_cuda_slice) gives
    /// it back.
    ///
    /// ```no_run
    /// use tessera_runtime::DeviceTensor;
    /// let stream = cudarc::driver::CudaContext::new(0)?.default_stream();
    /// let slice = stream.alloc_zeros::<f32>(64 * 32)?;
    /// let x = DeviceTensor::from_cuda_slice(slice, [64, 32])?;
    /// assert_eq!(x.dims(), &[64, 32]);
    /// let slice = x.into_cuda_slice();                     // back to cudarc, still no copy
    /// assert!(DeviceTensor::from_cuda_slice(slice, [65, 32]).is_err()); // too short
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_cuda_slice(slice: CudaSlice<T>, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        let dims = dims.as_ref().to_vec();
        check_cuda_len(slice.len(), &dims)?;
        let location = Location::Gpu(slice.context().ordinal());
        Ok(Self { storage: Storage::Cuda(slice), dims, location })
    }

    /// The cudarc buffer under a GPU tensor (the program's own code takes over), or the
    /// tensor back for a simulator's.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let x = gpu.upload(&[1.0f32, 2.0], [2])?;
    /// let slice: cudarc::driver::CudaSlice<f32> = x.try_into_cuda_slice().unwrap();
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn try_into_cuda_slice(self) -> Result<CudaSlice<T>, Self> {
        match self.storage {
            Storage::Cuda(slice) => Ok(slice),
            storage @ Storage::Host(_) => Err(Self { storage, ..self }),
        }
    }

    /// The cudarc buffer under a GPU tensor.
    ///
    /// # Panics
    /// On a simulator's tensor, which has no CUDA memory; use
    /// [`try_into_cuda_slice`](Self::try_into_cuda_slice) where the backend is not known.
    pub fn into_cuda_slice(self) -> CudaSlice<T> {
        match self.try_into_cuda_slice() {
            Ok(slice) => slice,
            Err(tensor) => panic!("into_cuda_slice: the tensor lives in {}, not in GPU memory", tensor.location),
        }
    }

    /// The cudarc buffer under a GPU tensor, borrowed (for the program's own copies and
    /// launches); `None` for a simulator's tensor.
    pub fn as_cuda_slice(&self) -> Option<&CudaSlice<T>> {
        match &self.storage {
            Storage::Cuda(slice) => Some(slice),
            Storage::Host(_) => None,
        }
    }

    /// The cudarc buffer under a GPU tensor, writable; `None` for a simulator's tensor.
    pub fn as_cuda_slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.storage {
            Storage::Cuda(slice) => Some(slice),
            Storage::Host(_) => None,
        }
    }

    /// The shape: the length of each dimension, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The number of elements: the product of the dims.
    ///
    /// ```
    /// let sim = tessera_runtime::Simulator::new()?;
    /// let x = sim.zeros::<f32>([3, 4])?;
    /// assert_eq!((x.len(), x.is_empty()), (12, false));
    /// assert!(sim.zeros::<f32>([3, 0])?.is_empty());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether the tensor has no elements (a dimension is 0).
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
        Ok(TensorView { view, dims: vec![range.len()], ld: range.len(), location: self.location })
    }

    /// A writable 1-D view of elements `range`.
    pub fn slice_mut(&mut self, range: Range<usize>) -> Result<TensorViewMut<'_, T>, Error> {
        self.check_range(&range)?;
        let location = self.location;
        let view = match &mut self.storage {
            Storage::Cuda(data) => ViewMut::Cuda(data.slice_mut(range.clone())),
            Storage::Host(buffer) => ViewMut::Host { buffer, range: range.clone() },
        };
        Ok(TensorViewMut { view, dims: vec![range.len()], ld: range.len(), location })
    }

    /// The sub-matrix `rows × cols` of a 2-D tensor, without copying: its rows lie the
    /// tensor's column count apart (its leading dimension), which every launch passes to the
    /// kernel, so a kernel reads and writes only the elements of the view.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let a = gpu.upload(&vec![1.0f32; 64 * 4096], [64, 4096])?;
    /// let block = a.submatrix(1..64, 3..4098)?;   // 63 × 4095, rows 4096 elements apart
    /// assert_eq!((block.dims(), block.leading_dimension()), (&[63, 4095][..], 4096));
    /// assert!(a.submatrix(0..65, 0..1).is_err());   // Error::SubmatrixOutOfBounds
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn submatrix(&self, rows: Range<usize>, cols: Range<usize>) -> Result<TensorView<'_, T>, Error> {
        let (start, dims) = submatrix_of(&self.dims, self.leading_dimension(), &rows, &cols)?;
        self.view_with_leading_dimension(start, dims, self.leading_dimension())
    }

    /// A writable sub-matrix (see [`submatrix`](Self::submatrix)): a kernel's output that
    /// is part of a larger matrix; the elements outside it stay as they are.
    pub fn submatrix_mut(&mut self, rows: Range<usize>, cols: Range<usize>) -> Result<TensorViewMut<'_, T>, Error> {
        let (start, dims) = submatrix_of(&self.dims, self.leading_dimension(), &rows, &cols)?;
        let ld = self.leading_dimension();
        self.view_with_leading_dimension_mut(start, dims, ld)
    }

    /// A `rows × cols` matrix whose element (r, c) is element `start + r·ld + c` of this
    /// tensor (in its row-major order), as cuBLAS reads a pointer with a leading dimension:
    /// `ld ≥ cols`, and the last row must end inside the tensor.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let buffer = gpu.upload(&vec![0.0f32; 1000], [1000])?;
    /// let a = buffer.view_with_leading_dimension(8, [10, 30], 32)?;  // 10 × 30, rows 32 apart
    /// assert_eq!(a.dims(), &[10, 30]);
    /// assert!(buffer.view_with_leading_dimension(0, [10, 30], 29).is_err()); // ld < cols
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn view_with_leading_dimension(
        &self,
        start: usize,
        [rows, cols]: [usize; 2],
        ld: usize,
    ) -> Result<TensorView<'_, T>, Error> {
        let span = strided_span(self.len(), start, [rows, cols], ld)?;
        let view = match &self.storage {
            Storage::Cuda(data) => View::Cuda(data.slice(span.clone())),
            Storage::Host(buffer) => View::Host { buffer, range: span },
        };
        Ok(TensorView { view, dims: vec![rows, cols], ld, location: self.location })
    }

    /// The writable form of [`view_with_leading_dimension`](Self::view_with_leading_dimension).
    pub fn view_with_leading_dimension_mut(
        &mut self,
        start: usize,
        [rows, cols]: [usize; 2],
        ld: usize,
    ) -> Result<TensorViewMut<'_, T>, Error> {
        let span = strided_span(self.len(), start, [rows, cols], ld)?;
        let location = self.location;
        let view = match &mut self.storage {
            Storage::Cuda(data) => ViewMut::Cuda(data.slice_mut(span.clone())),
            Storage::Host(buffer) => ViewMut::Host { buffer, range: span },
        };
        Ok(TensorViewMut { view, dims: vec![rows, cols], ld, location })
    }

    /// Elements from the start of one row to the next: the last dimension (tensors are dense).
    pub fn leading_dimension(&self) -> usize {
        dense_leading_dimension(&self.dims)
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

/// A borrowed, read-only part of a [`DeviceTensor`]: a 1-D slice, or a matrix whose rows
/// may lie apart (a sub-matrix, [`leading_dimension`](Self::leading_dimension) elements
/// from one row's start to the next).
#[derive(Debug)]
pub struct TensorView<'a, T: Element> {
    /// The elements from the first of the view to its last, the gaps between rows included.
    view: View<'a, T>,
    dims: Vec<usize>,
    ld: usize,
    location: Location,
}

/// A borrowed, writable part of a [`DeviceTensor`] (see [`TensorView`]).
#[derive(Debug)]
pub struct TensorViewMut<'a, T: Element> {
    /// The elements from the first of the view to its last, the gaps between rows included.
    view: ViewMut<'a, T>,
    dims: Vec<usize>,
    ld: usize,
    location: Location,
}

impl<'a, T: Element> TensorView<'a, T> {
    /// A dense view of shape `dims` over cudarc memory the program holds (a `CudaView`,
    /// e.g. `slice.slice(..)` of a candle or burn buffer), without copying. A kernel reads
    /// it as a `Global<T, ..>` argument.
    ///
    /// ```no_run
    /// use tessera_runtime::TensorView;
    /// let stream = cudarc::driver::CudaContext::new(0)?.default_stream();
    /// let slice = stream.clone_htod(&[1.0f32; 4096])?;
    /// let x = TensorView::of_cuda(slice.slice(1024..), [96, 32])?;  // the last 3072 elements
    /// assert_eq!(x.dims(), &[96, 32]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_cuda(view: CudaView<'a, T>, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        let dims = dims.as_ref().to_vec();
        check_cuda_len(view.len(), &dims)?;
        let location = Location::Gpu(view.stream().context().ordinal());
        let ld = dense_leading_dimension(&dims);
        // the view may be longer than the shape: launches and copies take its first
        // `span_len(dims, ld)` elements (see `memory`)
        Ok(TensorView { view: View::Cuda(view), dims, ld, location })
    }

    /// The view's shape, outermost dimension first (`[rows, cols]` for a sub-matrix).
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Elements from the start of one row to the next (the column count when dense).
    pub fn leading_dimension(&self) -> usize {
        self.ld
    }

    /// The sub-matrix `rows × cols` of this 2-D view, rows as far apart as in this one; it
    /// borrows the tensor, not this view.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let a = gpu.upload(&vec![0.0f32; 100], [10, 10])?;
    /// let inner = a.submatrix(1..9, 1..9)?.submatrix(1..7, 1..7)?;   // rows 2..8, cols 2..8 of a
    /// assert_eq!((inner.dims(), inner.leading_dimension()), (&[6, 6][..], 10));
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn submatrix(&self, rows: Range<usize>, cols: Range<usize>) -> Result<TensorView<'a, T>, Error> {
        let (start, [r, c]) = submatrix_of(&self.dims, self.ld, &rows, &cols)?;
        let span = strided_span(span_len(&self.dims, self.ld), start, [r, c], self.ld)?;
        let view = match &self.view {
            View::Cuda(view) => View::Cuda(view.slice(span)),
            View::Host { buffer, range } => {
                View::Host { buffer, range: range.start + span.start..range.start + span.end }
            }
        };
        Ok(TensorView { view, dims: vec![r, c], ld: self.ld, location: self.location })
    }

    /// The same elements under another shape with as many elements (a 2-D view at any
    /// offset); a view with gaps between its rows cannot be reshaped.
    pub fn reshape(mut self, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        (self.dims, self.ld) = reshaped_view(&self.dims, self.ld, dims.as_ref())?;
        Ok(self)
    }
}

impl<'a, T: Element> TensorViewMut<'a, T> {
    /// A dense, writable view of shape `dims` over cudarc memory the program holds (a
    /// `CudaViewMut`), without copying: a kernel writes it as a `GlobalMut<T, ..>` argument.
    ///
    /// ```no_run
    /// use tessera_runtime::TensorViewMut;
    /// let stream = cudarc::driver::CudaContext::new(0)?.default_stream();
    /// let mut y = stream.alloc_zeros::<f32>(4096)?;
    /// let out = TensorViewMut::of_cuda(y.slice_mut(..), [64, 64])?;
    /// assert_eq!(out.dims(), &[64, 64]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_cuda(view: CudaViewMut<'a, T>, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        let dims = dims.as_ref().to_vec();
        check_cuda_len(view.len(), &dims)?;
        let location = Location::Gpu(view.stream().context().ordinal());
        let ld = dense_leading_dimension(&dims);
        // the view may be longer than the shape: launches and copies take its first
        // `span_len(dims, ld)` elements (see `memory_mut`)
        Ok(TensorViewMut { view: ViewMut::Cuda(view), dims, ld, location })
    }
}

impl<T: Element> TensorViewMut<'_, T> {
    /// The view's shape, outermost dimension first (`[rows, cols]` for a sub-matrix).
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Elements from the start of one row to the next (the column count when dense).
    pub fn leading_dimension(&self) -> usize {
        self.ld
    }

    /// A writable sub-matrix `rows × cols` of this 2-D view (see [`TensorView::submatrix`]).
    pub fn submatrix_mut(&mut self, rows: Range<usize>, cols: Range<usize>) -> Result<TensorViewMut<'_, T>, Error> {
        let (start, [r, c]) = submatrix_of(&self.dims, self.ld, &rows, &cols)?;
        let span = strided_span(span_len(&self.dims, self.ld), start, [r, c], self.ld)?;
        let view = match &mut self.view {
            ViewMut::Cuda(view) => ViewMut::Cuda(view.slice_mut(span)),
            ViewMut::Host { buffer, range } => {
                ViewMut::Host { buffer, range: range.start + span.start..range.start + span.end }
            }
        };
        Ok(TensorViewMut { view, dims: vec![r, c], ld: self.ld, location: self.location })
    }

    /// The same elements under another shape with as many elements (a 2-D view at any
    /// offset); a view with gaps between its rows cannot be reshaped.
    pub fn reshape(mut self, dims: impl AsRef<[usize]>) -> Result<Self, Error> {
        (self.dims, self.ld) = reshaped_view(&self.dims, self.ld, dims.as_ref())?;
        Ok(self)
    }
}

/// The elements of a tensor of shape `dims`, or `Err(ShapeTooLarge)` where their product
/// overflows (wrapped, it would size a buffer smaller than the shape a launch trusts).
pub(crate) fn element_count(dims: &[usize]) -> Result<usize, Error> {
    if dims.contains(&0) {
        return Ok(0);
    }
    dims.iter()
        .try_fold(1usize, |count, &d| count.checked_mul(d))
        .ok_or_else(|| Error::ShapeTooLarge { dims: dims.to_vec() })
}

/// `Err(CudaBufferTooShort)` unless `len` elements hold a tensor of `dims`.
fn check_cuda_len(len: usize, dims: &[usize]) -> Result<(), Error> {
    let needed = element_count(dims)?;
    if len < needed {
        return Err(Error::CudaBufferTooShort { len, shape: dims.to_vec(), needed });
    }
    Ok(())
}

/// The leading dimension of a dense row-major tensor: its last dimension (1 for a scalar).
pub(crate) fn dense_leading_dimension(dims: &[usize]) -> usize {
    dims.last().copied().unwrap_or(1)
}

/// How many elements a tensor of `dims` with rows `ld` apart spans, from its first element
/// to its last: `(rows − 1)·ld + cols` for a matrix, all of them otherwise.
///
/// ```
/// use tessera_runtime::span_len;
/// assert_eq!(span_len(&[3, 5], 8), 21);
/// assert_eq!(span_len(&[3, 5], 5), 15);
/// assert_eq!(span_len(&[0, 5], 8), 0);
/// assert_eq!(span_len(&[7], 7), 7);
/// ```
pub fn span_len(dims: &[usize], ld: usize) -> usize {
    match dims {
        [rows, cols] if *rows > 0 && *cols > 0 => (rows - 1).saturating_mul(ld).saturating_add(*cols),
        _ => dims.iter().product(),
    }
}

/// Whether a tensor's elements are one contiguous run (no gaps between rows).
pub(crate) fn is_contiguous(dims: &[usize], ld: usize) -> bool {
    span_len(dims, ld) == dims.iter().product::<usize>()
}

/// `Err(NotContiguous)` for a matrix with gaps between its rows, where `what` needs one run.
pub(crate) fn check_contiguous(
    what: &'static str,
    param: &'static str,
    dims: &[usize],
    ld: usize,
) -> Result<(), Error> {
    if is_contiguous(dims, ld) {
        return Ok(());
    }
    Err(Error::NotContiguous { what, param, cols: dims.last().copied().unwrap_or(1), ld })
}

/// The `rows × cols` elements of a strided matrix, packed row after row, from `span`, its
/// elements from first to last (gaps included).
pub(crate) fn packed<T: Copy>(span: &[T], dims: &[usize], ld: usize) -> Vec<T> {
    match dims {
        [rows, cols] if !is_contiguous(dims, ld) => {
            (0..*rows).flat_map(|r| span[r * ld..r * ld + cols].iter().copied()).collect()
        }
        _ => span.to_vec(),
    }
}

/// The first element and dims of sub-matrix `rows × cols` of a matrix of `dims` whose rows
/// are `ld` apart.
fn submatrix_of(
    dims: &[usize],
    ld: usize,
    rows: &Range<usize>,
    cols: &Range<usize>,
) -> Result<(usize, [usize; 2]), Error> {
    let &[height, width] = dims else {
        return Err(Error::NotAMatrix { what: "a sub-matrix", dims: dims.to_vec() });
    };
    if rows.start > rows.end || rows.end > height || cols.start > cols.end || cols.end > width {
        return Err(Error::SubmatrixOutOfBounds { rows: rows.clone(), cols: cols.clone(), dims: [height, width] });
    }
    let shape = [rows.len(), cols.len()];
    if shape.contains(&0) {
        // an empty view: where it starts does not matter, as long as it is inside
        return Ok((0, shape));
    }
    Ok((rows.start * ld + cols.start, shape))
}

/// The elements a `rows × cols` matrix from `start` with rows `ld` apart covers, checked to
/// lie inside `len` elements.
fn strided_span(len: usize, start: usize, [rows, cols]: [usize; 2], ld: usize) -> Result<Range<usize>, Error> {
    if ld < cols {
        return Err(Error::LeadingDimensionTooSmall { ld, cols });
    }
    let end = start.checked_add(span_len(&[rows, cols], ld)).filter(|&end| end <= len);
    match end {
        Some(end) => Ok(start..end),
        None => Err(Error::StridedViewOutOfBounds { start, rows, cols, ld, len }),
    }
}

/// The dims and leading dimension of a view of `dims` (rows `ld` apart) reshaped to `new`:
/// only a view without gaps between its rows can be.
fn reshaped_view(dims: &[usize], ld: usize, new: &[usize]) -> Result<(Vec<usize>, usize), Error> {
    check_contiguous("reshape", "the view", dims, ld)?;
    let new = checked_dims("reshape", dims.iter().product(), new)?;
    let ld = dense_leading_dimension(&new);
    Ok((new, ld))
}

/// `dims`, if they hold exactly `len` elements.
fn checked_dims(what: &'static str, len: usize, dims: &[usize]) -> Result<Vec<usize>, Error> {
    let expected = element_count(dims)?;
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

// Only tessera's tensors and views implement `Input`/`Output`: a launch trusts their shape to
// bound every access the kernel makes through their memory.
mod sealed_tensor {
    pub trait Sealed {}
    impl<T: crate::Element> Sealed for super::DeviceTensor<T> {}
    impl<T: crate::Element> Sealed for super::TensorView<'_, T> {}
    impl<T: crate::Element> Sealed for super::TensorViewMut<'_, T> {}
}

/// Something a kernel can read as a `Global<T, ..>` parameter: a [`DeviceTensor`] or a view of
/// one (sealed: a launch trusts its shape to bound the kernel's accesses).
///
/// ```no_run
/// use tessera_runtime::{Argument, Gpu, Input};
/// fn lend<'a>(x: &'a impl Input<f32>) -> Argument<'a> {
///     Argument::input("x", x)
/// }
/// let gpu = Gpu::new(0)?;
/// let x = gpu.upload(&[1.0f32; 6], [2, 3])?;
/// let _ = (lend(&x), lend(&x.submatrix(0..1, 0..3)?));
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub trait Input<T: Element>: sealed_tensor::Sealed {
    #[doc(hidden)]
    fn shape(&self) -> &[usize];
    /// Elements from the start of one row to the next (the last dimension when dense).
    #[doc(hidden)]
    fn row_stride(&self) -> usize;
    #[doc(hidden)]
    fn location(&self) -> Location;
    #[doc(hidden)]
    fn memory(&self) -> Memory<'_, T>;
}

/// Something a kernel can write as a `GlobalMut<T, ..>` parameter — and read, as every
/// output can be (β·C reads C).
pub trait Output<T: Element>: Input<T> {
    #[doc(hidden)]
    fn memory_mut(&mut self) -> MemoryMut<'_, T>;
}

impl<T: Element> Input<T> for DeviceTensor<T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn row_stride(&self) -> usize {
        self.leading_dimension()
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
    fn row_stride(&self) -> usize {
        self.leading_dimension()
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory(&self) -> Memory<'_, T> {
        match &self.view {
            View::Cuda(view) => Memory::Cuda(view.slice(..span_len(&self.dims, self.ld))),
            View::Host { buffer, range } => Memory::Host { buffer, range: range.clone() },
        }
    }
}

impl<T: Element> Input<T> for TensorViewMut<'_, T> {
    fn shape(&self) -> &[usize] {
        &self.dims
    }
    fn row_stride(&self) -> usize {
        self.leading_dimension()
    }
    fn location(&self) -> Location {
        self.location
    }
    fn memory(&self) -> Memory<'_, T> {
        match &self.view {
            ViewMut::Cuda(view) => Memory::Cuda(view.slice(..span_len(&self.dims, self.ld))),
            ViewMut::Host { buffer, range } => Memory::Host { buffer, range: range.clone() },
        }
    }
}

impl<T: Element> Output<T> for DeviceTensor<T> {
    fn memory_mut(&mut self) -> MemoryMut<'_, T> {
        let len = self.len();
        match &mut self.storage {
            Storage::Cuda(data) => MemoryMut::Cuda(data.slice_mut(0..len)),
            Storage::Host(buffer) => MemoryMut::Host { buffer, range: 0..len },
        }
    }
}

impl<T: Element> Output<T> for TensorViewMut<'_, T> {
    fn memory_mut(&mut self) -> MemoryMut<'_, T> {
        match &mut self.view {
            ViewMut::Cuda(view) => MemoryMut::Cuda(view.slice_mut(..span_len(&self.dims, self.ld))),
            ViewMut::Host { buffer, range } => MemoryMut::Host { buffer, range: range.clone() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `rows × cols` host tensor holding 0, 1, 2, .. (as the simulator keeps them).
    fn host_matrix(rows: usize, cols: usize) -> DeviceTensor<f32> {
        let values: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let buffer = HostBuffer::from_slice(&values).unwrap();
        DeviceTensor { storage: Storage::Host(buffer), dims: vec![rows, cols], location: Location::Host }
    }

    fn elements(view: &impl Input<f32>) -> Vec<f32> {
        let memory = view.memory();
        packed(memory.host().unwrap(), view.shape(), view.row_stride())
    }

    #[test]
    fn a_submatrix_has_the_parents_leading_dimension_and_its_elements() {
        let parent = host_matrix(5, 7);
        let view = parent.submatrix(1..4, 2..5).unwrap();
        assert_eq!((view.dims(), view.leading_dimension()), (&[3, 3][..], 7));
        assert_eq!(elements(&view), vec![9.0, 10.0, 11.0, 16.0, 17.0, 18.0, 23.0, 24.0, 25.0]);
        // it spans from its first element to its last, the gaps between rows included
        assert_eq!(view.memory().host().unwrap().len(), span_len(&[3, 3], 7));
        assert_eq!(span_len(&[3, 3], 7), 17);
        // a view of the view: rows 2..4, columns 3..5 of the parent
        let inner = view.submatrix(1..3, 1..3).unwrap();
        assert_eq!((inner.dims(), inner.leading_dimension()), (&[2, 2][..], 7));
        assert_eq!(elements(&inner), vec![17.0, 18.0, 24.0, 25.0]);
        // the whole matrix is dense
        assert!(is_contiguous(parent.submatrix(0..5, 0..7).unwrap().dims(), 7));
        assert!(!is_contiguous(view.dims(), 7));
    }

    #[test]
    fn a_dense_view_reshapes_with_a_dense_leading_dimension_and_a_strided_one_is_refused() {
        let parent = host_matrix(4, 6);
        let rows = parent.submatrix(1..3, 0..6).unwrap().reshape([3, 4]).unwrap();
        assert_eq!((rows.dims(), rows.leading_dimension()), (&[3, 4][..], 4));
        assert_eq!(elements(&rows)[..3], [6.0, 7.0, 8.0]);
        let strided = parent.submatrix(1..3, 1..4).unwrap();
        assert!(matches!(strided.reshape([6]), Err(Error::NotContiguous { cols: 3, ld: 6, .. })));
    }

    #[test]
    fn a_writable_submatrix_writes_only_its_elements() {
        let mut parent = host_matrix(4, 6);
        let mut view = parent.submatrix_mut(1..3, 1..4).unwrap();
        let mut inner = view.submatrix_mut(1..2, 0..3).unwrap(); // parent row 2, columns 1..4
        assert_eq!((inner.dims(), inner.leading_dimension()), (&[1, 3][..], 6));
        if let MemoryMut::Host { buffer, range } = inner.memory_mut() {
            buffer.as_mut_slice()[range].fill(-1.0);
        }
        let Storage::Host(buffer) = &parent.storage else { unreachable!() };
        let changed: Vec<usize> =
            buffer.as_slice().iter().enumerate().filter(|(i, v)| **v != *i as f32).map(|(i, _)| i).collect();
        assert_eq!(changed, vec![13, 14, 15]);
    }

    #[test]
    fn submatrices_outside_the_parent_are_errors_with_the_numbers() {
        let parent = host_matrix(5, 7);
        match parent.submatrix(2..6, 0..7) {
            Err(error @ Error::SubmatrixOutOfBounds { .. }) => {
                assert_eq!(error.to_string(), "sub-matrix rows 2..6, columns 0..7 is not inside the 5 × 7 matrix");
            }
            other => panic!("expected SubmatrixOutOfBounds, got {other:?}"),
        }
        assert!(matches!(parent.submatrix(0..5, 3..8), Err(Error::SubmatrixOutOfBounds { dims: [5, 7], .. })));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = parent.submatrix(3..2, 0..1);
        assert!(matches!(reversed, Err(Error::SubmatrixOutOfBounds { .. })));
        // of a view: the view's own shape bounds it
        let view = parent.submatrix(1..4, 1..4).unwrap();
        assert!(matches!(view.submatrix(0..3, 0..4), Err(Error::SubmatrixOutOfBounds { dims: [3, 3], .. })));
        // an empty sub-matrix is fine, wherever it is
        assert_eq!(parent.submatrix(5..5, 0..7).unwrap().dims(), &[0, 7]);
        let flat = parent.reshape([35]).unwrap();
        assert!(matches!(flat.submatrix(0..1, 0..1), Err(Error::NotAMatrix { dims, .. }) if dims == vec![35]));
    }

    #[test]
    fn explicit_leading_dimensions_are_checked() {
        let buffer = host_matrix(1, 100).reshape([100]).unwrap();
        let view = buffer.view_with_leading_dimension(3, [4, 10], 24).unwrap();
        assert_eq!((view.dims(), view.leading_dimension()), (&[4, 10][..], 24));
        assert_eq!(elements(&view)[..3], [3.0, 4.0, 5.0]);
        assert_eq!(elements(&view)[10], 27.0);
        match buffer.view_with_leading_dimension(0, [4, 10], 9) {
            Err(error @ Error::LeadingDimensionTooSmall { ld: 9, cols: 10 }) => {
                assert!(error.to_string().contains("leading dimension 9 is less than the 10 columns"), "{error}");
            }
            other => panic!("expected LeadingDimensionTooSmall, got {other:?}"),
        }
        // the last row ends at 30 + 3·24 + 10 = 112 > 100
        match buffer.view_with_leading_dimension(30, [4, 10], 24) {
            Err(Error::StridedViewOutOfBounds { start: 30, rows: 4, cols: 10, ld: 24, len: 100 }) => {}
            other => panic!("expected StridedViewOutOfBounds, got {other:?}"),
        }
        // exactly to the end is inside
        assert!(buffer.view_with_leading_dimension(18, [4, 10], 24).is_ok());
        assert!(buffer.view_with_leading_dimension(usize::MAX, [1, 1], 1).is_err());
    }
}
