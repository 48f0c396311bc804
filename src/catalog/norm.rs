//! LayerNorm and RMSNorm over the rows of a matrix, f32 data and f32 statistics: a block
//! per row (256 threads to 8192 columns, 1024 to 16384) holds the row in registers (`ITEMS`
//! elements per thread, consecutive threads on consecutive columns), reduces it with
//! `block_sum`, and writes the normalised row — x is read once and y written once.
//!
//! The variance is the mean of the squared deviations from the mean, computed from the
//! registers after the mean is known (two reductions, no cancellation of E[x²] − E[x]²).

use crate::prelude::*;
use crate::{Input, Output};

/// The longest row the norms hold in registers: ITEMS × THREADS.
pub const MAX_COLUMNS: usize = 16 * 1024;

// Each norm is stamped at two row lengths by a macro_rules! of its own: the block's threads
// and `ITEMS` are the only differences.

macro_rules! layer_norm {
    ($(#[$doc:meta])* $name:ident, threads = $threads:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = 1, consts(ITEMS = $items))]
        pub fn $name(
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
    };
}
layer_norm!(
    /// y = (x − mean) / √(var + eps) · weight + bias, per row (`torch.nn.LayerNorm`), rows of up to 8192
    /// columns: a block of 256 threads per row (small blocks overlap one row's barriers with
    /// other rows' loads).
    layer_norm_f32, threads = 256, items = 32
);
layer_norm!(
    /// [`layer_norm_f32`] for rows of up to 16384 columns: a block of 1024 threads per row.
    layer_norm_wide_f32, threads = 1024, items = 16
);

macro_rules! rms_norm {
    ($(#[$doc:meta])* $name:ident, threads = $threads:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = 1, consts(ITEMS = $items))]
        pub fn $name(x: Global<f32, (R, C)>, weight: Global<f32, (C,)>, y: GlobalMut<f32, (R, C)>, eps: f32) {
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
    };
}
rms_norm!(
    /// y = x / √(mean(x²) + eps) · weight, per row (RMSNorm, as in LLaMA), rows of up to 8192
    /// columns: a block of 256 threads per row.
    rms_norm_f32, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_f32`] for rows of up to 16384 columns: a block of 1024 threads per row.
    rms_norm_wide_f32, threads = 1024, items = 16
);

/// LayerNorm of every row of `x` into `y` ([`layer_norm_f32`]): rows of up to
/// [`MAX_COLUMNS`] columns.
///
/// ```ignore
/// tessera::catalog::norm::layer_norm(&backend, &x, &weight, &bias, &mut y, 1e-5)?;
/// ```
pub fn layer_norm(
    device: &impl crate::Device,
    x: &impl Input<f32>,
    weight: &impl Input<f32>,
    bias: &impl Input<f32>,
    y: &mut impl Output<f32>,
    eps: f32,
) -> Result<crate::Launched, Error> {
    match check_columns("layer_norm", x.shape())? {
        Width::Block => layer_norm_f32::launch(device, x, weight, bias, y, eps),
        Width::Wide => layer_norm_wide_f32::launch(device, x, weight, bias, y, eps),
    }
}

/// RMSNorm of every row of `x` into `y` ([`rms_norm_f32`]): rows of up to [`MAX_COLUMNS`].
pub fn rms_norm(
    device: &impl crate::Device,
    x: &impl Input<f32>,
    weight: &impl Input<f32>,
    y: &mut impl Output<f32>,
    eps: f32,
) -> Result<crate::Launched, Error> {
    match check_columns("rms_norm", x.shape())? {
        Width::Block => rms_norm_f32::launch(device, x, weight, y, eps),
        Width::Wide => rms_norm_wide_f32::launch(device, x, weight, y, eps),
    }
}

/// Which kernel holds a row: 256 threads × 32 (to 8192 columns) or 1024 × 16.
enum Width {
    Block,
    Wide,
}

fn check_columns(kernel: &str, shape: &[usize]) -> Result<Width, Error> {
    match shape.last().copied().unwrap_or(0) {
        0..=8192 => Ok(Width::Block),
        8193..=MAX_COLUMNS => Ok(Width::Wide),
        columns => Err(Error::RowTooLong { kernel: kernel.into(), columns, max: MAX_COLUMNS }),
    }
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 4] =
    [&layer_norm_f32::KERNEL, &layer_norm_wide_f32::KERNEL, &rms_norm_f32::KERNEL, &rms_norm_wide_f32::KERNEL];
