//! The GEMM entry points with an epilogue: C = GELU(α·A·B + bias) ([`gemm_bias_gelu`]), C =
//! α·A·B + bias + residual ([`gemm_bias_residual`]), and a linear layer's three on B stored
//! [N, K] — `F.linear` ([`gemm_bt_bias`]), its GELU ([`gemm_bt_bias_gelu`]) and its way back
//! into the residual stream ([`gemm_bt_bias_residual`]). Each takes its kernels as the GEMM
//! table ranks the plain GEMMs of the same tiles: the epilogue fused where that is as fast,
//! else the GEMM and a second kernel.

use super::{aligned_copy, choose_once, GemmError, GemmInput, GemmTypes, TransposedBInput, ALIGNED_COPY_WORK};
use crate::catalog::{epilogue, hgemm, hgemm_bt, sgemm};
use crate::dsl::ElementType;
use crate::{Argument, Device, Error, Input, KernelDefinition, Launched, Output};

/// How [`gemm_bias_gelu`] computes C = GELU(α·A·B + bias) at a shape.
#[derive(Clone, Copy)]
pub enum BiasGeluPlan {
    /// One kernel: the bias and the GELU applied to the accumulators as they are stored
    /// (`sgemm_bias_gelu`, on V13), where V13's tiles fill the GPU.
    Fused(&'static KernelDefinition),
    /// The GEMM [`gemm`](super::gemm) takes, then `bias_gelu_f32` over C: where the table's
    /// GEMM is V12's stream-K, whose split tiles leave a fused GELU to the one block that
    /// finishes each (on an H200 the fused stream-K kernel takes 85 µs at 1024³ where the two
    /// kernels take 66 µs, and is level with them within a run's spread at 4095³ and 4097³).
    Separate(&'static KernelDefinition),
}

impl std::fmt::Debug for BiasGeluPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl BiasGeluPlan {
    /// What runs, as the bench names it: `sgemm_bias_gelu`, or `sgemm_v12 + bias_gelu_f32`.
    pub fn describe(&self) -> String {
        match self {
            Self::Fused(kernel) => kernel.name().to_string(),
            Self::Separate(gemm) => format!("{} + {}", gemm.name(), epilogue::bias_gelu_f32::NAME),
        }
    }
}

/// What [`gemm_bias_gelu`] runs on `device` for A (`a_shape`) · B (`b_shape`): fused on V13
/// where the table measures V13 faster than V12's stream-K at the nearest shape, else the
/// table's GEMM and `bias_gelu_f32` after it.
///
/// ```
/// use tessera::gemm_dispatch::{choose_bias_gelu, BiasGeluPlan};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = tessera::Backend::detect() else { return Ok(()) };
/// let plan = choose_bias_gelu(&backend, &[4096, 4096], &[4096, 4096])?;
/// assert!(matches!(plan, BiasGeluPlan::Fused(kernel) if kernel.name() == "sgemm_bias_gelu"));
/// # Ok(()) }
/// ```
pub fn choose_bias_gelu(device: &impl Device, a_shape: &[usize], b_shape: &[usize]) -> Result<BiasGeluPlan, GemmError> {
    let fused = &epilogue::sgemm_bias_gelu::KERNEL;
    let kernel = fused_where_v13_leads(device, "bias_gelu", fused, a_shape, b_shape)?;
    Ok(if kernel.name() == fused.name() { BiasGeluPlan::Fused(kernel) } else { BiasGeluPlan::Separate(kernel) })
}

/// `fused` (an epilogue on SGEMM V13's tiles) where the table measures V13 faster than V12's
/// stream-K at the nearest shape, else the GEMM the table takes there (the epilogue then runs
/// as a second kernel): an f32 epilogue fused into stream-K's split tiles is left to the one
/// block that finishes each.
fn fused_where_v13_leads(
    device: &impl Device,
    what: &'static str,
    fused: &'static KernelDefinition,
    a_shape: &[usize],
    b_shape: &[usize],
) -> Result<&'static KernelDefinition, GemmError> {
    let f32 = GemmTypes::new(ElementType::F32, ElementType::F32);
    choose_once(device, what, f32, a_shape, b_shape, |table, [m, n, k]| {
        let plain = table.choose_among(ElementType::F32, m, n, k, |kernel| {
            kernel == sgemm::sgemm_v12::NAME || kernel == sgemm::sgemm_v13::NAME
        })?;
        if plain.name() == sgemm::sgemm_v13::NAME {
            Some(fused)
        } else {
            table.choose(f32, m, n, k)
        }
    })
}

/// Element types [`gemm_bias_gelu`] takes: f32 (A, B, bias and C f32; FP32 SGEMMs), bf16 and
/// f16 (A, B, bias and C of that type, f32 accumulation on tensor cores).
pub trait BiasGeluElement: GemmInput {
    /// C = GELU(α·A·B + bias) on this type, as [`gemm_bias_gelu`] describes.
    fn gemm_bias_gelu(
        device: &impl Device,
        a: &impl Input<Self>,
        b: &impl Input<Self>,
        bias: &impl Input<Self>,
        c: &mut impl Output<Self>,
        alpha: f32,
    ) -> Result<Launched, GemmError>;
}

impl BiasGeluElement for f32 {
    fn gemm_bias_gelu(
        device: &impl Device,
        a: &impl Input<f32>,
        b: &impl Input<f32>,
        bias: &impl Input<f32>,
        c: &mut impl Output<f32>,
        alpha: f32,
    ) -> Result<Launched, GemmError> {
        match choose_bias_gelu(device, a.shape(), b.shape())? {
            BiasGeluPlan::Fused(kernel) => Ok(launch_bias_gemm(kernel, device, a, b, bias, None, c, alpha)?),
            BiasGeluPlan::Separate(gemm) => {
                let launched = crate::catalog::launch_gemm(gemm, device, a, b, c, alpha, 0.0)?;
                epilogue::bias_gelu_f32::KERNEL
                    .launch(device, &mut [Argument::input("bias", bias), Argument::output("c", c)])?;
                Ok(launched)
            }
        }
    }
}

// bf16 and f16: the bias GEMMs on V11's and V20's tiles, then the GELU pass, of that type
macro_rules! sixteen_bit_bias_gelu {
    ($t:ty, $large:ident, $small:ident, $gelu:ident) => {
        impl BiasGeluElement for $t {
            fn gemm_bias_gelu(
                device: &impl Device,
                a: &impl Input<Self>,
                b: &impl Input<Self>,
                bias: &impl Input<Self>,
                c: &mut impl Output<Self>,
                alpha: f32,
            ) -> Result<Launched, GemmError> {
                let gemms = [&epilogue::$large::KERNEL, &epilogue::$small::KERNEL];
                gemm_bias_then_gelu(device, gemms, &epilogue::$gelu::KERNEL, a, b, bias, c, alpha)
            }
        }
    };
}
sixteen_bit_bias_gelu!(half::bf16, hgemm_bias_bf16, hgemm_bias_small_tiles_bf16, gelu_bf16);
sixteen_bit_bias_gelu!(half::f16, hgemm_bias_f16, hgemm_bias_small_tiles_f16, gelu_f16);

/// C = α·A·Bᵀ + bias with bf16 or f16 A, B, bias and C, B stored [N, K] — `F.linear(x, w, b)`
/// as torch stores a linear layer's weight (w [out, in]) — in one kernel: the bias added to
/// each f32 accumulator, C rounded once, on V11's tiles or V20's as the table ranks the plain
/// B [N, K] kernels of those tiles (`hgemm_bt_bias_*`; aligned copies as [`gemm_bt`](super::gemm_bt) takes).
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let one = bf16::from_f32(1.0);
/// let x = backend.upload(&vec![one; 4 * 64], [4, 64])?; // 4 rows of 64 features
/// let w = backend.upload(&vec![one; 8 * 64], [8, 64])?; // 8 outputs × 64 inputs
/// let b = backend.upload(&vec![bf16::from_f32(0.5); 8], [8])?;
/// let mut y = backend.zeros::<bf16>([4, 8])?;
/// let launched = tessera::gemm_bt_bias(&backend, &x, &w, &b, &mut y, 1.0)?;
/// assert!(launched.kernel.starts_with("hgemm_bt_bias"));
/// assert_eq!(backend.download(&y)?[0].to_f32(), 64.5);
/// # Ok(()) }
/// ```
pub fn gemm_bt_bias<T: LinearElement>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    bias_gemm_16_bit(device, "bt_bias", linear_kernels::<T>().bias, a, b, bias, None, c, alpha)
}

/// C = GELU(α·A·Bᵀ + bias) with bf16 or f16 data, B stored [N, K] — `F.gelu(F.linear(x, w, b))`,
/// a transformer MLP's first layer: [`gemm_bt_bias`] (the bias added to the f32 accumulators, C
/// rounded once), then GELU over C in place (`gelu_*`) — the rounding torch makes between its
/// two kernels, and the pair [`gemm_bias_gelu`] runs for B stored [K, N], faster than the GELU
/// fused into the wgmma GEMM. The [`Launched`] is the GEMM's.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let x = backend.upload(&vec![bf16::from_f32(1.0); 4 * 64], [4, 64])?;
/// let w = backend.upload(&vec![bf16::from_f32(0.25); 8 * 64], [8, 64])?; // 8 outputs × 64 inputs
/// let b = backend.upload(&vec![bf16::from_f32(-16.0); 8], [8])?;
/// let mut y = backend.zeros::<bf16>([4, 8])?;
/// let launched = tessera::gemm_bt_bias_gelu(&backend, &x, &w, &b, &mut y, 1.0)?;
/// assert!(launched.kernel.starts_with("hgemm_bt_bias"));
/// assert_eq!(backend.download(&y)?[0].to_f32(), 0.0); // GELU(16 − 16)
/// # Ok(()) }
/// ```
pub fn gemm_bt_bias_gelu<T: LinearElement>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    let kernels = linear_kernels::<T>();
    gemm_bias_then_gelu(device, kernels.bias, kernels.gelu, a, b, bias, c, alpha)
}

/// C = α·A·Bᵀ + bias + residual with bf16 or f16 data, B stored [N, K] — `x + F.linear(h, w, b)`,
/// a transformer block's projection back into the residual stream, with the weight as torch
/// stores it — in one kernel: the bias and the residual added to each f32 accumulator, C
/// rounded once (`hgemm_bt_bias_residual_*`, on V11's tiles or V20's as the table ranks the
/// plain B [N, K] kernels; aligned copies as [`gemm_bt`](super::gemm_bt) takes). C must not be
/// the residual. The [`Launched`] is the GEMM's.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let h = backend.upload(&vec![bf16::from_f32(1.0); 4 * 64], [4, 64])?;
/// let w = backend.upload(&vec![bf16::from_f32(0.5); 8 * 64], [8, 64])?;
/// let b = backend.upload(&vec![bf16::from_f32(0.25); 8], [8])?;
/// let x = backend.upload(&vec![bf16::from_f32(3.0); 4 * 8], [4, 8])?;
/// let mut y = backend.zeros::<bf16>([4, 8])?;
/// let launched = tessera::gemm_bt_bias_residual(&backend, &h, &w, &b, &x, &mut y, 1.0)?;
/// assert!(launched.kernel.starts_with("hgemm_bt_bias_residual"));
/// assert_eq!(backend.download(&y)?[0].to_f32(), 35.25); // 32 + 0.25 + 3
/// # Ok(()) }
/// ```
pub fn gemm_bt_bias_residual<T: LinearElement>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    residual: &impl Input<T>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    let residual = Some(Argument::input("residual", residual));
    bias_gemm_16_bit(device, "bt_bias_residual", linear_kernels::<T>().bias_residual, a, b, bias, residual, c, alpha)
}

/// Element types of the linear layers with a fused epilogue ([`gemm_bt_bias`],
/// [`gemm_bt_bias_gelu`], [`gemm_bt_bias_residual`]): bf16 and f16, on the wgmma GEMMs. An f32
/// linear layer multiplies through [`gemm_bt`](super::gemm_bt) (`catalog::sgemm_bt`).
pub trait LinearElement: TransposedBInput {}
impl LinearElement for half::bf16 {}
impl LinearElement for half::f16 {}

/// A linear layer's kernels on `T` with B stored [N, K]: the GEMMs with the bias (and the
/// residual) fused, each `[V11's tiles, V20's]`, and the in-place GELU that follows the first.
struct LinearKernels {
    bias: [&'static KernelDefinition; 2],
    bias_residual: [&'static KernelDefinition; 2],
    gelu: &'static KernelDefinition,
}

fn linear_kernels<T: LinearElement>() -> LinearKernels {
    match T::TYPE {
        ElementType::F16 => LinearKernels {
            bias: [&epilogue::hgemm_bt_bias_f16::KERNEL, &epilogue::hgemm_bt_bias_small_tiles_f16::KERNEL],
            bias_residual: [
                &epilogue::hgemm_bt_bias_residual_f16::KERNEL,
                &epilogue::hgemm_bt_bias_residual_small_tiles_f16::KERNEL,
            ],
            gelu: &epilogue::gelu_f16::KERNEL,
        },
        _ => LinearKernels {
            bias: [&epilogue::hgemm_bt_bias_bf16::KERNEL, &epilogue::hgemm_bt_bias_small_tiles_bf16::KERNEL],
            bias_residual: [
                &epilogue::hgemm_bt_bias_residual_bf16::KERNEL,
                &epilogue::hgemm_bt_bias_residual_small_tiles_bf16::KERNEL,
            ],
            gelu: &epilogue::gelu_bf16::KERNEL,
        },
    }
}

/// 16-bit C = GELU(α·A·B + bias) in two launches: the wgmma GEMM with the bias fused
/// ([`bias_gemm_16_bit`]), then GELU over C in place (`gelu`, 16 bytes a thread). The GELU fused
/// into the GEMM runs its 17 instructions a value on the two consumer warpgroups while the
/// tensor cores wait: on an H200 the pair is faster at 2048³ and 4096³ and level with the fused
/// kernel at 8192³ and 8192 × 8192 × 256 (BENCHMARKS.md).
#[allow(clippy::too_many_arguments)] // the two kernels, then the GEMM's own arguments
fn gemm_bias_then_gelu<T: GemmInput>(
    device: &impl Device,
    kernels: [&'static KernelDefinition; 2],
    gelu: &'static KernelDefinition,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    let launched = bias_gemm_16_bit(device, "bias_then_gelu", kernels, a, b, bias, None, c, alpha)?;
    gelu.launch(device, &mut [Argument::output("c", c)])?;
    Ok(launched)
}

/// A 16-bit wgmma GEMM with its epilogue fused (`[large, small]`: on V11's tiles, or on V20's
/// where the GEMM table has V20's 16-bit-output kernel ahead of V11's at the nearest measured
/// shape — for kernels of B stored [N, K], V22's ahead of V19's; on aligned copies of A
/// and B where their rows are not 16-byte aligned, from [`ALIGNED_COPY_WORK`] on), its
/// arguments (a, b, bias, the `residual` where it reads one, c, alpha).
#[allow(clippy::too_many_arguments)] // the kernels, then the GEMM's own arguments
fn bias_gemm_16_bit<T: GemmInput>(
    device: &impl Device,
    what: &'static str,
    [large, small]: [&'static KernelDefinition; 2],
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    residual: Option<Argument<'_>>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    let types = GemmTypes::of(large);
    let [m, n, k] = types.product(a.shape(), b.shape())?;
    let gemm = choose_once(device, what, types, a.shape(), b.shape(), |table, [m, n, k]| {
        // the plain kernels of these tiles that store a 16-bit C, as the fused ones do (with B
        // stored [N, K], V19's and V22's: V11's and V20's tiles storing C by TMA)
        let (large_tiles, small_tiles) = match (T::TYPE, types.b_transposed) {
            (ElementType::F16, false) => (hgemm::hgemm_v11_f16_to_f16::NAME, hgemm::hgemm_v20_f16_to_f16::NAME),
            (_, false) => (hgemm::hgemm_v11_bf16_to_bf16::NAME, hgemm::hgemm_v20_bf16_to_bf16::NAME),
            (ElementType::F16, true) => {
                (hgemm_bt::hgemm_v19_bt_f16_to_f16::NAME, hgemm_bt::hgemm_v22_bt_f16_to_f16::NAME)
            }
            (_, true) => (hgemm_bt::hgemm_v19_bt_bf16_to_bf16::NAME, hgemm_bt::hgemm_v22_bt_bf16_to_bf16::NAME),
        };
        let plain = table.choose_among(T::TYPE, m, n, k, |kernel| kernel == large_tiles || kernel == small_tiles)?;
        Some(if plain.name() == small_tiles { small } else { large })
    })?;
    let unaligned = !Argument::input("a", a).rows_aligned(16) || !Argument::input("b", b).rows_aligned(16);
    Ok(if unaligned && m.saturating_mul(n).saturating_mul(k) >= ALIGNED_COPY_WORK {
        let (a_aligned, b_aligned) = (aligned_copy(device, a)?, aligned_copy(device, b)?);
        let (a_view, b_view) = (a_aligned.view()?, b_aligned.view()?);
        launch_bias_gemm(gemm, device, &a_view, &b_view, bias, residual, c, alpha)?
    } else {
        launch_bias_gemm(gemm, device, a, b, bias, residual, c, alpha)?
    })
}

/// A GEMM with the bias (and an activation, or a residual) fused: (a, b, bias, the
/// `residual` where the kernel reads one, c, alpha).
#[allow(clippy::too_many_arguments)] // the kernel's own arguments
fn launch_bias_gemm<T: GemmInput>(
    kernel: &'static KernelDefinition,
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    residual: Option<Argument<'_>>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, Error> {
    let mut arguments = vec![Argument::input("a", a), Argument::input("b", b), Argument::input("bias", bias)];
    arguments.extend(residual);
    arguments.extend([Argument::output("c", c), Argument::scalar("alpha", alpha)]);
    kernel.launch(device, &mut arguments)
}

/// C = GELU(α·A·B + bias), the bias one value per column, on f32 or 16-bit data
/// ([`BiasGeluElement`]). f32: the fused epilogue ([`epilogue`]) on V13 where its tiles fill
/// the GPU, else the GEMM [`gemm`](super::gemm) takes and `bias_gelu_f32` after it — as
/// [`choose_bias_gelu`] decides from the GEMM table. bf16 and f16: the wgmma GEMM with the
/// bias fused (`hgemm_bias_*`, sm_90a: an H100 or H200, whose GEMM tables rank its tiles), C
/// rounded to 16 bits, then `gelu_*` over C — the rounding torch's `F.gelu(F.linear(..))`
/// makes between its two kernels. The [`Launched`] is the GEMM's.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let a = backend.upload(&vec![1.0f32; 64 * 32], [64, 32])?;
/// let b = backend.upload(&vec![0.5f32; 32 * 48], [32, 48])?;
/// let bias = backend.upload(&vec![-16.0f32; 48], [48])?;
/// let mut c = backend.zeros::<f32>([64, 48])?;
/// let launched = tessera::gemm_bias_gelu(&backend, &a, &b, &bias, &mut c, 1.0)?;
/// assert!(launched.kernel.starts_with("sgemm_"));
/// assert_eq!(backend.download(&c)?[0], 0.0); // GELU(16 − 16)
///
/// // the same on bf16 tensors
/// let h = |v: f32, n: usize| vec![tessera::half::bf16::from_f32(v); n];
/// let (a, b) = (backend.upload(&h(1.0, 64 * 32), [64, 32])?, backend.upload(&h(0.5, 32 * 48), [32, 48])?);
/// let bias = backend.upload(&h(-16.0, 48), [48])?;
/// let mut c = backend.zeros::<tessera::half::bf16>([64, 48])?;
/// let launched = tessera::gemm_bias_gelu(&backend, &a, &b, &bias, &mut c, 1.0)?;
/// assert!(launched.kernel.starts_with("hgemm_bias_"));
/// assert_eq!(backend.download(&c)?[0].to_f32(), 0.0);
/// # Ok(()) }
/// ```
pub fn gemm_bias_gelu<T: BiasGeluElement>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    T::gemm_bias_gelu(device, a, b, bias, c, alpha)
}

/// Element types [`gemm_bias_residual`] takes: f32 (FP32 SGEMMs), bf16 and f16 (f32
/// accumulation on tensor cores, C rounded once) — A, B, bias, residual and C of that type.
pub trait BiasResidualElement: GemmInput {
    /// C = α·A·B + bias + residual on this type, as [`gemm_bias_residual`] describes.
    fn gemm_bias_residual(
        device: &impl Device,
        a: &impl Input<Self>,
        b: &impl Input<Self>,
        bias: &impl Input<Self>,
        residual: &impl Input<Self>,
        c: &mut impl Output<Self>,
        alpha: f32,
    ) -> Result<Launched, GemmError>;
}

impl BiasResidualElement for f32 {
    fn gemm_bias_residual(
        device: &impl Device,
        a: &impl Input<f32>,
        b: &impl Input<f32>,
        bias: &impl Input<f32>,
        residual: &impl Input<f32>,
        c: &mut impl Output<f32>,
        alpha: f32,
    ) -> Result<Launched, GemmError> {
        let fused = &epilogue::sgemm_bias_residual::KERNEL;
        let kernel = fused_where_v13_leads(device, "bias_residual", fused, a.shape(), b.shape())?;
        if kernel.name() == fused.name() {
            let residual = Some(Argument::input("residual", residual));
            return Ok(launch_bias_gemm(kernel, device, a, b, bias, residual, c, alpha)?);
        }
        let launched = crate::catalog::launch_gemm(kernel, device, a, b, c, alpha, 0.0)?;
        epilogue::bias_residual_f32::KERNEL.launch(
            device,
            &mut [Argument::input("bias", bias), Argument::input("residual", residual), Argument::output("c", c)],
        )?;
        Ok(launched)
    }
}

// bf16 and f16: the residual fused into the wgmma GEMM on V11's or V20's tiles
macro_rules! sixteen_bit_bias_residual {
    ($t:ty, $large:ident, $small:ident) => {
        impl BiasResidualElement for $t {
            fn gemm_bias_residual(
                device: &impl Device,
                a: &impl Input<Self>,
                b: &impl Input<Self>,
                bias: &impl Input<Self>,
                residual: &impl Input<Self>,
                c: &mut impl Output<Self>,
                alpha: f32,
            ) -> Result<Launched, GemmError> {
                let kernels = [&epilogue::$large::KERNEL, &epilogue::$small::KERNEL];
                let residual = Some(Argument::input("residual", residual));
                bias_gemm_16_bit(device, "bias_residual", kernels, a, b, bias, residual, c, alpha)
            }
        }
    };
}
sixteen_bit_bias_residual!(half::bf16, hgemm_bias_residual_bf16, hgemm_bias_residual_small_tiles_bf16);
sixteen_bit_bias_residual!(half::f16, hgemm_bias_residual_f16, hgemm_bias_residual_small_tiles_f16);

/// C = α·A·B + bias + residual — a transformer's projection back into the residual stream,
/// `x + F.linear(h, w, b)` — the bias one value per column, the residual of C's shape, on f32
/// or 16-bit data ([`BiasResidualElement`]); C must not be the residual. f32: fused into SGEMM
/// V13 where its tiles fill the GPU, else the GEMM [`gemm`](super::gemm) takes and `bias_residual_f32` after
/// it. bf16 and f16: fused into the wgmma GEMM (`hgemm_bias_residual_*`, sm_90a), on V11's
/// tiles or V20's as the GEMM table ranks them, on aligned copies of A and B where their rows
/// are not 16-byte aligned; the sum in f32, C rounded once (on an H200 104–127% of torch's
/// `addmm` + `add_`, BENCHMARKS.md). The [`Launched`] is the GEMM's.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let h = |v: f32, n: usize| vec![tessera::half::bf16::from_f32(v); n];
/// let (a, b) = (backend.upload(&h(1.0, 64 * 32), [64, 32])?, backend.upload(&h(0.5, 32 * 48), [32, 48])?);
/// let bias = backend.upload(&h(-16.0, 48), [48])?;
/// let residual = backend.upload(&h(3.0, 64 * 48), [64, 48])?;
/// let mut c = backend.zeros::<tessera::half::bf16>([64, 48])?;
/// let launched = tessera::gemm_bias_residual(&backend, &a, &b, &bias, &residual, &mut c, 1.0)?;
/// assert!(launched.kernel.starts_with("hgemm_bias_residual"));
/// assert_eq!(backend.download(&c)?[0].to_f32(), 3.0); // 16 − 16 + 3
/// # Ok(()) }
/// ```
pub fn gemm_bias_residual<T: BiasResidualElement>(
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    bias: &impl Input<T>,
    residual: &impl Input<T>,
    c: &mut impl Output<T>,
    alpha: f32,
) -> Result<Launched, GemmError> {
    T::gemm_bias_residual(device, a, b, bias, residual, c, alpha)
}
