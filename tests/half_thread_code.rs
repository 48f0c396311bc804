//! Thread code on f16 and bf16 values, the way CUDA computes on `__half` and
//! `__nv_bfloat16`: loads and stores of 16-bit tensors, `as` conversions rounding to nearest
//! even, + − × ÷ rounded to 16 bits after each operation, `max`, `abs`, `fma`, `exp`, `sqrt`
//! and the f32 functions rounded once, shuffles — checked bit for bit against the `half`
//! crate on the host, on the CPU simulation and, ignored without one, on a GPU.

mod common;

use common::random_floats;
use tessera::half::{bf16, f16};
use tessera::prelude::*;
use tessera::Backend;

/// y = max(a·x + x·x / 2, x) with every operation in bf16; z = exp(x) in bf16; w = x as f32 · 3.
#[tile_kernel(threads = 128, vector = 1, consts(TILE = 128))]
fn bf16_arithmetic(
    x: Global<bf16, (N,)>,
    a: bf16,
    y: GlobalMut<bf16, (N,)>,
    z: GlobalMut<bf16, (N,)>,
    w: GlobalMut<f32, (N,)>,
) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    if i < N {
        let v = x[i];
        let half_square = v * v / 2.0;
        y[i] = max(a * v + half_square, v);
        z[i] = exp(v);
        w[i] = v as f32 * 3.0;
    }
}

/// The same in f16, with fma, abs, sqrt, a neighbour's value through a shuffle and an f64
/// conversion.
#[tile_kernel(threads = 128, vector = 1, consts(TILE = 128))]
fn f16_arithmetic(x: Global<f16, (N,)>, y: GlobalMut<f16, (N,)>, z: GlobalMut<f16, (N,)>, w: GlobalMut<f64, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = min(bx * TILE + thread_index(), N - 1);
    let v = x[i];
    let neighbour = shfl_xor(v, 1);
    if bx * TILE + thread_index() < N {
        y[i] = fma(v, neighbour, -v);
        z[i] = sqrt(abs(v)) + (0.25f64 as f16);
        w[i] = v as f64;
    }
}

on_both_backends!(bf16_thread_code_rounds_like_cuda, f16_thread_code_rounds_like_cuda);

fn values(len: usize, seed: u64) -> Vec<f32> {
    random_floats(len, seed).iter().map(|v| v * 4.0).collect()
}

fn bf16_thread_code_rounds_like_cuda(backend: &Backend) {
    let n = 1000;
    let host: Vec<bf16> = values(n, 3).into_iter().map(bf16::from_f32).collect();
    let a = bf16::from_f32(-1.375);
    let x = backend.upload(&host, [n]).unwrap();
    let (mut y, mut z) = (backend.zeros::<bf16>([n]).unwrap(), backend.zeros::<bf16>([n]).unwrap());
    let mut w = backend.zeros::<f32>([n]).unwrap();
    bf16_arithmetic::launch(backend, &x, a, &mut y, &mut z, &mut w).unwrap();
    let (y, z, w) = (backend.download(&y).unwrap(), backend.download(&z).unwrap(), backend.download(&w).unwrap());
    let op = |r: f32| bf16::from_f32(r);
    for (i, &v) in host.iter().enumerate() {
        let square = op(v.to_f32() * v.to_f32());
        let half_square = op(square.to_f32() / 2.0);
        let sum = op(op(a.to_f32() * v.to_f32()).to_f32() + half_square.to_f32());
        let want = if sum.to_f32() > v.to_f32() { sum } else { v };
        assert_eq!(y[i].to_bits(), want.to_bits(), "y[{i}] of x = {v}: {} want {}", y[i], want);
        // exp's last bit may differ between libm and the device: within one bf16 ulp
        let e = op(v.to_f32().exp());
        assert!((z[i].to_f32() - e.to_f32()).abs() <= e.to_f32().abs() / 128.0, "exp({v}) = {}, want {e}", z[i]);
        assert_eq!(w[i], v.to_f32() * 3.0);
    }
}

fn f16_thread_code_rounds_like_cuda(backend: &Backend) {
    let n = 1000;
    let host: Vec<f16> = values(n, 5).into_iter().map(f16::from_f32).collect();
    let x = backend.upload(&host, [n]).unwrap();
    let (mut y, mut z) = (backend.zeros::<f16>([n]).unwrap(), backend.zeros::<f16>([n]).unwrap());
    let mut w = backend.zeros::<f64>([n]).unwrap();
    f16_arithmetic::launch(backend, &x, &mut y, &mut z, &mut w).unwrap();
    let (y, z, w) = (backend.download(&y).unwrap(), backend.download(&z).unwrap(), backend.download(&w).unwrap());
    for (i, &v) in host.iter().enumerate() {
        // lanes pair up by xor 1; a thread past the end loaded x[N − 1]
        let partner = host[(i ^ 1).min(n - 1)];
        // fma rounds once: exact in f64, then to f16
        let want = f16::from_f64(v.to_f64() * partner.to_f64() - v.to_f64());
        assert_eq!(y[i].to_bits(), want.to_bits(), "fma at {i}: {} want {}", y[i], want);
        let root = f16::from_f32(v.to_f32().abs().sqrt());
        let want = f16::from_f32(root.to_f32() + 0.25);
        assert_eq!(z[i].to_bits(), want.to_bits(), "sqrt at {i}: {} want {}", z[i], want);
        assert_eq!(w[i], v.to_f64());
    }
}

#[test]
fn half_arithmetic_renders_as_intrinsics_that_round_each_operation() {
    let source = bf16_arithmetic::KERNEL.cuda_source();
    // each operation rounds on its own: no contraction of a·v + s into an fma
    assert!(
        source.contains("const __nv_bfloat16 half_square = __hdiv(__hmul_rn(v, v), __float2bfloat16_rn(2.0f));"),
        "{source}"
    );
    assert!(source.contains("y[i] = __hmax(__hadd_rn(__hmul_rn(a, v), half_square), v);"), "{source}");
    assert!(source.contains("z[i] = hexp(v);") && source.contains("w[i] = static_cast<float>(v) * 3.0f;"), "{source}");
    let source = f16_arithmetic::KERNEL.cuda_source();
    assert!(source.contains("y[i] = __hfma(v, neighbour, -v);"), "{source}");
    assert!(source.contains("__hadd_rn(hsqrt(__habs(v)), __double2half(0.25))"), "{source}");
}
