//! A register fragment as operand A of a tensor-core `mma` — FlashAttention's second GEMM,
//! O += P·V with P the first GEMM's f32 result kept in registers, rounded there to bf16 (or
//! f16), never written to shared memory — and its first GEMM, S = Q·Kᵀ with K stored
//! [keys, d] in shared memory (`k_s.t()`: B stored [n, k], ldmatrix without `.trans`). Checked
//! on the CPU simulation of the emitted CUDA C (whose `mma.sync` and `ldmatrix` follow the PTX
//! ISA's lane layouts) against an f64 reference, on a GPU with
//! `cargo test --release --test register_operand -- --include-ignored`, and in NVRTC's PTX.

mod common;

use common::{random_floats, relative_error};
use tessera::half::{bf16, f16};
use tessera::prelude::*;
use tessera::{nvrtc, Arch, Backend};

/// O = (A·Bᵀ)·C for up to 64 rows of A per block: A [M, K], B [N, K] (row n of B is column n
/// of the first product's B operand), C [N, D], all in one k-tile (K, N, D ≤ 64). Four warps
/// each hold 16 rows of S = A·Bᵀ (all 64 columns) and the same 16 rows of O; S is rounded to
/// bf16 in registers as A of the second mma.
macro_rules! two_gemms {
    ($name:ident, $t:ident) => {
        #[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 64, BD = 64, WM = 16))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (N, K)>, c: Global<$t, (N, D)>, o: GlobalMut<f32, (M, D)>) {
            let (bx, by) = grid(cdiv(D, BD), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128);
            let b_s = shared::<$t>([BN, BK]).swizzle_bytes(128);
            let c_s = shared::<$t>([BN, BD]).swizzle_bytes(128);
            let mut s = fragment::<f32>([BM, BN]).warp_tile([WM, BN]);
            let mut o_acc = fragment::<f32>([BM, BD]).warp_tile([WM, BD]);
            copy(a.tile([by, 0], [BM, BK]), &a_s);
            copy(b.tile([0, 0], [BN, BK]), &b_s);
            copy(c.tile([0, bx], [BN, BD]), &c_s);
            mma(&a_s, &b_s.t(), &mut s);
            mma(&s, &c_s, &mut o_acc);
            copy(&o_acc, o.tile([by, bx], [BM, BD]));
        }
    };
}
two_gemms!(two_gemms_bf16, bf16);
two_gemms!(two_gemms_f16, f16);

on_both_backends!(
    s_rounded_to_bf16_in_registers_times_c_matches_an_f64_reference_on_tail_shapes,
    s_rounded_to_f16_in_registers_times_c_matches_an_f64_reference_on_tail_shapes
);

/// (M, K, N, D): whole tiles, tails of M (17 rows, and a second block of 36), K, N (zero rows
/// of B and C beyond N make zero columns of S and zero rows of the second product) and D.
const SHAPES: [(usize, usize, usize, usize); 5] =
    [(64, 64, 64, 64), (17, 64, 64, 64), (17, 40, 64, 64), (100, 64, 48, 64), (64, 24, 64, 40)];

/// The reference: S = A·Bᵀ in f64, each value rounded to f32 (the tensor cores accumulate in
/// f32; the products of 16-bit values are exact) and then to the 16-bit type by `round`, times
/// C in f64.
fn reference(
    (a, b, c): (&[f32], &[f32], &[f32]),
    (m, k, n, d): (usize, usize, usize, usize),
    round: impl Fn(f32) -> f32,
) -> Vec<f64> {
    let mut p = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let sum: f64 = (0..k).map(|l| f64::from(a[i * k + l]) * f64::from(b[j * k + l])).sum();
            p[i * n + j] = round(sum as f32);
        }
    }
    let mut o = vec![0f64; m * d];
    for i in 0..m {
        for j in 0..d {
            o[i * d + j] = (0..n).map(|l| f64::from(p[i * n + l]) * f64::from(c[l * d + j])).sum();
        }
    }
    o
}

type Launch<T> = fn(
    &Backend,
    &tessera::DeviceTensor<T>,
    &tessera::DeviceTensor<T>,
    &tessera::DeviceTensor<T>,
    &mut tessera::DeviceTensor<f32>,
) -> Result<tessera::Launched, tessera::Error>;

fn check<T: tessera::runtime::Element + Copy>(
    gpu: &Backend,
    to: impl Fn(f32) -> T + Copy,
    back: impl Fn(T) -> f32 + Copy,
    launch: Launch<T>,
) {
    for (index, &(m, k, n, d)) in SHAPES.iter().enumerate() {
        let seed = 10 * index as u64;
        let halves = |len: usize, seed: u64| -> (Vec<T>, Vec<f32>) {
            let halves: Vec<T> = random_floats(len, seed).into_iter().map(to).collect();
            let exact = halves.iter().map(|&h| back(h)).collect();
            (halves, exact)
        };
        let (host_a, exact_a) = halves(m * k, seed + 1);
        let (host_b, exact_b) = halves(n * k, seed + 2);
        let (host_c, exact_c) = halves(n * d, seed + 3);
        let want = reference((&exact_a, &exact_b, &exact_c), (m, k, n, d), |v| back(to(v)));
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [n, k]).unwrap();
        let c = gpu.upload(&host_c, [n, d]).unwrap();
        let mut o = gpu.filled([m, d], f32::NAN).unwrap();
        launch(gpu, &a, &b, &c, &mut o).unwrap();
        let got = gpu.download(&o).unwrap();
        assert!(got.iter().all(|v| v.is_finite()), "M={m} K={k} N={n} D={d}: an element left unwritten");
        // The kernel's S differs from the reference's by the f32 accumulation's error, which may
        // move a value across a 16-bit rounding boundary: a 16-bit ulp in a few values of P
        // (about 1e-5 of the result where one of 64 × 64 does; 1e-7 where none does).
        let error = relative_error(&got, &want);
        assert!(error < 1e-4, "M={m} K={k} N={n} D={d}: relative error {error:e}");
        // and P is rounded: an unrounded S times C is much farther away
        let unrounded = relative_error(&got, &reference((&exact_a, &exact_b, &exact_c), (m, k, n, d), |v| v));
        assert!(
            unrounded > 4.0 * error,
            "M={m} K={k} N={n} D={d}: {unrounded:e} from S unrounded, {error:e} from S rounded"
        );
    }
}

fn s_rounded_to_bf16_in_registers_times_c_matches_an_f64_reference_on_tail_shapes(gpu: &Backend) {
    check(gpu, bf16::from_f32, bf16::to_f32, two_gemms_bf16::launch);
}

fn s_rounded_to_f16_in_registers_times_c_matches_an_f64_reference_on_tail_shapes(gpu: &Backend) {
    check(gpu, f16::from_f32, f16::to_f32, two_gemms_f16::launch);
}

#[test]
fn the_register_operand_is_packed_from_the_accumulators_two_n_tiles_per_k_step() {
    let source = two_gemms_bf16::KERNEL.cuda_source();
    for register in [
        "a_frag[mi][0] = tessera_pack(__float2bfloat16_rn(s[mi][kk / 8][0]), __float2bfloat16_rn(s[mi][kk / 8][1]));",
        "a_frag[mi][1] = tessera_pack(__float2bfloat16_rn(s[mi][kk / 8][2]), __float2bfloat16_rn(s[mi][kk / 8][3]));",
        "a_frag[mi][2] = tessera_pack(__float2bfloat16_rn(s[mi][kk / 8 + 1][0]), __float2bfloat16_rn(s[mi][kk / 8 + 1][1]));",
        "a_frag[mi][3] = tessera_pack(__float2bfloat16_rn(s[mi][kk / 8 + 1][2]), __float2bfloat16_rn(s[mi][kk / 8 + 1][3]));",
    ] {
        assert!(source.contains(register), "no `{register}` in\n{source}");
    }
    // two warp-tile fragments: each names its own warp origins, and its mma and epilogue bind them
    for line in ["const int s_warp_row0 =", "const int o_acc_warp_row0 =", "const int warp_row0 = o_acc_warp_row0;"] {
        assert!(source.contains(line), "no `{line}` in\n{source}");
    }
    // K stored [keys, d]: B by ldmatrix without .trans, C by ldmatrix.trans
    assert!(source.contains("tessera_ldmatrix_x4<false>(b_pair, &b_s["), "{source}");
    assert!(source.contains("tessera_ldmatrix_x4<true>(b_pair, &c_s["), "{source}");
    let f16_source = two_gemms_f16::KERNEL.cuda_source();
    assert!(f16_source.contains("tessera_pack(__float2half_rn(s[mi][kk / 8][0]), __float2half_rn(s[mi][kk / 8][1]))"));
}

/// NVRTC turns both mmas into mma.sync; the second one's A comes from no shared load: the only
/// ldmatrix without `.trans` are the first mma's A and B (one x4 per 16 rows or 16 columns per
/// k-step), and `.trans` ones only C's.
#[test]
fn nvrtc_compiles_both_gemms_to_mma_sync_with_no_shared_load_for_the_register_operand() {
    let ptx = nvrtc::compile_ptx(two_gemms_bf16::KERNEL.cuda_source(), "two_gemms_bf16", Arch::SM_80)
        .unwrap_or_else(|e| panic!("{e}"));
    let count = |needle: &str| ptx.lines().filter(|line| line.trim_start().starts_with(needle)).count();
    let mma = count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
    // S: 4 k-steps × 1 m-tile × 8 n-tiles; O: 4 k-steps × 1 × 8
    assert_eq!(mma, 64, "mma.sync per thread in\n{ptx}");
    // A of S: 4 k-steps × 1 x4; B of S: 4 × 4 x4 (two n-tiles each); C: 4 × 4 x4.trans
    assert_eq!(count("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 4 + 16, "ldmatrix in\n{ptx}");
    assert_eq!(count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 16, "ldmatrix.trans in\n{ptx}");
    // the only other shared loads are none: the copies store to shared memory, the epilogue
    // writes global memory, and P never leaves the registers
    assert_eq!(count("ld.shared"), 0, "shared loads besides ldmatrix in\n{ptx}");
    assert!(ptx.contains("cvt.rn.bf16.f32") || ptx.contains("cvt.rn.bf16x2.f32"), "no rounding to bf16 in\n{ptx}");
    let compiled = nvrtc::compile_cubin(two_gemms_bf16::KERNEL.cuda_source(), "two_gemms_bf16", Arch::SM_80).unwrap();
    assert!(!compiled.ptxas.spills(), "{}", compiled.log);
    assert!(!compiled.log.contains("warning"), "{}", compiled.log);
}

/// The analyzer reads an mma with a register operand: REPORT lists the shared loads of the
/// first mma's A and B and the second's B, and none for `s`, which is never in memory.
#[test]
fn the_report_lists_no_memory_access_for_the_register_operand() {
    let report = two_gemms_bf16::REPORT;
    assert!(report.contains("mma(&s, &c_s, &mut o_acc)"), "{report}");
    assert!(report.contains("c_s"), "{report}");
    let accesses = tessera::dsl::analyze(two_gemms_bf16::KERNEL.ir().unwrap()).unwrap().accesses;
    let second: Vec<_> = accesses.iter().filter(|a| a.statement.starts_with("mma(&s,")).collect();
    assert_eq!(second.len(), 1, "{report}");
    assert_eq!(second[0].operand, "c_s");
    assert!(accesses.iter().all(|a| a.operand != "s"), "{report}");
}

/// The IR of `two_gemms_bf16`, with `change` applied to each statement.
fn two_gemms_with(change: impl Fn(&mut tessera::dsl::Statement)) -> Vec<String> {
    let mut kernel = two_gemms_bf16::KERNEL.ir().unwrap().clone();
    kernel.body.iter_mut().for_each(change);
    match tessera::dsl::validate(&kernel, &tessera::dsl::Target::PORTABLE) {
        Ok(()) => vec![],
        Err(diagnostics) => diagnostics.iter().map(|d| d.message.clone()).collect(),
    }
}

fn expr(value: i64) -> tessera::dsl::Expr {
    tessera::dsl::Expr::int(value)
}

/// What a register operand must be, beyond the two ui cases (split across warps, times f32):
/// each error names the fragment and the numbers.
#[test]
fn a_register_operand_that_cannot_feed_mma_sync_is_an_error_with_the_numbers() {
    use tessera::dsl::{ElementType, Statement};
    let has = |found: &[String], wanted: &str| {
        assert!(found.iter().any(|m| m.contains(wanted)), "no `{wanted}` among {found:?}");
    };
    assert_eq!(two_gemms_with(|_| {}), Vec::<String>::new());
    // accumulating into the operand itself
    let found = two_gemms_with(|s| {
        if let Statement::Mma(mma) = s {
            if mma.a.name() == "s" {
                mma.acc = "s".into();
            }
        }
    });
    has(&found, "reads the fragment `s` as A while it accumulates into it");
    // laid out per thread
    let found = two_gemms_with(|s| {
        if let Statement::Fragment(f) = s {
            if f.name == "s" {
                f.warp_tile = None;
                f.thread_tile = vec![expr(4), expr(8)];
            }
        }
    });
    has(&found, "`s` is a register operand of `mma`, so its values must be in mma.sync's accumulator layout");
    // other rows per warp than the accumulator's
    let found = two_gemms_with(|s| {
        if let Statement::Fragment(f) = s {
            if f.name == "o_acc" {
                f.warp_tile = Some(vec![expr(32), expr(64)]);
            }
        }
    });
    has(&found, "each warp holds 16 rows of `s` but 32 of `o_acc`");
    // a k extent that is not whole k-steps
    let found = two_gemms_with(|s| {
        if let Statement::Fragment(f) = s {
            if f.name == "s" {
                f.shape = vec![expr(64), expr(40)];
                f.warp_tile = Some(vec![expr(16), expr(40)]);
            }
        }
    });
    has(
        &found,
        "`s` has 40 columns, the k extent of `mma(&s, &c_s, &mut o_acc)`, but the tensor cores take k-steps of 16",
    );
    // not f32 accumulators
    let found = two_gemms_with(|s| {
        if let Statement::Fragment(f) = s {
            if f.name == "s" {
                f.element = ElementType::BF16;
            }
        }
    });
    has(&found, "`s` holds bf16 values, but a register operand is an f32 `.warp_tile(..)` fragment");
    // a wgmma accumulator fed by an mma.sync-layout operand, and the other way round
    let warpgroup = |name: &'static str| {
        move |s: &mut Statement| {
            if let Statement::Fragment(f) = s {
                if f.name == name {
                    f.warp_tile = None;
                    f.warpgroup_tile = Some(vec![expr(64), expr(64)]);
                }
            }
        }
    };
    let found = two_gemms_with(warpgroup("o_acc"));
    has(&found, "`o_acc` is a `.warpgroup_tile(..)` fragment, so this `mma` runs on wgmma, whose register operand is in wgmma's accumulator layout: `s` must be a `.warpgroup_tile(..)` fragment too");
    let found = two_gemms_with(warpgroup("s"));
    has(&found, "`s` is a `.warpgroup_tile(..)` fragment (wgmma's), so the `mma` it feeds runs on wgmma: the accumulator `o_acc` must be a `.warpgroup_tile(..)` fragment too");
}
