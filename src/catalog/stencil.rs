//! Stencils on a 2-D grid of f32, row-major `(R, C)`: the 5-point Laplacian, and red-black
//! Gauss-Seidel for the Poisson equation −Δu = f with a Dirichlet boundary (the outer ring of
//! u never changes).
//!
//! * [`laplacian_5pt`]: each block stages its BR × BC points plus a one-point halo, a
//!   (BR + 2) × (BC + 2) tile, in shared memory, so each u value is read from global memory
//!   about once instead of five times.
//! * [`laplacian_5pt_rows`]: each thread holds a strip of THREAD_COLUMNS columns × BR + 2
//!   rows in registers, loaded once in 16-byte vectors; the neighbours across the strip's sides
//!   come from the lanes beside it. What [`laplacian`] runs.
//! * [`gauss_seidel_red_black`]: one launch updates every point of one colour of the
//!   chessboard `u`; a colour uses every other float, so half of each sector it moves is waste.
//! * [`gauss_seidel_colour`]: the same update with the colours stored apart ([`RedBlack`],
//!   [`split_red_black`], [`merge_red_black`]): a colour's points, and its neighbours in the
//!   other colour, are contiguous. What [`solve_poisson`] runs.
//! * [`residual_partials`] (chessboard) and [`residual_split_partials`] (colours apart):
//!   per-block partial sums of the squared residual, added up by
//!   [`reduce::sum_finish_f32`](crate::catalog::reduce::sum_finish_f32) — the two-pass
//!   design of the reduce family, so the norm does not depend on the order threads run in.
//!
//! [`solve_poisson`] iterates sweeps from Rust until the residual is small enough.

use crate::catalog::reduce::{sum_finish_f32, PARTIALS};
use crate::prelude::*;
use crate::{Device, Input, TensorView, TensorViewMut};

/// out = Δu, the 5-point Laplacian (no 1/h² factor) through a halo tile; edge points copy u.
///
/// At interior points `u[r−1,c] + u[r+1,c] + u[r,c−1] + u[r,c+1] − 4·u[r,c]`. Points on the
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

/// out = Δu like [`laplacian_5pt`], from registers: each thread loads a strip of
/// THREAD_COLUMNS columns × (BR + 2) rows once, in 16-byte vectors, and takes the neighbours
/// across the strip's sides from the lanes beside it (`shfl_up`, `shfl_down`).
///
/// A block covers BR rows × BC columns (8 × 1024: 256 threads of 4 columns side by side).
/// Each thread's loads (its BR + 2 rows, clamped into the grid) are straight-line code with no
/// branch between them, so all of them are in flight at once, and no barrier or shared memory
/// stands between the loads and the stores. Only lanes 0 and 31 of a warp read one more value
/// a row (the columns left and right of the warp's). The rows above and below a block are
/// read again by the blocks beside it, which run at the same time: those reads hit in L2.
/// Rows that are not a multiple of 16 bytes take VECTOR = 1 (the launch narrows it; a thread
/// then loads its 4 columns one at a time); a strip that crosses the last column loads and
/// stores element by element.
#[tile_kernel(
    threads = 256,
    vector = 4,
    consts(BR = 8, BC = 1024, THREAD_COLUMNS = 4),
    require(BC == THREADS * THREAD_COLUMNS, THREAD_COLUMNS % 4 == 0)
)]
pub fn laplacian_5pt_rows(u: Global<f32, (R, C)>, out: GlobalMut<f32, (R, C)>) {
    let (bx, by) = grid(cdiv(C, BC), cdiv(R, BR));
    // this thread's columns first_column .. first_column + THREAD_COLUMNS
    let first_column = bx * BC + thread_index() * THREAD_COLUMNS;
    let first_row = by * BR;
    // rows first_row − 1 ..= first_row + BR, row k at v[k·THREAD_COLUMNS ..]
    let mut v = [0.0f32; (BR + 2) * THREAD_COLUMNS];
    if first_column + THREAD_COLUMNS <= C {
        for k in 0..BR + 2 {
            for q in 0..THREAD_COLUMNS / VECTOR {
                let w = u.vector([min(max(first_row + k - 1, 0), R - 1), first_column / VECTOR + q]);
                for e in 0..VECTOR {
                    v[k * THREAD_COLUMNS + q * VECTOR + e] = w[e];
                }
            }
        }
    } else {
        for k in 0..BR + 2 {
            for e in 0..THREAD_COLUMNS {
                v[k * THREAD_COLUMNS + e] = u[[min(max(first_row + k - 1, 0), R - 1), min(first_column + e, C - 1)]];
            }
        }
    }
    // the columns beside the warp's: lane 0's left, lane 31's right
    let mut outside = [0.0f32; BR];
    if lane() == 0 {
        for k in 0..BR {
            outside[k] = u[[min(first_row + k, R - 1), min(max(first_column - 1, 0), C - 1)]];
        }
    }
    if lane() == 31 {
        for k in 0..BR {
            outside[k] = u[[min(first_row + k, R - 1), min(first_column + THREAD_COLUMNS, C - 1)]];
        }
    }
    for k in 0..BR {
        let r = first_row + k;
        let row = (k + 1) * THREAD_COLUMNS;
        let from_left = shfl_up(v[row + THREAD_COLUMNS - 1], 1);
        let from_right = shfl_down(v[row], 1);
        let mut result = [0.0f32; THREAD_COLUMNS];
        for e in 0..THREAD_COLUMNS {
            let c = first_column + e;
            let centre = v[row + e];
            let mut west = from_left;
            if e > 0 {
                west = v[row + e - 1];
            } else {
                if lane() == 0 {
                    west = outside[k];
                }
            }
            let mut east = from_right;
            if e < THREAD_COLUMNS - 1 {
                east = v[row + e + 1];
            } else {
                if lane() == 31 {
                    east = outside[k];
                }
            }
            result[e] = v[row - THREAD_COLUMNS + e] + v[row + THREAD_COLUMNS + e] + west + east - 4.0 * centre;
            if r == 0 || c == 0 || r == R - 1 || c == C - 1 {
                result[e] = centre;
            }
        }
        if r < R {
            if first_column + THREAD_COLUMNS <= C {
                for q in 0..THREAD_COLUMNS / VECTOR {
                    let mut w = vector(0.0f32);
                    for e in 0..VECTOR {
                        w[e] = result[q * VECTOR + e];
                    }
                    out.vector([r, first_column / VECTOR + q]) = w;
                }
            } else {
                for e in 0..THREAD_COLUMNS {
                    if first_column + e < C {
                        out[[r, first_column + e]] = result[e];
                    }
                }
            }
        }
    }
}

/// One colour of a red-black Gauss-Seidel sweep for −Δu = f (`colour` 0 red, 1 black).
///
/// Every interior point with (r + c) % 2 == `colour` becomes
/// `(h²·f[r,c] + u[r−1,c] + u[r+1,c] + u[r,c−1] + u[r,c+1]) / 4`; the outer ring of u is the
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

/// One colour of a red-black sweep with the colours stored apart ([`RedBlack`]): every
/// interior point of `own`'s colour (`colour` 0 red, 1 black) becomes
/// (h²·f + north + south + west + east) / 4 of its neighbours in `other`, the other colour.
///
/// In this layout point (r, c) of the grid is element (r, c / 2) of its colour's matrix, so
/// in row r the colour's points sit at columns c = 2j + p with p = (r + colour) % 2, and their
/// four neighbours are `other[r − 1, j]`, `other[r + 1, j]`, `other[r, j + p − 1]` and
/// `other[r, j + p]`: every load and store is contiguous, where the chessboard layout moves
/// whole sectors of which a colour uses half. A colour reads f and `other` and writes `own`
/// (it never reads `own`), each R × C / 2 floats.
///
/// The thread layout is [`laplacian_5pt_rows`]'s: a strip of THREAD_COLUMNS colour points ×
/// BR rows per thread, `other`'s rows above and below it loaded once, the neighbour across a
/// strip's side from the lane beside it. The arithmetic is the chessboard kernel's, in its
/// order, so the two layouts give the same bits. `cols` is the grid's column count (C, of
/// which the matrices hold C / 2 rounded up).
#[tile_kernel(
    threads = 256,
    vector = 4,
    consts(BR = 8, BC = 1024, THREAD_COLUMNS = 4),
    require(BC == THREADS * THREAD_COLUMNS, THREAD_COLUMNS % 4 == 0)
)]
pub fn gauss_seidel_colour(
    f: Global<f32, (R, H)>,
    other: Global<f32, (R, H)>,
    own: GlobalMut<f32, (R, H)>,
    h2: f32,
    colour: i32,
    cols: i32,
) {
    let (bx, by) = grid(cdiv(H, BC), cdiv(R, BR));
    // this thread's colour points j = first .. first + THREAD_COLUMNS of each row
    let first = bx * BC + thread_index() * THREAD_COLUMNS;
    let first_row = by * BR;
    // other's rows first_row − 1 ..= first_row + BR at o[k·THREAD_COLUMNS ..], f's rows at g[..]
    let mut o = [0.0f32; (BR + 2) * THREAD_COLUMNS];
    let mut g = [0.0f32; BR * THREAD_COLUMNS];
    if first + THREAD_COLUMNS <= H {
        for k in 0..BR + 2 {
            for q in 0..THREAD_COLUMNS / VECTOR {
                let w = other.vector([min(max(first_row + k - 1, 0), R - 1), first / VECTOR + q]);
                for e in 0..VECTOR {
                    o[k * THREAD_COLUMNS + q * VECTOR + e] = w[e];
                }
            }
        }
        for k in 0..BR {
            for q in 0..THREAD_COLUMNS / VECTOR {
                let w = f.vector([min(first_row + k, R - 1), first / VECTOR + q]);
                for e in 0..VECTOR {
                    g[k * THREAD_COLUMNS + q * VECTOR + e] = w[e];
                }
            }
        }
    } else {
        for k in 0..BR + 2 {
            for e in 0..THREAD_COLUMNS {
                o[k * THREAD_COLUMNS + e] = other[[min(max(first_row + k - 1, 0), R - 1), min(first + e, H - 1)]];
            }
        }
        for k in 0..BR {
            for e in 0..THREAD_COLUMNS {
                g[k * THREAD_COLUMNS + e] = f[[min(first_row + k, R - 1), min(first + e, H - 1)]];
            }
        }
    }
    // the points beside the warp's: lane 0's left, lane 31's right
    let mut outside = [0.0f32; BR];
    if lane() == 0 {
        for k in 0..BR {
            outside[k] = other[[min(first_row + k, R - 1), min(max(first - 1, 0), H - 1)]];
        }
    }
    if lane() == 31 {
        for k in 0..BR {
            outside[k] = other[[min(first_row + k, R - 1), min(first + THREAD_COLUMNS, H - 1)]];
        }
    }
    for k in 0..BR {
        let r = first_row + k;
        let p = (r + colour) % 2;
        let row = (k + 1) * THREAD_COLUMNS;
        let from_left = shfl_up(o[row + THREAD_COLUMNS - 1], 1);
        let from_right = shfl_down(o[row], 1);
        let mut result = [0.0f32; THREAD_COLUMNS];
        for e in 0..THREAD_COLUMNS {
            // west is other[r, j + p − 1], east other[r, j + p]
            let mut west = o[row + e];
            let mut east = o[row + e];
            if p == 0 {
                west = from_left;
                if e > 0 {
                    west = o[row + e - 1];
                } else {
                    if lane() == 0 {
                        west = outside[k];
                    }
                }
            } else {
                east = from_right;
                if e < THREAD_COLUMNS - 1 {
                    east = o[row + e + 1];
                } else {
                    if lane() == 31 {
                        east = outside[k];
                    }
                }
            }
            let s = fma(h2, g[k * THREAD_COLUMNS + e], o[row - THREAD_COLUMNS + e])
                + o[row + THREAD_COLUMNS + e]
                + west
                + east;
            result[e] = 0.25 * s;
        }
        // a strip of interior points is stored in vectors; one that holds an edge point (or
        // points past the row's end) element by element, the edge left as it is
        let first_column = 2 * first + p;
        if r > 0 && r < R - 1 {
            if first_column > 0 && first_column + 2 * (THREAD_COLUMNS - 1) < cols - 1 {
                for q in 0..THREAD_COLUMNS / VECTOR {
                    let mut w = vector(0.0f32);
                    for e in 0..VECTOR {
                        w[e] = result[q * VECTOR + e];
                    }
                    own.vector([r, first / VECTOR + q]) = w;
                }
            } else {
                for e in 0..THREAD_COLUMNS {
                    let c = first_column + 2 * e;
                    if c > 0 && c < cols - 1 {
                        own[[r, first + e]] = result[e];
                    }
                }
            }
        }
    }
}

/// The chessboard `u` (R × C) stored apart as its red ((r + c) even) and black points, each
/// R × H with H = ⌈C / 2⌉: point (r, c) goes to element (r, c / 2) of its colour; a colour's
/// element past the end of a row (odd C) is 0.
#[tile_kernel(threads = 256, vector = 1, consts(BC = 256), require(BC == THREADS))]
pub fn split_red_black(u: Global<f32, (R, C)>, red: GlobalMut<f32, (R, H)>, black: GlobalMut<f32, (R, H)>) {
    let (bx, by) = grid(cdiv(H, BC), R);
    let j = bx * BC + thread_index();
    if j < H {
        let red_column = 2 * j + by % 2;
        let black_column = 2 * j + 1 - by % 2;
        let mut red_value = 0.0f32;
        let mut black_value = 0.0f32;
        if red_column < C {
            red_value = u[[by, red_column]];
        }
        if black_column < C {
            black_value = u[[by, black_column]];
        }
        red[[by, j]] = red_value;
        black[[by, j]] = black_value;
    }
}

/// The inverse of [`split_red_black`]: the chessboard `u` from its red and black points.
/// Thread j of row r reads element j of both colours and writes the pair of columns 2j, 2j + 1
/// (red first in even rows, black first in odd ones), so every load and store of a warp is one
/// contiguous run.
#[tile_kernel(threads = 256, vector = 1, consts(BC = 256), require(BC == THREADS))]
pub fn merge_red_black(red: Global<f32, (R, H)>, black: Global<f32, (R, H)>, u: GlobalMut<f32, (R, C)>) {
    let (bx, by) = grid(cdiv(H, BC), R);
    let j = bx * BC + thread_index();
    if j < H {
        let mut even_column = red[[by, j]];
        let mut odd_column = black[[by, j]];
        if by % 2 == 1 {
            even_column = black[[by, j]];
            odd_column = red[[by, j]];
        }
        u[[by, 2 * j]] = even_column;
        if 2 * j + 1 < C {
            u[[by, 2 * j + 1]] = odd_column;
        }
    }
}

/// Pass 1 of ‖residual‖²: block b adds up its grid-stride share of the squared residuals.
///
/// The residual at an interior point is h²·f + u[r−1,c] + u[r+1,c] + u[r,c−1] + u[r,c+1] − 4·u,
/// that of the discrete equation scaled by h²; block b's sum of their squares goes into
/// `partials[b]`. Pass 2 is the reduce family's `sum_finish_f32`.
#[tile_kernel(threads = 256, vector = 1, consts(WARPS = 8), require(WARPS * 32 == THREADS))]
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

/// Pass 1 of ‖residual‖² on colours stored apart ([`RedBlack`]): block b adds up the squared
/// residuals of its grid-stride share of the points (r, j), the red one and the black one of
/// each, into `partials[b]`.
///
/// The residual is [`residual_partials`]'s, its neighbours named as in [`gauss_seidel_colour`]
/// and added in the same order. `cols` is the grid's column count.
#[tile_kernel(threads = 256, vector = 1)]
pub fn residual_split_partials(
    f_red: Global<f32, (R, H)>,
    f_black: Global<f32, (R, H)>,
    red: Global<f32, (R, H)>,
    black: Global<f32, (R, H)>,
    partials: GlobalMut<f32, (P,)>,
    h2: f32,
    cols: i32,
) {
    let (bx,) = grid(P);
    let mut s = 0.0f32;
    for i in (bx * THREADS + thread_index()..R * H).step_by(P * THREADS) {
        let r = i / H;
        let j = i % H;
        // the red point at column 2j + r % 2, its neighbours black
        let p = r % 2;
        let c = 2 * j + p;
        if r > 0 && r < R - 1 && c > 0 && c < cols - 1 {
            let neighbours = black[[r - 1, j]] + black[[r + 1, j]] + black[[r, j + p - 1]] + black[[r, j + p]];
            let residual = h2 * f_red[[r, j]] + neighbours - 4.0 * red[[r, j]];
            s += residual * residual;
        }
        // the black point at column 2j + 1 − r % 2, its neighbours red
        let q = 1 - p;
        let d = 2 * j + q;
        if r > 0 && r < R - 1 && d > 0 && d < cols - 1 {
            let neighbours = red[[r - 1, j]] + red[[r + 1, j]] + red[[r, j + q - 1]] + red[[r, j + q]];
            let residual = h2 * f_black[[r, j]] + neighbours - 4.0 * black[[r, j]];
            s += residual * residual;
        }
    }
    let total = block_sum(s);
    if thread_index() == 0 {
        partials[bx] = total;
    }
}

/// Δu on `device` (edge points copied), into a new tensor of u's shape.
pub fn laplacian(device: &Backend, u: &DeviceTensor<f32>) -> Result<DeviceTensor<f32>, Error> {
    let mut out = device.zeros::<f32>(u.dims())?;
    laplacian_5pt_rows::launch(device, u, &mut out)?;
    Ok(out)
}

/// A grid of f32 stored as its two colours apart: `red` holds the points (r, c) with r + c
/// even, `black` the others, each `rows × ⌈cols / 2⌉` with point (r, c) at (r, c / 2).
///
/// One colour of a Gauss-Seidel sweep then reads and writes contiguous memory
/// ([`gauss_seidel_colour`]), where the chessboard layout moves whole 32-byte sectors of which
/// it uses half. Each colour's rows lie [`pitch`](Self::pitch) elements apart — ⌈cols / 2⌉
/// rounded up to 16 bytes — so that every row starts aligned and the sweep moves 16-byte
/// vectors whatever the grid's width (with 4097 points a colour row, unpadded rows would start
/// on every 4-byte boundary and the sweep would move single floats).
///
/// ```no_run
/// use tessera::catalog::stencil::RedBlack;
/// use tessera::Backend;
/// let device = Backend::detect()?; // GPU 0, else the CPU simulation
/// let u = device.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?;
/// let colours = RedBlack::split(&device, &u)?;
/// assert_eq!(device.download(&colours.red()?)?, [1.0, 3.0, 5.0, 0.0]); // (0,0) (0,2) | (1,1)
/// assert_eq!(colours.pitch(), 4); // 2 points a colour row, padded to 16 bytes
/// assert_eq!(device.download(&colours.merge(&device)?)?, device.download(&u)?);
/// # Ok::<(), tessera::Error>(())
/// ```
#[derive(Debug)]
pub struct RedBlack {
    /// The points with r + c even, `rows × pitch` (the columns past ⌈cols / 2⌉ zero).
    red: DeviceTensor<f32>,
    /// The points with r + c odd, laid out as `red`.
    black: DeviceTensor<f32>,
    rows: usize,
    cols: usize,
}

impl RedBlack {
    /// Both colours of the grid `u`, on `device` ([`split_red_black`]).
    pub fn split(device: &impl Device, u: &impl Input<f32>) -> Result<Self, Error> {
        let (rows, cols) = grid_dims(u.shape())?;
        let mut colours = Self::zeros(device, rows, cols)?;
        let (mut red, mut black) = colours.colours_mut()?;
        split_red_black::launch(device, u, &mut red, &mut black)?;
        Ok(colours)
    }

    /// Both colours zero: the grid u = 0 of `rows × cols` points.
    pub fn zeros(device: &impl Device, rows: usize, cols: usize) -> Result<Self, Error> {
        let (storage, device) = ([rows, Self::pitch_for(cols)], device.device_ref());
        Ok(Self { red: device.zeros::<f32>(storage)?, black: device.zeros::<f32>(storage)?, rows, cols })
    }

    /// The grid as one `rows × cols` tensor again ([`merge_red_black`]).
    pub fn merge(&self, device: &impl Device) -> Result<DeviceTensor<f32>, Error> {
        let mut u = device.device_ref().zeros::<f32>([self.rows, self.cols])?;
        merge_red_black::launch(device, &self.red()?, &self.black()?, &mut u)?;
        Ok(u)
    }

    /// The grid's rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The grid's columns (a colour holds ⌈cols / 2⌉ points a row).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Elements from the start of one colour row to the next: ⌈cols / 2⌉ rounded up to a
    /// multiple of 4 floats (16 bytes).
    pub fn pitch(&self) -> usize {
        Self::pitch_for(self.cols)
    }

    fn pitch_for(cols: usize) -> usize {
        cols.div_ceil(2).next_multiple_of(4)
    }

    /// The red points ((r + c) even), `rows × ⌈cols / 2⌉`, rows [`pitch`](Self::pitch) apart.
    pub fn red(&self) -> Result<TensorView<'_, f32>, Error> {
        self.red.view_with_leading_dimension(0, [self.rows, self.cols.div_ceil(2)], self.pitch())
    }

    /// The black points ((r + c) odd), laid out as [`red`](Self::red).
    pub fn black(&self) -> Result<TensorView<'_, f32>, Error> {
        self.black.view_with_leading_dimension(0, [self.rows, self.cols.div_ceil(2)], self.pitch())
    }

    /// Both colours, writable: (red, black).
    pub fn colours_mut(&mut self) -> Result<(TensorViewMut<'_, f32>, TensorViewMut<'_, f32>), Error> {
        let (dims, pitch) = ([self.rows, self.cols.div_ceil(2)], self.pitch());
        Ok((
            self.red.view_with_leading_dimension_mut(0, dims, pitch)?,
            self.black.view_with_leading_dimension_mut(0, dims, pitch)?,
        ))
    }
}

/// (rows, cols) of a grid, or why it is not one.
fn grid_dims(dims: &[usize]) -> Result<(usize, usize), Error> {
    match dims {
        [rows, cols] => Ok((*rows, *cols)),
        _ => Err(Error::NotAMatrix { what: "a stencil grid", dims: dims.to_vec() }),
    }
}

/// The grid's column count as the kernels' `cols` scalar.
fn column_count(u: &RedBlack) -> Result<i32, Error> {
    i32::try_from(u.cols).map_err(|_| Error::ScalarOutOfRange { what: "the grid's column count", value: u.cols })
}

/// The two colours of a red-black grid: red points have r + c even, black ones odd.
///
/// ```
/// use tessera::catalog::stencil::Colour;
/// assert_eq!((Colour::Red.index(), Colour::Black.index()), (0, 1)); // the kernels' `colour`
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    /// The points with r + c even.
    Red,
    /// The points with r + c odd.
    Black,
}

impl Colour {
    /// The kernels' `colour` scalar: 0 red, 1 black.
    pub fn index(self) -> i32 {
        match self {
            Colour::Red => 0,
            Colour::Black => 1,
        }
    }
}

/// One colour of a Gauss-Seidel sweep on colours stored apart: the points of that colour of `u`
/// from the other colour's and `f`'s ([`gauss_seidel_colour`]).
///
/// ```no_run
/// use tessera::catalog::stencil::{self, Colour, RedBlack};
/// use tessera::Backend;
/// let device = Backend::detect()?;
/// let f = RedBlack::zeros(&device, 8191, 8194)?;
/// let mut u = RedBlack::zeros(&device, 8191, 8194)?;
/// stencil::sweep_colour(&device, &f, &mut u, 1e-8, Colour::Red)?;
/// # Ok::<(), tessera::Error>(())
/// ```
pub fn sweep_colour(
    device: &impl Device,
    f: &RedBlack,
    u: &mut RedBlack,
    h2: f32,
    colour: Colour,
) -> Result<Launched, Error> {
    let cols = column_count(u)?;
    let (mut red, mut black) = u.colours_mut()?;
    match colour {
        Colour::Red => gauss_seidel_colour::launch(device, &f.red()?, &black, &mut red, h2, colour.index(), cols),
        Colour::Black => gauss_seidel_colour::launch(device, &f.black()?, &red, &mut black, h2, colour.index(), cols),
    }
}

/// One red-black sweep on colours stored apart: the red points, then the black ones
/// ([`sweep_colour`]); the same bits as [`red_black_sweep`] on the chessboard.
pub fn red_black_sweep_split(device: &Backend, f: &RedBlack, u: &mut RedBlack, h2: f32) -> Result<(), Error> {
    sweep_colour(device, f, u, h2, Colour::Red)?;
    sweep_colour(device, f, u, h2, Colour::Black)?;
    Ok(())
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
    let (mut partials, mut total) = (device.zeros::<f32>([PARTIALS])?, device.zeros::<f32>([1])?);
    residual_partials::launch(device, f, u, &mut partials, h2)?;
    sum_finish_f32::launch_dependent(device, &partials, &mut total)?;
    Ok(device.download(&total)?[0].sqrt())
}

/// [`residual_norm`] of a grid whose colours are stored apart ([`residual_split_partials`],
/// `sum_finish_f32`).
pub fn residual_norm_split(device: &Backend, f: &RedBlack, u: &RedBlack, h2: f32) -> Result<f32, Error> {
    let (mut partials, mut total) = (device.zeros::<f32>([PARTIALS])?, device.zeros::<f32>([1])?);
    let cols = column_count(u)?;
    residual_split_partials::launch(device, &f.red()?, &f.black()?, &u.red()?, &u.black()?, &mut partials, h2, cols)?;
    sum_finish_f32::launch_dependent(device, &partials, &mut total)?;
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
/// ring, by red-black Gauss-Seidel sweeps on `device`, from u = 0, with the colours stored
/// apart ([`RedBlack`], [`red_black_sweep_split`]).
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
    let f_colours = RedBlack::split(device, &device.upload(f, [rows, cols])?)?;
    let mut u = RedBlack::zeros(device, rows, cols)?;
    if rows < 3 || cols < 3 {
        return Ok(PoissonSolution { u: vec![0.0; rows * cols], sweeps: 0, relative_residual: 0.0 });
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
    let mut relative_residual = residual_norm_split(device, &f_colours, &u, h2)? / scale;
    let mut sweeps = 0;
    while sweeps < max_sweeps && relative_residual > tolerance {
        red_black_sweep_split(device, &f_colours, &mut u, h2)?;
        sweeps += 1;
        if sweeps % CHECK_EVERY == 0 || sweeps == max_sweeps {
            let previous = relative_residual;
            relative_residual = residual_norm_split(device, &f_colours, &u, h2)? / scale;
            if relative_residual == previous {
                break;
            }
        }
    }
    Ok(PoissonSolution { u: device.download(&u.merge(device)?)?, sweeps, relative_residual })
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 8] = [
    &laplacian_5pt::KERNEL,
    &laplacian_5pt_rows::KERNEL,
    &gauss_seidel_red_black::KERNEL,
    &gauss_seidel_colour::KERNEL,
    &split_red_black::KERNEL,
    &merge_red_black::KERNEL,
    &residual_partials::KERNEL,
    &residual_split_partials::KERNEL,
];
