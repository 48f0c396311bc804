//! `exp2_fma(x)`, 2^x on the FMA units: within 4 ulp of 2^x over f32's normal range, 0 below
//! 2^-126, infinity from 2^128, NaN kept — on the CPU simulation and, ignored without one, on a
//! GPU (the same C runs on both, so they agree bit for bit).

mod common;

use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(exp2_on_the_fma_units_is_within_four_ulp_of_two_to_the_x);

/// y = exp2_fma(x), element by element.
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
fn exp2_on_fma(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    if i < N {
        y[i] = exp2_fma(x[i]);
    }
}

fn exp2_on_the_fma_units_is_within_four_ulp_of_two_to_the_x(backend: &Backend) {
    // every 1/4096 from -130 to 130 (fractions on both sides of each integer), and the edges
    let mut host: Vec<f32> = (-130 * 4096..=130 * 4096).map(|i| i as f32 / 4096.0).collect();
    host.extend([0.5, -0.5, 127.999_99, -125.999_99, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    let n = host.len();
    let x = backend.upload(&host, [n]).unwrap();
    let mut y = backend.filled([n], -1.0f32).unwrap();
    exp2_on_fma::launch(backend, &x, &mut y).unwrap();
    let got = backend.download(&y).unwrap();
    for (&x, &y) in host.iter().zip(&got) {
        if x.is_nan() {
            assert!(y.is_nan(), "exp2_fma(NaN) = {y}");
        } else if x < -126.0 {
            assert_eq!(y, 0.0, "exp2_fma({x})");
        } else if x >= 128.0 {
            assert_eq!(y, f32::INFINITY, "exp2_fma({x})");
        } else {
            let want = 2f64.powf(f64::from(x));
            let error = (f64::from(y) - want).abs() / want;
            assert!(error <= 4.0 * f64::from(f32::EPSILON) / 2.0, "exp2_fma({x}) = {y}, 2^x = {want}: {error:e} relative");
        }
    }
    assert!((got[host.iter().position(|&v| v == 0.0).unwrap()] - 1.0).abs() <= f32::EPSILON, "exp2_fma(0)");
}
