use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::CudaStream;

use tessera_dsl::{Access, ElementType, Kernel, LaunchPlan, ParamKind, TensorMap, TensorShape, VectorWidth};

use crate::argument::ScalarValue;
use crate::sim::{self, Shape};
use crate::source::KernelSource;
use crate::tensor_map::TensorMapKey;
use crate::{nvrtc, Arch, Argument, CompiledKernel, Device, DeviceRef, DiskCache, Error, Gpu, Location, Simulator};

/// A kernel as `#[tile_kernel]` embeds it: name, CUDA source at the declared configuration
/// and the IR, from which the runtime renders other configurations.
///
/// ```ignore
/// // emitted by the macro inside `pub mod copy_f32x4 { .. }`:
/// pub static KERNEL: tessera::KernelDefinition = tessera::KernelDefinition::new(NAME, CUDA_SOURCE, IR_JSON);
/// ```
pub struct KernelDefinition {
    name: &'static str,
    cuda_source: &'static str,
    ir_json: &'static str,
    ir: OnceLock<Result<Kernel, String>>,
    /// `cuda_source` with its digest, made on the first launch.
    declared_source: OnceLock<KernelSource>,
    /// Sources rendered for other configurations, so a launch renders each only once.
    rendered: Mutex<Vec<(tessera_dsl::Config, KernelSource)>>,
    /// The TMA tensor maps of the declared configuration (worked out from the IR once: about a
    /// microsecond each launch otherwise, inside the launch's host time).
    declared_tensor_maps: OnceLock<Vec<TensorMap>>,
    /// The dynamic shared memory a launch passes, per configuration launched: the plan walks
    /// the thread code, too slow to run on every launch.
    dynamic_shared_by_config: Mutex<Vec<(tessera_dsl::Config, u32)>>,
    /// The tensors whose rows must hold whole vectors ([`Kernel::row_aligned_tensors`]: a walk
    /// of the body, the same at every configuration), worked out on the first launch.
    row_aligned: OnceLock<Vec<String>>,
    /// The Rust file that declares the kernel (`file!()` where `#[tile_kernel]` expanded).
    source_file: Option<&'static str>,
}

/// What a launch did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launched {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Blocks in x, y and z.
    pub grid: [u32; 3],
    /// Threads per block in x, y and z.
    pub block: [u32; 3],
    /// The vector width used: the declared one, or narrower for unaligned arguments.
    pub vector: VectorWidth,
    /// Registers per thread as the driver reports for the loaded kernel (0 on the simulator).
    pub registers: u32,
    /// Whether the configuration came from the tuning cache (`tessera tune`).
    pub tuned: bool,
    /// Whether the pipeline copied its tiles by TMA (`copies = tma`, on tensors whose rows TMA
    /// can read); false for cp.async and every other kernel.
    pub tma: bool,
    /// Blocks of this kernel one SM keeps resident, as the driver's occupancy calculator
    /// says (0 on the simulator); `tessera_dsl::Occupancy` computes the same from the IR.
    pub blocks_per_sm: u32,
    /// Bytes of dynamic shared memory the launch passed (0: static buffers only).
    pub dynamic_shared_bytes: u32,
    /// False when the grid was empty (a zero-length tensor) and nothing ran.
    pub queued: bool,
    /// True when it ran on the CPU simulation (and so has already finished).
    pub simulated: bool,
    /// True when it was queued as a programmatic dependent of the launch before it
    /// ([`KernelDefinition::launch_dependent`] on sm_90 and later): its launch overlapped that
    /// kernel's last blocks.
    pub dependent: bool,
}

impl KernelDefinition {
    /// A definition from what `#[tile_kernel]` emits: the kernel's name, its CUDA source and
    /// its IR as JSON. `const`, for a `static`; the IR is parsed on first use, not here.
    ///
    /// ```
    /// use tessera_runtime::KernelDefinition;
    /// static KERNEL: KernelDefinition =
    ///     KernelDefinition::new("noop", r#"extern "C" __global__ void noop() {}"#, "{}");
    /// assert_eq!(KERNEL.name(), "noop");
    /// assert!(KERNEL.ir().is_err()); // `{}` is no kernel's IR
    /// ```
    pub const fn new(name: &'static str, cuda_source: &'static str, ir_json: &'static str) -> Self {
        Self {
            name,
            cuda_source,
            ir_json,
            ir: OnceLock::new(),
            declared_source: OnceLock::new(),
            rendered: Mutex::new(Vec::new()),
            declared_tensor_maps: OnceLock::new(),
            dynamic_shared_by_config: Mutex::new(Vec::new()),
            row_aligned: OnceLock::new(),
            source_file: None,
        }
    }

    /// [`KernelDefinition::new`] for a kernel declared in the Rust file `file` (what
    /// `#[tile_kernel]` passes as `file!()`), so tools can point at it.
    ///
    /// ```
    /// use tessera_runtime::KernelDefinition;
    /// static KERNEL: KernelDefinition =
    ///     KernelDefinition::declared_in("noop", r#"extern "C" __global__ void noop() {}"#, "{}", file!());
    /// assert_eq!(KERNEL.source_file(), Some(file!()));
    /// ```
    pub const fn declared_in(
        name: &'static str,
        cuda_source: &'static str,
        ir_json: &'static str,
        file: &'static str,
    ) -> Self {
        let mut definition = Self::new(name, cuda_source, ir_json);
        definition.source_file = Some(file);
        definition
    }

    /// The Rust file that declares the kernel, where the macro recorded it.
    pub fn source_file(&self) -> Option<&'static str> {
        self.source_file
    }

    /// The kernel's name: its entry point in the CUDA source.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The CUDA source at the declared configuration.
    pub fn cuda_source(&self) -> &'static str {
        self.cuda_source
    }

    /// The tile IR.
    pub fn ir(&self) -> Result<&Kernel, Error> {
        self.ir
            .get_or_init(|| serde_json::from_str(self.ir_json).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| Error::Ir { kernel: self.name.into(), message: message.clone() })
    }

    /// The CUDA source with vector width `width` (the declared source when it is the declared width).
    pub fn source_with_vector(&self, width: VectorWidth) -> Result<Cow<'static, str>, Error> {
        let kernel = self.narrowed_to(width, false)?;
        if kernel.config == self.ir()?.config {
            return Ok(Cow::Borrowed(self.cuda_source));
        }
        tessera_codegen::render(&kernel)
            .map(Cow::Owned)
            .map_err(|source| Error::Render { kernel: self.name.into(), source })
    }

    /// The declared kernel at vector width `width` (narrowed below the declared one), its TMA
    /// pipeline copying with cp.async where `tma_sources_unaligned`.
    fn narrowed_to(&self, width: VectorWidth, tma_sources_unaligned: bool) -> Result<Kernel, Error> {
        let mut kernel = self.ir()?.clone();
        let declared = kernel.config.vector;
        if width > declared {
            return Err(Error::VectorTooWide { kernel: self.name.into(), width, declared });
        }
        configure_launch(&mut kernel, width, tma_sources_unaligned);
        Ok(kernel)
    }

    /// Compiles the declared source for `arch` with NVRTC alone: no GPU needed.
    pub fn compile_for(&self, arch: Arch) -> Result<CompiledKernel, Error> {
        nvrtc::compile_cached(self.cuda_source, self.name, arch, DiskCache::default_location().as_ref())
    }

    /// Checks the arguments, binds the shapes, picks the vector width the pointers allow,
    /// compiles (or finds) the kernel and runs it: queued on a GPU's stream, or simulated to
    /// the end (under the simulator's thread orders) on the CPU.
    pub fn launch(&self, device: &impl Device, arguments: &mut [Argument<'_>]) -> Result<Launched, Error> {
        self.launch_as(device, arguments, Order::AfterPrevious)
    }

    /// As [`KernelDefinition::launch`], as a programmatic dependent of the kernel the caller
    /// queued just before it on the same stream (sm_90 on, unless
    /// [`Gpu::with_dependent_launches`] turned it off): its launch overlaps that kernel's last
    /// blocks, and it waits for that kernel's grid, and sees its writes, before it touches
    /// memory. For a small later pass (a finish that adds up partial results) of a computation
    /// whose earlier pass was the last launch: a dependent that fills the GPU can lose more to
    /// where its first blocks land than the overlap gains (BENCHMARKS.md). The simulation runs
    /// it as any other.
    pub fn launch_dependent(&self, device: &impl Device, arguments: &mut [Argument<'_>]) -> Result<Launched, Error> {
        self.launch_as(device, arguments, Order::DependentOfPrevious)
    }

    fn launch_as(&self, device: &impl Device, arguments: &mut [Argument<'_>], order: Order) -> Result<Launched, Error> {
        match device.device_ref() {
            DeviceRef::Gpu(gpu) => self.launch_on_gpu(gpu, arguments, order),
            DeviceRef::Simulator(sim) => self.launch_simulated(sim, arguments),
        }
    }

    fn launch_on_gpu(&self, gpu: &Gpu, arguments: &mut [Argument<'_>], order: Order) -> Result<Launched, Error> {
        let declared = self.ir()?;
        self.check_arguments(declared, gpu.location(), arguments)?;
        let tuned = match gpu.tune_cache() {
            Some(_) => self
                .plan(declared, arguments, 1)
                .ok()
                .and_then(|plan| gpu.tuned_config(self.name, self.cuda_source, &plan.binding.values)),
            None => None,
        };
        let width = widest_aligned(
            tuned.as_ref().map_or(declared.config.vector, |c| c.vector),
            self.row_aligned_tensors()?,
            arguments,
        )?;
        let tma_sources_unaligned = tma_sources_unaligned(&self.tensor_maps_of(declared)?, arguments);
        if tuned.is_none() && width == declared.config.vector && !tma_sources_unaligned {
            // the common case: the embedded source, nothing to render
            return self.launch_configured(gpu, declared, self.declared_source(), arguments, order);
        }
        let mut kernel = declared.clone();
        if let Some(config) = &tuned {
            kernel.config = config.clone();
        }
        configure_launch(&mut kernel, width, tma_sources_unaligned);
        let source = self.source_for(&kernel)?;
        let mut launched = self.launch_configured(gpu, &kernel, &source, arguments, order)?;
        launched.tuned = tuned.is_some();
        Ok(launched)
    }

    /// The tensor maps `kernel` (this definition at some configuration) takes: the declared
    /// configuration's, worked out once, or those of another configuration.
    fn tensor_maps_of(&self, kernel: &Kernel) -> Result<Cow<'_, [TensorMap]>, Error> {
        if !kernel.copies_by_tma() {
            return Ok(Cow::Borrowed(&[]));
        }
        let declared = self.ir()?;
        if kernel.config.constants != declared.config.constants {
            return Ok(Cow::Owned(kernel.tensor_maps()));
        }
        Ok(Cow::Borrowed(self.declared_tensor_maps.get_or_init(|| declared.tensor_maps())))
    }

    /// The dynamic shared memory a launch of `kernel` (a configuration of this definition)
    /// passes, from its shared-memory plan, worked out once per configuration.
    fn dynamic_shared_bytes(&self, kernel: &Kernel) -> u32 {
        once_per_config(&self.dynamic_shared_by_config, &kernel.config, || {
            Ok::<_, std::convert::Infallible>(kernel.shared_memory().dynamic_bytes())
        })
        .unwrap_or_else(|never| match never {})
    }

    /// [`Kernel::row_aligned_tensors`] of this definition's IR, walked once.
    fn row_aligned_tensors(&self) -> Result<&[String], Error> {
        let declared = self.ir()?;
        Ok(self.row_aligned.get_or_init(|| declared.row_aligned_tensors().into_iter().map(String::from).collect()))
    }

    /// The embedded source and its digest (hashed on first use).
    fn declared_source(&self) -> &KernelSource {
        self.declared_source.get_or_init(|| KernelSource::new(self.cuda_source))
    }

    /// The source of `kernel`, a configuration of this definition: the embedded source when
    /// it is the declared one, else rendered (once per configuration).
    pub(crate) fn source_for(&self, kernel: &Kernel) -> Result<KernelSource, Error> {
        if kernel.config == self.ir()?.config {
            return Ok(self.declared_source().clone());
        }
        once_per_config(&self.rendered, &kernel.config, || {
            let text =
                tessera_codegen::render(kernel).map_err(|source| Error::Render { kernel: self.name.into(), source })?;
            Ok(KernelSource::new(text))
        })
    }

    /// Launches `kernel` (this definition at some configuration) rendered as `source`; the
    /// arguments were checked against the definition's signature, which no configuration
    /// changes.
    pub(crate) fn launch_configured(
        &self,
        gpu: &Gpu,
        kernel: &Kernel,
        source: &KernelSource,
        arguments: &mut [Argument<'_>],
        order: Order,
    ) -> Result<Launched, Error> {
        let width = kernel.config.vector;
        let threads = kernel.launch_threads() as u32;
        // Over 48 KiB the buffers are dynamic shared memory: the device must allow that much
        // (checked before compiling), and each launch passes the size.
        let dynamic_shared_bytes = self.dynamic_shared_bytes(kernel);
        if kernel.config.arch_specific && gpu.arch() != crate::Arch::SM_90 {
            // sm_90a's instructions (wgmma) exist on compute capability 9.0 only
            return Err(Error::ArchSpecific { kernel: self.name.into(), device: gpu.arch().to_string() });
        }
        if let Some(feature) = hopper_feature(kernel).filter(|_| gpu.arch() < crate::Arch::SM_90) {
            return Err(Error::NeedsHopper { kernel: self.name.into(), feature, device: gpu.arch().to_string() });
        }
        let loaded = gpu.load(source, self.name, threads, dynamic_shared_bytes)?;
        let resident = loaded.blocks_per_sm.max(1).saturating_mul(gpu.sm_count());
        let plan = self.plan(kernel, arguments, resident)?;
        let mut launched = Launched {
            kernel: self.name,
            grid: plan.grid,
            block: plan.block,
            vector: width,
            registers: loaded.registers,
            blocks_per_sm: loaded.blocks_per_sm,
            dynamic_shared_bytes: loaded.dynamic_shared_bytes,
            queued: false,
            simulated: false,
            tuned: false,
            tma: kernel.copies_by_tma(),
            dependent: false,
        };
        if plan.is_empty() {
            return Ok(launched);
        }
        let trailing = trailing_ints(kernel, &plan, arguments);
        // every parameter by address, in the kernel's order
        let mut parameters: Vec<*mut c_void> = Vec::new();
        fn address<T>(value: &T) -> *mut c_void {
            value as *const T as *mut c_void
        }
        for argument in arguments.iter() {
            parameters.push(match argument {
                Argument::Tensor { address: a, .. } => address(a),
                Argument::Scalar { value: ScalarValue::F32(v), .. } => address(v),
                Argument::Scalar { value: ScalarValue::F64(v), .. } => address(v),
                Argument::Scalar { value: ScalarValue::I32(v), .. } => address(v),
                Argument::Scalar { value: ScalarValue::U32(v), .. } => address(v),
                Argument::Scalar { value: ScalarValue::F16(v), .. } => address(v),
                Argument::Scalar { value: ScalarValue::BF16(v), .. } => address(v),
            });
        }
        parameters.extend(trailing.iter().map(address));
        // the workspace: stream-K's partial tiles, then the tile counters (a dynamic grid's one,
        // `last_block_of`'s one a block)
        let need = kernel.workspace(plan.grid);
        let workspace = match &need {
            Some(need) => Some(gpu.workspace(need)?),
            None => None,
        };
        if let (Some(need), Some(workspace)) = (&need, &workspace) {
            if need.partials > 0 {
                parameters.push(address(&workspace.partials));
            }
            parameters.push(address(&workspace.counters));
        }
        // TMA: the tensor maps, by value
        let tensor_maps = gpu.tensor_maps(&kernel.name, &self.tensor_maps_of(kernel)?, arguments)?;
        parameters.extend(tensor_maps.iter().map(address));
        let shape = crate::launch::LaunchShape {
            grid: plan.grid,
            block: plan.block,
            dynamic_shared_bytes: loaded.dynamic_shared_bytes,
        };
        // a programmatic dependent of the grid before it where asked and the kernel waits for it
        let dependent =
            order == Order::DependentOfPrevious && kernel.waits_for_prior_grid() && gpu.dependent_launches();
        let foreign = foreign_streams(gpu.cuda_stream(), arguments);
        for stream in &foreign {
            gpu.cuda_stream().join(stream).map_err(Error::driver("ordering the launch after the tensors' stream"))?;
        }
        // SAFETY: the parameters match the kernel's signature in order and type (checked
        // above against the IR the source was rendered from) and point at values that live
        // until the call returns; every pointer among them is a live device allocation
        // borrowed for this call, and every access the kernel makes is bounded by the shape
        // symbols passed with them (rows leading-dimension apart, each view spanning
        // (rows − 1)·ld + cols elements of its allocation). The rendered kernel waits for the
        // grid before it before touching memory (`waits_for_prior_grid`).
        let (grid, block, dynamic_shared_bytes) = (shape.grid, shape.block, shape.dynamic_shared_bytes);
        unsafe { crate::launch::launch(gpu.cuda_stream(), &loaded.function, shape, &mut parameters, dependent) }
            .map_err(|source| Error::Launch {
                kernel: kernel.name.clone(),
                grid,
                block,
                dynamic_shared_bytes,
                dependent,
                source,
            })?;
        launched.dependent = dependent;
        for stream in &foreign {
            stream.join(gpu.cuda_stream()).map_err(Error::driver("ordering the tensors' stream after the launch"))?;
        }
        launched.queued = true;
        Ok(launched)
    }

    /// The same checks, shapes, grid and vector width as on a GPU; then the exact source
    /// that width selects runs on the CPU under the simulator's thread orders.
    fn launch_simulated(&self, sim: &Simulator, arguments: &mut [Argument<'_>]) -> Result<Launched, Error> {
        let kernel = self.ir()?;
        self.check_arguments(kernel, Location::Host, arguments)?;
        sim::check_host(arguments)?;
        let width = widest_aligned(kernel.config.vector, self.row_aligned_tensors()?, arguments)?;
        let configured = self.narrowed_to(width, tma_sources_unaligned(&self.tensor_maps_of(kernel)?, arguments))?;
        let source = self.source_for(&configured)?;
        let plan = self.plan(kernel, arguments, sim.resident_blocks())?;
        let mut launched = Launched {
            kernel: self.name,
            grid: plan.grid,
            block: plan.block,
            vector: width,
            registers: 0,
            blocks_per_sm: 0,
            dynamic_shared_bytes: self.dynamic_shared_bytes(kernel),
            queued: false,
            simulated: true,
            tuned: false,
            tma: configured.copies_by_tma(),
            dependent: false,
        };
        if plan.is_empty() {
            return Ok(launched);
        }
        let library = sim.load(source.text(), self.name)?;
        let trailing = trailing_ints(kernel, &plan, arguments);
        let tensor_maps = self
            .tensor_maps_of(&configured)?
            .iter()
            .map(|map| Ok(TensorMapKey::of(self.name, map, arguments)?.encode_for_simulator()))
            .collect::<Result<Vec<_>, Error>>()?;
        let shape = Shape {
            kernel: self.name,
            grid: plan.grid,
            block: plan.block,
            symbols: &trailing,
            tensor_maps: &tensor_maps,
            stack_bytes: sim.stack_bytes(),
            cluster: kernel.launch_cluster().unwrap_or([1, 1, 1]),
        };
        match kernel.workspace(plan.grid) {
            // the workspace: host tensors after the shape symbols, checked like any other (red
            // zones, writes outside them)
            Some(need) => match need.element {
                ElementType::F32 => simulate_with_workspace::<f32>(sim, &library, &shape, arguments, &need)?,
                ElementType::F64 => simulate_with_workspace::<f64>(sim, &library, &shape, arguments, &need)?,
                ElementType::I32 => simulate_with_workspace::<i32>(sim, &library, &shape, arguments, &need)?,
                ElementType::U32 => simulate_with_workspace::<u32>(sim, &library, &shape, arguments, &need)?,
                ElementType::F16 => simulate_with_workspace::<half::f16>(sim, &library, &shape, arguments, &need)?,
                ElementType::BF16 => simulate_with_workspace::<half::bf16>(sim, &library, &shape, arguments, &need)?,
            },
            None => sim::execute(&library, &shape, arguments, &mut [], sim.orders())?,
        }
        launched.queued = true;
        Ok(launched)
    }

    fn plan(&self, kernel: &Kernel, arguments: &[Argument<'_>], resident: u32) -> Result<LaunchPlan, Error> {
        let shapes: Vec<TensorShape<'_>> = arguments
            .iter()
            .filter_map(|a| match a {
                Argument::Tensor { param, dims, leading_dimension, .. } => {
                    Some(TensorShape { param, dims, leading_dimension: Some(*leading_dimension) })
                }
                Argument::Scalar { .. } => None,
            })
            .collect();
        LaunchPlan::new(kernel, &shapes, resident).map_err(|source| Error::Plan { kernel: self.name.into(), source })
    }

    fn check_arguments(&self, kernel: &Kernel, location: Location, arguments: &[Argument<'_>]) -> Result<(), Error> {
        if arguments.len() != kernel.params.len() {
            return Err(Error::ArgumentCount {
                kernel: self.name.into(),
                given: arguments.len(),
                expected: kernel.params.len(),
            });
        }
        for (position, (argument, param)) in arguments.iter().zip(&kernel.params).enumerate() {
            if argument.param() != param.name {
                return Err(Error::ArgumentOrder {
                    kernel: self.name.into(),
                    position,
                    given: argument.param().into(),
                    expected: param.name.clone(),
                });
            }
            let (given, expected) = match (argument, &param.kind) {
                (Argument::Tensor { element, location: tensor_location, writable, .. }, ParamKind::Global(tensor)) => {
                    if *tensor_location != location {
                        return Err(Error::WrongDevice {
                            param: param.name.clone(),
                            tensor: *tensor_location,
                            launch: location,
                        });
                    }
                    // a kernel writes a `GlobalMut` through the pointer: a tensor lent as an
                    // input (a shared borrow) must not be written
                    if tensor.access == Access::Writable && !writable {
                        return Err(Error::ArgumentType {
                            kernel: self.name.into(),
                            position,
                            param: param.name.clone(),
                            given: format!("a read-only {} tensor (`Argument::input`)", element.rust_name()),
                            expected: format!(
                                "{}* (a `GlobalMut` the kernel writes: pass it with `Argument::output`)",
                                tensor.element.rust_name()
                            ),
                        });
                    }
                    (*element, tensor.element)
                }
                (Argument::Scalar { value, .. }, ParamKind::Scalar(element)) => (value.element(), *element),
                _ => {
                    return Err(Error::ArgumentOrder {
                        kernel: self.name.into(),
                        position,
                        given: format!("{} (tensor/scalar mismatch)", argument.param()),
                        expected: param.name.clone(),
                    })
                }
            };
            if given != expected {
                return Err(Error::ElementMismatch {
                    kernel: self.name.into(),
                    param: param.name.clone(),
                    given,
                    expected,
                });
            }
        }
        Ok(())
    }
}

/// Runs a kernel with a workspace on the simulator: partial tiles of `T` (stream-K) and the tile
/// counters, host tensors passed after the shape symbols.
fn simulate_with_workspace<T: crate::Element>(
    sim: &Simulator,
    library: &sim::SimLibrary,
    shape: &Shape<'_>,
    arguments: &mut [Argument<'_>],
    need: &tessera_dsl::Workspace,
) -> Result<(), Error> {
    let mut counters = sim.zeros::<i32>([need.counters])?;
    if need.partials == 0 {
        let mut workspace = [Argument::output("tessera_tile_counters", &mut counters)];
        return sim::execute(library, shape, arguments, &mut workspace, sim.orders());
    }
    let mut partials = sim.zeros::<T>([need.partials])?;
    let mut workspace =
        [Argument::output("tessera_partials", &mut partials), Argument::output("tessera_tile_counters", &mut counters)];
    sim::execute(library, shape, arguments, &mut workspace, sim.orders())
}

/// The `int` parameters after the arguments: the shape symbols' values, then the leading
/// dimension of every 2-D tensor parameter, in parameter order (as codegen declares them).
fn trailing_ints(kernel: &Kernel, plan: &LaunchPlan, arguments: &[Argument<'_>]) -> Vec<i32> {
    let mut values: Vec<i32> = plan.binding.values.iter().map(|(_, v)| *v as i32).collect();
    for (argument, param) in arguments.iter().zip(&kernel.params) {
        let matrix = param.tensor().is_some_and(|tensor| tensor.has_leading_dimension());
        if let (true, Argument::Tensor { leading_dimension, .. }) = (matrix, argument) {
            // within MAX_ELEMENTS: the launch plan checked it
            values.push(*leading_dimension as i32);
        }
    }
    values
}

/// `kernel` at vector width `width` (narrowed when below its own), its TMA pipeline copying
/// with cp.async where `tma_sources_unaligned`: the configuration a launch renders.
fn configure_launch(kernel: &mut Kernel, width: VectorWidth, tma_sources_unaligned: bool) {
    kernel.config.narrowed |= width < kernel.config.vector;
    kernel.config.vector = width;
    kernel.config.tma_sources_unaligned = tma_sources_unaligned;
}

/// What `kernel` uses that only sm_90 and newer have (TMA copies, or the mbarrier waits of a
/// pipeline with producers), if anything: a launch on an older GPU is refused with it named
/// rather than failing in ptxas.
fn hopper_feature(kernel: &Kernel) -> Option<&'static str> {
    if kernel.copies_by_tma() {
        Some("TMA bulk tensor copies (`copies = tma`)")
    } else if kernel.config.cluster.is_some() {
        Some("thread-block clusters (`cluster = ..`)")
    } else if kernel.producer_threads() > 0 {
        Some("a warp-specialised pipeline (`producers = n`: mbarrier waits, and setmaxnreg where the producers are warpgroups)")
    } else {
        None
    }
}

/// Whether a tensor among `arguments` that a kernel copies by TMA (through one of `maps`) has an
/// address or rows TMA cannot read (16-byte aligned both): then its pipeline copies with
/// cp.async. Only the copied tensors count; an output with odd rows narrows the kernel's
/// stores, not its copies.
fn tma_sources_unaligned(maps: &[TensorMap], arguments: &[Argument<'_>]) -> bool {
    maps.iter().any(|map| arguments.iter().find(|a| a.param() == map.tensor).is_some_and(|a| !a.rows_aligned(16)))
}

/// The widest width up to `declared` at which every tensor's address is aligned and every
/// row of a 2-D tensor starts aligned (its leading dimension a multiple of the width), so no
/// vector access is ever misaligned. The column count does not matter: vector accesses stay
/// inside whole tiles, and edge tiles check each element against it. Only the tensors in
/// `row_aligned` ([`Kernel::row_aligned_tensors`]) narrow it; every tensor must hold whole
/// elements.
fn widest_aligned(
    declared: VectorWidth,
    row_aligned: &[impl AsRef<str>],
    arguments: &[Argument<'_>],
) -> Result<VectorWidth, Error> {
    let mut width = declared;
    for argument in arguments {
        let Argument::Tensor { param, element, address, dims, leading_dimension, .. } = argument else { continue };
        let element_bytes = u64::from(element.size_bytes());
        if address % element_bytes != 0 {
            return Err(Error::Misaligned {
                param: (*param).into(),
                address: *address,
                element_bytes: element.size_bytes(),
            });
        }
        if !row_aligned.iter().any(|name| name.as_ref() == *param) {
            continue;
        }
        let row = if dims.len() >= 2 { *leading_dimension as u64 } else { 0 };
        // widths count bytes: a width of 8 is 16-byte accesses of halves, and no access of a
        // wider type moves more than 16 bytes (a kernel of bf16 operands and an f32 result
        // stores the result 8 bytes at a time), so no tensor needs more than 16-byte alignment
        let access_bytes = |width: VectorWidth| (element_bytes * u64::from(width.get())).min(16);
        while address % access_bytes(width) != 0 || (row * element_bytes) % access_bytes(width) != 0 {
            match width.narrower() {
                Some(narrower) => width = narrower,
                None => break,
            }
        }
    }
    Ok(width)
}

/// The value `cache` holds for `config`, or `make`'s, kept there for the next launch (a
/// poisoned lock only loses the keeping).
fn once_per_config<T: Clone, E>(
    cache: &Mutex<Vec<(tessera_dsl::Config, T)>>,
    config: &tessera_dsl::Config,
    make: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let known = cache.lock().ok().and_then(|entries| entries.iter().find(|(c, _)| c == config).map(|(_, v)| v.clone()));
    if let Some(value) = known {
        return Ok(value);
    }
    let value = make()?;
    if let Ok(mut entries) = cache.lock() {
        entries.push((config.clone(), value.clone()));
    }
    Ok(value)
}

/// When a launch may start relative to the kernel queued before it on the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Once that kernel has ended (an ordinary launch).
    AfterPrevious,
    /// As its programmatic dependent: while its last blocks run (sm_90 on).
    DependentOfPrevious,
}

/// The streams other than `launch` that the GPU tensors among `arguments` are ordered on
/// (memory a program allocated on its own stream), each once.
fn foreign_streams(launch: &Arc<CudaStream>, arguments: &[Argument<'_>]) -> Vec<Arc<CudaStream>> {
    let mut foreign: Vec<Arc<CudaStream>> = Vec::new();
    for argument in arguments {
        if let Argument::Tensor { stream: Some(stream), .. } = argument {
            let seen = |s: &Arc<CudaStream>| s.cu_stream() == stream.cu_stream();
            if !seen(launch) && !foreign.iter().any(seen) {
                foreign.push(stream.clone());
            }
        }
    }
    foreign
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::marker::PhantomData;
    use tessera_dsl::ElementType;

    fn tensor(param: &'static str, address: u64) -> Argument<'static> {
        matrix(param, address, vec![4])
    }

    fn matrix(param: &'static str, address: u64, dims: Vec<usize>) -> Argument<'static> {
        let leading_dimension = dims.last().copied().unwrap_or(1);
        strided(param, address, dims, leading_dimension)
    }

    fn strided(param: &'static str, address: u64, dims: Vec<usize>, leading_dimension: usize) -> Argument<'static> {
        Argument::Tensor {
            param,
            element: ElementType::F32,
            dims,
            leading_dimension,
            location: Location::Gpu(0),
            address,
            stream: None,
            writable: false,
            host: None,
            borrow: PhantomData,
        }
    }

    #[test]
    fn rows_that_are_not_a_multiple_of_the_width_narrow_it() {
        let aligned = 0x1000;
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[matrix("x", aligned, vec![4095, 4097])]).unwrap(),
            VectorWidth::W1
        );
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[matrix("x", aligned, vec![3, 6])]).unwrap(),
            VectorWidth::W2
        );
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[matrix("x", aligned, vec![3, 8])]).unwrap(),
            VectorWidth::W4
        );
        // a 1-D tensor's length does not matter: its tail takes the guarded path
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[matrix("x", aligned, vec![4097])]).unwrap(),
            VectorWidth::W4
        );
    }

    #[test]
    fn the_leading_dimension_not_the_column_count_decides_the_width() {
        let aligned = 0x1000;
        // a 4095-column sub-matrix of a 4096-column parent keeps 128-bit accesses
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[strided("a", aligned, vec![4095, 4095], 4096)]).unwrap(),
            VectorWidth::W4
        );
        // 4096 columns of a 4097-column parent: rows start misaligned
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[strided("a", aligned, vec![4095, 4096], 4097)]).unwrap(),
            VectorWidth::W1
        );
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[strided("a", aligned, vec![8, 3], 6)]).unwrap(),
            VectorWidth::W2
        );
        // the view's first element decides the address: column 1 of an aligned parent
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[strided("a", aligned + 4, vec![8, 7], 8)]).unwrap(),
            VectorWidth::W1
        );
        // a 1-D tensor has no rows to align
        assert_eq!(
            widest_aligned(VectorWidth::W4, &["x", "a"], &[strided("x", aligned, vec![4097], 3)]).unwrap(),
            VectorWidth::W4
        );
    }

    #[test]
    fn tensors_read_by_vector_at_keep_the_width_at_rows_that_start_misaligned() {
        let aligned = 0x1000;
        let rows = [matrix("x", aligned, vec![4096, 4097]), matrix("y", aligned + 4, vec![4096, 4097])];
        // neither narrows: both are read from each row's aligned element on
        assert_eq!(widest_aligned(VectorWidth::W4, &[] as &[&str], &rows).unwrap(), VectorWidth::W4);
        // x read by vector index does
        assert_eq!(widest_aligned(VectorWidth::W4, &["x"], &rows).unwrap(), VectorWidth::W1);
        // an element that is not whole is refused either way
        let torn = [matrix("x", aligned + 2, vec![8, 8])];
        assert!(matches!(widest_aligned(VectorWidth::W4, &[] as &[&str], &torn), Err(Error::Misaligned { .. })));
    }

    #[test]
    fn an_address_off_by_one_float_drops_to_scalar_width() {
        let arguments = [tensor("x", 0x1000), tensor("y", 0x1004)];
        assert_eq!(widest_aligned(VectorWidth::W4, &["x", "y"], &arguments).unwrap(), VectorWidth::W1);
    }

    #[test]
    fn an_address_off_by_two_floats_keeps_64_bit_accesses() {
        let arguments = [tensor("x", 0x1008), tensor("y", 0x2000)];
        assert_eq!(widest_aligned(VectorWidth::W4, &["x", "y"], &arguments).unwrap(), VectorWidth::W2);
    }

    #[test]
    fn aligned_addresses_keep_the_declared_width() {
        let arguments = [tensor("x", 0x1010), tensor("y", 0x2000)];
        assert_eq!(widest_aligned(VectorWidth::W4, &["x", "y"], &arguments).unwrap(), VectorWidth::W4);
        assert_eq!(widest_aligned(VectorWidth::W2, &["x", "y"], &arguments).unwrap(), VectorWidth::W2);
    }

    #[test]
    fn an_address_inside_an_element_is_an_error() {
        let arguments = [tensor("x", 0x1002)];
        assert!(matches!(
            widest_aligned(VectorWidth::W4, &["x", "y"], &arguments),
            Err(Error::Misaligned { element_bytes: 4, .. })
        ));
    }

    fn pipeline_kernel(producers: Option<u32>, copies: tessera_dsl::CopyMechanism) -> Kernel {
        let pipeline = tessera_dsl::PipelineLoop {
            var: "k".into(),
            count: tessera_dsl::Expr::int(4),
            stages: 4,
            producers,
            copies,
            consumers: None,
            body: vec![],
            origin: tessera_dsl::Origin::default(),
        };
        Kernel {
            name: "k".into(),
            doc: None,
            params: vec![],
            config: tessera_dsl::Config::default(),
            body: vec![tessera_dsl::Statement::Pipeline(pipeline)],
            origin: tessera_dsl::Origin::default(),
        }
    }

    #[test]
    fn tma_and_producers_are_named_as_what_an_older_gpu_lacks() {
        use tessera_dsl::CopyMechanism::{AsyncCopy, Tma};
        assert!(hopper_feature(&pipeline_kernel(Some(128), Tma)).is_some_and(|f| f.contains("TMA")));
        assert!(hopper_feature(&pipeline_kernel(Some(128), AsyncCopy)).is_some_and(|f| f.contains("producers")));
        assert_eq!(hopper_feature(&pipeline_kernel(None, AsyncCopy)), None);
        // rows TMA cannot read turn the pipeline into cp.async producers, still sm_90's
        let mut unaligned = pipeline_kernel(Some(128), Tma);
        unaligned.config.tma_sources_unaligned = true;
        assert!(hopper_feature(&unaligned).is_some_and(|f| f.contains("producers")));
    }
}
