//! f32 with B stored [N, K] on a transposed copy of B: the FP32 SGEMMs turn B's tile into
//! k-major shared memory as they copy it (`catalog::sgemm_bt`), 4 bytes a copy, and lose ~8%
//! at the large shapes where a transposed copy of B costs ~1% (BENCHMARKS.md). There `gemm_bt`
//! transposes B once (`transpose_vector_64`) and runs the B [K, N] SGEMM the table takes.

use super::{GemmError, GemmTable, GemmTypes};
use crate::catalog::transpose;
use crate::dsl::ElementType;
use crate::{Argument, Device, Input, KernelDefinition, Launched, Output};

/// Bytes a second the transposed copy of B moves, read and written: `transpose_vector_64` at
/// 16384² on an H100 (96.7% of its 3.0 TB/s device copy) — an H200's is faster, so the estimate
/// errs toward the direct kernels.
const TRANSPOSED_COPY_BYTES_PER_SECOND: f64 = 2.9e12;

/// What the copy's launch and the scratch buffer add whatever B's size (seconds).
const TRANSPOSED_COPY_LAUNCH_SECONDS: f64 = 4e-6;

/// The f32 kernel for M×N×K with B stored [N, K]: the table's fastest `sgemm_bt` kernel, or its
/// fastest B [K, N] SGEMM where that kernel's measured time plus the transposed copy's is the
/// shorter. None where the table has no B [N, K] kernel.
pub(super) fn choose_f32(table: &GemmTable, m: usize, n: usize, k: usize) -> Option<&'static KernelDefinition> {
    let f32 = GemmTypes::new(ElementType::F32, ElementType::F32);
    let direct = table.fastest(f32.with_b_transposed(), m, n, k)?;
    let Some(plain) = table.fastest(f32, m, n, k) else {
        return Some(direct.0);
    };
    let work = 2.0 * m as f64 * n as f64 * k as f64;
    let seconds = |tflops: f64| work / (tflops * 1e12);
    let copy = 2.0 * 4.0 * n as f64 * k as f64 / TRANSPOSED_COPY_BYTES_PER_SECOND + TRANSPOSED_COPY_LAUNCH_SECONDS;
    Some(if seconds(plain.1) + copy < seconds(direct.1) { plain.0 } else { direct.0 })
}

/// C = α·A·Bᵀ + β·C with `kernel` (a B [K, N] GEMM) on a transposed copy of B ([N, K] → [K, N],
/// a scratch buffer). The [`Launched`] is the GEMM's.
pub(super) fn gemm_on_a_transposed_copy<T: crate::runtime::Element, C: crate::runtime::Element>(
    kernel: &'static KernelDefinition,
    device: &impl Device,
    a: &impl Input<T>,
    b: &impl Input<T>,
    c: &mut impl Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<Launched, GemmError> {
    let &[n, k] = b.shape() else {
        return Err(
            crate::Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() }.into()
        );
    };
    let mut turned = device.device_ref().scratch::<T>([k * n])?;
    transpose::transpose_vector_64::KERNEL.launch(
        device,
        &mut [
            Argument::input("x", b),
            Argument::output("y", &mut turned.view_with_leading_dimension_mut(0, [k, n], n)?),
        ],
    )?;
    let turned = turned.view_with_leading_dimension(0, [k, n], n)?;
    Ok(crate::catalog::launch_gemm(kernel, device, a, &turned, c, alpha, beta)?)
}
