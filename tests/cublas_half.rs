//! The cuBLAS baselines beyond pedantic SGEMM, against an f64 CPU reference: `gemm_ex` on
//! bf16 and f16 inputs (f32 or 16-bit C) and `sgemm_tf32`; and the pedantic `sgemm` still
//! pedantic after either ran on the same handle. They need a GPU:
//! `cargo test --release --test cublas_half -- --include-ignored`.

mod common;

use common::{gemm_reference, random_floats, relative_error};
use tessera::half::{bf16, f16};
use tessera::runtime::Cublas;
use tessera::Gpu;

/// Small, odd and one-element shapes (M, N, K), all three different in each.
const SHAPES: [(usize, usize, usize); 4] = [(64, 48, 40), (129, 127, 17), (1, 1, 1), (300, 203, 101)];

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

/// The unit roundoff of a format with `p` bits of precision (the implicit bit included):
/// the largest relative error of one rounding to nearest.
fn unit_roundoff(p: i32) -> f64 {
    2f64.powi(-p)
}

/// A 16-bit float type, for the tests that run on both.
trait Half: tessera::runtime::GemmExInput + tessera::runtime::GemmExOutput<Self> + std::fmt::Debug {
    const NAME: &'static str;
    /// Bits of precision, the implicit one included.
    const PRECISION: i32;
    fn round(x: f32) -> Self;
    fn widen(self) -> f32;
}

impl Half for bf16 {
    const NAME: &'static str = "bf16";
    const PRECISION: i32 = 8;
    fn round(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

impl Half for f16 {
    const NAME: &'static str = "f16";
    const PRECISION: i32 = 11;
    fn round(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// Random values rounded to `T`, and the same values as f32 (exactly).
fn rounded<T: Half>(len: usize, seed: u64) -> (Vec<T>, Vec<f32>) {
    let values: Vec<T> = random_floats(len, seed).into_iter().map(T::round).collect();
    let exact = values.iter().map(|v| v.widen()).collect();
    (values, exact)
}

/// f32 C: the products of 16-bit inputs are exact in FP32 (8 + 8 or 11 + 11 bits), so the
/// only error is FP32 accumulation over K ≤ 101 terms, far below 1e-5.
fn half_inputs_f32_output<T: Half>(gpu: &Gpu, blas: &Cublas) {
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        let seed = 10 * index as u64;
        let (host_a, exact_a) = rounded::<T>(m * k, seed + 1);
        let (host_b, exact_b) = rounded::<T>(k * n, seed + 2);
        let host_c = random_floats(m * n, seed + 3);
        let (alpha, beta) = (1.5f32, -0.5f32);
        let want = gemm_reference(&exact_a, &exact_b, &host_c, (m, n, k), alpha.into(), beta.into());
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        let mut c = gpu.upload(&host_c, [m, n]).unwrap();
        blas.gemm_ex(alpha, &a, &b, beta, &mut c).unwrap();
        let error = relative_error(&gpu.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "{} in, f32 out, M={m} N={n} K={k}: relative error {error:e}", T::NAME);
    }
}

/// 16-bit C: one rounding of each result to T bounds the error by T's unit roundoff u;
/// default math also lets cuBLAS add split-K partial sums in T, so allow 2u.
fn half_inputs_half_output<T: Half>(gpu: &Gpu, blas: &Cublas) {
    let tolerance = 2.0 * unit_roundoff(T::PRECISION);
    for (index, &(m, n, k)) in SHAPES.iter().enumerate() {
        let seed = 100 + 10 * index as u64;
        let (host_a, exact_a) = rounded::<T>(m * k, seed + 1);
        let (host_b, exact_b) = rounded::<T>(k * n, seed + 2);
        let (host_c, exact_c) = rounded::<T>(m * n, seed + 3);
        let (alpha, beta) = (0.75f32, 0.5f32);
        let want = gemm_reference(&exact_a, &exact_b, &exact_c, (m, n, k), alpha.into(), beta.into());
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        let mut c = gpu.upload(&host_c, [m, n]).unwrap();
        blas.gemm_ex(alpha, &a, &b, beta, &mut c).unwrap();
        let got: Vec<f32> = gpu.download(&c).unwrap().into_iter().map(T::widen).collect();
        let error = relative_error(&got, &want);
        assert!(
            error < tolerance,
            "{0} in, {0} out, M={m} N={n} K={k}: relative error {error:e} (tolerance {tolerance:e})",
            T::NAME
        );
    }
}

/// Sub-matrices pass their leading dimensions, as to `sgemm`, and nothing outside C's view
/// is written.
fn half_submatrices<T: Half>(gpu: &Gpu, blas: &Cublas) {
    let (m, n, k) = (67, 45, 33);
    let (host_a, exact_a) = rounded::<T>((m + 2) * (k + 5), 1);
    let (host_b, exact_b) = rounded::<T>((k + 1) * (n + 3), 2);
    let host_c = random_floats((m + 3) * (n + 7), 3);
    let a_parent = gpu.upload(&host_a, [m + 2, k + 5]).unwrap();
    let b_parent = gpu.upload(&host_b, [k + 1, n + 3]).unwrap();
    let mut c_parent = gpu.upload(&host_c, [m + 3, n + 7]).unwrap();
    let a = a_parent.submatrix(1..m + 1, 3..k + 3).unwrap();
    let b = b_parent.submatrix(1..k + 1, 2..n + 2).unwrap();
    let mut c = c_parent.submatrix_mut(2..m + 2, 5..n + 5).unwrap();
    blas.gemm_ex(1.0, &a, &b, 1.0, &mut c).unwrap();
    let pack = |x: &[f32], ld: usize, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| -> Vec<f32> {
        rows.flat_map(|r| x[r * ld + cols.start..r * ld + cols.end].to_vec()).collect()
    };
    let want = gemm_reference(
        &pack(&exact_a, k + 5, 1..m + 1, 3..k + 3),
        &pack(&exact_b, n + 3, 1..k + 1, 2..n + 2),
        &pack(&host_c, n + 7, 2..m + 2, 5..n + 5),
        (m, n, k),
        1.0,
        1.0,
    );
    let error = relative_error(&gpu.download(&c).unwrap(), &want);
    assert!(error < 1e-5, "{} sub-matrices: relative error {error:e}", T::NAME);
    let after = gpu.download(&c_parent).unwrap();
    for r in 0..m + 3 {
        for col in 0..n + 7 {
            let inside = (2..m + 2).contains(&r) && (5..n + 5).contains(&col);
            let i = r * (n + 7) + col;
            assert!(inside || after[i].to_bits() == host_c[i].to_bits(), "c[{r}][{col}] outside the view changed");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_ex_on_bf16_and_f16_into_f32_matches_an_f64_reference() {
    let gpu = gpu();
    let blas = gpu.cublas().unwrap();
    half_inputs_f32_output::<bf16>(&gpu, &blas);
    half_inputs_f32_output::<f16>(&gpu, &blas);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_ex_into_a_16_bit_c_is_within_its_rounding() {
    let gpu = gpu();
    let blas = gpu.cublas().unwrap();
    half_inputs_half_output::<bf16>(&gpu, &blas);
    half_inputs_half_output::<f16>(&gpu, &blas);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_ex_takes_submatrices() {
    let gpu = gpu();
    let blas = gpu.cublas().unwrap();
    half_submatrices::<bf16>(&gpu, &blas);
    half_submatrices::<f16>(&gpu, &blas);
}

/// TF32 keeps 11 bits of each f32 input (the implicit one included). Against f64 of the
/// unrounded inputs, inputs rounded to nearest (unit roundoff 2⁻¹¹, unbiased) put the
/// relative error near 2.6e-4 at these shapes; truncation (error up to 2⁻¹⁰, biased: every
/// product shrinks by 2⁻¹⁰ on average) would put it near 7.8e-4; 16-bit inputs (bf16, 2⁻⁸)
/// near 2e-3. So 1e-3 accepts TF32 either way cuBLAS rounds and rejects anything coarser.
/// (On an H100 with cuBLAS 13, 2026-11-24, the result matched f64 of inputs rounded to
/// nearest even at bit 13 to 7e-8 – 6e-7: cuBLAS rounds, it does not truncate; not asserted,
/// as cuBLAS does not promise it.) A pedantic FP32 GEMM is far below (1e-5), so where K ≥ 100
/// an error above 1e-5 also shows TF32 was used; and `sgemm` on the same handle afterwards
/// is pedantic again.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sgemm_tf32_is_within_tf32_rounding_and_leaves_sgemm_pedantic() {
    let gpu = gpu();
    let blas = gpu.cublas().unwrap();
    for (index, &(m, n, k)) in SHAPES.iter().chain(&[(256, 256, 256)]).enumerate() {
        let seed = 1000 + 10 * index as u64;
        let (host_a, host_b, host_c) =
            (random_floats(m * k, seed + 1), random_floats(k * n, seed + 2), random_floats(m * n, seed + 3));
        let (alpha, beta) = (1.25f32, -0.75f32);
        let want = gemm_reference(&host_a, &host_b, &host_c, (m, n, k), alpha.into(), beta.into());
        let a = gpu.upload(&host_a, [m, k]).unwrap();
        let b = gpu.upload(&host_b, [k, n]).unwrap();
        let mut c = gpu.upload(&host_c, [m, n]).unwrap();
        blas.sgemm_tf32(alpha, &a, &b, beta, &mut c).unwrap();
        let tf32_error = relative_error(&gpu.download(&c).unwrap(), &want);
        assert!(tf32_error < 1e-3, "TF32 M={m} N={n} K={k}: relative error {tf32_error:e}");
        if k >= 100 {
            assert!(tf32_error > 1e-5, "TF32 M={m} N={n} K={k}: {tf32_error:e} is FP32 accuracy: no TF32?");
        }
        // the same handle, pedantic again
        let mut c = gpu.upload(&host_c, [m, n]).unwrap();
        blas.sgemm(alpha, &a, &b, beta, &mut c).unwrap();
        let error = relative_error(&gpu.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "sgemm after sgemm_tf32, M={m} N={n} K={k}: relative error {error:e}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sgemm_stays_pedantic_after_gemm_ex() {
    let gpu = gpu();
    let blas = gpu.cublas().unwrap();
    let (m, n, k) = (256, 256, 256);
    let (host_a, host_b) = (random_floats(m * k, 7), random_floats(k * n, 8));
    let want = gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    let half_a: Vec<bf16> = host_a.iter().map(|&x| bf16::from_f32(x)).collect();
    let half_b: Vec<bf16> = host_b.iter().map(|&x| bf16::from_f32(x)).collect();
    let (ha, hb) = (gpu.upload(&half_a, [m, k]).unwrap(), gpu.upload(&half_b, [k, n]).unwrap());
    let mut hc = gpu.zeros::<f32>([m, n]).unwrap();
    blas.gemm_ex(1.0, &ha, &hb, 0.0, &mut hc).unwrap();
    let (a, b) = (gpu.upload(&host_a, [m, k]).unwrap(), gpu.upload(&host_b, [k, n]).unwrap());
    let mut c = gpu.zeros::<f32>([m, n]).unwrap();
    blas.sgemm(1.0, &a, &b, 0.0, &mut c).unwrap();
    let error = relative_error(&gpu.download(&c).unwrap(), &want);
    assert!(error < 1e-5, "sgemm after gemm_ex: relative error {error:e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shapes_that_do_not_chain_are_errors() {
    let gpu = gpu();
    let blas = gpu.cublas().unwrap();
    let a = gpu.zeros::<bf16>([4, 5]).unwrap();
    let b = gpu.zeros::<bf16>([6, 7]).unwrap();
    let mut c = gpu.zeros::<f32>([4, 7]).unwrap();
    match blas.gemm_ex(1.0, &a, &b, 0.0, &mut c) {
        Err(tessera::Error::GemmShape { a, b, c }) => assert_eq!((a, b, c), (vec![4, 5], vec![6, 7], vec![4, 7])),
        other => panic!("expected GemmShape, got {other:?}"),
    }
    let (a, b) = (gpu.zeros::<f32>([4, 5]).unwrap(), gpu.zeros::<f32>([5, 7]).unwrap());
    let mut c = gpu.zeros::<f32>([4, 8]).unwrap();
    assert!(matches!(blas.sgemm_tf32(1.0, &a, &b, 0.0, &mut c), Err(tessera::Error::GemmShape { .. })));
}
