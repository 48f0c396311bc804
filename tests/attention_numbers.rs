//! The fused attention forward (`catalog::attention`) against an f64 reference computed from
//! the same bf16/f16-rounded inputs: max abs error of O < 2e-3 (beside the reference rounded
//! to O's 16-bit type, as O is stored), log-sum-exp within 1e-4
//! relative; causal and not, grouped-query attention, head dims 64, 128 and 256 (and ones that
//! are zero-filled to 64 and to 256), query and key lengths that differ and are not multiples of the tiles.
//! On the CPU simulation (three thread orders) at small shapes, and — ignored without one — on
//! a GPU up to 16384 keys; the shape errors are checked without launching anything.

mod common;

use common::{random_floats, POISON};
use half::{bf16, f16};
use tessera::catalog::attention::{self, AttentionElement, AttentionError, TensorCores};
use tessera::{Backend, Error};

on_both_backends!(
    bf16_attention_matches_an_f64_reference,
    f16_attention_matches_an_f64_reference,
    grouped_query_attention_shares_each_kv_head,
);

/// One problem: batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal.
#[derive(Clone, Copy, Debug)]
struct Problem {
    batch: usize,
    heads: usize,
    kv_heads: usize,
    seq_q: usize,
    seq_kv: usize,
    head_dim: usize,
    causal: bool,
}

fn problems(backend: &Backend) -> Vec<Problem> {
    let p = |batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal| Problem {
        batch,
        heads,
        kv_heads,
        seq_q,
        seq_kv,
        head_dim,
        causal,
    };
    let mut all = vec![
        p(1, 1, 1, 1, 1, 64, false),
        p(1, 2, 2, 17, 17, 64, true),
        p(2, 1, 1, 64, 64, 64, false),
        p(1, 1, 1, 129, 129, 64, true),
        p(1, 1, 1, 17, 129, 64, false),
        p(1, 2, 1, 65, 33, 128, false),
        p(1, 1, 1, 65, 70, 128, true),
        p(1, 1, 1, 40, 70, 48, true),
        // rows of 72 bytes, which TMA cannot read: the launch narrows the copies, and the TMA
        // kernels' producers copy with cp.async (the tile's own Q included)
        p(1, 2, 1, 33, 47, 36, true),
        // head dim 256, and 200 zero-filled to it
        p(1, 2, 1, 17, 40, 256, true),
        p(1, 1, 1, 40, 33, 200, false),
        // more tiles than the simulation's 4 resident blocks: the causal TMA kernels' blocks
        // take each next tile from a counter as they finish one (`.dynamic()`, head dims 64
        // and 128), in groups of heads (`.grouped(16)` at head dim 64): 9 tiles of three
        // lengths, and 34 in a group of 16 heads and one of 1; at head dim 256 every other round
        // of tiles from its end (`.zigzag()`): 6 tiles, the short last round reversed
        p(1, 3, 3, 300, 300, 64, true),
        p(1, 17, 17, 130, 130, 64, true),
        p(1, 6, 6, 17, 17, 256, true),
    ];
    if !backend.is_simulated() {
        all.extend([
            p(2, 4, 4, 128, 128, 128, true),
            p(1, 2, 2, 1000, 1000, 64, false),
            p(1, 2, 1, 1000, 1000, 128, true),
            p(1, 1, 1, 4097, 4097, 128, false),
            p(1, 2, 2, 4097, 4097, 64, true),
            p(1, 1, 1, 17, 4097, 128, false),
            p(1, 2, 1, 1000, 1000, 256, true),
            p(1, 1, 1, 4097, 4097, 256, false),
            // the longest sequence of the list (one head: the f64 reference is
            // seq² · head_dim per head)
            p(1, 1, 1, 16384, 16384, 64, true),
        ]);
    }
    all
}

/// softmax(Q·Kᵀ/√d + mask)·V and the natural log-sum-exp per query row, in f64, from the
/// rounded inputs; rows × head_dim per (batch, head), (batch, head)-major.
fn reference(p: &Problem, q: &[f32], k: &[f32], v: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let d = p.head_dim;
    let scale = 1.0 / (d as f64).sqrt();
    let mut o = vec![0.0; p.batch * p.heads * p.seq_q * d];
    let mut lse = vec![0.0; p.batch * p.heads * p.seq_q];
    for b in 0..p.batch {
        for h in 0..p.heads {
            let kv_head = h / (p.heads / p.kv_heads);
            let q_at = |i: usize, c: usize| f64::from(q[((b * p.heads + h) * p.seq_q + i) * d + c]);
            let kv_at =
                |t: &[f32], j: usize, c: usize| f64::from(t[((b * p.kv_heads + kv_head) * p.seq_kv + j) * d + c]);
            for i in 0..p.seq_q {
                let keys = if p.causal { (i + 1).min(p.seq_kv) } else { p.seq_kv };
                let scores: Vec<f64> =
                    (0..keys).map(|j| (0..d).map(|c| q_at(i, c) * kv_at(k, j, c)).sum::<f64>() * scale).collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = weights.iter().sum();
                let row = (b * p.heads + h) * p.seq_q + i;
                lse[row] = max + sum.ln();
                for c in 0..d {
                    o[row * d + c] = weights.iter().enumerate().map(|(j, w)| w * kv_at(v, j, c)).sum::<f64>() / sum;
                }
            }
        }
    }
    (o, lse)
}

fn check<T: AttentionElement>(
    backend: &Backend,
    cores: TensorCores,
    p: Problem,
    mantissa_bits: i32,
    to: impl Fn(f32) -> T,
    back: impl Fn(T) -> f32,
) {
    let seed = (p.seq_q * 131 + p.seq_kv * 7 + p.head_dim) as u64;
    let q_dims = [p.batch, p.heads, p.seq_q, p.head_dim];
    let kv_dims = [p.batch, p.kv_heads, p.seq_kv, p.head_dim];
    let make = |len: usize, seed: u64| -> (Vec<T>, Vec<f32>) {
        let values: Vec<T> = random_floats(len, seed).iter().map(|&x| to(2.0 * x)).collect();
        let rounded = values.iter().map(|&x| back(x)).collect();
        (values, rounded)
    };
    let (q, q_rounded) = make(q_dims.iter().product(), seed);
    let (k, k_rounded) = make(kv_dims.iter().product(), seed + 1);
    let (v, v_rounded) = make(kv_dims.iter().product(), seed + 2);
    let (want_o, want_lse) = reference(&p, &q_rounded, &k_rounded, &v_rounded);
    let (q, k, v) = (
        backend.upload(&q, q_dims).unwrap(),
        backend.upload(&k, kv_dims).unwrap(),
        backend.upload(&v, kv_dims).unwrap(),
    );
    let mut o = backend.filled(q_dims, to(f32::from_bits(POISON))).unwrap();
    let mut lse = backend.filled([p.batch, p.heads, p.seq_q], f32::from_bits(POISON)).unwrap();
    let launched = attention::forward_on(backend, cores, &q, &k, &v, &mut o, &mut lse, p.causal).unwrap();
    assert_eq!(launched.kernel, attention::kernel_for::<T>(cores, p.head_dim, p.causal).unwrap().name(), "{p:?}");
    // the TMA kernels copy by TMA exactly where the rows are 16-byte aligned (16-bit elements)
    assert_eq!(launched.tma, cores == TensorCores::WgmmaTma && p.head_dim.is_multiple_of(8), "{cores:?} {p:?}");
    let got_o = backend.download(&o).unwrap();
    let got_lse = backend.download(&lse).unwrap();
    // a NaN (the poison of an element never written) counts as infinitely far off
    let off = |g: f64, w: f64| if g.is_nan() { f64::INFINITY } else { (g - w).abs() };
    // beyond the half unit in the last place that storing O in 16 bits costs (`mantissa_bits`:
    // 7 for bf16, 10 for f16): what is left is the f32 accumulation and P rounded to 16 bits
    // before it multiplies V
    let half_ulp =
        |w: f64| if w == 0.0 { 0.0 } else { (w.abs().log2().floor() - f64::from(mantissa_bits) - 1.0).exp2() };
    let worst = got_o
        .iter()
        .zip(&want_o)
        .map(|(&g, &w)| (off(f64::from(back(g)), w) - half_ulp(w)).max(0.0))
        .fold(0.0, f64::max);
    assert!(worst < 2e-3, "{cores:?} {p:?}: O is {worst:.2e} off (an element never written is NaN: infinitely off)");
    for (row, (&g, &w)) in got_lse.iter().zip(&want_lse).enumerate() {
        let relative = (f64::from(g) - w).abs() / w.abs().max(1.0);
        assert!(relative < 1e-4, "{cores:?} {p:?}: log-sum-exp of row {row} is {g}, want {w}");
    }
}

/// The kernel sets to check on `backend`: every one on the simulation and on a Hopper GPU
/// (which runs wgmma), mma.sync alone on other GPUs.
fn tensor_cores(backend: &Backend) -> Vec<TensorCores> {
    match TensorCores::of(backend) {
        TensorCores::MmaSync => vec![TensorCores::MmaSync],
        _ => TensorCores::ALL.to_vec(),
    }
}

fn bf16_attention_matches_an_f64_reference(backend: &Backend) {
    for cores in tensor_cores(backend) {
        for p in problems(backend) {
            check(backend, cores, p, 7, bf16::from_f32, bf16::to_f32);
        }
    }
}

fn f16_attention_matches_an_f64_reference(backend: &Backend) {
    // every F16 kernel (head dims 64, 128 and 256, causal and not), at the short lengths
    for cores in tensor_cores(backend) {
        for p in problems(backend).into_iter().filter(|p| p.seq_q <= 129 && p.seq_kv <= 129) {
            check(backend, cores, p, 10, f16::from_f32, f16::to_f32);
        }
    }
}

fn grouped_query_attention_shares_each_kv_head(backend: &Backend) {
    // four query heads on two K/V heads, and eight on one
    for cores in tensor_cores(backend) {
        for (heads, kv_heads) in [(4, 2), (8, 1)] {
            let p = Problem { batch: 2, heads, kv_heads, seq_q: 33, seq_kv: 47, head_dim: 64, causal: false };
            check(backend, cores, p, 7, bf16::from_f32, bf16::to_f32);
        }
    }
}

#[test]
fn a_kernel_launched_with_a_head_dim_over_its_width_is_refused() {
    // `require(HD <= D)`: a head-dim-64 kernel given rows of 128 would read their first 64
    // columns only; the launch refuses it with the values
    let backend = common::simulator();
    let tensor = |dims: &[usize]| backend.zeros::<bf16>(dims).unwrap();
    let (q, k, v) = (tensor(&[1, 1, 8, 128]), tensor(&[1, 1, 8, 128]), tensor(&[1, 1, 8, 128]));
    let mut o = tensor(&[1, 1, 8, 128]);
    let mut lse = backend.zeros::<f32>([1, 1, 8]).unwrap();
    let error = attention::attention_forward_bf16_d64::KERNEL
        .launch(
            &backend,
            &mut [
                tessera::Argument::input("q", &q),
                tessera::Argument::input("k", &k),
                tessera::Argument::input("v", &v),
                tessera::Argument::output("o", &mut o),
                tessera::Argument::output("lse", &mut lse),
                tessera::Argument::scalar("scale_log2", 1.0f32),
            ],
        )
        .unwrap_err();
    match &error {
        Error::Plan { source: tessera::dsl::LaunchPlanError::Requirement { requirement, values }, .. } => {
            assert_eq!(requirement, "HD <= D");
            assert_eq!(values, "HD = 128, D = 64");
        }
        other => panic!("expected the requirement's error, got {other}"),
    }
}

#[test]
fn shapes_that_do_not_fit_are_typed_errors_before_any_launch() {
    let backend = common::simulator();
    let tensor = |dims: &[usize]| backend.zeros::<bf16>(dims).unwrap();
    let (q, k, v) = (tensor(&[1, 4, 8, 64]), tensor(&[1, 3, 8, 64]), tensor(&[1, 3, 8, 64]));
    let mut o = tensor(&[1, 4, 8, 64]);
    let mut lse = backend.zeros::<f32>([1, 4, 8]).unwrap();
    // 3 K/V heads do not divide 4 query heads
    let error = attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, false).unwrap_err();
    assert!(matches!(error, AttentionError::Heads { q_heads: 4, kv_heads: 3 }), "{error}");
    // head dims that differ
    let (k, v) = (tensor(&[1, 2, 8, 32]), tensor(&[1, 2, 8, 32]));
    let error = attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, false).unwrap_err();
    assert!(matches!(error, AttentionError::Shape { param: "k", .. }), "{error}");
    // a 3-D q
    let flat = tensor(&[4, 8, 64]);
    let error = attention::forward(&backend, &flat, &k, &v, &mut o, &mut lse, false).unwrap_err();
    assert!(matches!(error, AttentionError::Rank { param: "q", .. }), "{error}");
    // a head dim over 256
    let (q, k, v) = (tensor(&[1, 1, 8, 264]), tensor(&[1, 1, 8, 264]), tensor(&[1, 1, 8, 264]));
    let mut o = tensor(&[1, 1, 8, 264]);
    let mut lse = backend.zeros::<f32>([1, 1, 8]).unwrap();
    let error = attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, true).unwrap_err();
    assert!(
        matches!(error, AttentionError::HeadDim { head_dim: 264, supported } if supported == [64, 128, 256]),
        "{error}"
    );
    // lse of the wrong shape
    let (q, k, v) = (tensor(&[1, 2, 8, 64]), tensor(&[1, 2, 8, 64]), tensor(&[1, 2, 8, 64]));
    let mut o = tensor(&[1, 2, 8, 64]);
    let mut lse = backend.zeros::<f32>([1, 2, 9]).unwrap();
    let error = attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, false).unwrap_err();
    assert!(matches!(error, AttentionError::Shape { param: "lse", .. }), "{error}");
}

#[test]
fn the_roofline_counts_a_causal_kernels_key_tiles_as_their_mean_over_the_blocks() {
    use tessera::dsl::{roofline, GpuSpec, Target};
    let shape: Vec<(String, i64)> = [("B", 1), ("H", 16), ("HKV", 16), ("SQ", 4096), ("SKV", 4096), ("HD", 128)]
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .collect();
    let gpu = GpuSpec::default_for(&Target::SM_90);
    let flops = |kernel: &tessera::KernelDefinition| roofline(kernel.ir().unwrap(), &shape, &gpu).unwrap().flops;
    let full = flops(&attention::attention_forward_bf16_d128::KERNEL);
    let causal = flops(&attention::attention_forward_bf16_d128_causal::KERNEL);
    // the causal kernel's 64 query tiles of 64 rows see 2, 4, .. 128 key tiles of 32:
    // (2 + 128) / 2 of the 128 on average
    assert_eq!(full, 4.0 * 4096.0 * 4096.0 * 128.0 * 16.0);
    assert_eq!(causal / full, (2.0 + 128.0) / 2.0 / 128.0);
}
