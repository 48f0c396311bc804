//! One GEMM entry point: [`gemm`] picks the catalog kernel for the shape, the
//! element types and the device from measured records — the rows `tessera bench sgemm hgemm
//! --csv` wrote on each GPU, shipped in `benchmarks/gemm-table/`, or the user's own through
//! `TESSERA_GEMM_TABLE=path.csv` — and launches it (with its `tessera tune` configuration
//! where one is cached). The kernel it took is `Launched::kernel`. [`gemm_bias_gelu`] does the
//! same for C = GELU(α·A·B + bias): fused into V13, or the GEMM and a second kernel;
//! [`gemm_bias_residual`] for C = α·A·B + bias + residual. [`gemm_bt`] takes B stored [N, K],
//! as a linear layer's weight is: C = α·A·Bᵀ + β·C; [`gemm_bt_bias`], [`gemm_bt_bias_gelu`] and
//! [`gemm_bt_bias_residual`] are `F.linear`, `F.gelu(F.linear(..))` and `x + F.linear(..)` on it
//! (the entry points with an epilogue live in `fused`).
//!
//! ```
//! use tessera::gemm_dispatch::GemmTable;
//! let h200 = GemmTable::shipped().into_iter().find(|t| t.gpu == "H200").unwrap();
//! // the kernel measured fastest at the nearest measured shape, aligned like this one
//! let f32 = tessera::gemm_dispatch::GemmTypes::new(tessera::dsl::ElementType::F32, tessera::dsl::ElementType::F32);
//! let kernel = h200.choose(f32, 4096, 4096, 4096).unwrap();
//! assert!(kernel.name().starts_with("sgemm_v1"));
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::catalog::{hgemm, hgemm_bt, matrix_copy, matrix_scale, sgemm, sgemm_bt};
use crate::dsl::ElementType;
use crate::runtime::{DeviceRef, Element};
use crate::{Argument, Device, Error, Input, KernelDefinition, Launched, Output};

mod fused;
mod transposed_b;
pub use fused::{
    choose_bias_gelu, gemm_bias_gelu, gemm_bias_residual, gemm_bt_bias, gemm_bt_bias_gelu, gemm_bt_bias_residual,
    BiasGeluElement, BiasGeluPlan, BiasResidualElement, LinearElement,
};

/// One measurement: the catalog kernel `kernel` ran M×N×K at `tflops`.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmRecord {
    pub kernel: &'static str,
    pub shape: [usize; 3],
    pub tflops: f64,
}

/// The GEMM measurements of one GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmTable {
    /// What the device's name contains (`H200`, `H100`), or the file a table came from.
    pub gpu: String,
    pub records: Vec<GemmRecord>,
}

/// The rows `tessera bench sgemm hgemm --csv` measured on an H200 and on an H100.
const SHIPPED: [(&str, &str); 2] = [
    ("H200", include_str!("../benchmarks/gemm-table/h200.csv")),
    ("H100", include_str!("../benchmarks/gemm-table/h100.csv")),
];

/// Why [`gemm`] could not run. Through `?` into an [`Error`] a launch's error goes as itself,
/// the others as [`Error::Library`] ([`Error::library`] reads them back).
///
/// ```
/// use tessera::gemm_dispatch::GemmError;
/// let error = GemmError::NotMatrices { a: vec![4], b: vec![4, 4] };
/// assert!(error.to_string().contains("[4]"));
/// let carried = tessera::Error::from(error);
/// assert!(matches!(carried.library::<GemmError>(), Some(GemmError::NotMatrices { .. })));
/// assert!(matches!(GemmError::from(carried), GemmError::NotMatrices { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GemmError {
    #[error("gemm multiplies matrices: A is {a:?}, B is {b:?}")]
    NotMatrices { a: Vec<usize>, b: Vec<usize> },
    #[error("no GEMM kernel of {types} measured in the table for {device} (table: {table})")]
    NoKernel { types: GemmTypes, device: String, table: String },
    #[error(transparent)]
    Table(#[from] GemmTableError),
    #[error(transparent)]
    Launch(Error),
}

crate::library_error::library_error_conversions!(GemmError);

/// Why a table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GemmTableError {
    #[error("{source_name} line {line}: {message}")]
    Row { source_name: String, line: usize, message: String },
    #[error("{path}: {source}")]
    Read { path: String, source: std::io::Error },
}

/// What a GEMM multiplies: A's and B's element type (`input`), C's (`output`), and whether B
/// is stored transposed, [N, K] — a linear layer's weight ([`gemm_bt`]).
///
/// ```
/// use tessera::dsl::ElementType::{BF16, F32};
/// use tessera::gemm_dispatch::GemmTypes;
/// let linear = GemmTypes::new(BF16, BF16).with_b_transposed();
/// assert_eq!(linear.to_string(), "bf16 inputs (B stored [N, K]) into a bf16 C");
/// assert_eq!(GemmTypes::new(F32, F32).to_string(), "f32 inputs into an f32 C");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmTypes {
    pub input: ElementType,
    pub output: ElementType,
    pub b_transposed: bool,
}

impl GemmTypes {
    /// `input` A and B, B stored [K, N], into an `output` C.
    pub const fn new(input: ElementType, output: ElementType) -> Self {
        Self { input, output, b_transposed: false }
    }

    /// The same with B stored [N, K].
    pub const fn with_b_transposed(self) -> Self {
        Self { b_transposed: true, ..self }
    }

    /// What a catalog GEMM multiplies: its A's, its C's and its B's layout.
    ///
    /// ```
    /// use tessera::catalog::hgemm_bt;
    /// use tessera::dsl::ElementType::BF16;
    /// use tessera::gemm_dispatch::GemmTypes;
    /// let types = GemmTypes::of(&hgemm_bt::hgemm_v22_bt_bf16_to_bf16::KERNEL);
    /// assert_eq!(types, GemmTypes::new(BF16, BF16).with_b_transposed());
    /// ```
    pub fn of(kernel: &KernelDefinition) -> Self {
        Self {
            input: crate::catalog::gemm_input_type(kernel),
            output: crate::catalog::gemm_output_type(kernel),
            b_transposed: crate::catalog::gemm_b_transposed(kernel),
        }
    }

    /// (M, N, K) of A (`a_shape`) times B (`b_shape`) as these types store them, or
    /// [`GemmError::NotMatrices`].
    fn product(&self, a_shape: &[usize], b_shape: &[usize]) -> Result<[usize; 3], GemmError> {
        match (a_shape, b_shape, self.b_transposed) {
            (&[m, k], &[_, n], false) | (&[m, k], &[n, _], true) => Ok([m, n, k]),
            _ => Err(GemmError::NotMatrices { a: a_shape.to_vec(), b: b_shape.to_vec() }),
        }
    }
}

impl std::fmt::Display for GemmTypes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let layout = if self.b_transposed { " (B stored [N, K])" } else { "" };
        let article = if self.output == ElementType::F32 { "an" } else { "a" };
        write!(f, "{} inputs{layout} into {article} {} C", self.input, self.output)
    }
}

impl GemmTable {
    /// The tables shipped with tessera, one per GPU measured.
    pub fn shipped() -> Vec<GemmTable> {
        SHIPPED.iter().filter_map(|(gpu, csv)| GemmTable::from_bench_csv(gpu, csv).ok()).collect()
    }

    /// The `sgemm` and `hgemm` rows of `tessera bench --csv` output; rows of other families and
    /// of kernels no longer in the catalog are skipped.
    ///
    /// ```
    /// let csv = "family,kernel,shape,median_ms,min_ms,max_ms,value\n\
    ///            sgemm,sgemm_v6,\"M=64,N=64,K=64\",0.01,0.01,0.01,1.5\n";
    /// let table = tessera::gemm_dispatch::GemmTable::from_bench_csv("mine", csv).unwrap();
    /// assert_eq!(table.records[0].shape, [64, 64, 64]);
    /// ```
    pub fn from_bench_csv(gpu: &str, csv: &str) -> Result<GemmTable, GemmTableError> {
        let mut records = Vec::new();
        for (index, line) in csv.lines().enumerate().skip(1) {
            let fail = |message: String| GemmTableError::Row { source_name: gpu.into(), line: index + 1, message };
            // family,kernel,"M=..,N=..,K=..",median_ms,min_ms,max_ms,value,...
            let mut quoted = line.split('"');
            let (Some(head), Some(shape), Some(tail)) = (quoted.next(), quoted.next(), quoted.next()) else {
                continue;
            };
            let mut head = head.split(',');
            let (Some(family), Some(kernel)) = (head.next(), head.next()) else { continue };
            if family != "sgemm" && family != "hgemm" {
                continue;
            }
            let Some(kernel) = crate::catalog::find(kernel) else { continue };
            let value = |name: &str| {
                shape
                    .split(',')
                    .find_map(|part| part.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                    .and_then(|v| v.parse::<usize>().ok())
                    .ok_or_else(|| fail(format!("no {name} in the shape `{shape}`")))
            };
            let shape = [value("M")?, value("N")?, value("K")?];
            let tflops = tail
                .split(',')
                .nth(4)
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| fail("no value (TFLOP/s) in the 7th column".into()))?;
            records.push(GemmRecord { kernel: kernel.name(), shape, tflops });
        }
        Ok(GemmTable { gpu: gpu.into(), records })
    }

    /// The table for a device called `name`: `TESSERA_GEMM_TABLE` if set, else the shipped
    /// table whose GPU the name contains, else the H200's (the kernels differ little between
    /// Hopper parts; the launch re-checks that the device runs the kernel's target).
    /// Read once per process and device name (a call to [`gemm`] costs
    /// microseconds, not a parse).
    pub fn for_device(name: &str) -> Result<Arc<GemmTable>, GemmTableError> {
        static TABLES: Mutex<Vec<(String, Arc<GemmTable>)>> = Mutex::new(Vec::new());
        let mut tables = TABLES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, table)) = tables.iter().find(|(n, _)| n == name) {
            return Ok(table.clone());
        }
        let table = Arc::new(GemmTable::read_for_device(name)?);
        tables.push((name.to_string(), table.clone()));
        Ok(table)
    }

    fn read_for_device(name: &str) -> Result<GemmTable, GemmTableError> {
        if let Some(path) = std::env::var_os("TESSERA_GEMM_TABLE") {
            let path = path.to_string_lossy().into_owned();
            let csv =
                std::fs::read_to_string(&path).map_err(|source| GemmTableError::Read { path: path.clone(), source })?;
            return GemmTable::from_bench_csv(&path, &csv);
        }
        let shipped = GemmTable::shipped();
        let position = shipped.iter().position(|t| name.contains(&t.gpu)).unwrap_or(0);
        Ok(shipped.into_iter().nth(position).unwrap_or(GemmTable { gpu: name.into(), records: vec![] }))
    }

    /// The kernel measured fastest for `types` (A's and B's elements, C's, B's layout) at the
    /// measured shape nearest M×N×K — nearest in log scale, among shapes aligned alike (rows of A and B, K and N
    /// elements long, a multiple of 16 bytes, or not: unaligned rows narrow every access, and
    /// TMA kernels fall back to cp.async), since that changes which kernel wins. M does not
    /// touch alignment.
    ///
    /// ```
    /// use tessera::dsl::ElementType::BF16;
    /// use tessera::gemm_dispatch::{GemmTable, GemmTypes};
    /// let h200 = GemmTable::shipped().into_iter().find(|t| t.gpu == "H200").unwrap();
    /// // bf16 in, bf16 out: among the kernels that round C to bf16 at the store
    /// let kernel = h200.choose(GemmTypes::new(BF16, BF16), 4096, 4096, 4096).unwrap();
    /// assert!(kernel.name().ends_with("_bf16_to_bf16"));
    /// ```
    pub fn choose(&self, types: GemmTypes, m: usize, n: usize, k: usize) -> Option<&'static KernelDefinition> {
        self.fastest(types, m, n, k).map(|(kernel, _)| kernel)
    }

    /// [`choose`](GemmTable::choose) with the speed the kernel was measured at (TFLOP/s, at the
    /// nearest measured shape).
    fn fastest(&self, types: GemmTypes, m: usize, n: usize, k: usize) -> Option<(&'static KernelDefinition, f64)> {
        self.fastest_among(types.input, m, n, k, |kernel| runs_on(kernel, types))
    }

    /// [`choose`](GemmTable::choose) among the kernels `candidate` accepts: the one measured
    /// fastest at the nearest shape where any of them was measured.
    ///
    /// ```
    /// use tessera::gemm_dispatch::GemmTable;
    /// let h200 = GemmTable::shipped().into_iter().find(|t| t.gpu == "H200").unwrap();
    /// let f32 = tessera::dsl::ElementType::F32;
    /// let kernel = h200.choose_among(f32, 1024, 1024, 1024, |k| k == "sgemm_v12" || k == "sgemm_v13").unwrap();
    /// assert_eq!(kernel.name(), "sgemm_v12"); // stream-K: 32 tiles of 128 × 256 leave most SMs idle
    /// ```
    pub fn choose_among(
        &self,
        input: ElementType,
        m: usize,
        n: usize,
        k: usize,
        candidate: impl Fn(&str) -> bool,
    ) -> Option<&'static KernelDefinition> {
        self.fastest_among(input, m, n, k, candidate).map(|(kernel, _)| kernel)
    }

    /// [`choose_among`](GemmTable::choose_among) with the speed it was measured at.
    fn fastest_among(
        &self,
        input: ElementType,
        m: usize,
        n: usize,
        k: usize,
        candidate: impl Fn(&str) -> bool,
    ) -> Option<(&'static KernelDefinition, f64)> {
        let candidates: Vec<&GemmRecord> = self.records.iter().filter(|r| candidate(r.kernel)).collect();
        let vector = 16 / input.size_bytes().max(1) as usize;
        let aligned = |[_, n, k]: [usize; 3]| n % vector == 0 && k % vector == 0;
        let distance = |shape: [usize; 3]| {
            let log = |a: usize, b: usize| ((a.max(1) as f64).ln() - (b.max(1) as f64).ln()).abs();
            let misaligned = if aligned(shape) == aligned([m, n, k]) { 0.0 } else { 100.0 };
            log(shape[0], m) + log(shape[1], n) + log(shape[2], k) + misaligned
        };
        let nearest = candidates.iter().map(|r| r.shape).min_by(|a, b| distance(*a).total_cmp(&distance(*b)))?;
        candidates
            .into_iter()
            .filter(|r| r.shape == nearest)
            .max_by(|a, b| a.tflops.total_cmp(&b.tflops))
            .and_then(|r| Some((crate::catalog::find(r.kernel)?, r.tflops)))
    }
}

/// Whether `kernel` multiplies as `types` say: the SGEMMs for f32 into f32 (FP32 math, not
/// TF32), the HGEMMs of that type for f16 and bf16 into f32 or into their own type, and, where
/// B is stored [N, K], the `sgemm_bt` and `hgemm_bt` kernels.
fn runs_on(kernel: &str, types: GemmTypes) -> bool {
    use ElementType::{BF16, F16, F32};
    let family: &[&KernelDefinition] = match (types.b_transposed, types.input, types.output) {
        (false, F32, F32) => &sgemm::ALL,
        (false, BF16, F32) => &hgemm::ALL_BF16,
        (false, F16, F32) => &hgemm::ALL_F16,
        (false, BF16, BF16) | (false, F16, F16) => &hgemm::ALL_16_BIT_OUTPUT,
        (true, F32, F32) => &sgemm_bt::ALL,
        (true, BF16 | F16, _) => &hgemm_bt::ALL,
        _ => &[],
    };
    kernel != sgemm::sgemm_naive::NAME && family.iter().any(|k| k.name() == kernel && GemmTypes::of(k) == types)
}

/// Element types [`gemm`] multiplies: f32 (FP32), bf16 and f16 (tensor cores,
/// f32 accumulation).
pub trait GemmInput: Element {}
impl GemmInput for f32 {}
impl GemmInput for half::bf16 {}
impl GemmInput for half::f16 {}

/// Element types [`gemm`] writes C in for inputs of type `T`: f32 for every input, and a
/// 16-bit input's own type — each f32 accumulator, after α and β (C read as 16 bits,
/// widened), rounded once to nearest even at the store, what `a @ b` of two bf16 tensors gives
/// in torch, with half the bytes of C an f32 result moves.
pub trait GemmOutput<T: GemmInput>: Element {}
impl<T: GemmInput> GemmOutput<T> for f32 {}
impl GemmOutput<half::bf16> for half::bf16 {}
impl GemmOutput<half::f16> for half::f16 {}

/// C = α·A·B + β·C with the catalog kernel measured fastest for this shape, element types and
/// device (see [`GemmTable::choose`]); `Launched::kernel` names it. On the simulation the
/// H200's choice runs. C is f32, or bf16 / f16 for inputs of that type ([`GemmOutput`]).
/// With α = 0, as in BLAS, A and B are not read and C = β·C (`catalog::matrix_scale`; β = 0
/// writes zeros), so NaN in A or B does not reach C.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let a = backend.upload(&vec![1.0f32; 64 * 32], [64, 32])?;
/// let b = backend.upload(&vec![0.5f32; 32 * 48], [32, 48])?;
/// let mut c = backend.zeros::<f32>([64, 48])?;
/// let launched = tessera::gemm(&backend, &a, &b, &mut c, 1.0, 0.0)?;
/// assert!(launched.kernel.starts_with("sgemm_"));
/// assert_eq!(backend.download(&c)?[0], 16.0);
///
/// // bf16 in, bf16 out
/// let one = tessera::half::bf16::from_f32(1.0);
/// let a = backend.upload(&vec![one; 64 * 32], [64, 32])?;
/// let b = backend.upload(&vec![one; 32 * 48], [32, 48])?;
/// let mut c = backend.zeros::<tessera::half::bf16>([64, 48])?;
/// let launched = tessera::gemm(&backend, &a, &b, &mut c, 1.0, 0.0)?;
/// assert!(launched.kernel.ends_with("_bf16_to_bf16"));
/// assert_eq!(backend.download(&c)?[0].to_f32(), 32.0);
/// # Ok(()) }
/// ```
pub fn gemm<T: GemmInput, C: GemmOutput<T>>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<Launched, GemmError> {
    gemm_of(GemmTypes::new(T::TYPE, C::TYPE), device, a, b, c, alpha, beta)
}

/// Element types [`gemm_bt`] multiplies: f32 (FP32 SGEMMs that turn B's tile into k-major
/// shared memory as they copy it, `catalog::sgemm_bt`), bf16 and f16 (wgmma reads a K-major B
/// of 16-bit values through its descriptor, `catalog::hgemm_bt`).
pub trait TransposedBInput: GemmInput {}
impl TransposedBInput for f32 {}
impl TransposedBInput for half::bf16 {}
impl TransposedBInput for half::f16 {}

/// C = α·A·Bᵀ + β·C with B stored [N, K] — a linear layer's y = x·Wᵀ, its weight W stored
/// [out, in] as torch's `F.linear` takes it — on the kernel measured fastest for the shape, the
/// types and the device (`catalog::hgemm_bt` on bf16 and f16; on f32 `catalog::sgemm_bt`, or a
/// transposed copy of B and a B [K, N] SGEMM where the table says that is faster — [`choose`]
/// tells which), as [`gemm`] chooses (aligned copies of 16-bit rows included). C is f32 or the
/// inputs' type.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let one = bf16::from_f32(1.0);
/// let x = backend.upload(&vec![one; 4 * 64], [4, 64])?; // 4 rows of 64 features
/// let w = backend.upload(&vec![one; 8 * 64], [8, 64])?; // 8 outputs × 64 inputs
/// let mut y = backend.zeros::<bf16>([4, 8])?;
/// let launched = tessera::gemm_bt(&backend, &x, &w, &mut y, 1.0, 0.0)?;
/// assert!(launched.kernel.starts_with("hgemm_v") && launched.kernel.contains("_bt_"));
/// assert_eq!(backend.download(&y)?[0].to_f32(), 64.0);
///
/// // an f32 layer: the FP32 SGEMMs that turn B's tile as they copy it
/// let x = backend.upload(&vec![1.0f32; 4 * 64], [4, 64])?;
/// let w = backend.upload(&vec![0.5f32; 8 * 64], [8, 64])?;
/// let mut y = backend.zeros::<f32>([4, 8])?;
/// let launched = tessera::gemm_bt(&backend, &x, &w, &mut y, 1.0, 0.0)?;
/// assert!(launched.kernel.starts_with("sgemm_v") && launched.kernel.ends_with("_bt"));
/// assert_eq!(backend.download(&y)?[0], 32.0);
/// # Ok(()) }
/// ```
pub fn gemm_bt<T: TransposedBInput, C: GemmOutput<T>>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<Launched, GemmError> {
    gemm_of(GemmTypes::new(T::TYPE, C::TYPE).with_b_transposed(), device, a, b, c, alpha, beta)
}

/// [`gemm`] and [`gemm_bt`]: the kernel `types` and the shape choose, on aligned copies where
/// 16-bit rows are not 16-byte aligned and the work pays for them.
fn gemm_of<T: GemmInput, C: GemmOutput<T>>(
    types: GemmTypes,
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<Launched, GemmError> {
    if alpha == 0.0 {
        return scale_by_beta(types, device, a, b, c, beta);
    }
    if T::TYPE.size_bytes() == 2 && copies_to_aligned_rows(types, device, a, b, &*c)? {
        let kernel = choose(device, types, &padded_shape::<T>(a.shape()), &padded_shape::<T>(b.shape()))?;
        return gemm_through_aligned_copies_with(kernel, device, a, b, c, alpha, beta);
    }
    let kernel = choose(device, types, a.shape(), b.shape())?;
    if types.b_transposed && !GemmTypes::of(kernel).b_transposed {
        // f32 B [N, K] where a transposed copy and a B [K, N] SGEMM beat the direct kernels
        return transposed_b::gemm_on_a_transposed_copy(kernel, device, a, b, c, alpha, beta);
    }
    Ok(crate::catalog::launch_gemm(kernel, device, a, b, c, alpha, beta)?)
}

/// C = β·C, what [`gemm`] and [`gemm_bt`] compute for α = 0, as BLAS does: A and B are not
/// read (NaN or ∞ in them stays out of C, where 0·A·B would carry it), and β = 0 writes zeros
/// without reading C. The shapes are checked as for any α; no GEMM kernel is chosen, so this
/// runs where the table holds none for the types.
fn scale_by_beta<T: GemmInput, C: GemmOutput<T>>(
    types: GemmTypes,
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    beta: f32,
) -> Result<Launched, GemmError> {
    let [m, n, k] = types.product(a.shape(), b.shape())?;
    let b_k = if types.b_transposed { b.shape()[1] } else { b.shape()[0] };
    if b_k != k || c.shape() != [m, n] {
        return Err(Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() }.into());
    }
    let kernel = match C::TYPE {
        ElementType::BF16 => &matrix_scale::matrix_scale_bf16::KERNEL,
        ElementType::F16 => &matrix_scale::matrix_scale_f16::KERNEL,
        // f32, the one other type a C may have (`GemmOutput`)
        _ => &matrix_scale::matrix_scale_f32::KERNEL,
    };
    Ok(kernel.launch(device, &mut [Argument::scalar("beta", beta), Argument::output("c", c)])?)
}

/// Work (M·N·K) from which [`gemm`] moves 16-bit operands whose rows are not
/// 16-byte aligned into aligned copies: a tensor-core kernel on such rows narrows its accesses
/// to single elements and loses four fifths of its speed, while the copies cost three passes
/// over the matrices — under a tenth of the GEMM's time from here on, more than they save
/// below it.
pub const ALIGNED_COPY_WORK: usize = 1 << 27;

/// Bytes the aligned copies' rows are padded to: a 128-byte cache line.
const ROW_ALIGNMENT_BYTES: usize = 128;

/// Whether [`gemm`] takes the aligned copies for these operands: at least
/// [`ALIGNED_COPY_WORK`] multiply-adds, and a row or address of A or B not on 16 bytes — or of
/// C, when the kernel the table picks copies with cp.async (a TMA kernel narrows only its
/// stores for C).
fn copies_to_aligned_rows<T: GemmInput, C: GemmOutput<T>>(
    types: GemmTypes,
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &impl Output<C>,
) -> Result<bool, GemmError> {
    let [m, n, k] = types.product(a.shape(), b.shape())?;
    if m.saturating_mul(n).saturating_mul(k) < ALIGNED_COPY_WORK {
        return Ok(false);
    }
    if !Argument::input("a", a).rows_aligned(16) || !Argument::input("b", b).rows_aligned(16) {
        return Ok(true);
    }
    // C's rows alone do not take the copies when the kernel reads A and B by TMA (see
    // gemm_through_aligned_copies)
    let tma = choose(device, types, a.shape(), b.shape())?.ir()?.copies_by_tma();
    Ok(!tma && !Argument::input("c", c).rows_aligned(16))
}

/// C = α·A·B + β·C through copies of A and B whose rows lie a multiple of 128 bytes apart
/// (padded to whole cache lines), each a [`matrix_copy`] kernel, and the GEMM the table picks
/// for the padded shape run on them at full width. A TMA kernel writes C in place whatever its
/// rows; for a cp.async kernel an unaligned C goes through an aligned copy too (in when β ≠ 0,
/// out after). This is what [`gemm`] does for unaligned rows from
/// [`ALIGNED_COPY_WORK`] on; call it directly to take the copies at any size. The
/// [`Launched`] is the GEMM's.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let one = tessera::half::bf16::from_f32(1.0);
/// let a = backend.upload(&vec![one; 17 * 33], [17, 33])?; // rows of 66 bytes
/// let b = backend.upload(&vec![one; 33 * 9], [33, 9])?;
/// let mut c = backend.zeros::<f32>([17, 9])?;
/// let launched = tessera::gemm_dispatch::gemm_through_aligned_copies(&backend, &a, &b, &mut c, 1.0, 0.0)?;
/// // A and B are read at full width: by TMA where the kernel copies so, else 16 bytes a copy
/// assert!(launched.tma || launched.vector.get() == 8);
/// assert_eq!(backend.download(&c)?[0], 33.0);
/// # Ok(()) }
/// ```
pub fn gemm_through_aligned_copies<T: GemmInput, C: GemmOutput<T>>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<Launched, GemmError> {
    let types = GemmTypes::new(T::TYPE, C::TYPE);
    let kernel = choose(device, types, &padded_shape::<T>(a.shape()), &padded_shape::<T>(b.shape()))?;
    gemm_through_aligned_copies_with(kernel, device, a, b, c, alpha, beta)
}

/// [`gemm_through_aligned_copies`] with the GEMM kernel named rather than chosen: how a
/// catalog kernel runs on rows that are not 16-byte aligned at its full width (a TMA kernel
/// launched on such rows directly copies element by element with cp.async).
///
/// ```
/// use tessera::prelude::*;
/// use tessera::catalog::hgemm;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let one = tessera::half::bf16::from_f32(1.0);
/// let a = backend.upload(&vec![one; 17 * 33], [17, 33])?;
/// let b = backend.upload(&vec![one; 33 * 9], [33, 9])?;
/// let mut c = backend.zeros::<f32>([17, 9])?;
/// let kernel = &hgemm::hgemm_v6_bf16::KERNEL;
/// let launched = tessera::gemm_dispatch::gemm_through_aligned_copies_with(kernel, &backend, &a, &b, &mut c, 1.0, 0.0)?;
/// assert_eq!(launched.kernel, "hgemm_v6_bf16");
/// assert_eq!(launched.vector.get(), 8); // 16-byte copies, where A's 66-byte rows allow 2
/// assert_eq!(backend.download(&c)?[0], 33.0);
/// # Ok(()) }
/// ```
pub fn gemm_through_aligned_copies_with<T: GemmInput, C: GemmOutput<T>>(
    kernel: &'static KernelDefinition,
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<Launched, GemmError> {
    let (&[_, _], &[_, _], &[m, n]) = (a.shape(), b.shape(), c.shape()) else {
        return Err(Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() }.into());
    };
    let n_ld = padded_row::<C>(n);
    let (a_aligned, b_aligned) = (aligned_copy(device, a)?, aligned_copy(device, b)?);
    let (a_view, b_view) = (a_aligned.view()?, b_aligned.view()?);
    let on = device.device_ref();
    // a TMA kernel reads A and B by TMA whatever C's rows are, and stores C as narrowly as its
    // rows need; a cp.async kernel would narrow its copies for C's rows too, so C goes through
    // an aligned copy of its own there
    let c_aligned_already = Argument::output("c", &mut *c).rows_aligned(16);
    // (a kernel that stores C by TMA too, `.by_tma()`, needs C's rows aligned like A's and B's)
    let ir = kernel.ir()?;
    if c_aligned_already || (ir.copies_by_tma() && ir.tma_store_copy().is_none()) {
        return Ok(crate::catalog::launch_gemm(kernel, device, &a_view, &b_view, c, alpha, beta)?);
    }
    let mut c_aligned = on.scratch::<C>([m * n_ld])?;
    if beta != 0.0 {
        copy_matrix(device, &*c, &mut c_aligned.view_with_leading_dimension_mut(0, [m, n], n_ld)?)?;
    }
    let launched = crate::catalog::launch_gemm(
        kernel,
        device,
        &a_view,
        &b_view,
        &mut c_aligned.view_with_leading_dimension_mut(0, [m, n], n_ld)?,
        alpha,
        beta,
    )?;
    copy_matrix(device, &c_aligned.view_with_leading_dimension(0, [m, n], n_ld)?, c)?;
    Ok(launched)
}

/// A copy of a matrix whose rows lie a multiple of 128 bytes apart: the kernels read only
/// inside its view of the matrix's shape (edge tiles check each element), so the padding may
/// hold anything.
struct AlignedCopy<T: Element> {
    buffer: crate::DeviceTensor<T>,
    shape: [usize; 2],
    leading: usize,
}

impl<T: Element> AlignedCopy<T> {
    fn view(&self) -> Result<crate::runtime::TensorView<'_, T>, Error> {
        self.buffer.view_with_leading_dimension(0, self.shape, self.leading)
    }
}

/// `x` (a matrix) copied into rows padded to whole cache lines ([`padded_row`]).
fn aligned_copy<T: Element>(device: &impl Device, x: &impl Input<T>) -> Result<AlignedCopy<T>, GemmError> {
    let &[rows, cols] = x.shape() else {
        return Err(GemmError::NotMatrices { a: x.shape().to_vec(), b: vec![] });
    };
    let leading = padded_row::<T>(cols);
    let mut buffer = device.device_ref().scratch::<T>([rows * leading])?;
    copy_matrix(device, x, &mut buffer.view_with_leading_dimension_mut(0, [rows, cols], leading)?)?;
    Ok(AlignedCopy { buffer, shape: [rows, cols], leading })
}

/// The leading dimension of an aligned copy of rows of `cols` elements: whole 128-byte lines,
/// so a TMA box row starts on a line (on the H100 a 4104-element (8208-byte) leading dimension
/// ran V11 at half the speed of 4160).
fn padded_row<T>(cols: usize) -> usize {
    cols.next_multiple_of(ROW_ALIGNMENT_BYTES / std::mem::size_of::<T>())
}

/// A matrix's shape with its rows as long as an aligned copy's ([`padded_row`]): the shape the
/// table chooses the kernel for.
fn padded_shape<T>(shape: &[usize]) -> Vec<usize> {
    match shape {
        &[rows, cols] => vec![rows, padded_row::<T>(cols)],
        other => other.to_vec(),
    }
}

/// y = x through the [`matrix_copy`] kernel of the element type.
fn copy_matrix<T: Element>(device: &impl Device, x: &impl Input<T>, y: &mut impl Output<T>) -> Result<(), Error> {
    let kernel = match T::TYPE {
        ElementType::BF16 => &matrix_copy::matrix_copy_bf16::KERNEL,
        ElementType::F16 => &matrix_copy::matrix_copy_f16::KERNEL,
        _ => &matrix_copy::matrix_copy_f32::KERNEL,
    };
    kernel.launch(device, &mut [Argument::input("x", x), Argument::output("y", y)])?;
    Ok(())
}

/// The kernel [`gemm`] (or [`gemm_bt`], with `types.b_transposed`) takes on `device` for A
/// (`a_shape`) · B (`b_shape`) as `types` say. For f32 with B stored [N, K] that may be a
/// B [K, N] SGEMM: [`gemm_bt`] then runs it on a transposed copy of B, where the table says the
/// copy and that kernel together beat the fastest B [N, K] kernel.
///
/// ```
/// use tessera::dsl::ElementType::{BF16, F32};
/// use tessera::gemm_dispatch::{choose, GemmTypes};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let simulation = tessera::Backend::Simulator(tessera::Simulator::new()?);
/// let kernel = choose(&simulation, GemmTypes::new(BF16, F32), &[4096, 4096], &[4096, 4096])?;
/// assert!(kernel.name().ends_with("_bf16")); // the H200's choice on the simulation
/// # Ok(()) }
/// ```
pub fn choose(
    device: &impl Device,
    types: GemmTypes,
    a_shape: &[usize],
    b_shape: &[usize],
) -> Result<&'static KernelDefinition, GemmError> {
    choose_once(device, "gemm", types, a_shape, b_shape, |table, [m, n, k]| {
        if types == GemmTypes::new(ElementType::F32, ElementType::F32).with_b_transposed() {
            return transposed_b::choose_f32(table, m, n, k);
        }
        table.choose(types, m, n, k)
    })
}

/// `pick`'s kernel from the table of `device` for A (`a_shape`) · B (`b_shape`), remembered
/// per device, entry point (`what`), type and shape: a choice is a scan of the table's rows
/// (tens of µs of host time), which a launch of a 9 µs GEMM cannot afford every call. Where the
/// device's table holds no kernel of these types (a user's `TESSERA_GEMM_TABLE` may hold only
/// the kernels they measured), the first shipped table that does decides: the Hopper parts
/// rank the kernels alike.
fn choose_once(
    device: &impl Device,
    what: &'static str,
    types: GemmTypes,
    a_shape: &[usize],
    b_shape: &[usize],
    pick: impl Fn(&GemmTable, [usize; 3]) -> Option<&'static KernelDefinition>,
) -> Result<&'static KernelDefinition, GemmError> {
    let [m, n, k] = types.product(a_shape, b_shape)?;
    let name = match device.device_ref() {
        DeviceRef::Gpu(gpu) => gpu.name(),
        DeviceRef::Simulator(_) => "H200",
    };
    const MAX_CHOICES_REMEMBERED: usize = 1 << 14;
    type Choices = HashMap<String, HashMap<(&'static str, GemmTypes, [usize; 3]), &'static KernelDefinition>>;
    static CHOSEN: Mutex<Option<Choices>> = Mutex::new(None);
    let key = (what, types, [m, n, k]);
    if let Some(kernel) = CHOSEN.lock().ok().and_then(|chosen| chosen.as_ref()?.get(name)?.get(&key).copied()) {
        return Ok(kernel);
    }
    let table = GemmTable::for_device(name)?;
    let kernel = pick(&table, [m, n, k])
        .or_else(|| GemmTable::shipped().iter().find_map(|shipped| pick(shipped, [m, n, k])))
        .ok_or_else(|| GemmError::NoKernel { types, device: name.to_string(), table: table.gpu.clone() })?;
    if let Ok(mut chosen) = CHOSEN.lock() {
        let of_device = chosen.get_or_insert_with(HashMap::new).entry(name.to_string()).or_default();
        // a program whose shapes keep changing (sequence lengths) would grow it without end;
        // choosing again costs ~16 µs of host time
        if of_device.len() >= MAX_CHOICES_REMEMBERED {
            of_device.clear();
        }
        of_device.insert(key, kernel);
    }
    Ok(kernel)
}
