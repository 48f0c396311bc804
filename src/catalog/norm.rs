//! LayerNorm and RMSNorm over the rows of a matrix, f32, bf16 or f16 data and f32 statistics: a block
//! per row (256 threads to 8192 columns, 1024 to 16384) holds the row in registers (`ITEMS`
//! elements per thread, consecutive threads on consecutive columns), reduces it with
//! `block_sum`, and writes the normalised row — x is read once and y written once.
//!
//! The variance is the mean of the squared deviations from the mean, computed from the
//! registers after the mean is known (two reductions, no cancellation of E[x²] − E[x]²).
//! 16-bit rows are converted to f32 as they are loaded and rounded once as they are stored
//! (what `torch.nn.LayerNorm` does on bf16 tensors).

use crate::prelude::*;
use crate::{Input, Output};

/// The longest row the norms hold in registers: ITEMS × THREADS.
pub const MAX_COLUMNS: usize = 16 * 1024;

// Each norm is stamped at two row lengths and three element types by a macro_rules! of its
// own: the block's threads, `ITEMS` and the element type are the only differences (`as f32`
// of an f32 renders as nothing).

macro_rules! layer_norm {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, threads = $threads:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = $vector, fixed(ITEMS = $items))]
        pub fn $name(
            x: Global<$t, (R, C)>,
            weight: Global<$t, (C,)>,
            bias: Global<$t, (C,)>,
            y: GlobalMut<$t, (R, C)>,
            eps: f32,
        ) {
            let (row,) = grid(R);
            let mut v = [0.0f32; ITEMS];
            let mut s = 0.0f32;
            // vector j of this thread is vector j·THREADS + t of the row; past the row's end
            // element by element (and the elements past it stay 0)
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let w = x.vector([row, i]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                        s += v[j * VECTOR + k];
                    }
                } else {
                    for k in 0..VECTOR {
                        if i * VECTOR + k < C {
                            v[j * VECTOR + k] = x[[row, i * VECTOR + k]] as f32;
                            s += v[j * VECTOR + k];
                        }
                    }
                }
            }
            let mean = block_sum(s) / C as f32;
            let mut squares = 0.0f32;
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                for k in 0..VECTOR {
                    if i * VECTOR + k < C {
                        let d = v[j * VECTOR + k] - mean;
                        squares += d * d;
                    }
                }
            }
            let inverse_deviation = 1.0f32 / sqrt(block_sum(squares) / C as f32 + eps);
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let wv = weight.vector(i);
                    let bv = bias.vector(i);
                    let mut out = vector(0.0 as $t);
                    for k in 0..VECTOR {
                        out[k] = ((v[j * VECTOR + k] - mean) * inverse_deviation * (wv[k] as f32) + bv[k] as f32) as $t;
                    }
                    y.vector([row, i]) = out;
                } else {
                    for k in 0..VECTOR {
                        let c = i * VECTOR + k;
                        if c < C {
                            y[[row, c]] = ((v[j * VECTOR + k] - mean) * inverse_deviation * (weight[c] as f32) + bias[c] as f32) as $t;
                        }
                    }
                }
            }
        }
    };
}
layer_norm!(
    /// y = (x − mean) / √(var + eps) · weight + bias, per row (`torch.nn.LayerNorm`), rows of up to 8192
    /// columns: a block of 256 threads per row (small blocks overlap one row's barriers with
    /// other rows' loads).
    layer_norm_f32, f32, vector = 4, threads = 256, items = 32
);
layer_norm!(
    /// [`layer_norm_f32`] for rows of up to 16384 columns: a block of 1024 threads per row.
    layer_norm_wide_f32, f32, vector = 4, threads = 1024, items = 16
);
layer_norm!(
    /// [`layer_norm_f32`] on bf16 x, weight, bias and y (f32 statistics).
    layer_norm_bf16, bf16, vector = 8, threads = 256, items = 32
);
layer_norm!(
    /// [`layer_norm_wide_f32`] on bf16 data.
    layer_norm_wide_bf16, bf16, vector = 8, threads = 1024, items = 16
);
layer_norm!(
    /// [`layer_norm_f32`] on f16 x, weight, bias and y (f32 statistics).
    layer_norm_f16, f16, vector = 8, threads = 256, items = 32
);
layer_norm!(
    /// [`layer_norm_wide_f32`] on f16 data.
    layer_norm_wide_f16, f16, vector = 8, threads = 1024, items = 16
);

macro_rules! rms_norm {
    ($(#[$doc:meta])* $name:ident, $t:ident, vector = $vector:tt, threads = $threads:tt, items = $items:tt) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = $vector, fixed(ITEMS = $items))]
        pub fn $name(x: Global<$t, (R, C)>, weight: Global<$t, (C,)>, y: GlobalMut<$t, (R, C)>, eps: f32) {
            let (row,) = grid(R);
            let mut v = [0.0f32; ITEMS];
            let mut squares = 0.0f32;
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let w = x.vector([row, i]);
                    for k in 0..VECTOR {
                        v[j * VECTOR + k] = w[k] as f32;
                        squares += v[j * VECTOR + k] * v[j * VECTOR + k];
                    }
                } else {
                    for k in 0..VECTOR {
                        if i * VECTOR + k < C {
                            v[j * VECTOR + k] = x[[row, i * VECTOR + k]] as f32;
                            squares += v[j * VECTOR + k] * v[j * VECTOR + k];
                        }
                    }
                }
            }
            let inverse_rms = 1.0f32 / sqrt(block_sum(squares) / C as f32 + eps);
            for j in 0..ITEMS / VECTOR {
                let i = j * THREADS + thread_index();
                if (i + 1) * VECTOR <= C {
                    let wv = weight.vector(i);
                    let mut out = vector(0.0 as $t);
                    for k in 0..VECTOR {
                        out[k] = (v[j * VECTOR + k] * inverse_rms * (wv[k] as f32)) as $t;
                    }
                    y.vector([row, i]) = out;
                } else {
                    for k in 0..VECTOR {
                        let c = i * VECTOR + k;
                        if c < C {
                            y[[row, c]] = (v[j * VECTOR + k] * inverse_rms * (weight[c] as f32)) as $t;
                        }
                    }
                }
            }
        }
    };
}
rms_norm!(
    /// y = x / √(mean(x²) + eps) · weight, per row (RMSNorm, as in LLaMA), rows of up to 8192
    /// columns: a block of 256 threads per row.
    rms_norm_f32, f32, vector = 4, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_f32`] for rows of up to 16384 columns: a block of 1024 threads per row.
    rms_norm_wide_f32, f32, vector = 4, threads = 1024, items = 16
);
rms_norm!(
    /// [`rms_norm_f32`] on bf16 x, weight and y (f32 statistics).
    rms_norm_bf16, bf16, vector = 8, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_wide_f32`] on bf16 data.
    rms_norm_wide_bf16, bf16, vector = 8, threads = 1024, items = 16
);
rms_norm!(
    /// [`rms_norm_f32`] on f16 x, weight and y (f32 statistics).
    rms_norm_f16, f16, vector = 8, threads = 256, items = 32
);
rms_norm!(
    /// [`rms_norm_wide_f32`] on f16 data.
    rms_norm_wide_f16, f16, vector = 8, threads = 1024, items = 16
);

/// Element types the norms take: f32, bf16 and f16 (statistics in f32 for all).
pub trait NormElement: crate::runtime::Element {
    /// The LayerNorm kernels (to 8192 columns, to 16384) and the RMSNorm kernels of this type.
    const KERNELS: [&'static crate::KernelDefinition; 4];
}

impl NormElement for f32 {
    const KERNELS: [&'static crate::KernelDefinition; 4] =
        [&layer_norm_f32::KERNEL, &layer_norm_wide_f32::KERNEL, &rms_norm_f32::KERNEL, &rms_norm_wide_f32::KERNEL];
}

impl NormElement for bf16 {
    const KERNELS: [&'static crate::KernelDefinition; 4] =
        [&layer_norm_bf16::KERNEL, &layer_norm_wide_bf16::KERNEL, &rms_norm_bf16::KERNEL, &rms_norm_wide_bf16::KERNEL];
}

impl NormElement for f16 {
    const KERNELS: [&'static crate::KernelDefinition; 4] =
        [&layer_norm_f16::KERNEL, &layer_norm_wide_f16::KERNEL, &rms_norm_f16::KERNEL, &rms_norm_wide_f16::KERNEL];
}

/// LayerNorm of every row of `x` into `y` ([`layer_norm_f32`], [`layer_norm_bf16`],
/// [`layer_norm_f16`] by element type): rows of up to [`MAX_COLUMNS`] columns.
///
/// ```ignore
/// tessera::catalog::norm::layer_norm(&backend, &x, &weight, &bias, &mut y, 1e-5)?;
/// ```
pub fn layer_norm<T: NormElement>(
    device: &impl crate::Device,
    x: &impl Input<T>,
    weight: &impl Input<T>,
    bias: &impl Input<T>,
    y: &mut impl Output<T>,
    eps: f32,
) -> Result<crate::Launched, Error> {
    let kernel = match check_columns("layer_norm", x.shape())? {
        Width::Block => T::KERNELS[0],
        Width::Wide => T::KERNELS[1],
    };
    kernel.launch(
        device,
        &mut [
            crate::Argument::input("x", x),
            crate::Argument::input("weight", weight),
            crate::Argument::input("bias", bias),
            crate::Argument::output("y", y),
            crate::Argument::scalar("eps", eps),
        ],
    )
}

/// RMSNorm of every row of `x` into `y` ([`rms_norm_f32`], [`rms_norm_bf16`],
/// [`rms_norm_f16`] by element type): rows of up to [`MAX_COLUMNS`].
pub fn rms_norm<T: NormElement>(
    device: &impl crate::Device,
    x: &impl Input<T>,
    weight: &impl Input<T>,
    y: &mut impl Output<T>,
    eps: f32,
) -> Result<crate::Launched, Error> {
    let kernel = match check_columns("rms_norm", x.shape())? {
        Width::Block => T::KERNELS[2],
        Width::Wide => T::KERNELS[3],
    };
    kernel.launch(
        device,
        &mut [
            crate::Argument::input("x", x),
            crate::Argument::input("weight", weight),
            crate::Argument::output("y", y),
            crate::Argument::scalar("eps", eps),
        ],
    )
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
pub const ALL: [&crate::KernelDefinition; 12] = [
    &layer_norm_f32::KERNEL,
    &layer_norm_wide_f32::KERNEL,
    &rms_norm_f32::KERNEL,
    &rms_norm_wide_f32::KERNEL,
    &layer_norm_bf16::KERNEL,
    &layer_norm_wide_bf16::KERNEL,
    &rms_norm_bf16::KERNEL,
    &rms_norm_wide_bf16::KERNEL,
    &layer_norm_f16::KERNEL,
    &layer_norm_wide_f16::KERNEL,
    &rms_norm_f16::KERNEL,
    &rms_norm_wide_f16::KERNEL,
];
