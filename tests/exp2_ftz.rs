//! `exp2_ftz(x)`: 2^x as `exp2` gives it (within 2 ulp of 2^x) down to f32's smallest normal,
//! 0 below it (x < −126), infinity from 2^128, NaN kept — on the CPU simulation and, ignored
//! without one, on a GPU (`ex2.approx.ftz.f32`).

mod common;

use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(exp2_ftz_is_exp2_with_subnormal_results_flushed);

/// y = exp2_ftz(x), element by element.
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
fn exp2_flushed(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    if i < N {
        y[i] = exp2_ftz(x[i]);
    }
}

fn exp2_ftz_is_exp2_with_subnormal_results_flushed(backend: &Backend) {
    // every 1/256 from -140 to 130, and the edges
    let mut host: Vec<f32> = (-140 * 256..=130 * 256).map(|i| i as f32 / 256.0).collect();
    host.extend([-126.0, -125.999_99, -126.000_01, 127.999_99, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    let n = host.len();
    let x = backend.upload(&host, [n]).unwrap();
    let mut y = backend.filled([n], -1.0f32).unwrap();
    exp2_flushed::launch(backend, &x, &mut y).unwrap();
    let got = backend.download(&y).unwrap();
    for (&x, &y) in host.iter().zip(&got) {
        let want = 2f64.powf(f64::from(x));
        if x.is_nan() {
            assert!(y.is_nan(), "exp2_ftz(NaN) = {y}");
        } else if want < f64::from(f32::MIN_POSITIVE) {
            assert_eq!(y, 0.0, "exp2_ftz({x})");
        } else if x >= 128.0 {
            assert_eq!(y, f32::INFINITY, "exp2_ftz({x})");
        } else {
            let error = (f64::from(y) - want).abs() / want;
            assert!(error <= 2.0 * f64::from(f32::EPSILON), "exp2_ftz({x}) = {y}, 2^x = {want}: {error:e} relative");
        }
    }
}
