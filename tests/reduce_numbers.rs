//! The reduction family's numbers against an f64 reference: the sum and the dot product of
//! f32 vectors at tail lengths (0, 1, 31, 33, 1025, 65537; 2^28 on a GPU), on the CPU
//! simulation of the emitted CUDA C (three thread orders: the two-pass design makes the
//! result independent of them) and, ignored without one, on a GPU.

mod common;

use common::random_floats;
use tessera::catalog::reduce::{self, PARTIALS};
use tessera::Backend;

on_both_backends!(
    the_sum_matches_an_f64_reference_at_tail_lengths,
    the_dot_product_matches_an_f64_reference_at_tail_lengths
);

const LENGTHS: [usize; 6] = [0, 1, 31, 33, 1025, 65537];

fn lengths(backend: &Backend) -> Vec<usize> {
    let mut lengths = LENGTHS.to_vec();
    if !backend.is_simulated() {
        lengths.push(1 << 28);
    }
    lengths
}

/// The error bound of recursive summation (Higham, ch. 4): |computed − exact| ≤ (d − 1)·u·Σ|xᵢ|
/// with u = 2⁻²⁴ the f32 unit roundoff and d the longest chain of additions an element goes
/// through: its thread's grid-stride loop (n / (PARTIALS · 256) vectors of 4, plus the tail),
/// the two 5-level warp trees of each pass and the finishing loop. 64 covers all but the
/// first term with room to spare.
fn tolerance(n: usize, magnitudes: f64) -> f64 {
    let chain = (n / (PARTIALS * 256 * 4) * 4 + 64) as f64;
    chain * f64::from(f32::EPSILON) * magnitudes
}

fn the_sum_matches_an_f64_reference_at_tail_lengths(backend: &Backend) {
    for n in lengths(backend) {
        let host = random_floats(n, 7 + n as u64);
        let want: f64 = host.iter().map(|v| f64::from(*v)).sum();
        let magnitudes: f64 = host.iter().map(|v| f64::from(v.abs())).sum();
        let x = backend.upload(&host, [n]).unwrap();
        let got = reduce::sum_f32(backend, &x).unwrap();
        let error = (f64::from(got) - want).abs();
        assert!(error <= tolerance(n, magnitudes), "n = {n}: sum {got}, f64 reference {want}, error {error:e}");
    }
}

fn the_dot_product_matches_an_f64_reference_at_tail_lengths(backend: &Backend) {
    for n in lengths(backend) {
        let (host_x, host_y) = (random_floats(n, 11 + n as u64), random_floats(n, 13 + n as u64));
        let want: f64 = host_x.iter().zip(&host_y).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum();
        let magnitudes: f64 = host_x.iter().zip(&host_y).map(|(a, b)| f64::from((a * b).abs())).sum();
        let x = backend.upload(&host_x, [n]).unwrap();
        let y = backend.upload(&host_y, [n]).unwrap();
        let got = reduce::dot_f32(backend, &x, &y).unwrap();
        let error = (f64::from(got) - want).abs();
        // one more rounding per element (the product) than the sum
        assert!(error <= 2.0 * tolerance(n, magnitudes), "n = {n}: dot {got}, f64 reference {want}, error {error:e}");
    }
}
