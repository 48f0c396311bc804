//! The element-wise maps against CPU references at tail lengths (0, 1, 31, 33, 1025, 65537;
//! 2^28 on a GPU): every element written, none past the end, on the CPU simulation of the
//! emitted CUDA C and, ignored without one, on a GPU.

mod common;

use common::{random_floats, POISON};
use tessera::catalog::map::{gelu_tanh, saxpy};
use tessera::Backend;

on_both_backends!(saxpy_matches_a_times_x_plus_y_at_tail_lengths, gelu_matches_an_f64_reference_at_tail_lengths);

fn lengths(backend: &Backend) -> Vec<usize> {
    let mut lengths = vec![0, 1, 31, 33, 1025, 65537];
    if !backend.is_simulated() {
        lengths.push(1 << 28);
    }
    lengths
}

fn saxpy_matches_a_times_x_plus_y_at_tail_lengths(backend: &Backend) {
    let a = 1.75f32;
    for n in lengths(backend) {
        let (host_x, host_y) = (random_floats(n, 3 + n as u64), random_floats(n, 5 + n as u64));
        let x = backend.upload(&host_x, [n]).unwrap();
        let mut y = backend.upload(&host_y, [n]).unwrap();
        saxpy::launch(backend, a, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for (i, ((g, xi), yi)) in got.iter().zip(&host_x).zip(&host_y).enumerate() {
            // A GPU may contract a·x + y into one FMA (one rounding instead of two): allow
            // one rounding of each term's size.
            let want = a * xi + yi;
            let slack = f32::EPSILON * ((a * xi).abs() + yi.abs());
            assert!((g - want).abs() <= slack, "n = {n}, y[{i}] = {g}, want {want}");
        }
    }
}

fn gelu_matches_an_f64_reference_at_tail_lengths(backend: &Backend) {
    for n in lengths(backend) {
        let host: Vec<f32> = random_floats(n, 9 + n as u64).iter().map(|v| v * 4.0).collect();
        let x = backend.upload(&host, [n]).unwrap();
        let mut y = backend.filled([n], f32::from_bits(POISON)).unwrap();
        gelu_tanh::launch(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for (i, (g, v)) in got.iter().zip(&host).enumerate() {
            let v = f64::from(*v);
            let want = 0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh());
            // f32 arithmetic on |x| < 4 (a few ulps of 4) plus tanhf's few ulps: 1e-6 absolute
            // and 1e-5 relative hold with room.
            assert!((f64::from(*g) - want).abs() <= 1e-6 + 1e-5 * want.abs(), "n = {n}, y[{i}] = {g}, want {want}");
        }
    }
}
