//! The stencil family's numbers against CPU references, on the CPU simulation of the emitted
//! CUDA C (three thread orders) and, ignored without one, on a GPU:
//!
//! * both 5-point Laplacians against an f64 one at shapes that are not multiples of their
//!   tiles (37 × 53, 1 × 5, 3 × 3, 9 × 33, 11 × 2053: rows of an odd length take single-float
//!   accesses) and at 64 × 64 and 9 × 2100 (16-byte rows, several warps and blocks across a
//!   row), every element written (the output starts poisoned);
//! * one red-black sweep against a CPU sweep doing the same f32 operations in the same order:
//!   bit for bit, on the chessboard and with the colours stored apart (split, swept, merged);
//! * `gauss_seidel_colour` on dense colour matrices whose rows are not 16-byte aligned (single
//!   floats) equal, bit for bit, to the same colour on `RedBlack`'s padded rows (vectors);
//! * the colours stored apart: split and merged back exactly, and the residual norm of the
//!   split grid equal to the chessboard's;
//! * `solve_poisson` against a CPU red-black solver in f64 stopped at the same relative
//!   residual, with f = 1 on 33 × 47 and f = 2π²·sin(πx)·sin(πy) on 33 × 33 (65 × 65 on a
//!   GPU), whose continuous solution sin(πx)·sin(πy) it must also match to the
//!   discretisation error; and, given a tolerance below the f32 floor, stopping once u
//!   stops changing.

mod common;

use common::{random_floats, POISON};
use tessera::catalog::stencil::{self, gauss_seidel_red_black, laplacian_5pt, laplacian_5pt_rows, RedBlack};
use tessera::Backend;

on_both_backends!(
    the_laplacian_matches_an_f64_reference_at_tail_shapes,
    the_register_laplacian_matches_an_f64_reference_at_tail_shapes,
    one_red_black_sweep_equals_a_cpu_sweep_bit_for_bit,
    a_sweep_on_the_colours_stored_apart_equals_a_cpu_sweep_bit_for_bit,
    a_colour_on_unpadded_rows_gives_the_padded_layouts_bits,
    splitting_the_colours_and_merging_them_back_is_exact,
    the_split_residual_norm_equals_the_chessboard_one,
    solve_poisson_with_f_one_matches_an_f64_red_black_solver,
    solve_poisson_matches_a_manufactured_solution_and_an_f64_solver,
    solve_poisson_stops_when_f32_stalls_above_an_unreachable_tolerance
);

fn laplacian_reference(u: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let at = |r: usize, c: usize| f64::from(u[r * cols + c]);
    (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            if r == 0 || c == 0 || r == rows - 1 || c == cols - 1 {
                at(r, c)
            } else {
                at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1) - 4.0 * at(r, c)
            }
        })
        .collect()
}

fn the_laplacian_matches_an_f64_reference_at_tail_shapes(backend: &Backend) {
    let shapes = [(37, 53), (64, 64), (1, 5), (3, 3), (9, 33)];
    check_laplacian(backend, &shapes, |u, out| laplacian_5pt::launch(backend, u, out).map(|_| ()));
}

fn the_register_laplacian_matches_an_f64_reference_at_tail_shapes(backend: &Backend) {
    let shapes = [(37, 53), (64, 64), (1, 5), (3, 3), (9, 33), (9, 2100), (11, 2053), (17, 1028)];
    check_laplacian(backend, &shapes, |u, out| laplacian_5pt_rows::launch(backend, u, out).map(|_| ()));
}

fn check_laplacian(
    backend: &Backend,
    shapes: &[(usize, usize)],
    launch: impl Fn(&tessera::DeviceTensor<f32>, &mut tessera::DeviceTensor<f32>) -> Result<(), tessera::Error>,
) {
    for &(rows, cols) in shapes {
        let host = random_floats(rows * cols, 17 + (rows * cols) as u64);
        let u = backend.upload(&host, [rows, cols]).unwrap();
        let mut out = backend.filled([rows, cols], f32::from_bits(POISON)).unwrap();
        launch(&u, &mut out).unwrap();
        let got = backend.download(&out).unwrap();
        let want = laplacian_reference(&host, rows, cols);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            // five terms of magnitude ≤ 1 (4u counted as 4): a few roundings of at most 8
            let tolerance = 8.0 * 8.0 * f64::from(f32::EPSILON);
            assert!(
                (f64::from(*g) - w).abs() <= tolerance,
                "{rows} × {cols}, point ({}, {}): {g} (bits {:#x}), f64 reference {w}",
                i / cols,
                i % cols,
                g.to_bits()
            );
        }
    }
}

/// One colour of the sweep on the CPU, in the kernel's f32 operations and order.
fn cpu_colour_f32(f: &[f32], u: &mut [f32], rows: usize, cols: usize, h2: f32, colour: usize) {
    for r in 1..rows.saturating_sub(1) {
        for c in 1..cols.saturating_sub(1) {
            if (r + c) % 2 == colour {
                let s = h2.mul_add(f[r * cols + c], u[(r - 1) * cols + c])
                    + u[(r + 1) * cols + c]
                    + u[r * cols + c - 1]
                    + u[r * cols + c + 1];
                u[r * cols + c] = 0.25 * s;
            }
        }
    }
}

fn one_red_black_sweep_equals_a_cpu_sweep_bit_for_bit(backend: &Backend) {
    for (rows, cols) in [(37, 53), (64, 64), (3, 3), (10, 129)] {
        let host_f = random_floats(rows * cols, 23 + rows as u64);
        let host_u = random_floats(rows * cols, 29 + cols as u64);
        let h2 = 0.01f32;
        let f = backend.upload(&host_f, [rows, cols]).unwrap();
        let mut u = backend.upload(&host_u, [rows, cols]).unwrap();
        let mut want = host_u.clone();
        for colour in [0, 1] {
            gauss_seidel_red_black::launch(backend, &f, &mut u, h2, colour as i32).unwrap();
            cpu_colour_f32(&host_f, &mut want, rows, cols, h2, colour);
            let got = backend.download(&u).unwrap();
            assert_same_bits(&got, &want, cols, &format!("{rows} × {cols}, after colour {colour}"));
        }
    }
}

/// 9 × 2100 has 1050 points of a colour a row: two blocks and every warp boundary across a
/// row; 37 × 53 and 3 × 3 have odd columns (a colour one point shorter in alternate rows).
fn a_sweep_on_the_colours_stored_apart_equals_a_cpu_sweep_bit_for_bit(backend: &Backend) {
    for (rows, cols) in [(37, 53), (64, 64), (3, 3), (10, 129), (9, 2100), (12, 2051)] {
        let host_f = random_floats(rows * cols, 23 + rows as u64);
        let host_u = random_floats(rows * cols, 29 + cols as u64);
        let h2 = 0.01f32;
        let f = RedBlack::split(backend, &backend.upload(&host_f, [rows, cols]).unwrap()).unwrap();
        let mut u = RedBlack::split(backend, &backend.upload(&host_u, [rows, cols]).unwrap()).unwrap();
        stencil::red_black_sweep_split(backend, &f, &mut u, h2).unwrap();
        let mut want = host_u.clone();
        for colour in [0, 1] {
            cpu_colour_f32(&host_f, &mut want, rows, cols, h2, colour);
        }
        let got = backend.download(&u.merge(backend).unwrap()).unwrap();
        assert_same_bits(&got, &want, cols, &format!("{rows} × {cols}"));
    }
}

/// `RedBlack` pads its colour rows to 16 bytes, so its sweeps move vectors; the kernel on dense
/// colours of an odd row length (every row starting on another 4-byte boundary) moves single
/// floats. Both must give the same bits.
fn a_colour_on_unpadded_rows_gives_the_padded_layouts_bits(backend: &Backend) {
    for (rows, cols) in [(37usize, 53usize), (9, 2102), (12, 2050)] {
        let half = cols.div_ceil(2);
        assert_ne!(half % 4, 0, "{rows} × {cols}: the dense rows must not be 16-byte multiples");
        let host_f = random_floats(rows * cols, 31 + rows as u64);
        let host_u = random_floats(rows * cols, 37 + cols as u64);
        let f = RedBlack::split(backend, &backend.upload(&host_f, [rows, cols]).unwrap()).unwrap();
        let mut u = RedBlack::split(backend, &backend.upload(&host_u, [rows, cols]).unwrap()).unwrap();
        let dense = |view: tessera::TensorView<'_, f32>| {
            backend.upload(&backend.download(&view).unwrap(), [rows, half]).unwrap()
        };
        let (f_red, black) = (dense(f.red().unwrap()), dense(u.black().unwrap()));
        let mut red = dense(u.red().unwrap());
        stencil::gauss_seidel_colour::launch(backend, &f_red, &black, &mut red, 0.01, 0, cols as i32).unwrap();
        stencil::sweep_colour(backend, &f, &mut u, 0.01, stencil::Colour::Red).unwrap();
        let (got, want) = (backend.download(&red).unwrap(), backend.download(&u.red().unwrap()).unwrap());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g.to_bits() == w.to_bits(),
                "{rows} × {cols}, red ({}, {}): dense {g}, padded {w}",
                i / half,
                i % half
            );
        }
    }
}

/// Every point of a swept grid (`cols` columns) has the CPU sweep's bits.
fn assert_same_bits(got: &[f32], want: &[f32], cols: usize, what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits(), "{what}, point ({}, {}): {g}, CPU sweep {w}", i / cols, i % cols);
    }
}

fn splitting_the_colours_and_merging_them_back_is_exact(backend: &Backend) {
    for (rows, cols) in [(1, 1), (3, 5), (4, 6), (7, 513)] {
        let host: Vec<f32> = (0..rows * cols).map(|i| i as f32 + 0.5).collect();
        let u = backend.upload(&host, [rows, cols]).unwrap();
        let colours = RedBlack::split(backend, &u).unwrap();
        let half = cols.div_ceil(2);
        assert_eq!(colours.red().unwrap().dims(), &[rows, half]);
        assert_eq!(colours.pitch() % 4, 0, "{rows} × {cols}: colour rows start 16-byte aligned");
        let (red, black) =
            (backend.download(&colours.red().unwrap()).unwrap(), backend.download(&colours.black().unwrap()).unwrap());
        for r in 0..rows {
            for j in 0..half {
                let (red_column, black_column) = (2 * j + r % 2, 2 * j + 1 - r % 2);
                let at = |c: usize| if c < cols { host[r * cols + c] } else { 0.0 };
                assert_eq!(red[r * half + j], at(red_column), "{rows} × {cols}: red ({r}, {j})");
                assert_eq!(black[r * half + j], at(black_column), "{rows} × {cols}: black ({r}, {j})");
            }
        }
        assert_eq!(backend.download(&colours.merge(backend).unwrap()).unwrap(), host, "{rows} × {cols}: merged");
    }
}

fn the_split_residual_norm_equals_the_chessboard_one(backend: &Backend) {
    for (rows, cols) in [(37, 53), (64, 64), (9, 2100)] {
        let host_f = random_floats(rows * cols, 3 + rows as u64);
        let host_u = random_floats(rows * cols, 5 + cols as u64);
        let (f, u) = (backend.upload(&host_f, [rows, cols]).unwrap(), backend.upload(&host_u, [rows, cols]).unwrap());
        let chessboard = stencil::residual_norm(backend, &f, &u, 0.01).unwrap();
        let f = RedBlack::split(backend, &f).unwrap();
        let u = RedBlack::split(backend, &u).unwrap();
        let split = stencil::residual_norm_split(backend, &f, &u, 0.01).unwrap();
        // the same squared residuals, added in another order
        assert!((split - chessboard).abs() <= 1e-5 * chessboard, "{rows} × {cols}: {split} against {chessboard}");
    }
}

/// Red-black Gauss-Seidel in f64 from u = 0 until ‖residual‖₂ ≤ tolerance · ‖h²f‖₂ (checked
/// after every sweep, so it stops no later than the device solver would).
fn cpu_solve_f64(f: &[f32], rows: usize, cols: usize, h2: f64, tolerance: f64) -> Vec<f64> {
    let f: Vec<f64> = f.iter().map(|v| h2 * f64::from(*v)).collect();
    let mut u = vec![0.0f64; rows * cols];
    let interior = |i: usize| {
        let (r, c) = (i / cols, i % cols);
        r > 0 && r + 1 < rows && c > 0 && c + 1 < cols
    };
    let source: f64 = (0..rows * cols).filter(|i| interior(*i)).map(|i| f[i] * f[i]).sum::<f64>().sqrt();
    for _ in 0..1_000_000 {
        for colour in [0, 1] {
            for i in (0..rows * cols).filter(|i| interior(*i) && (i / cols + i % cols) % 2 == colour) {
                u[i] = 0.25 * (f[i] + u[i - cols] + u[i + cols] + u[i - 1] + u[i + 1]);
            }
        }
        let residual: f64 = (0..rows * cols)
            .filter(|i| interior(*i))
            .map(|i| (f[i] + u[i - cols] + u[i + cols] + u[i - 1] + u[i + 1] - 4.0 * u[i]).powi(2))
            .sum::<f64>()
            .sqrt();
        if residual <= tolerance * source {
            return u;
        }
    }
    panic!("the f64 reference did not converge");
}

/// Both solutions stop at relative residual ≤ τ. The error left in each is A⁻¹·residual,
/// dominated by the smoothest mode, for which ‖A⁻¹r‖ / ‖A⁻¹h²f‖ ≈ ‖r‖ / ‖h²f‖ ≤ τ; with f32
/// rounding on top, 10·τ relative to max |u| bounds their difference with room to spare.
fn assert_close_to_the_f64_solver(got: &[f32], want: &[f64], tolerance: f64, what: &str) {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = got.iter().zip(want).map(|(g, w)| (f64::from(*g) - w).abs()).fold(0.0, f64::max);
    assert!(worst <= 10.0 * tolerance * scale, "{what}: max |u − u_f64| = {worst:e}, max |u_f64| = {scale:e}");
}

const TOLERANCE: f32 = 1e-4;

fn assert_converged(solution: &stencil::PoissonSolution) {
    assert!(
        solution.relative_residual <= TOLERANCE,
        "stopped after {} sweeps at {}",
        solution.sweeps,
        solution.relative_residual
    );
}

fn solve_poisson_with_f_one_matches_an_f64_red_black_solver(backend: &Backend) {
    let (rows, cols) = (33, 47);
    let h = 1.0 / (cols - 1) as f64;
    let f = vec![1.0f32; rows * cols];
    let solution = stencil::solve_poisson(backend, &f, rows, cols, (h * h) as f32, TOLERANCE, 20_000).unwrap();
    assert_converged(&solution);
    assert_eq!(solution.sweeps % stencil::CHECK_EVERY, 0, "the residual is checked every CHECK_EVERY sweeps");
    let want = cpu_solve_f64(&f, rows, cols, h * h, f64::from(TOLERANCE));
    assert_close_to_the_f64_solver(&solution.u, &want, f64::from(TOLERANCE), "f = 1 on 33 × 47");
    for i in (0..rows * cols).filter(|i| i / cols == 0 || i % cols == 0 || i / cols == rows - 1 || i % cols == cols - 1)
    {
        assert_eq!(solution.u[i], 0.0, "the boundary ring stays fixed");
    }
}

fn solve_poisson_matches_a_manufactured_solution_and_an_f64_solver(backend: &Backend) {
    // 65 × 65 takes ~4000 sweeps, two minutes on the simulation: it runs on the GPU only
    let n = if backend.is_simulated() { 33 } else { 65 };
    let h = 1.0 / (n - 1) as f64;
    let pi = std::f64::consts::PI;
    let exact = |r: usize, c: usize| (pi * r as f64 * h).sin() * (pi * c as f64 * h).sin();
    let f: Vec<f32> = (0..n * n).map(|i| (2.0 * pi * pi * exact(i / n, i % n)) as f32).collect();
    let solution = stencil::solve_poisson(backend, &f, n, n, (h * h) as f32, TOLERANCE, 50_000).unwrap();
    assert_converged(&solution);
    let want = cpu_solve_f64(&f, n, n, h * h, f64::from(TOLERANCE));
    assert_close_to_the_f64_solver(&solution.u, &want, f64::from(TOLERANCE), &format!("manufactured, {n} × {n}"));
    // the 5-point scheme's error on sin·sin is π²h²/12 relative (8e-4 at 33, 2e-4 at 65), plus the iteration's
    let discretisation = pi * pi * h * h / 12.0;
    let worst = (0..n * n).map(|i| (f64::from(solution.u[i]) - exact(i / n, i % n)).abs()).fold(0.0, f64::max);
    let bound = 2.0 * discretisation + 10.0 * f64::from(TOLERANCE);
    assert!(worst <= bound, "{n} × {n}: max |u − sin(πx)·sin(πy)| = {worst:e}, more than {bound:e}");
}

/// A tolerance below the f32 floor: the solver stops once u stops changing, long before
/// `max_sweeps`, and says how far it got.
fn solve_poisson_stops_when_f32_stalls_above_an_unreachable_tolerance(backend: &Backend) {
    let n = 17;
    let h = 1.0 / (n - 1) as f64;
    let f = vec![1.0f32; n * n];
    let max_sweeps = 100_000;
    let solution = stencil::solve_poisson(backend, &f, n, n, (h * h) as f32, 1e-12, max_sweeps).unwrap();
    assert!(solution.sweeps < max_sweeps / 10, "ran {} sweeps", solution.sweeps);
    assert!(
        solution.relative_residual > 1e-12 && solution.relative_residual < 1e-4,
        "stalled at {} after {} sweeps",
        solution.relative_residual,
        solution.sweeps
    );
}

#[test]
fn solve_poisson_rejects_a_source_of_the_wrong_length() {
    let backend = common::simulator();
    let result = stencil::solve_poisson(&backend, &[1.0; 10], 4, 4, 1.0, 1e-3, 10);
    assert!(matches!(result, Err(tessera::Error::LengthMismatch { len: 10, expected: 16, .. })), "{result:?}");
}
