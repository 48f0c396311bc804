//! The autotuner: try a kernel's configurations (pruned by the validator before anything
//! compiles), compile the survivors in parallel, measure them, and keep the winner per
//! kernel, source, device and shape class in a cache that `launch` consults. A record whose
//! source or device no longer matches is refused, never used.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use tessera_dsl::{
    shape_class, Candidate, Config, Diagnostics, GlobalTensor, Kernel, ParamKind, TuneSpace, VectorWidth,
};

use crate::{nvrtc, Arch, Argument, DeviceTensor, Error, Gpu, KernelDefinition, PtxasReport};

/// One stored winner.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TuneRecord {
    /// The tuned kernel's name.
    pub kernel: String,
    /// sha256 of the declared CUDA source: a changed kernel invalidates its records.
    pub source_sha256: String,
    /// The device's name as the driver reports it: a record holds on that device only.
    pub device: String,
    /// The device's architecture, e.g. `sm_90`.
    pub arch: String,
    /// The class of shapes the winner holds for (`tessera_dsl::shape_class` of the tuned shape).
    pub shape_class: String,
    /// The winning configuration.
    pub config: Config,
    /// The winner's median time when it was tuned, in milliseconds.
    pub median_ms: f64,
}

/// What the cache says about a kernel at a shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    Found(TuneRecord),
    /// A record exists for this kernel and shape class but is not trusted, and why.
    Refused {
        reason: String,
    },
    Missing,
}

/// A JSON file of tuning records.
///
/// ```
/// use tessera_runtime::{Arch, TuneCache};
/// let cache = TuneCache::new(std::env::temp_dir().join("tessera-doc-tuned.json"));
/// assert_eq!(cache.lookup("k", "source", "GPU", Arch::SM_90, "N=1024v"), tessera_runtime::Lookup::Missing);
/// ```
#[derive(Clone, Debug)]
pub struct TuneCache {
    path: PathBuf,
}

pub(crate) fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

impl TuneCache {
    /// A cache in the JSON file at `path`, created (with its folder) by the first store.
    ///
    /// ```
    /// let cache = tessera_runtime::TuneCache::new("/tmp/tessera-tuned.json");
    /// assert_eq!(cache.path(), std::path::Path::new("/tmp/tessera-tuned.json"));
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `tuned.json` beside the compiled kernels; `None` when `TESSERA_TUNE=off`.
    pub fn default_location() -> Option<Self> {
        if std::env::var("TESSERA_TUNE").is_ok_and(|v| v == "off" || v == "0") {
            return None;
        }
        crate::DiskCache::default_location().map(|cache| Self::new(cache.dir().join("tuned.json")))
    }

    /// The JSON file the records are kept in.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Every record; an unreadable or damaged file reads as empty (tuning again rewrites it).
    pub fn records(&self) -> Vec<TuneRecord> {
        std::fs::read_to_string(&self.path).ok().and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default()
    }

    /// The record of `kernel` (declared as `source`) for `shape_class` on `device`, if one
    /// still holds: a record for another device, source or architecture is [`Lookup::Refused`]
    /// with the reason, never used.
    pub fn lookup(&self, kernel: &str, source: &str, device: &str, arch: Arch, shape_class: &str) -> Lookup {
        let records = self.records();
        let Some(record) =
            records.iter().find(|r| r.kernel == kernel && r.shape_class == shape_class && r.device == device)
        else {
            return match records.iter().find(|r| r.kernel == kernel && r.shape_class == shape_class) {
                Some(other) => {
                    Lookup::Refused { reason: format!("tuned on {} ({}), not on {device}", other.device, other.arch) }
                }
                None => Lookup::Missing,
            };
        };
        if record.source_sha256 != sha256(source) {
            return Lookup::Refused { reason: format!("`{kernel}` changed since it was tuned (source hash differs)") };
        }
        if record.arch != arch.to_string() {
            return Lookup::Refused { reason: format!("tuned for {}, this device is {arch}", record.arch) };
        }
        Lookup::Found(record.clone())
    }

    /// Stores `record`, replacing any for the same kernel, device and shape class.
    pub fn store(&self, record: TuneRecord) -> std::io::Result<()> {
        let mut records = self.records();
        records.retain(|r| {
            !(r.kernel == record.kernel && r.device == record.device && r.shape_class == record.shape_class)
        });
        records.push(record);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let temporary = self.path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&temporary, serde_json::to_string_pretty(&records).map_err(std::io::Error::other)?)?;
        std::fs::rename(temporary, &self.path)
    }
}

/// What happened to one candidate.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Refused by the validator before compiling.
    Pruned(String),
    CompileFailed(String),
    /// Compiled, but registers spill to local memory.
    Spills(PtxasReport),
    Measured {
        median_ms: f64,
    },
    Failed(String),
}

/// One candidate configuration a tuning run tried, and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The configuration tried.
    pub candidate: Candidate,
    /// What became of it.
    pub outcome: Outcome,
}

/// Everything a tuning run tried, and the winner.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneReport {
    pub kernel: String,
    pub shape_class: String,
    pub trials: Vec<Trial>,
}

impl TuneReport {
    /// The fastest measured candidate.
    pub fn winner(&self) -> Option<(&Candidate, f64)> {
        self.trials
            .iter()
            .filter_map(|t| match t.outcome {
                Outcome::Measured { median_ms } => Some((&t.candidate, median_ms)),
                _ => None,
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Why the validator pruned candidates: each reason with how many it pruned, the most
    /// common first (ties in the order they were first met).
    pub fn pruned_reasons(&self) -> Vec<(&str, usize)> {
        let mut reasons: Vec<(&str, usize)> = Vec::new();
        for trial in &self.trials {
            let Outcome::Pruned(reason) = &trial.outcome else { continue };
            match reasons.iter_mut().find(|(r, _)| r == reason) {
                Some((_, count)) => *count += 1,
                None => reasons.push((reason, 1)),
            }
        }
        // stable: equal counts keep their first-met order
        reasons.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
        reasons
    }
}

/// Progress of a tuning run, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Compiled { done: usize, of: usize },
    Measured { done: usize, of: usize },
}

/// Where timings come from: a GPU, or a stand-in in tests.
pub trait Measure {
    /// The median time of `kernel` (a configuration of the tuned definition) rendered as `source`.
    fn measure(&mut self, kernel: &Kernel, source: &str) -> Result<f64, String>;
}

/// Tries every candidate of `space`: validate, render, compile in parallel for `arch`, drop
/// those that spill, then measure the rest one by one.
pub fn tune(
    definition: &KernelDefinition,
    space: &TuneSpace,
    arch: Arch,
    binding: &[(String, i64)],
    measure: &mut impl Measure,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<TuneReport, Error> {
    let declared = definition.ir()?;
    let mut trials: Vec<Trial> = Vec::new();
    let mut compilable: Vec<(Candidate, Kernel, String)> = Vec::new();
    for (candidate, checked) in candidates(declared, space, arch, binding) {
        match checked {
            Err(diagnostics) => {
                let reason = diagnostics.iter().next().map(|d| d.message.clone()).unwrap_or_default();
                trials.push(Trial { candidate, outcome: Outcome::Pruned(reason) });
            }
            Ok(()) => {
                let mut kernel = declared.clone();
                kernel.config = candidate.config.clone();
                match definition.source_for(&kernel) {
                    Ok(source) => compilable.push((candidate, kernel, source.text().to_string())),
                    Err(error) => trials.push(Trial { candidate, outcome: Outcome::CompileFailed(error.to_string()) }),
                }
            }
        }
    }
    let compiled = compile_all(definition.name(), &compilable, arch, progress);
    let of = compiled.iter().filter(|c| matches!(c, Ok(None))).count();
    let mut done = 0;
    for ((candidate, kernel, source), result) in compilable.into_iter().zip(compiled) {
        let outcome = match result {
            Err(message) => Outcome::CompileFailed(message),
            Ok(Some(spills)) => Outcome::Spills(spills),
            Ok(None) => {
                let outcome = match measure.measure(&kernel, &source) {
                    Ok(median_ms) => Outcome::Measured { median_ms },
                    Err(message) => Outcome::Failed(message),
                };
                done += 1;
                progress(Progress::Measured { done, of });
                outcome
            }
        };
        trials.push(Trial { candidate, outcome });
    }
    Ok(TuneReport { kernel: definition.name().into(), shape_class: shape_class(binding), trials })
}

/// The candidates [`tune`] tries for `declared` at `binding` on `arch`, each as a launch there
/// would render it, with the validator's verdict: the pruning step alone, nothing rendered or
/// compiled.
pub fn candidates(
    declared: &Kernel,
    space: &TuneSpace,
    arch: Arch,
    binding: &[(String, i64)],
) -> Vec<(Candidate, Result<(), Diagnostics>)> {
    // Tuning is for the GPU in hand: configurations only it can run (more shared memory than
    // every GPU allows) are tried too, and carry `target = sm_XY` if they win.
    let device = tessera_dsl::Target::from_compute_capability(arch.major, arch.minor);
    let mut out: Vec<(Candidate, Result<(), Diagnostics>)> = Vec::new();
    for vector in &space.vectors {
        let (center, width) = launch_configuration(declared, binding, *vector);
        let narrowed = TuneSpace { vectors: vec![width], ..space.clone() };
        for (candidate, checked) in narrowed.candidates_for(&center, device.as_ref()) {
            // two requested widths the shape narrows alike give the same candidates
            if !out.iter().any(|(c, _)| *c == candidate) {
                out.push((candidate, checked));
            }
        }
    }
    out
}

/// `declared` as a launch at `binding` would render it when asked for `vector`: the width
/// narrowed to what every tensor's rows hold, marked `narrowed` (the launch's checks then
/// accept a tensor-core or TMA kernel below its 16-byte width), and a TMA pipeline whose
/// sources' rows TMA cannot read copying with cp.async. Judged unmarked at a width the launch
/// only reaches by narrowing, every candidate of a `vector = 8` kernel would be pruned.
fn launch_configuration(declared: &Kernel, binding: &[(String, i64)], vector: VectorWidth) -> (Kernel, VectorWidth) {
    let width = shape_vector_cap(declared, binding, vector);
    let mut kernel = declared.clone();
    kernel.config.narrowed |= width < vector;
    let maps = declared.tensor_maps();
    kernel.config.tma_sources_unaligned |= declared.params.iter().any(|param| {
        maps.iter().any(|map| map.tensor == param.name)
            && param.tensor().is_some_and(|tensor| !rows_aligned(tensor, binding, 16))
    });
    (kernel, width)
}

/// Whether every row of `tensor` at `binding` starts `bytes`-aligned (from an aligned base).
/// The tuner times dense tensors, whose leading dimension is their row length.
fn rows_aligned(tensor: &GlobalTensor, binding: &[(String, i64)], bytes: u64) -> bool {
    if tensor.rank() < 2 {
        return true;
    }
    let Some(symbol) = tensor.contiguous_symbol() else { return true };
    let row = binding.iter().find(|(s, _)| s == symbol).map_or(1, |(_, v)| v.unsigned_abs());
    (row * u64::from(tensor.element.size_bytes())).is_multiple_of(bytes)
}

/// The widest vector up to `requested` that every 2-D tensor's rows allow at `binding`, as
/// the launch picks it: widths count elements, the accesses bytes, up to 16 (a width of 8 is
/// 16-byte accesses of halves; an f32 result of the same kernel stores 16 bytes too).
fn shape_vector_cap(kernel: &Kernel, binding: &[(String, i64)], requested: VectorWidth) -> VectorWidth {
    let mut width = requested;
    let row_aligned = kernel.row_aligned_tensors();
    for tensor in kernel.params.iter().filter(|p| row_aligned.contains(&p.name.as_str())).filter_map(|p| p.tensor()) {
        let access_bytes =
            |width: VectorWidth| (u64::from(tensor.element.size_bytes()) * u64::from(width.get())).min(16);
        while !rows_aligned(tensor, binding, access_bytes(width)) {
            match width.narrower() {
                Some(narrower) => width = narrower,
                None => break,
            }
        }
    }
    width
}

/// NVRTC on every core: `Ok(None)` compiled cleanly, `Ok(Some(figures))` spills.
fn compile_all(
    name: &str,
    work: &[(Candidate, Kernel, String)],
    arch: Arch,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Vec<Result<Option<PtxasReport>, String>> {
    let results: Mutex<Vec<Option<Result<Option<PtxasReport>, String>>>> = Mutex::new(vec![None; work.len()]);
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let cache = crate::DiskCache::default_location();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(work.len().max(1));
    let progress = Mutex::new(progress);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, _, source)) = work.get(index) else { break };
                let result = nvrtc::compile_cached(source, name, arch, cache.as_ref())
                    .map(|compiled| compiled.ptxas.spills().then_some(compiled.ptxas))
                    .map_err(|e| e.to_string());
                if let Ok(mut slots) = results.lock() {
                    slots[index] = Some(result);
                }
                let done = finished.fetch_add(1, Ordering::Relaxed) + 1;
                if let Ok(mut report) = progress.lock() {
                    (*report)(Progress::Compiled { done, of: work.len() });
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|slot| slot.unwrap_or_else(|| Err("not compiled".into())))
        .collect()
}

/// Measures on a GPU with tensors of the tuned shape, filled with [`measurement_value`]s,
/// every scalar 1 unless given. Before timing a configuration it checks that one launch of it
/// writes what the declared configuration writes (within the rounding that another order of
/// additions makes): a candidate whose constants break an assumption the kernel does not
/// `require` (a warp count that is not THREADS / 32, say) is refused, not crowned.
pub struct GpuMeasure<'a> {
    gpu: &'a Gpu,
    definition: &'static KernelDefinition,
    tensors: Vec<(String, AnyTensor)>,
    scalars: Vec<(String, f64)>,
    /// What the declared configuration writes from the starting values, each output as f64:
    /// every candidate must write the same before it is timed.
    reference: Option<Vec<Vec<f64>>>,
    /// The tuned shape's symbols and values.
    binding: Vec<(String, i64)>,
    pub warmup: usize,
    pub repetitions: usize,
}

enum AnyTensor {
    F32(DeviceTensor<f32>),
    F64(DeviceTensor<f64>),
    I32(DeviceTensor<i32>),
    U32(DeviceTensor<u32>),
    F16(DeviceTensor<half::f16>),
    BF16(DeviceTensor<half::bf16>),
}

impl AnyTensor {
    /// A tensor of `element`s and `dims` holding the starting values: [`measurement_value`]s,
    /// integers i % 97.
    fn starting(gpu: &Gpu, element: tessera_dsl::ElementType, dims: &[usize]) -> Result<Self, Error> {
        let len: usize = dims.iter().product();
        let values = measurement_value;
        Ok(match element {
            tessera_dsl::ElementType::F32 => {
                AnyTensor::F32(gpu.upload(&(0..len).map(|i| values(i) as f32).collect::<Vec<_>>(), dims)?)
            }
            tessera_dsl::ElementType::F64 => {
                AnyTensor::F64(gpu.upload(&(0..len).map(values).collect::<Vec<_>>(), dims)?)
            }
            tessera_dsl::ElementType::I32 => {
                AnyTensor::I32(gpu.upload(&(0..len).map(|i| (i % 97) as i32).collect::<Vec<_>>(), dims)?)
            }
            tessera_dsl::ElementType::U32 => {
                AnyTensor::U32(gpu.upload(&(0..len).map(|i| (i % 97) as u32).collect::<Vec<_>>(), dims)?)
            }
            tessera_dsl::ElementType::F16 => {
                AnyTensor::F16(gpu.upload(&(0..len).map(|i| half::f16::from_f64(values(i))).collect::<Vec<_>>(), dims)?)
            }
            tessera_dsl::ElementType::BF16 => AnyTensor::BF16(
                gpu.upload(&(0..len).map(|i| half::bf16::from_f64(values(i))).collect::<Vec<_>>(), dims)?,
            ),
        })
    }

    fn element(&self) -> tessera_dsl::ElementType {
        match self {
            AnyTensor::F32(_) => tessera_dsl::ElementType::F32,
            AnyTensor::F64(_) => tessera_dsl::ElementType::F64,
            AnyTensor::I32(_) => tessera_dsl::ElementType::I32,
            AnyTensor::U32(_) => tessera_dsl::ElementType::U32,
            AnyTensor::F16(_) => tessera_dsl::ElementType::F16,
            AnyTensor::BF16(_) => tessera_dsl::ElementType::BF16,
        }
    }

    fn dims(&self) -> Vec<usize> {
        match self {
            AnyTensor::F32(t) => t.dims().to_vec(),
            AnyTensor::F64(t) => t.dims().to_vec(),
            AnyTensor::I32(t) => t.dims().to_vec(),
            AnyTensor::U32(t) => t.dims().to_vec(),
            AnyTensor::F16(t) => t.dims().to_vec(),
            AnyTensor::BF16(t) => t.dims().to_vec(),
        }
    }

    /// Its elements, as f64.
    fn values(&self, gpu: &Gpu) -> Result<Vec<f64>, Error> {
        Ok(match self {
            AnyTensor::F32(t) => gpu.download(t)?.into_iter().map(f64::from).collect(),
            AnyTensor::F64(t) => gpu.download(t)?,
            AnyTensor::I32(t) => gpu.download(t)?.into_iter().map(f64::from).collect(),
            AnyTensor::U32(t) => gpu.download(t)?.into_iter().map(f64::from).collect(),
            AnyTensor::F16(t) => gpu.download(t)?.into_iter().map(f64::from).collect(),
            AnyTensor::BF16(t) => gpu.download(t)?.into_iter().map(f64::from).collect(),
        })
    }
}

/// The kernel's writable tensors, in parameter order, with their element types.
fn outputs(kernel: &Kernel) -> Vec<(&str, tessera_dsl::ElementType)> {
    kernel
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Global(t) if t.access == tessera_dsl::Access::Writable => Some((p.name.as_str(), t.element)),
            _ => None,
        })
        .collect()
}

/// How far, relative to the largest magnitude of the declared configuration's output, a
/// candidate's element may be from it: another order of additions, rounded in the output's type.
fn relative_tolerance(element: tessera_dsl::ElementType) -> f64 {
    match element {
        tessera_dsl::ElementType::F64 => 1e-9,
        tessera_dsl::ElementType::F32 => 1e-3,
        tessera_dsl::ElementType::F16 | tessera_dsl::ElementType::BF16 => 3e-2,
        tessera_dsl::ElementType::I32 | tessera_dsl::ElementType::U32 => 0.0,
    }
}

/// Whether `got` (a candidate's output) is `reference` (the declared configuration's) up to
/// `relative` × the largest finite magnitude of `reference`; NaN where the reference has NaN.
///
/// ```
/// use tessera_runtime::tune::outputs_agree;
/// assert!(outputs_agree(&[1.0, -2.0], &[1.0005, -2.0], 1e-3).is_ok());
/// // rows a candidate never wrote keep their starting values
/// assert!(outputs_agree(&[1.0, -2.0], &[1.0, 0.25], 1e-3).is_err());
/// ```
pub fn outputs_agree(reference: &[f64], got: &[f64], relative: f64) -> Result<(), String> {
    let scale = reference.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (want, value)) in reference.iter().zip(got).enumerate() {
        let same = want == value || (want.is_nan() && value.is_nan()) || (value - want).abs() <= relative * scale;
        if !same {
            return Err(format!("element {i} is {value} where the declared configuration writes {want}"));
        }
    }
    if reference.len() != got.len() {
        return Err(format!("{} elements where the declared configuration has {}", got.len(), reference.len()));
    }
    Ok(())
}

impl<'a> GpuMeasure<'a> {
    /// A measure of `definition` on `gpu` at the shape `binding` gives its symbols: a tensor
    /// per tensor parameter, filled with [`measurement_value`]s; each scalar is its value in
    /// `scalars`, else 1. Two warm-up runs and seven timed ones, unless `warmup` and
    /// `repetitions` are changed.
    ///
    /// ```no_run
    /// use tessera_runtime::{tune, Gpu, KernelDefinition};
    /// fn tune_at(definition: &'static KernelDefinition, space: &tessera_dsl::TuneSpace) -> Result<(), tessera_runtime::Error> {
    ///     let gpu = Gpu::new(0)?;
    ///     let binding = vec![("N".to_string(), 1 << 20)];
    ///     let mut measure = tune::GpuMeasure::new(&gpu, definition, &binding, &[])?;
    ///     let report = tune::tune(definition, space, gpu.arch(), &binding, &mut measure, &mut |_| {})?;
    ///     println!("{:?}", report.winner());
    ///     Ok(())
    /// }
    /// ```
    pub fn new(
        gpu: &'a Gpu,
        definition: &'static KernelDefinition,
        binding: &[(String, i64)],
        scalars: &[(String, f64)],
    ) -> Result<Self, Error> {
        let kernel = definition.ir()?;
        let mut tensors = Vec::new();
        for param in &kernel.params {
            let ParamKind::Global(tensor) = &param.kind else { continue };
            let dims: Vec<usize> = tensor
                .shape
                .iter()
                .map(|(symbol, _)| binding.iter().find(|(s, _)| s == symbol).map_or(1, |(_, v)| (*v).max(0) as usize))
                .collect();
            tensors.push((param.name.clone(), AnyTensor::starting(gpu, tensor.element, &dims)?));
        }
        Ok(Self {
            gpu,
            definition,
            tensors,
            scalars: scalars.to_vec(),
            reference: None,
            binding: binding.to_vec(),
            warmup: 2,
            repetitions: 7,
        })
    }
}

impl GpuMeasure<'_> {
    /// Times the definition's own launch (its tuned configuration, if any), with `flush` run
    /// untimed before each repetition; also returns what the last launch reported.
    /// Times the kernel in alternation with `baseline` ([`crate::Gpu::time_paired`]), so a
    /// comparison of the two is not skewed by the GPU's drift: (baseline, kernel, the last launch).
    pub fn time_launch_beside(
        &mut self,
        flush: impl FnMut() -> Result<(), Error>,
        baseline: impl FnMut() -> Result<(), Error>,
    ) -> Result<(crate::Timing, crate::Timing, crate::Launched), Error> {
        let definition = self.definition;
        let declared = definition.ir()?;
        let (gpu, warmup, repetitions) = (self.gpu, self.warmup, self.repetitions);
        let scalars = self.scalars.clone();
        let tensors = &mut self.tensors;
        let mut last = None;
        let (base, timing) = gpu.time_paired(warmup, repetitions, flush, baseline, || {
            let mut arguments = build_arguments(definition, declared, tensors, &scalars);
            last = Some(definition.launch(gpu, &mut arguments)?);
            Ok(())
        })?;
        let launched = last.ok_or(Error::NoRepetitions)?;
        Ok((base, timing, launched))
    }
}

/// Element `i` of every tensor the tuner and `tessera bench` time kernels on: values in
/// [−1, 1] that repeat every 2003 elements. A baseline timed beside a kernel gets the same
/// (the energy of an FFMA, and so the clock under a power limit, depends on its operands).
///
/// ```
/// use tessera_runtime::tune::measurement_value;
/// assert_eq!(measurement_value(0), -1.0);
/// assert!((0..5000).map(measurement_value).all(|v| (-1.0..=1.0).contains(&v)));
/// ```
pub fn measurement_value(i: usize) -> f64 {
    ((i * 7919) % 2003) as f64 / 1001.0 - 1.0
}

/// The arguments of `declared`'s parameters, in order, from the allocated tensors and scalars.
fn build_arguments<'t>(
    definition: &'static KernelDefinition,
    declared: &Kernel,
    tensors: &'t mut [(String, AnyTensor)],
    scalars: &[(String, f64)],
) -> Vec<Argument<'t>> {
    let mut arguments: Vec<Argument<'t>> = Vec::new();
    let mut tensor_iter = tensors.iter_mut();
    for param in &declared.params {
        let name: &'static str = static_name(definition, &param.name);
        match &param.kind {
            ParamKind::Global(tensor) => {
                let Some((_, any)) = tensor_iter.next() else { break };
                let writable = tensor.access == tessera_dsl::Access::Writable;
                arguments.push(match (any, writable) {
                    (AnyTensor::F32(t), false) => Argument::input(name, t),
                    (AnyTensor::F32(t), true) => Argument::output(name, t),
                    (AnyTensor::F64(t), false) => Argument::input(name, t),
                    (AnyTensor::F64(t), true) => Argument::output(name, t),
                    (AnyTensor::I32(t), false) => Argument::input(name, t),
                    (AnyTensor::I32(t), true) => Argument::output(name, t),
                    (AnyTensor::U32(t), false) => Argument::input(name, t),
                    (AnyTensor::U32(t), true) => Argument::output(name, t),
                    (AnyTensor::F16(t), false) => Argument::input(name, t),
                    (AnyTensor::F16(t), true) => Argument::output(name, t),
                    (AnyTensor::BF16(t), false) => Argument::input(name, t),
                    (AnyTensor::BF16(t), true) => Argument::output(name, t),
                });
            }
            ParamKind::Scalar(element) => {
                let value = scalars.iter().find(|(n, _)| n == &param.name).map_or(1.0, |(_, v)| *v);
                arguments.push(match element {
                    tessera_dsl::ElementType::F32 => Argument::scalar(name, value as f32),
                    tessera_dsl::ElementType::F64 => Argument::scalar(name, value),
                    tessera_dsl::ElementType::I32 => Argument::scalar(name, value as i32),
                    tessera_dsl::ElementType::U32 => Argument::scalar(name, value as u32),
                    tessera_dsl::ElementType::F16 => Argument::scalar(name, half::f16::from_f64(value)),
                    tessera_dsl::ElementType::BF16 => Argument::scalar(name, half::bf16::from_f64(value)),
                });
            }
        }
    }
    arguments
}

impl GpuMeasure<'_> {
    /// What one launch of `kernel` (rendered as `source`) writes into the outputs, each refilled
    /// with its starting values first (so in-place kernels start from the same state).
    fn outputs_of(&mut self, kernel: &Kernel, source: &crate::source::KernelSource) -> Result<Vec<Vec<f64>>, Error> {
        let definition = self.definition;
        let declared = definition.ir()?;
        let writable: Vec<&str> = outputs(declared).into_iter().map(|(name, _)| name).collect();
        for (name, tensor) in &mut self.tensors {
            if writable.contains(&name.as_str()) {
                *tensor = AnyTensor::starting(self.gpu, tensor.element(), &tensor.dims())?;
            }
        }
        let mut arguments = build_arguments(definition, declared, &mut self.tensors, &self.scalars);
        definition.launch_configured(
            self.gpu,
            kernel,
            source,
            &mut arguments,
            crate::definition::Order::AfterPrevious,
        )?;
        drop(arguments);
        self.gpu.synchronize()?;
        self.tensors
            .iter()
            .filter(|(name, _)| writable.contains(&name.as_str()))
            .map(|(_, t)| t.values(self.gpu))
            .collect()
    }

    /// Whether `kernel` writes what the declared configuration does (computed on first use).
    fn check(&mut self, kernel: &Kernel, source: &crate::source::KernelSource) -> Result<(), String> {
        let definition = self.definition;
        if self.reference.is_none() {
            // as a launch at this shape runs it (narrowed where the rows ask for it)
            let ir = definition.ir().map_err(|e| e.to_string())?;
            let (mut declared, width) = launch_configuration(ir, &self.binding, ir.config.vector);
            declared.config.vector = width;
            let declared_source = definition.source_for(&declared).map_err(|e| e.to_string())?;
            let outputs = self
                .outputs_of(&declared, &declared_source)
                .map_err(|e| format!("the declared configuration, run for the check, failed: {e}"))?;
            self.reference = Some(outputs);
        }
        let got = self.outputs_of(kernel, source).map_err(|e| e.to_string())?;
        let reference = self.reference.as_ref().map(Vec::as_slice).unwrap_or_default();
        let declared = definition.ir().map_err(|e| e.to_string())?;
        for ((want, value), (name, element)) in reference.iter().zip(&got).zip(outputs(declared)) {
            outputs_agree(want, value, relative_tolerance(element))
                .map_err(|why| format!("wrong results: `{name}` {why}"))?;
        }
        Ok(())
    }
}

impl Measure for GpuMeasure<'_> {
    fn measure(&mut self, kernel: &Kernel, source: &str) -> Result<f64, String> {
        // hashed once here, not in every timed launch
        let source = crate::source::KernelSource::new(source);
        self.check(kernel, &source)?;
        let definition = self.definition;
        let declared = definition.ir().map_err(|e| e.to_string())?;
        let (gpu, warmup, repetitions) = (self.gpu, self.warmup, self.repetitions);
        let scalars = self.scalars.clone();
        let tensors = &mut self.tensors;
        let timing = gpu
            .time(warmup, repetitions, || {
                let mut arguments = build_arguments(definition, declared, tensors, &scalars);
                definition
                    .launch_configured(gpu, kernel, &source, &mut arguments, crate::definition::Order::AfterPrevious)
                    .map(|_| ())
            })
            .map_err(|e| e.to_string())?;
        Ok(timing.median_ms)
    }
}

/// The parameter name as the `'static` string the definition's IR holds.
fn static_name(definition: &'static KernelDefinition, name: &str) -> &'static str {
    definition
        .ir()
        .ok()
        .and_then(|kernel| kernel.params.iter().find(|p| p.name == name))
        .map_or("?", |p| p.name.as_str())
}

/// The record of `report`'s winner, for [`TuneCache::store`].
pub fn winning_record(
    definition: &KernelDefinition,
    report: &TuneReport,
    gpu_name: &str,
    arch: Arch,
) -> Option<TuneRecord> {
    let (candidate, median_ms) = report.winner()?;
    Some(TuneRecord {
        kernel: report.kernel.clone(),
        source_sha256: sha256(definition.cuda_source()),
        device: gpu_name.into(),
        arch: arch.to_string(),
        shape_class: report.shape_class.clone(),
        config: candidate.config.clone(),
        median_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kernel: &str, source: &str, device: &str) -> TuneRecord {
        TuneRecord {
            kernel: kernel.into(),
            source_sha256: sha256(source),
            device: device.into(),
            arch: "sm_90".into(),
            shape_class: "M=1024v".into(),
            config: Config::default(),
            median_ms: 1.0,
        }
    }

    fn scratch(name: &str) -> TuneCache {
        let path = std::env::temp_dir().join(format!("tessera-tune-{name}-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TuneCache::new(path)
    }

    #[test]
    fn a_stored_record_is_found_for_the_same_source_device_and_shape_class() {
        let cache = scratch("found");
        cache.store(record("k", "source", "H200")).unwrap();
        assert!(matches!(cache.lookup("k", "source", "H200", Arch::SM_90, "M=1024v"), Lookup::Found(_)));
        assert_eq!(cache.lookup("k", "source", "H200", Arch::SM_90, "M=2048v"), Lookup::Missing);
    }

    #[test]
    fn a_record_for_changed_source_or_another_device_is_refused_not_used() {
        let cache = scratch("refused");
        cache.store(record("k", "source", "H200")).unwrap();
        assert!(
            matches!(cache.lookup("k", "edited source", "H200", Arch::SM_90, "M=1024v"), Lookup::Refused { reason } if reason.contains("changed"))
        );
        assert!(
            matches!(cache.lookup("k", "source", "A100", Arch::SM_80, "M=1024v"), Lookup::Refused { reason } if reason.contains("H200"))
        );
        assert!(
            matches!(cache.lookup("k", "source", "H200", Arch::SM_80, "M=1024v"), Lookup::Refused { reason } if reason.contains("sm_90"))
        );
    }

    #[test]
    fn pruned_reasons_are_counted_most_common_first() {
        let trial = |outcome: Outcome| Trial { candidate: Candidate { config: Config::default() }, outcome };
        let report = TuneReport {
            kernel: "k".into(),
            shape_class: "M=1024v".into(),
            trials: vec![
                trial(Outcome::Pruned("too much shared memory".into())),
                trial(Outcome::Measured { median_ms: 1.0 }),
                trial(Outcome::Pruned("bad warp tile".into())),
                trial(Outcome::Pruned("bad warp tile".into())),
            ],
        };
        assert_eq!(report.pruned_reasons(), vec![("bad warp tile", 2), ("too much shared memory", 1)]);
    }

    #[test]
    fn storing_again_replaces_the_record_and_a_damaged_file_reads_as_empty() {
        let cache = scratch("replace");
        cache.store(record("k", "source", "H200")).unwrap();
        cache.store(TuneRecord { median_ms: 0.5, ..record("k", "source", "H200") }).unwrap();
        assert_eq!(cache.records().len(), 1);
        assert_eq!(cache.records()[0].median_ms, 0.5);
        std::fs::write(cache.path(), "{ not json").unwrap();
        assert!(cache.records().is_empty());
        assert_eq!(cache.lookup("k", "source", "H200", Arch::SM_90, "M=1024v"), Lookup::Missing);
    }
}
