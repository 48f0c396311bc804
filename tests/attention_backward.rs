//! The fused attention backward (`catalog::attention::backward`: dQ, dK, dV) against f64
//! gradients computed from the same bf16/f16-rounded inputs: the forward runs first (its O and
//! log-sum-exp are what the backward takes, as in training), the reference differentiates
//! softmax(Q·Kᵀ/√d + mask)·V exactly. Causal and not, grouped-query attention (each K/V head's
//! gradient sums its query heads), head dims 64, 128 and one zero-filled to 64, query and key
//! lengths that differ and are not multiples of the tiles. On the CPU simulation at small
//! shapes and — ignored without one — on a GPU up to 4097 tokens.

mod common;

use common::{random_floats, POISON};
use half::{bf16, f16};
use tessera::catalog::attention::{self, AttentionElement, AttentionError, TensorCores};
use tessera::Backend;

on_both_backends!(
    bf16_attention_gradients_match_f64_gradients,
    f16_attention_gradients_match_f64_gradients,
    grouped_query_gradients_sum_over_the_query_heads_of_each_kv_head,
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
        p(1, 1, 1, 129, 17, 64, true),
        p(1, 2, 1, 65, 33, 128, false),
        p(1, 1, 1, 65, 70, 128, true),
        p(1, 1, 1, 40, 70, 48, true),
        // head dim 256 (wgmma only: dK and dV from a kernel each), and 200 zero-filled to it
        p(1, 2, 1, 17, 40, 256, true),
        p(1, 1, 1, 40, 33, 200, false),
        // more tiles than the simulation's 4 resident blocks: the wgmma kernels fed by TMA
        // producers are persistent, each block taking tiles in turn (dQ; dK, dV at head dim 128)
        // or, causal, from a counter as it finishes one (dQ: 15 tiles at head dim 64, 10 at 128
        // and 256)
        p(1, 5, 5, 130, 130, 64, true),
        p(1, 5, 5, 130, 130, 128, false),
        p(1, 5, 5, 130, 130, 128, true),
        p(1, 5, 1, 130, 130, 256, true),
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
        ]);
    }
    all
}

/// The gradients dQ, dK, dV of Σ dO·O with O = softmax(Q·Kᵀ/√d + mask)·V, in f64 from the
/// rounded inputs, each laid out as its tensor. Δ = Σ P·dP of each row is taken as Σ dO·O
/// from `o`, the O the forward stored — FlashAttention's definition, and what the kernels do:
/// from the exact O instead, the 16-bit rounding of O would show as an error of every row of
/// dQ of about 2^-8 · |Δ| · |K| / √d, where the rows of dS sum to 0 and dQ is small.
fn reference(p: &Problem, q: &[f32], k: &[f32], v: &[f32], o: &[f32], dout: &[f32]) -> [Vec<f64>; 3] {
    let d = p.head_dim;
    let scale = 1.0 / (d as f64).sqrt();
    let mut dq = vec![0.0; q.len()];
    let mut dk = vec![0.0; k.len()];
    let mut dv = vec![0.0; v.len()];
    let group = p.heads / p.kv_heads;
    for b in 0..p.batch {
        for h in 0..p.heads {
            let q_row = |i: usize| ((b * p.heads + h) * p.seq_q + i) * d;
            let kv_row = |j: usize| ((b * p.kv_heads + h / group) * p.seq_kv + j) * d;
            let dot = |x: &[f32], i: usize, y: &[f32], j: usize| -> f64 {
                (0..d).map(|c| f64::from(x[i + c]) * f64::from(y[j + c])).sum()
            };
            for i in 0..p.seq_q {
                let keys = if p.causal { (i + 1).min(p.seq_kv) } else { p.seq_kv };
                let scores: Vec<f64> = (0..keys).map(|j| dot(q, q_row(i), k, kv_row(j)) * scale).collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = weights.iter().sum();
                let probabilities: Vec<f64> = weights.iter().map(|w| w / sum).collect();
                // dP = dO·Vᵀ, dS = P∘(dP − Δ)
                let dp: Vec<f64> = (0..keys).map(|j| dot(dout, q_row(i), v, kv_row(j))).collect();
                let delta = dot(dout, q_row(i), o, q_row(i));
                for j in 0..keys {
                    let ds = probabilities[j] * (dp[j] - delta) * scale;
                    for c in 0..d {
                        dq[q_row(i) + c] += ds * f64::from(k[kv_row(j) + c]);
                        dk[kv_row(j) + c] += ds * f64::from(q[q_row(i) + c]);
                        dv[kv_row(j) + c] += probabilities[j] * f64::from(dout[q_row(i) + c]);
                    }
                }
            }
        }
    }
    [dq, dk, dv]
}

fn check<T: AttentionElement>(
    backend: &Backend,
    cores: TensorCores,
    p: Problem,
    mantissa_bits: i32,
    to: impl Fn(f32) -> T,
    back: impl Fn(T) -> f32,
) {
    // spread over the 64 bits: the xorshift's first values from a small seed are all near -1,
    // which makes every score equal and every gradient near 0
    let seed = ((p.seq_q * 131 + p.seq_kv * 7 + p.head_dim) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let q_dims = [p.batch, p.heads, p.seq_q, p.head_dim];
    let kv_dims = [p.batch, p.kv_heads, p.seq_kv, p.head_dim];
    let make = |len: usize, seed: u64, amplitude: f32| -> (Vec<T>, Vec<f32>) {
        let values: Vec<T> = random_floats(len, seed).iter().map(|&x| to(amplitude * x)).collect();
        let rounded = values.iter().map(|&x| back(x)).collect();
        (values, rounded)
    };
    let (q, q_rounded) = make(q_dims.iter().product(), seed, 2.0);
    let (k, k_rounded) = make(kv_dims.iter().product(), seed + 1, 2.0);
    let (v, v_rounded) = make(kv_dims.iter().product(), seed + 2, 2.0);
    let (dout, dout_rounded) = make(q_dims.iter().product(), seed + 3, 1.0);
    let (q, k, v, dout) = (
        backend.upload(&q, q_dims).unwrap(),
        backend.upload(&k, kv_dims).unwrap(),
        backend.upload(&v, kv_dims).unwrap(),
        backend.upload(&dout, q_dims).unwrap(),
    );
    let mut o = backend.zeros::<T>(q_dims).unwrap();
    let mut lse = backend.zeros::<f32>([p.batch, p.heads, p.seq_q]).unwrap();
    attention::forward(backend, &q, &k, &v, &mut o, &mut lse, p.causal).unwrap();
    let o_stored: Vec<f32> = backend.download(&o).unwrap().into_iter().map(&back).collect();
    let want = reference(&p, &q_rounded, &k_rounded, &v_rounded, &o_stored, &dout_rounded);
    let poison = to(f32::from_bits(POISON));
    let mut dq = backend.filled(q_dims, poison).unwrap();
    let mut dk = backend.filled(kv_dims, poison).unwrap();
    let mut dv = backend.filled(kv_dims, poison).unwrap();
    let launched =
        attention::backward_on(backend, cores, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, p.causal)
            .unwrap();
    let kernels = attention::backward_kernels_for::<T>(cores, p.head_dim, p.causal).unwrap();
    assert_eq!(launched.kernel, kernels.dq.name());
    for ((name, got), want) in [("dQ", &dq), ("dK", &dk), ("dV", &dv)].into_iter().zip(&want) {
        let got = backend.download(got).unwrap();
        // P and dS are rounded to the inputs' 16-bit type before they multiply (as
        // FlashAttention does) and the gradients are stored rounded: the error is measured
        // against the tensor's largest gradient (at least 0.1, where all are near 0), in units
        // of the 16-bit type's precision (2^-8 for bf16, 2^-11 for f16); up to 1.5 seen
        let largest = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(0.1);
        let worst = got
            .iter()
            .zip(want)
            .map(|(&g, &w)| {
                let g = f64::from(back(g));
                if g.is_nan() {
                    f64::INFINITY
                } else {
                    (g - w).abs()
                }
            })
            .fold(0.0, f64::max);
        let precision = (-f64::from(mantissa_bits) - 1.0).exp2();
        assert!(
            worst / largest < 4.0 * precision,
            "{p:?} on {cores:?}: {name} is {worst:.2e} off where its largest element is {largest:.2e}: {:.1} times the {precision:.1e} of the type (an element never written is NaN: infinitely off)",
            worst / largest / precision
        );
    }
}

/// The tensor cores whose backward kernels `backend` runs: both on the simulation and on
/// Hopper, mma.sync's alone elsewhere.
fn cores(backend: &Backend) -> Vec<TensorCores> {
    match TensorCores::of(backend) {
        TensorCores::MmaSync => vec![TensorCores::MmaSync],
        _ => vec![TensorCores::MmaSync, TensorCores::Wgmma],
    }
}

/// Whether the backward on `cores` has kernels for `p`'s head dim (mma.sync's stop at 128;
/// the typed-error test pins which head dims each takes).
fn reaches(cores: TensorCores, p: &Problem) -> bool {
    attention::backward_kernels_for::<bf16>(cores, p.head_dim, p.causal).is_ok()
}

/// The problems each tensor cores' backward has kernels for.
fn problems_on(backend: &Backend) -> Vec<(TensorCores, Problem)> {
    cores(backend)
        .into_iter()
        .flat_map(|cores| problems(backend).into_iter().filter(move |p| reaches(cores, p)).map(move |p| (cores, p)))
        .collect()
}

fn bf16_attention_gradients_match_f64_gradients(backend: &Backend) {
    for (cores, p) in problems_on(backend) {
        check(backend, cores, p, 7, bf16::from_f32, bf16::to_f32);
    }
}

fn f16_attention_gradients_match_f64_gradients(backend: &Backend) {
    // every F16 kernel (head dims 64, 128 and 256, causal and not), at the short lengths
    for (cores, p) in problems_on(backend).into_iter().filter(|(_, p)| p.seq_q <= 129 && p.seq_kv <= 129) {
        check(backend, cores, p, 10, f16::from_f32, f16::to_f32);
    }
}

fn grouped_query_gradients_sum_over_the_query_heads_of_each_kv_head(backend: &Backend) {
    // four query heads on two K/V heads, and eight on one, causal and not
    for (heads, kv_heads, causal) in [(4, 2, false), (8, 1, true)] {
        let p = Problem { batch: 2, heads, kv_heads, seq_q: 33, seq_kv: 47, head_dim: 64, causal };
        for cores in cores(backend) {
            check(backend, cores, p, 7, bf16::from_f32, bf16::to_f32);
        }
    }
}

/// What `compute-sanitizer` runs (memcheck, racecheck): tails in both lengths, causal, GQA.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gradients_at_tail_shapes_on_the_gpu() {
    let backend = common::gpu();
    for p in [
        Problem { batch: 1, heads: 2, kv_heads: 1, seq_q: 65, seq_kv: 70, head_dim: 128, causal: true },
        Problem { batch: 2, heads: 4, kv_heads: 2, seq_q: 129, seq_kv: 17, head_dim: 64, causal: false },
        Problem { batch: 1, heads: 1, kv_heads: 1, seq_q: 17, seq_kv: 129, head_dim: 48, causal: true },
        Problem { batch: 1, heads: 2, kv_heads: 1, seq_q: 65, seq_kv: 70, head_dim: 200, causal: true },
    ] {
        for cores in cores(&backend) {
            if reaches(cores, &p) {
                check(&backend, cores, p, 7, bf16::from_f32, bf16::to_f32);
            }
        }
    }
}

/// `attention::backward` takes the tensor cores `TensorCores::of` names: wgmma's kernels on the
/// simulation (as on Hopper), and their gradients are the mma.sync kernels' within rounding.
#[test]
fn the_backward_takes_the_wgmma_kernels_where_the_device_runs_wgmma() {
    let backend = common::simulator();
    let dims = [1, 2, 9, 64];
    let tensor = |seed: u64| {
        let values: Vec<bf16> = random_floats(dims.iter().product(), seed).into_iter().map(bf16::from_f32).collect();
        backend.upload(&values, dims).unwrap()
    };
    let (q, k, v, dout) = (tensor(1), tensor(2), tensor(3), tensor(4));
    let mut o = backend.zeros::<bf16>(dims).unwrap();
    let mut lse = backend.zeros::<f32>([1, 2, 9]).unwrap();
    attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, true).unwrap();
    let gradients = |cores: Option<TensorCores>| {
        let (mut dq, mut dk, mut dv) =
            (backend.zeros(dims).unwrap(), backend.zeros(dims).unwrap(), backend.zeros(dims).unwrap());
        let launched = match cores {
            None => attention::backward(&backend, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, true),
            Some(cores) => {
                attention::backward_on(&backend, cores, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, true)
            }
        }
        .unwrap();
        let all: Vec<f32> = [dq, dk, dv].iter().flat_map(|t| backend.download(t).unwrap()).map(bf16::to_f32).collect();
        (launched.kernel, all)
    };
    let (kernel, wgmma) = gradients(None);
    assert_eq!(kernel, "attention_backward_wgmma_dq_bf16_d64_causal");
    let (kernel, mma_sync) = gradients(Some(TensorCores::MmaSync));
    assert_eq!(kernel, "attention_backward_dq_bf16_d64_causal");
    let largest = mma_sync.iter().fold(0.0f32, |l, g| l.max(g.abs()));
    let worst = wgmma.iter().zip(&mma_sync).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst <= largest * 2f32.powi(-6), "wgmma's gradients {worst:e} off mma.sync's (largest {largest:e})");
}

#[test]
fn gradients_of_the_wrong_shape_are_typed_errors_before_any_launch() {
    let backend = common::simulator();
    let tensor = |dims: &[usize]| backend.zeros::<bf16>(dims).unwrap();
    let (q, k, v, o, dout) = (
        tensor(&[1, 4, 8, 64]),
        tensor(&[1, 2, 8, 64]),
        tensor(&[1, 2, 8, 64]),
        tensor(&[1, 4, 8, 64]),
        tensor(&[1, 4, 8, 64]),
    );
    let lse = backend.zeros::<f32>([1, 4, 8]).unwrap();
    let (mut dq, mut dv) = (tensor(&[1, 4, 8, 64]), tensor(&[1, 2, 8, 64]));
    // dk shaped like q, not like k
    let mut dk = tensor(&[1, 4, 8, 64]);
    let error =
        attention::backward(&backend, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, false).unwrap_err();
    assert!(
        matches!(&error, AttentionError::Shape { param: "dk", expected, .. } if expected == &[1, 2, 8, 64]),
        "{error}"
    );
    // dout of another sequence length
    let mut dk = tensor(&[1, 2, 8, 64]);
    let short = tensor(&[1, 4, 7, 64]);
    let error =
        attention::backward(&backend, &q, &k, &v, &o, &lse, &short, &mut dq, &mut dk, &mut dv, false).unwrap_err();
    assert!(matches!(error, AttentionError::Shape { param: "dout", .. }), "{error}");
    // a head dim over 128 on mma.sync, over 256 on wgmma
    let wide = |head_dim| tensor(&[1, 1, 8, head_dim]);
    for (cores, head_dim, supported) in
        [(TensorCores::MmaSync, 256, vec![64, 128]), (TensorCores::Wgmma, 264, vec![64, 128, 256])]
    {
        let (q, k, v, o, dout) = (wide(head_dim), wide(head_dim), wide(head_dim), wide(head_dim), wide(head_dim));
        let lse = backend.zeros::<f32>([1, 1, 8]).unwrap();
        let (mut dq, mut dk, mut dv) = (wide(head_dim), wide(head_dim), wide(head_dim));
        let error =
            attention::backward_on(&backend, cores, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, true)
                .unwrap_err();
        assert!(
            matches!(&error, AttentionError::HeadDim { head_dim: h, supported: s } if *h == head_dim && *s == supported),
            "{cores:?}: {error}"
        );
    }
}
