use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::libraries::require_driver;
use crate::source::KernelSource;
use crate::tensor::{Memory, MemoryMut, Storage};
use crate::tune::TuneCache;
use crate::{nvrtc, Arch, DeviceTensor, DiskCache, Element, Error, Input, Location, Output, Timing};

/// One CUDA device with one stream: tensors, compiled kernels and timing live here.
///
/// ```no_run
/// let gpu = tessera_runtime::Gpu::new(0)?;
/// println!("{} ({}), {} SMs", gpu.name(), gpu.arch(), gpu.sm_count());
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub struct Gpu {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    name: String,
    arch: Arch,
    sm_count: u32,
    /// Bytes of shared memory one block may use after opting in.
    max_shared_memory_per_block_optin: u32,
    disk_cache: Option<DiskCache>,
    tune_cache: Option<TuneCache>,
    /// Loaded kernels by their source's digest (then exact text): one module per distinct source.
    loaded: Mutex<HashMap<u64, Vec<(KernelSource, Arc<LoadedKernel>)>>>,
    /// Tuning-cache answers by (kernel, shape class): the file is read once per kernel and class.
    tuned: Mutex<HashMap<(String, String), Option<tessera_dsl::Config>>>,
    /// Scratch memory for `.stream_k()` kernels and `.dynamic()` grids.
    workspace: crate::workspace::WorkspaceBuffer,
    /// TMA tensor maps by tensor and box: encoded once, passed by value to every launch.
    tensor_maps: Mutex<HashMap<crate::tensor_map::TensorMapKey, crate::tensor_map::TensorMapBytes>>,
    /// `launch_dependent` launches as a programmatic dependent of the grid before (sm_90 on).
    dependent_launches: bool,
}

/// A kernel compiled for this device and loaded into its context.
pub(crate) struct LoadedKernel {
    pub(crate) function: CudaFunction,
    /// Blocks of this kernel one SM keeps resident (for grid-stride grids).
    pub(crate) blocks_per_sm: u32,
    /// Registers per thread, as the driver reports for the loaded function.
    pub(crate) registers: u32,
    /// Bytes of dynamic shared memory each launch passes (0: static buffers only).
    pub(crate) dynamic_shared_bytes: u32,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("arch", &self.arch)
            .finish()
    }
}

/// Tensor maps a `Gpu` keeps encoded (per kernel, tensor address, shape and box) before it
/// starts again.
const MAX_TENSOR_MAPS_CACHED: usize = 4096;

impl Gpu {
    /// Opens device `ordinal`. Without a driver or a GPU this is an `Err`, never a panic.
    pub fn new(ordinal: usize) -> Result<Self, Error> {
        require_driver()?;
        // an error here (no device, a driver older than the CUDA it needs) says which
        let count = CudaContext::device_count().map_err(Error::driver("counting the CUDA devices"))?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::NoGpu { ordinal, count });
        }
        let context = CudaContext::new(ordinal).map_err(Error::driver("opening the device"))?;
        // One stream carries every copy and launch, so cudarc's per-buffer events are
        // pure overhead (they would also sit inside the timed region).
        // SAFETY: called before any allocation; all work is ordered on `stream`.
        unsafe { context.disable_event_tracking() };
        keep_freed_memory_pooled(&context)?;
        let stream = context.default_stream();
        Self::on_stream(stream)
    }

    /// A `Gpu` on a context the program already holds (from candle, burn or its own cudarc
    /// code), launching on a new stream of that context. Tensors made by either side are
    /// usable by both: see [`DeviceTensor::from_cuda_slice`] and [`crate::TensorView::of_cuda`].
    ///
    /// ```no_run
    /// let context = cudarc::driver::CudaContext::new(0)?;
    /// let gpu = tessera_runtime::Gpu::from_context(context.clone())?;
    /// assert_eq!(gpu.cuda_context().ordinal(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_context(context: Arc<CudaContext>) -> Result<Self, Error> {
        let stream = context.new_stream().map_err(Error::driver("creating a stream"))?;
        Self::on_stream(stream)
    }

    /// A `Gpu` that queues every copy and launch on `stream`, a stream the program already
    /// holds. Launches return as soon as they are queued (no synchronisation): work the
    /// program queues on `stream` afterwards sees their results, as with any CUDA work.
    /// Tensors whose memory is ordered on another stream are joined to this one around each
    /// launch (the launch waits for their earlier work, their stream waits for the launch).
    ///
    /// ```no_run
    /// let context = cudarc::driver::CudaContext::new(0)?;
    /// let stream = context.new_stream()?;
    /// let x = stream.clone_htod(&[1.0f32; 1024])?;          // the program's own memory
    /// let gpu = tessera_runtime::Gpu::on_stream(stream.clone())?;
    /// let x = tessera_runtime::DeviceTensor::from_cuda_slice(x, [32, 32])?; // no copy
    /// assert_eq!(gpu.download(&x)?.len(), 1024);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<Self, Error> {
        require_driver()?;
        let context = stream.context().clone();
        let ordinal = context.ordinal();
        let attribute = |a| context.attribute(a).map_err(Error::driver("reading a device attribute"));
        let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sm_count = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let shared_optin = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let name = context.name().map_err(Error::driver("reading the device name"))?;
        Ok(Self {
            context,
            stream,
            ordinal,
            name,
            arch: Arch { major: major as u32, minor: minor as u32 },
            sm_count: sm_count as u32,
            max_shared_memory_per_block_optin: shared_optin.max(0) as u32,
            disk_cache: DiskCache::default_location(),
            tune_cache: TuneCache::default_location(),
            loaded: Mutex::new(HashMap::new()),
            tuned: Mutex::new(HashMap::new()),
            workspace: crate::workspace::WorkspaceBuffer::default(),
            tensor_maps: Mutex::new(HashMap::new()),
            dependent_launches: major >= 9,
        })
    }

    /// The cudarc context this GPU's kernels are loaded into (for the program's own cudarc
    /// code: allocations, copies, other libraries).
    pub fn cuda_context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream every copy and launch of this GPU is queued on.
    pub fn cuda_stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Uses `cache` (or none) for tuned configurations instead of the default location.
    pub fn with_tune_cache(mut self, cache: Option<TuneCache>) -> Self {
        self.tune_cache = cache;
        self
    }

    /// The tuned configuration of `kernel` (declared as `source`) for shapes like `binding`
    /// on this device, if `tessera tune` stored one that still matches. The cache file is
    /// read once per kernel and shape class.
    pub(crate) fn tuned_config(
        &self,
        kernel: &str,
        source: &str,
        binding: &[(String, i64)],
    ) -> Option<tessera_dsl::Config> {
        let cache = self.tune_cache.as_ref()?;
        let key = (kernel.to_string(), tessera_dsl::shape_class(binding));
        if let Some(known) = self.tuned.lock().ok().and_then(|memo| memo.get(&key).cloned()) {
            return known;
        }
        let found = match cache.lookup(kernel, source, &self.name, self.arch, &key.1) {
            crate::tune::Lookup::Found(record) => Some(record.config),
            _ => None,
        };
        if let Ok(mut memo) = self.tuned.lock() {
            memo.insert(key, found.clone());
        }
        found
    }

    /// Where launches look up tuned configurations (`None`: they use the declared one).
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?.with_tune_cache(None);
    /// assert!(gpu.tune_cache().is_none());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn tune_cache(&self) -> Option<&TuneCache> {
        self.tune_cache.as_ref()
    }

    /// Whether [`KernelDefinition::launch_dependent`](crate::KernelDefinition::launch_dependent)
    /// (the finishing passes of the catalog's two-pass computations: `gemv_t`, `sum_f32`, ..) launches
    /// its kernel as a programmatic dependent of the one before it (`true`, the default on
    /// sm_90 and later, where the hardware has it: the launch overlaps that kernel's last
    /// blocks) or after it has ended (`false`). The kernel waits for the one before it either
    /// way, so this changes when launches start, not what they compute: turning it off
    /// measures what the overlap gains, or rules it out while chasing a bug.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?.with_dependent_launches(false);
    /// assert!(!gpu.dependent_launches());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn with_dependent_launches(mut self, on: bool) -> Self {
        self.dependent_launches = on && self.arch.major >= 9;
        self
    }

    /// Whether dependent launches overlap the grid before them (see
    /// [`Gpu::with_dependent_launches`]).
    pub fn dependent_launches(&self) -> bool {
        self.dependent_launches
    }

    /// Uses `cache` (or none) for compiled cubins instead of the default location.
    pub fn with_disk_cache(mut self, cache: Option<DiskCache>) -> Self {
        self.disk_cache = cache;
        self
    }

    /// The CUDA device ordinal (what [`Gpu::new`] took).
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// assert_eq!(gpu.ordinal(), 0);
    /// assert_eq!(gpu.location(), tessera_runtime::Location::Gpu(0));
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Where this GPU's tensors live.
    pub fn location(&self) -> Location {
        Location::Gpu(self.ordinal)
    }

    /// The device's name, as the driver reports it (e.g. `NVIDIA H100 80GB HBM3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's compute capability: what kernels are compiled for.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The number of streaming multiprocessors (SMs).
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Bytes of shared memory one block may use (dynamic shared memory, opted in to):
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, 232 448 on an H100.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// println!("a block may use {} B of shared memory", gpu.max_shared_memory_per_block_optin());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn max_shared_memory_per_block_optin(&self) -> u32 {
        self.max_shared_memory_per_block_optin
    }

    /// The FP32 peak in TFLOP/s: SMs × 128 FMA lanes × 2 flops × the boost clock.
    pub fn fp32_peak_tflops(&self) -> Option<f64> {
        let clock_khz = self.context.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).ok()?;
        Some(f64::from(self.sm_count) * 128.0 * 2.0 * f64::from(clock_khz) * 1e3 / 1e12)
    }

    /// The dense 16-bit tensor-core peak (BF16/F16 inputs, f32 accumulation) at the clock the
    /// device reports: FLOPs per SM and clock of the architecture (sm_90: 4096, sm_80: 2048,
    /// sm_86/sm_89: 1024) × SMs × clock. The data sheets quote lower boost clocks (989 TFLOP/s
    /// for an H100/H200 SXM, where this gives about 1070).
    pub fn tensor_peak_tflops(&self) -> Option<f64> {
        let per_sm_and_clock = match (self.arch().major, self.arch().minor) {
            (9, _) => 4096.0,
            (8, 0) => 2048.0,
            (8, _) => 1024.0,
            _ => return None,
        };
        let clock_khz = self.context.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).ok()?;
        Some(f64::from(self.sm_count) * per_sm_and_clock * f64::from(clock_khz) * 1e3 / 1e12)
    }

    /// Where compiled cubins are cached (`None`: nothing is kept on disk).
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?.with_disk_cache(None);
    /// assert!(gpu.disk_cache().is_none());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn disk_cache(&self) -> Option<&DiskCache> {
        self.disk_cache.as_ref()
    }

    /// Copies `host` to the device as a tensor of shape `dims`.
    pub fn upload<T: Element>(&self, host: &[T], dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        let expected = crate::tensor::element_count(&dims)?;
        if host.len() != expected {
            return Err(Error::LengthMismatch { what: "upload", len: host.len(), shape: dims, expected });
        }
        // An empty tensor still owns one element: a zero-byte allocation is not portable.
        let data = if host.is_empty() { self.stream.alloc_zeros::<T>(1) } else { self.stream.clone_htod(host) }
            .map_err(Error::driver("copying to the device"))?;
        Ok(DeviceTensor { storage: Storage::Cuda(data), dims, location: self.location() })
    }

    /// A tensor of shape `dims` filled with zeros.
    pub fn zeros<T: Element>(&self, dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        let data = self
            .stream
            .alloc_zeros::<T>(crate::tensor::element_count(&dims)?.max(1))
            .map_err(Error::driver("allocating"))?;
        Ok(DeviceTensor { storage: Storage::Cuda(data), dims, location: self.location() })
    }

    /// A tensor of shape `dims` whose elements are whatever the memory held: for buffers a
    /// launch writes before anything reads them, where zeroing would cost a pass over memory.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let scratch = gpu.scratch::<f32>([4096, 4104])?;
    /// assert_eq!(scratch.dims(), &[4096, 4104]);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn scratch<T: Element>(&self, dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        // SAFETY: every `Element` is a plain number for which any bit pattern is a value, so
        // reading memory nobody wrote (on the device or after a download) yields some number
        let len = crate::tensor::element_count(&dims)?.max(1);
        let data = unsafe { self.stream.alloc::<T>(len) }.map_err(Error::driver("allocating"))?;
        Ok(DeviceTensor { storage: Storage::Cuda(data), dims, location: self.location() })
    }

    /// A tensor of shape `dims` with every element `value` (poison outputs with it).
    pub fn filled<T: Element>(&self, dims: impl AsRef<[usize]>, value: T) -> Result<DeviceTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        let host = vec![value; crate::tensor::element_count(&dims)?];
        self.upload(&host, dims)
    }

    /// Copies a tensor or view back to the host (waits for queued work first); a sub-matrix
    /// comes back packed, `rows × cols` elements row after row.
    pub fn download<T: Element>(&self, tensor: &impl Input<T>) -> Result<Vec<T>, Error> {
        let location = tensor.location();
        let Memory::Cuda(view) = tensor.memory() else {
            return Err(self.wrong_device("download", location));
        };
        if location != self.location() {
            return Err(self.wrong_device("download", location));
        }
        if view.is_empty() {
            return Ok(Vec::new());
        }
        let span = self.stream.clone_dtoh(&view).map_err(Error::driver("copying to the host"))?;
        Ok(crate::tensor::packed(&span, tensor.shape(), tensor.row_stride()))
    }

    /// The device-to-device copy (`cuMemcpyDtoDAsync`): the bandwidth baseline. Both sides
    /// must be contiguous (not sub-matrices with gaps between rows).
    pub fn copy<T: Element>(&self, src: &impl Input<T>, dst: &mut impl Output<T>) -> Result<(), Error> {
        crate::tensor::check_contiguous("a device copy", "src", src.shape(), src.row_stride())?;
        crate::tensor::check_contiguous("a device copy", "dst", dst.shape(), dst.row_stride())?;
        let (src_location, dst_location) = (src.location(), dst.location());
        let Memory::Cuda(from) = src.memory() else {
            return Err(self.wrong_device("src", src_location));
        };
        let MemoryMut::Cuda(mut to) = dst.memory_mut() else {
            return Err(self.wrong_device("dst", dst_location));
        };
        if src_location != self.location() || dst_location != self.location() {
            let other = if src_location != self.location() { src_location } else { dst_location };
            return Err(self.wrong_device("copy", other));
        }
        if from.len() != to.len() {
            return Err(Error::CopyLengthMismatch { src: from.len(), dst: to.len() });
        }
        if from.is_empty() {
            return Ok(());
        }
        self.stream.memcpy_dtod(&from, &mut to).map_err(Error::driver("copying on the device"))
    }

    /// Waits for all queued work; reports errors of earlier launches.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.stream.synchronize().map_err(Error::driver("waiting for the device"))
    }

    /// Times `work` with CUDA events: `warmup` untimed runs, then `repetitions` timed ones
    /// (at least one: 0 is [`Error::NoRepetitions`]).
    pub fn time(
        &self,
        warmup: usize,
        repetitions: usize,
        work: impl FnMut() -> Result<(), Error>,
    ) -> Result<Timing, Error> {
        self.time_flushed(warmup, repetitions, || Ok(()), work)
    }

    /// Like [`Gpu::time`], but `flush` runs untimed before every run (to evict the L2 cache,
    /// so repetitions do not read what the previous one left there).
    pub fn time_flushed(
        &self,
        warmup: usize,
        repetitions: usize,
        mut flush: impl FnMut() -> Result<(), Error>,
        mut work: impl FnMut() -> Result<(), Error>,
    ) -> Result<Timing, Error> {
        if repetitions == 0 {
            return Err(Error::NoRepetitions);
        }
        for _ in 0..warmup {
            flush()?;
            work()?;
        }
        let mut samples = Samples::default();
        for _ in 0..repetitions {
            flush()?;
            samples.push(self.time_once(&mut work)?);
        }
        Ok(samples.timing())
    }

    /// Times `baseline` and `work` in alternation, `flush` untimed before each run: one
    /// repetition runs the baseline, then the work. Timed one after the other, the second
    /// would run on a warmer GPU (its clock drifts over a long benchmark); alternating, both
    /// see the same drift. Returns (baseline, work).
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let (from, mut to) = (gpu.zeros::<f32>([1 << 20])?, gpu.zeros::<f32>([1 << 20])?);
    /// let (mut x, mut y) = (gpu.zeros::<f32>([1 << 20])?, gpu.zeros::<f32>([1 << 20])?);
    /// let (copy, other) = gpu.time_paired(3, 20, || Ok(()), || gpu.copy(&from, &mut to), || gpu.copy(&x, &mut y))?;
    /// println!("{:.1}% of the copy", 100.0 * copy.median_ms / other.median_ms);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn time_paired(
        &self,
        warmup: usize,
        repetitions: usize,
        mut flush: impl FnMut() -> Result<(), Error>,
        mut baseline: impl FnMut() -> Result<(), Error>,
        mut work: impl FnMut() -> Result<(), Error>,
    ) -> Result<(Timing, Timing), Error> {
        if repetitions == 0 {
            return Err(Error::NoRepetitions);
        }
        for _ in 0..warmup {
            flush()?;
            baseline()?;
            flush()?;
            work()?;
        }
        let (mut base_samples, mut work_samples) = (Samples::default(), Samples::default());
        for _ in 0..repetitions {
            flush()?;
            base_samples.push(self.time_once(&mut baseline)?);
            flush()?;
            work_samples.push(self.time_once(&mut work)?);
        }
        Ok((base_samples.timing(), work_samples.timing()))
    }

    /// Milliseconds between CUDA events recorded before and after `work` is queued, and the
    /// host's milliseconds in `work` (see [`Timing::host_ms`]).
    fn time_once(&self, work: &mut impl FnMut() -> Result<(), Error>) -> Result<(f64, f64), Error> {
        let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(timed).map_err(Error::driver("recording an event"))?;
        let host = std::time::Instant::now();
        work()?;
        let host_ms = host.elapsed().as_secs_f64() * 1e3;
        let end = self.stream.record_event(timed).map_err(Error::driver("recording an event"))?;
        end.synchronize().map_err(Error::driver("waiting for an event"))?;
        Ok((f64::from(start.elapsed_ms(&end).map_err(Error::driver("reading an event"))?), host_ms))
    }

    /// Bytes of L2 cache on this device.
    pub fn l2_bytes(&self) -> Option<usize> {
        self.context.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).ok().map(|b| b.max(0) as usize)
    }

    fn wrong_device(&self, param: &str, tensor: Location) -> Error {
        Error::WrongDevice { param: param.into(), tensor, launch: self.location() }
    }

    /// The tensor maps `maps` (a kernel's TMA copies) describe over `arguments`, built once
    /// per tensor and box, in the order the kernel declares them.
    pub(crate) fn tensor_maps(
        &self,
        kernel: &str,
        maps: &[tessera_dsl::TensorMap],
        arguments: &[crate::Argument<'_>],
    ) -> Result<Vec<crate::tensor_map::TensorMapBytes>, Error> {
        maps.iter()
            .map(|map| {
                let key = crate::tensor_map::TensorMapKey::of(kernel, map, arguments)?;
                if let Some(known) = self.tensor_maps.lock().ok().and_then(|maps| maps.get(&key).copied()) {
                    return Ok(known);
                }
                let bytes = key.encode_for_gpu(kernel, &map.tensor)?;
                if let Ok(mut maps) = self.tensor_maps.lock() {
                    // keyed by address: a program that allocates anew for each call would
                    // grow it without end (a map is 128 bytes; encoding one costs ~1 µs)
                    if maps.len() >= MAX_TENSOR_MAPS_CACHED {
                        maps.clear();
                    }
                    maps.insert(key, bytes);
                }
                Ok(bytes)
            })
            .collect()
    }

    /// The workspace for one launch (stream-K, a dynamic grid): `need` bytes of room, counters
    /// zeroed on the stream.
    pub(crate) fn workspace(
        &self,
        need: &tessera_dsl::Workspace,
    ) -> Result<crate::workspace::WorkspaceAddresses, Error> {
        self.workspace.prepare(&self.stream, need)
    }

    /// The kernel `name` of `source`, compiled for this device (memory, then disk cache,
    /// then NVRTC) and loaded. A kernel with `dynamic_shared_bytes` of dynamic shared memory
    /// is opted in to that much first (over 48 KiB a launch fails without it).
    pub(crate) fn load(
        &self,
        source: &KernelSource,
        name: &str,
        threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<Arc<LoadedKernel>, Error> {
        check_shared_memory(name, dynamic_shared_bytes, self.max_shared_memory_per_block_optin, &self.arch)?;
        let known = self.loaded.lock().ok().and_then(|map| {
            let same = map.get(&source.digest())?.iter().find(|(text, _)| text.same_text(source));
            same.map(|(_, loaded)| loaded.clone())
        });
        if let Some(found) = known {
            return Ok(found);
        }
        let compiled = nvrtc::compile_cached(source.text(), name, self.arch, self.disk_cache.as_ref())?;
        let module = self
            .context
            .load_module(Ptx::from_binary(compiled.cubin.clone()))
            .map_err(Error::driver("loading the cubin"))?;
        let function = module.load_function(name).map_err(Error::driver("finding the kernel in the cubin"))?;
        if dynamic_shared_bytes > 0 {
            self.context.bind_to_thread().map_err(Error::driver("binding the context"))?;
            function
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared_bytes as i32,
                )
                .map_err(Error::driver("opting the kernel in to its dynamic shared memory"))?;
        }
        let blocks_per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(threads, dynamic_shared_bytes as usize, None)
            .map_err(Error::driver("computing occupancy"))?;
        let registers = function.num_regs().map_err(Error::driver("reading the kernel's registers"))? as u32;
        let loaded = Arc::new(LoadedKernel { function, blocks_per_sm, registers, dynamic_shared_bytes });
        if let Ok(mut map) = self.loaded.lock() {
            map.entry(source.digest()).or_default().push((source.clone(), loaded.clone()));
        }
        Ok(loaded)
    }
}

/// A kernel's shared memory against what the device allows a block: a typed error with
/// both numbers, before anything is compiled.
pub(crate) fn check_shared_memory(kernel: &str, bytes: u32, device_max: u32, arch: &Arch) -> Result<(), Error> {
    if bytes > device_max {
        return Err(Error::SharedMemoryOverDevice {
            kernel: kernel.into(),
            bytes,
            device_max,
            device: arch.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_over_the_devices_opt_in_maximum_is_a_typed_error_with_both_numbers() {
        let error = check_shared_memory("big", 120 * 1024, 99 * 1024, &Arch { major: 8, minor: 6 }).unwrap_err();
        assert!(
            matches!(&error, Error::SharedMemoryOverDevice { bytes: 122_880, device_max: 101_376, device, .. } if device == "sm_86"),
            "{error:?}"
        );
        assert!(error.to_string().contains("122880 B, exceeds the 101376 B"), "{error}");
        assert!(check_shared_memory("fits", 99 * 1024, 99 * 1024, &Arch::SM_80).is_ok());
    }
}

/// Freed device memory stays in the device's default pool for the next stream-ordered
/// allocation, as a caching allocator keeps it, instead of going back to the driver at every
/// synchronisation (the pool's default): `tessera::gemm`'s aligned copies of unaligned operands
/// allocate and free hundreds of MiB per call, and mapping them afresh each time costs more
/// than the copies. Only for contexts tessera opens itself; a program's own context keeps its
/// settings.
fn keep_freed_memory_pooled(context: &CudaContext) -> Result<(), Error> {
    use cudarc::driver::sys;
    let mut pool = std::mem::MaybeUninit::<sys::CUmemoryPool>::uninit();
    let mut threshold = u64::MAX;
    // SAFETY: the device handle is the context's; both out-pointers are live locals of the
    // types the calls write (the pool handle) and read (a u64 threshold).
    unsafe {
        sys::cuDeviceGetDefaultMemPool(pool.as_mut_ptr(), context.cu_device())
            .result()
            .map_err(Error::driver("finding the device's memory pool"))?;
        sys::cuMemPoolSetAttribute(
            pool.assume_init(),
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut std::ffi::c_void,
        )
        .result()
        .map_err(Error::driver("keeping freed memory in the device's pool"))?;
    }
    Ok(())
}

/// The (GPU, host) milliseconds of repeated [`Gpu::time_once`] runs.
#[derive(Default)]
struct Samples {
    gpu_ms: Vec<f64>,
    host_ms: Vec<f64>,
}

impl Samples {
    fn push(&mut self, (gpu_ms, host_ms): (f64, f64)) {
        self.gpu_ms.push(gpu_ms);
        self.host_ms.push(host_ms);
    }

    fn timing(self) -> Timing {
        Timing::from_samples(self.gpu_ms).with_host_samples(self.host_ms)
    }
}
