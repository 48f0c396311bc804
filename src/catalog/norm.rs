//! LayerNorm and RMSNorm over the rows of a matrix, f32 data and f32 statistics: a block
//! of 1024 threads per row holds the row in registers (`ITEMS` elements per thread,
//! consecutive threads on consecutive columns), reduces it with `block_sum`, and writes the
//! normalised row — x is read once and y written once.
//!
//! The variance is the mean of the squared deviations from the mean, computed from the
//! registers after the mean is known (two reductions, no cancellation of E[x²] − E[x]²).

use crate::prelude::*;
use crate::{Backend, Input, Output};

/// The longest row the norms hold in registers: ITEMS × THREADS.
pub const MAX_COLUMNS: usize = 16 * 1024;

/// y = (x − mean) / √(var + eps) · weight + bias, per row (`torch.nn.LayerNorm`).
#[tile_kernel(threads = 1024, vector = 1, consts(ITEMS = 16))]
pub fn layer_norm_f32(
    x: Global<f32, (R, C)>,
    weight: Global<f32, (C,)>,
    bias: Global<f32, (C,)>,
    y: GlobalMut<f32, (R, C)>,
    eps: f32,
) {
    let (row,) = grid(R);
    let mut v = [0.0f32; ITEMS];
    let mut s = 0.0f32;
    for j in 0..ITEMS {
        let c = j * THREADS + thread_index();
        if c < C {
            v[j] = x[[row, c]];
            s += v[j];
        }
    }
    let mean = block_sum(s) / C as f32;
    let mut squares = 0.0f32;
    for j in 0..ITEMS {
        let c = j * THREADS + thread_index();
        if c < C {
            let d = v[j] - mean;
            squares += d * d;
        }
    }
    let inverse_deviation = 1.0f32 / sqrt(block_sum(squares) / C as f32 + eps);
    for j in 0..ITEMS {
        let c = j * THREADS + thread_index();
        if c < C {
            y[[row, c]] = (v[j] - mean) * inverse_deviation * weight[c] + bias[c];
        }
    }
}

/// y = x / √(mean(x²) + eps) · weight, per row (RMSNorm, as in LLaMA).
#[tile_kernel(threads = 1024, vector = 1, consts(ITEMS = 16))]
pub fn rms_norm_f32(x: Global<f32, (R, C)>, weight: Global<f32, (C,)>, y: GlobalMut<f32, (R, C)>, eps: f32) {
    let (row,) = grid(R);
    let mut v = [0.0f32; ITEMS];
    let mut squares = 0.0f32;
    for j in 0..ITEMS {
        let c = j * THREADS + thread_index();
        if c < C {
            v[j] = x[[row, c]];
            squares += v[j] * v[j];
        }
    }
    let inverse_rms = 1.0f32 / sqrt(block_sum(squares) / C as f32 + eps);
    for j in 0..ITEMS {
        let c = j * THREADS + thread_index();
        if c < C {
            y[[row, c]] = v[j] * inverse_rms * weight[c];
        }
    }
}

/// LayerNorm of every row of `x` into `y` ([`layer_norm_f32`]): rows of up to
/// [`MAX_COLUMNS`] columns.
///
/// ```ignore
/// tessera::catalog::norm::layer_norm(&backend, &x, &weight, &bias, &mut y, 1e-5)?;
/// ```
pub fn layer_norm(
    device: &Backend,
    x: &impl Input<f32>,
    weight: &impl Input<f32>,
    bias: &impl Input<f32>,
    y: &mut impl Output<f32>,
    eps: f32,
) -> Result<crate::Launched, Error> {
    check_columns(layer_norm_f32::KERNEL.name(), x.shape())?;
    layer_norm_f32::launch(device, x, weight, bias, y, eps)
}

/// RMSNorm of every row of `x` into `y` ([`rms_norm_f32`]): rows of up to [`MAX_COLUMNS`].
pub fn rms_norm(
    device: &Backend,
    x: &impl Input<f32>,
    weight: &impl Input<f32>,
    y: &mut impl Output<f32>,
    eps: f32,
) -> Result<crate::Launched, Error> {
    check_columns(rms_norm_f32::KERNEL.name(), x.shape())?;
    rms_norm_f32::launch(device, x, weight, y, eps)
}

fn check_columns(kernel: &str, shape: &[usize]) -> Result<(), Error> {
    let columns = shape.last().copied().unwrap_or(0);
    if columns > MAX_COLUMNS {
        return Err(Error::RowTooLong { kernel: kernel.into(), columns, max: MAX_COLUMNS });
    }
    Ok(())
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 2] = [&layer_norm_f32::KERNEL, &rms_norm_f32::KERNEL];
