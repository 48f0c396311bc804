//! Row-major operands with leading dimensions: SGEMM, transposes and the 5-point Laplacian
//! on sub-matrices of larger tensors (odd offsets and leading dimensions, and leading
//! dimensions that keep 128-bit accesses though the column count is ragged), against CPU
//! references, with every element of the parents outside the views left as it was — on the
//! CPU simulation of the emitted CUDA C in CI and on a GPU with
//! `cargo test --release --test strided_numbers -- --include-ignored`.

mod common;

use std::ops::Range;

use common::{assert_bits_equal, gemm_reference, random_floats, relative_error, transposed, POISON};
use tessera::catalog::{sgemm, stencil, transpose};
use tessera::dsl::VectorWidth;
use tessera::{Argument, Backend};

on_both_backends!(
    every_sgemm_kernel_on_submatrices_matches_an_f64_reference,
    every_transpose_kernel_on_submatrices_is_exact,
    the_laplacian_on_a_submatrix_matches_the_cpu,
    the_typed_launch_takes_submatrices
);

/// Where a view sits in its parent: its rows and columns, and the parent's shape.
#[derive(Clone, Debug)]
struct Placement {
    rows: Range<usize>,
    cols: Range<usize>,
    parent: [usize; 2],
}

impl Placement {
    /// An `r × c` view at (`row0`, `col0`) of a parent `extra_cols` wider than needed and two
    /// rows taller.
    fn new([r, c]: [usize; 2], (row0, col0): (usize, usize), extra_cols: usize) -> Self {
        Self { rows: row0..row0 + r, cols: col0..col0 + c, parent: [row0 + r + 2, col0 + c + extra_cols] }
    }

    fn ld(&self) -> usize {
        self.parent[1]
    }

    fn len(&self) -> usize {
        self.parent[0] * self.parent[1]
    }

    /// Whether parent element `i` belongs to the view.
    fn holds(&self, i: usize) -> bool {
        self.rows.contains(&(i / self.ld())) && self.cols.contains(&(i % self.ld()))
    }

    /// The view's elements, packed row after row, out of the parent's.
    fn packed(&self, parent: &[f32]) -> Vec<f32> {
        self.rows
            .clone()
            .flat_map(|r| parent[r * self.ld() + self.cols.start..r * self.ld() + self.cols.end].to_vec())
            .collect()
    }

    /// The first parent element outside the view that differs between `before` and `after`.
    fn first_change_outside(&self, before: &[f32], after: &[f32]) -> Option<usize> {
        (0..self.len()).find(|&i| !self.holds(i) && before[i].to_bits() != after[i].to_bits())
    }
}

/// One SGEMM case: A, B and C placed in their parents, and the vector width every kernel
/// declaring 128-bit accesses must launch with.
struct GemmCase {
    a: Placement,
    b: Placement,
    c: Placement,
    width: VectorWidth,
}

fn gemm_cases(backend: &Backend) -> Vec<GemmCase> {
    // M and N over 128, so the 128 × 128 kernels have whole tiles (their vector paths) too
    let (m, n, k) = if backend.is_simulated() { (130, 133, 45) } else { (1000, 1029, 515) };
    vec![
        // odd offsets and odd leading dimensions: rows start misaligned, scalar accesses
        GemmCase {
            a: Placement::new([m, k], (3, 1), 5),
            b: Placement::new([k, n], (1, 7), 2),
            c: Placement::new([m, n], (2, 5), 3),
            width: VectorWidth::W1,
        },
        // ragged column counts whose leading dimensions are multiples of 4, at offsets that
        // are too: 128-bit accesses inside whole tiles, element checks at the edges
        GemmCase {
            a: Placement::new([m, k], (1, 4), 4 * 3 - (4 + k) % 4),
            b: Placement::new([k, n], (2, 8), 4 - (8 + n) % 4),
            c: Placement::new([m, n], (3, 4), 8 - (4 + n) % 4),
            width: VectorWidth::W4,
        },
    ]
}

fn every_sgemm_kernel_on_submatrices_matches_an_f64_reference(backend: &Backend) {
    let (alpha, beta) = (1.25f32, -0.75f32);
    for (index, case) in gemm_cases(backend).into_iter().enumerate() {
        let seed = 10 * index as u64;
        let (parent_a, parent_b, parent_c) = (
            random_floats(case.a.len(), seed + 1),
            random_floats(case.b.len(), seed + 2),
            random_floats(case.c.len(), seed + 3),
        );
        let (m, k, n) = (case.a.rows.len(), case.a.cols.len(), case.b.cols.len());
        let want = gemm_reference(
            &case.a.packed(&parent_a),
            &case.b.packed(&parent_b),
            &case.c.packed(&parent_c),
            (m, n, k),
            f64::from(alpha),
            f64::from(beta),
        );
        let a_parent = backend.upload(&parent_a, case.a.parent).unwrap();
        let b_parent = backend.upload(&parent_b, case.b.parent).unwrap();
        let a = a_parent.submatrix(case.a.rows.clone(), case.a.cols.clone()).unwrap();
        let b = b_parent.submatrix(case.b.rows.clone(), case.b.cols.clone()).unwrap();
        assert_eq!((a.dims(), a.leading_dimension()), (&[m, k][..], case.a.ld()));
        for kernel in sgemm::ALL {
            let mut c_parent = backend.upload(&parent_c, case.c.parent).unwrap();
            let mut c = c_parent.submatrix_mut(case.c.rows.clone(), case.c.cols.clone()).unwrap();
            let launched = sgemm::launch(kernel, backend, &a, &b, &mut c, alpha, beta).unwrap();
            let name = kernel.name();
            let declared = kernel.ir().unwrap().config.vector;
            assert_eq!(launched.vector, declared.min(case.width), "{name}, case {index}");
            let error = relative_error(&backend.download(&c).unwrap(), &want);
            assert!(error < 1e-5, "{name} on sub-matrices, case {index} (M={m} N={n} K={k}): relative error {error:e}");
            let after = backend.download(&c_parent).unwrap();
            if let Some(i) = case.c.first_change_outside(&parent_c, &after) {
                panic!(
                    "{name}, case {index}: C's parent changed outside the view at element {i} ({} → {})",
                    parent_c[i], after[i]
                );
            }
        }
    }
}

fn every_transpose_kernel_on_submatrices_is_exact(backend: &Backend) {
    let [rows, cols] = if backend.is_simulated() { [70, 93] } else { [1029, 2051] };
    // (x in its parent, y in its parent, the width a kernel declaring 4 launches with)
    let cases = [
        (Placement::new([rows, cols], (1, 3), 3), Placement::new([cols, rows], (2, 1), 5), VectorWidth::W1),
        (
            Placement::new([rows, cols], (5, 4), 4 - (4 + cols) % 4),
            Placement::new([cols, rows], (1, 8), 8 - (8 + rows) % 4),
            VectorWidth::W4,
        ),
    ];
    for (index, (place_x, place_y, width)) in cases.into_iter().enumerate() {
        let parent_x = random_floats(place_x.len(), 40 + index as u64);
        let want = transposed(&place_x.packed(&parent_x), rows, cols);
        let x_parent = backend.upload(&parent_x, place_x.parent).unwrap();
        let x = x_parent.submatrix(place_x.rows.clone(), place_x.cols.clone()).unwrap();
        let parent_y = vec![f32::from_bits(POISON); place_y.len()];
        for kernel in transpose::ALL {
            let mut y_parent = backend.upload(&parent_y, place_y.parent).unwrap();
            let mut y = y_parent.submatrix_mut(place_y.rows.clone(), place_y.cols.clone()).unwrap();
            let launched =
                kernel.launch(backend, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).unwrap();
            let name = kernel.name();
            assert_eq!(launched.vector, kernel.ir().unwrap().config.vector.min(width), "{name}, case {index}");
            assert_bits_equal(&format!("{name}, case {index}"), &backend.download(&y).unwrap(), &want, rows);
            let after = backend.download(&y_parent).unwrap();
            if let Some(i) = place_y.first_change_outside(&parent_y, &after) {
                panic!("{name}, case {index}: y's parent changed outside the view at element {i}");
            }
        }
    }
}

/// The Laplacian as `laplacian_5pt` defines it: interior points Δu, edge points u.
fn laplacian(u: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = u.to_vec();
    for r in 1..rows.saturating_sub(1) {
        for c in 1..cols.saturating_sub(1) {
            let at = |r: usize, c: usize| u[r * cols + c];
            out[r * cols + c] = at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1) - 4.0 * at(r, c);
        }
    }
    out
}

fn the_laplacian_on_a_submatrix_matches_the_cpu(backend: &Backend) {
    let [rows, cols] = if backend.is_simulated() { [45, 77] } else { [1031, 2053] };
    let place_u = Placement::new([rows, cols], (2, 3), 7);
    let place_out = Placement::new([rows, cols], (1, 1), 2);
    let parent_u = random_floats(place_u.len(), 77);
    let want = laplacian(&place_u.packed(&parent_u), rows, cols);
    let u_parent = backend.upload(&parent_u, place_u.parent).unwrap();
    let u = u_parent.submatrix(place_u.rows.clone(), place_u.cols.clone()).unwrap();
    for kernel in [stencil::laplacian_5pt::NAME, stencil::laplacian_5pt_rows::NAME] {
        let parent_out = vec![f32::from_bits(POISON); place_out.len()];
        let mut out_parent = backend.upload(&parent_out, place_out.parent).unwrap();
        let mut out = out_parent.submatrix_mut(place_out.rows.clone(), place_out.cols.clone()).unwrap();
        if kernel == stencil::laplacian_5pt::NAME {
            stencil::laplacian_5pt::launch(backend, &u, &mut out).unwrap();
        } else {
            stencil::laplacian_5pt_rows::launch(backend, &u, &mut out).unwrap();
        }
        let got = backend.download(&out).unwrap();
        // the same float operations in the same order as the kernel: equal to the last bit
        // except where a GPU contracts into an FMA
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{kernel}: out[{}][{}] = {g} (want {w})",
                i / cols,
                i % cols
            );
        }
        let after = backend.download(&out_parent).unwrap();
        assert_eq!(place_out.first_change_outside(&parent_out, &after), None, "{kernel}");
    }
}

fn the_typed_launch_takes_submatrices(backend: &Backend) {
    let (m, n, k) = (33, 35, 19);
    let parent = random_floats(64 * 64, 3);
    let big = backend.upload(&parent, [64, 64]).unwrap();
    // A and B are two blocks of one parent; views of views keep its leading dimension
    let left = big.submatrix(0..64, 0..32).unwrap();
    let a = left.submatrix(1..1 + m, 2..2 + k).unwrap();
    let b = big.submatrix(20..20 + k, 27..27 + n).unwrap();
    assert_eq!((a.leading_dimension(), b.leading_dimension()), (64, 64));
    let mut c = backend.zeros::<f32>([m, n]).unwrap();
    sgemm::sgemm_v6::launch(backend, &a, &b, &mut c, 1.0, 0.0).unwrap();
    let pack = |rows: Range<usize>, cols: Range<usize>| Placement { rows, cols, parent: [64, 64] }.packed(&parent);
    let want = gemm_reference(
        &pack(1..1 + m, 2..2 + k),
        &pack(20..20 + k, 27..27 + n),
        &vec![0.0; m * n],
        (m, n, k),
        1.0,
        0.0,
    );
    assert!(relative_error(&backend.download(&c).unwrap(), &want) < 1e-5);
    // a wrong shape is still a shape error, naming the symbol
    let short = big.submatrix(0..m, 0..k + 1).unwrap();
    let error = sgemm::sgemm_v6::launch(backend, &short, &b, &mut c, 1.0, 0.0).unwrap_err().to_string();
    assert!(error.contains("shape symbol `K`"), "{error}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_takes_the_same_submatrices() {
    let gpu = tessera::Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let (a_place, b_place, c_place) = (
        Placement::new([300, 101], (3, 1), 5),
        Placement::new([101, 203], (1, 2), 7),
        Placement::new([300, 203], (2, 3), 3),
    );
    let parent_a = random_floats(a_place.len(), 1);
    let parent_b = random_floats(b_place.len(), 2);
    let parent_c = random_floats(c_place.len(), 3);
    let a_parent = gpu.upload(&parent_a, a_place.parent).unwrap();
    let b_parent = gpu.upload(&parent_b, b_place.parent).unwrap();
    let a = a_parent.submatrix(a_place.rows.clone(), a_place.cols.clone()).unwrap();
    let b = b_parent.submatrix(b_place.rows.clone(), b_place.cols.clone()).unwrap();
    let mut c_parent = gpu.upload(&parent_c, c_place.parent).unwrap();
    let mut c = c_parent.submatrix_mut(c_place.rows.clone(), c_place.cols.clone()).unwrap();
    gpu.cublas().unwrap().sgemm(1.0, &a, &b, 0.5, &mut c).unwrap();
    let want = gemm_reference(
        &a_place.packed(&parent_a),
        &b_place.packed(&parent_b),
        &c_place.packed(&parent_c),
        (300, 203, 101),
        1.0,
        0.5,
    );
    assert!(relative_error(&gpu.download(&c).unwrap(), &want) < 1e-5);
    let after = gpu.download(&c_parent).unwrap();
    assert_eq!(c_place.first_change_outside(&parent_c, &after), None);
}
