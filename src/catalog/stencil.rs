//! Stencils on a 2-D grid of f32, row-major `(R, C)`: the 5-point Laplacian through a halo
//! tile in shared memory, and red-black Gauss-Seidel for the Poisson equation −Δu = f with a
//! Dirichlet boundary (the outer ring of u never changes).
//!
//! * [`laplacian_5pt`]: each block stages its BR × BC points plus a one-point halo, a
//!   (BR + 2) × (BC + 2) tile, in shared memory, so each u value is read from global memory
//!   about once instead of five times.
//! * [`gauss_seidel_red_black`]: one launch updates every point of one colour.
//! * [`residual_partials`]: per-block partial sums of the squared residual, added up by
//!   [`reduce::sum_finish_f32`](crate::catalog::reduce::sum_finish_f32) — the two-pass
//!   design of the reduce family, so the norm does not depend on the order threads run in.
//!
//! [`solve_poisson`] iterates sweeps from Rust until the residual is small enough.

use crate::catalog::reduce::{sum_finish_f32, PARTIALS};
use crate::prelude::*;
use crate::Input;

/// out = Δu, the 5-point Laplacian (no 1/h² factor) through a halo tile; edge points copy u.
///
/// At interior points u[r−1,c] + u[r+1,c] + u[r,c−1] + u[r,c+1] − 4·u[r,c]. Points on the
/// domain's edge have no four neighbours; they copy u (so `out` is fully written and the
/// boundary is visible in it).
///
/// A block computes BR × BC points (32 × 64) with its threads as THREAD_ROWS × BC (4 × 64: a warp is
/// half a row, coalesced), each thread every THREAD_ROWS-th row. It first stages the (BR + 2) × (BC + 2)
/// halo tile in shared memory, so each u value is read from global memory about 1.1 times
/// instead of five. The loads are clamped into the grid rather than guarded, and only the
/// stores are guarded: the loop is then straight-line code whose loads all issue before the
/// first one returns. (A guarded load per element, as in the first version with an 8 × 32
/// tile, ran at 38% of the device copy.) Clamped cells outside the grid are read only by edge
/// points, which copy instead. R and C need not be multiples of the tile.
#[tile_kernel(threads = 256, vector = 1, consts(BR = 32, BC = 64, HR = 34, HC = 66, THREAD_ROWS = 4), require(HR == BR + 2, HC == BC + 2))]
pub fn laplacian_5pt(u: Global<f32, (R, C)>, out: GlobalMut<f32, (R, C)>) {
    let (bx, by) = grid(cdiv(C, BC), cdiv(R, BR));
    let tile = shared::<f32>([HR, HC]);
    let row = thread_index() / BC;
    let col = thread_index() % BC;
    let gc = min(max(bx * BC + col - 1, 0), C - 1);
    for k in 0..(HR + THREAD_ROWS - 1) / THREAD_ROWS {
        let hr = row + k * THREAD_ROWS;
        let v = u[[min(max(by * BR + hr - 1, 0), R - 1), gc]];
        if hr < HR {
            tile[[hr, col]] = v;
        }
    }
    // The two columns right of the BC the threads cover.
    if col < HC - BC {
        let right = min(bx * BC + BC + col - 1, C - 1);
        for hr in (row..HR).step_by(THREAD_ROWS) {
            tile[[hr, BC + col]] = u[[min(max(by * BR + hr - 1, 0), R - 1), right]];
        }
    }
    for k in 0..BR / THREAD_ROWS {
        let tr = row + k * THREAD_ROWS + 1;
        let tc = col + 1;
        let r = by * BR + tr - 1;
        let c = bx * BC + tc - 1;
        let centre = tile[[tr, tc]];
        let laplacian =
            tile[[tr - 1, tc]] + tile[[tr + 1, tc]] + tile[[tr, tc - 1]] + tile[[tr, tc + 1]] - 4.0 * centre;
        if r < R && c < C {
            if r == 0 || c == 0 || r == R - 1 || c == C - 1 {
                out[[r, c]] = centre;
            } else {
                out[[r, c]] = laplacian;
            }
        }
    }
}

/// One colour of a red-black Gauss-Seidel sweep for −Δu = f (`colour` 0 red, 1 black).
///
/// Every interior point with (r + c) % 2 == `colour` becomes
/// (h²·f[r,c] + u[r−1,c] + u[r+1,c] + u[r,c−1] + u[r,c+1]) / 4; the outer ring of u is the
/// Dirichlet boundary and never changes. Red then black is one sweep.
///
/// This is how Gauss-Seidel, sequential by nature (each update reads the points updated
/// just before it), is reorganised to run in parallel: colour the grid like a chessboard.
/// A point's four neighbours all have the other colour, so the updates of one colour read
/// only values no thread of this launch writes; they are independent, and running them in
/// any order — or all at once — gives exactly the result of the sequential red-black
/// ordering. (The simulator checks that under three thread orders.)
///
/// Each thread owns one point of the colour: a block covers BR rows × BW = 2·BC columns, and
/// thread (row, k) takes column 2k or 2k + 1, whichever has the colour in its row. The
/// arithmetic is spelt out — `fma(h2, f, north)`, then the other three neighbours added in
/// order, then × 0.25 (exact) — so a CPU sweep written the same way gives the same bits.
#[tile_kernel(threads = 256, vector = 1, consts(BR = 8, BC = 32, BW = 64))]
pub fn gauss_seidel_red_black(f: Global<f32, (R, C)>, u: GlobalMut<f32, (R, C)>, h2: f32, colour: i32) {
    let (bx, by) = grid(cdiv(C, BW), cdiv(R, BR));
    let r = by * BR + thread_index() / BC;
    let c = bx * BW + 2 * (thread_index() % BC) + (r + colour) % 2;
    if r > 0 && r < R - 1 && c > 0 && c < C - 1 {
        let s = fma(h2, f[[r, c]], u[[r - 1, c]]) + u[[r + 1, c]] + u[[r, c - 1]] + u[[r, c + 1]];
        u[[r, c]] = 0.25 * s;
    }
}

/// Pass 1 of ‖residual‖²: block b adds up its grid-stride share of the squared residuals.
///
/// The residual at an interior point is h²·f + u[r−1,c] + u[r+1,c] + u[r,c−1] + u[r,c+1] − 4·u,
/// that of the discrete equation scaled by h²; block b's sum of their squares goes into
/// `partials[b]`. Pass 2 is the reduce family's `sum_finish_f32`.
#[tile_kernel(threads = 256, vector = 1, consts(WARPS = 8))]
pub fn residual_partials(f: Global<f32, (R, C)>, u: Global<f32, (R, C)>, partials: GlobalMut<f32, (P,)>, h2: f32) {
    let (bx,) = grid(P);
    let warp_sums = shared::<f32>([1, WARPS]);
    let mut s = 0.0f32;
    for i in (bx * THREADS + thread_index()..R * C).step_by(P * THREADS) {
        let r = i / C;
        let c = i % C;
        if r > 0 && r < R - 1 && c > 0 && c < C - 1 {
            let neighbours = u[[r - 1, c]] + u[[r + 1, c]] + u[[r, c - 1]] + u[[r, c + 1]];
            let residual = h2 * f[[r, c]] + neighbours - 4.0 * u[[r, c]];
            s += residual * residual;
        }
    }
    let warp_total = warp_sum(s);
    if lane() == 0 {
        warp_sums[[0, warp_index()]] = warp_total;
    }
    if warp_index() == 0 {
        let mut t = 0.0f32;
        if lane() < WARPS {
            t = warp_sums[[0, lane()]];
        }
        let block_total = warp_sum(t);
        if lane() == 0 {
            partials[bx] = block_total;
        }
    }
}

/// Δu on `device` (edge points copied), into a new tensor of u's shape.
pub fn laplacian(device: &Backend, u: &DeviceTensor<f32>) -> Result<DeviceTensor<f32>, Error> {
    let mut out = device.zeros::<f32>(u.dims())?;
    laplacian_5pt::launch(device, u, &mut out)?;
    Ok(out)
}

/// One red-black sweep on `device`: the red points (`(r + c)` even), then the black ones.
pub fn red_black_sweep(device: &Backend, f: &impl Input<f32>, u: &mut DeviceTensor<f32>, h2: f32) -> Result<(), Error> {
    gauss_seidel_red_black::launch(device, f, &mut *u, h2, 0)?;
    gauss_seidel_red_black::launch(device, f, &mut *u, h2, 1)?;
    Ok(())
}

/// ‖h²·f + Σneighbours − 4u‖₂ over the interior points, on `device`, in two passes
/// ([`residual_partials`], `sum_finish_f32`).
pub fn residual_norm(device: &Backend, f: &impl Input<f32>, u: &impl Input<f32>, h2: f32) -> Result<f32, Error> {
    let mut partials = device.zeros::<f32>([PARTIALS])?;
    residual_partials::launch(device, f, u, &mut partials, h2)?;
    let mut total = device.zeros::<f32>([1])?;
    sum_finish_f32::launch(device, &partials, &mut total)?;
    Ok(device.download(&total)?[0].sqrt())
}

/// Sweeps between two residual checks in [`solve_poisson`]: a check costs about one sweep's
/// traffic plus a download, so checking every tenth sweep keeps it under a tenth of the work.
pub const CHECK_EVERY: usize = 10;

/// What [`solve_poisson`] found.
#[derive(Clone, Debug)]
pub struct PoissonSolution {
    /// u, row-major `rows × cols`, boundary ring included (zero).
    pub u: Vec<f32>,
    /// Red-black sweeps run.
    pub sweeps: usize,
    /// ‖residual‖₂ / ‖h²·f‖₂ at the last check (the absolute norm when f is zero).
    pub relative_residual: f32,
}

/// Solves −Δu = f on a `rows × cols` grid with spacing h (`h2` = h²) and u = 0 on the outer
/// ring, by red-black Gauss-Seidel sweeps on `device`, from u = 0.
///
/// Every [`CHECK_EVERY`] sweeps (and after the last) it computes the relative residual
/// ‖h²f + Σneighbours − 4u‖₂ / ‖h²f‖₂ (absolute when f is zero) and stops once it is at most
/// `tolerance`, or after `max_sweeps` sweeps, or once u has stopped changing (the residual
/// is the same, bit for bit, at two checks in a row), whichever comes first — the caller
/// reads `relative_residual` to tell which. `f` must hold `rows × cols` values (its
/// boundary ring is ignored), else `Err(LengthMismatch)`. A grid with no interior point
/// returns at once.
///
/// In f32 the iteration stalls where the updates fall below half an ulp of u: for f =
/// 2π²·sin(πx)·sin(πy) on the unit square the relative residual stops at about 4.5e-5 on
/// 65 × 65 and 1.8e-4 on 129 × 129 (it grows like the grid's side squared), so a tolerance
/// below that stops by stalling instead. Gauss-Seidel also needs O(side²) sweeps: this is the
/// textbook smoother, not a solver for large grids (multigrid uses it as one).
pub fn solve_poisson(
    device: &Backend,
    f: &[f32],
    rows: usize,
    cols: usize,
    h2: f32,
    tolerance: f32,
    max_sweeps: usize,
) -> Result<PoissonSolution, Error> {
    let f_device = device.upload(f, [rows, cols])?;
    let mut u = device.zeros::<f32>([rows, cols])?;
    if rows < 3 || cols < 3 {
        return Ok(PoissonSolution { u: device.download(&u)?, sweeps: 0, relative_residual: 0.0 });
    }
    let interior = |i: usize| {
        let (r, c) = (i / cols, i % cols);
        r > 0 && r + 1 < rows && c > 0 && c + 1 < cols
    };
    let source_norm = f
        .iter()
        .enumerate()
        .filter(|(i, _)| interior(*i))
        .map(|(_, v)| (f64::from(h2) * f64::from(*v)).powi(2))
        .sum::<f64>()
        .sqrt();
    let scale = if source_norm > 0.0 { source_norm as f32 } else { 1.0 };
    let mut relative_residual = residual_norm(device, &f_device, &u, h2)? / scale;
    let mut sweeps = 0;
    while sweeps < max_sweeps && relative_residual > tolerance {
        red_black_sweep(device, &f_device, &mut u, h2)?;
        sweeps += 1;
        if sweeps % CHECK_EVERY == 0 || sweeps == max_sweeps {
            let previous = relative_residual;
            relative_residual = residual_norm(device, &f_device, &u, h2)? / scale;
            if relative_residual == previous {
                break;
            }
        }
    }
    Ok(PoissonSolution { u: device.download(&u)?, sweeps, relative_residual })
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 3] =
    [&laplacian_5pt::KERNEL, &gauss_seidel_red_black::KERNEL, &residual_partials::KERNEL];
