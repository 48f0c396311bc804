//! What a family's kernels are timed beside: the device copy of the same bytes, cuBLAS (FP32, BF16,
//! F16, TF32), or cuBLAS followed by the separate epilogue kernel.

use super::*;

/// What a family's kernels are measured against, its tensors allocated once per shape and
/// filled like the kernels' own ([`measurement_value`]).
pub(super) enum Baseline<'g> {
    /// `cuMemcpyDtoDAsync` of the same number of floats.
    Copy { gpu: &'g Gpu, from: DeviceTensor<f32>, to: DeviceTensor<f32> },
    /// cuBLAS SGEMM (pedantic FP32) of the same M, N, K.
    Sgemm {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<f32>,
        b: DeviceTensor<f32>,
        c: DeviceTensor<f32>,
        /// B stored [N, K] (the `sgemm_bt` kernels' baseline).
        b_transposed: bool,
    },
    /// cuBLAS SGEMM, then `bias_gelu_f32` on its C (`bias_residual_f32` with the residual, for a
    /// kernel that adds one): what a fused epilogue saves.
    SgemmThenEpilogue {
        gpu: &'g Gpu,
        blas: crate::runtime::Cublas,
        a: DeviceTensor<f32>,
        b: DeviceTensor<f32>,
        bias: DeviceTensor<f32>,
        residual: Option<DeviceTensor<f32>>,
        c: DeviceTensor<f32>,
    },
    /// cuBLAS `cublasGemmEx` on BF16 (bf16 out), then `bias_gelu_bf16` on its C — or, for a
    /// kernel that adds a residual, `bias_residual_bf16` with this one.
    GemmBf16ThenEpilogue {
        gpu: &'g Gpu,
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::bf16>,
        b: DeviceTensor<half::bf16>,
        bias: DeviceTensor<half::bf16>,
        residual: Option<DeviceTensor<half::bf16>>,
        c: DeviceTensor<half::bf16>,
        /// B stored [N, K] (the `hgemm_bt_bias_*` kernels' baseline).
        b_transposed: bool,
    },
    /// [`Baseline::GemmBf16ThenEpilogue`] on F16: `bias_gelu_f16` or `bias_residual_f16` after it.
    GemmF16ThenEpilogue {
        gpu: &'g Gpu,
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::f16>,
        b: DeviceTensor<half::f16>,
        bias: DeviceTensor<half::f16>,
        residual: Option<DeviceTensor<half::f16>>,
        c: DeviceTensor<half::f16>,
        /// B stored [N, K] (the `hgemm_bt_bias_*` kernels' baseline).
        b_transposed: bool,
    },
    /// cuBLAS `cublasGemmEx`, BF16 inputs, f32 compute and output.
    GemmBf16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::bf16>,
        b: DeviceTensor<half::bf16>,
        c: DeviceTensor<f32>,
        /// B stored [N, K], multiplied as Bᵀ (the `hgemm_bt` kernels' baseline).
        b_transposed: bool,
    },
    /// cuBLAS SGEMM with TF32 tensor-core math (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    GemmTf32 { blas: crate::runtime::Cublas, a: DeviceTensor<f32>, b: DeviceTensor<f32>, c: DeviceTensor<f32> },
    /// cuBLAS `cublasGemmEx`, F16 inputs, f32 compute and output.
    GemmF16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::f16>,
        b: DeviceTensor<half::f16>,
        c: DeviceTensor<f32>,
        /// B stored [N, K], multiplied as Bᵀ (the `hgemm_bt` kernels' baseline).
        b_transposed: bool,
    },
    /// cuBLAS `cublasGemmEx`, BF16 inputs and output, f32 compute (torch's `a @ b`).
    GemmBf16ToBf16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::bf16>,
        b: DeviceTensor<half::bf16>,
        c: DeviceTensor<half::bf16>,
        /// B stored [N, K], multiplied as Bᵀ (the `hgemm_bt` kernels' baseline).
        b_transposed: bool,
    },
    /// cuBLAS `cublasGemmEx`, F16 inputs and output, f32 compute.
    GemmF16ToF16 {
        blas: crate::runtime::Cublas,
        a: DeviceTensor<half::f16>,
        b: DeviceTensor<half::f16>,
        c: DeviceTensor<half::f16>,
        /// B stored [N, K], multiplied as Bᵀ (the `hgemm_bt` kernels' baseline).
        b_transposed: bool,
    },
}

/// Whether a kernel adds a residual tensor (a parameter named `residual`): its baseline's second
/// kernel adds the bias and the residual instead of taking the bias and the GELU (so
/// `sgemm_bias_relu_residual`'s baseline has no ReLU: the nearest separate kernel).
pub(super) fn reads_residual(kernel: &KernelDefinition) -> bool {
    kernel.ir().is_ok_and(|ir| ir.params.iter().any(|p| p.name == "residual"))
}

impl<'g> Baseline<'g> {
    pub(super) fn new(
        gpu: &'g Gpu,
        family: Family,
        shape: &[(String, i64)],
        input: Option<crate::dsl::ElementType>,
        output: crate::dsl::ElementType,
        reads_residual: bool,
    ) -> Result<Self, Error> {
        let value = |name: &str| shape.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| (*v).max(0) as usize);
        let filled = |dims: &[usize]| measurement_tensor(gpu, dims);
        match family {
            Family::Copy
            | Family::Transpose
            | Family::Reduce
            | Family::Map
            | Family::Stencil
            | Family::Softmax
            | Family::Norm
            | Family::Gemv => {
                let elements = family.copied_elements(shape);
                Ok(Baseline::Copy { gpu, from: filled(&[elements])?, to: gpu.zeros([elements])? })
            }
            Family::Sgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                Ok(Baseline::Sgemm {
                    blas: gpu.cublas()?,
                    a: filled(&[m, k])?,
                    b: filled(&[k, n])?,
                    c: gpu.zeros([m, n])?,
                    b_transposed: false,
                })
            }
            // cuBLAS on the kernel's own type, then the separate epilogue kernel (kernels that add
            // a residual: the bias and the residual; the rest: the bias and the GELU)
            Family::Epilogue => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                Ok(match input {
                    Some(crate::dsl::ElementType::BF16) => {
                        let upload = |dims: &[usize]| measurement_tensor_as(gpu, dims, half::bf16::from_f64);
                        Baseline::GemmBf16ThenEpilogue {
                            gpu,
                            blas: gpu.cublas()?,
                            a: upload(&[m, k])?,
                            b: upload(&[k, n])?,
                            bias: upload(&[n])?,
                            residual: if reads_residual { Some(upload(&[m, n])?) } else { None },
                            c: gpu.zeros([m, n])?,
                            b_transposed: false,
                        }
                    }
                    Some(crate::dsl::ElementType::F16) => {
                        let upload = |dims: &[usize]| measurement_tensor_as(gpu, dims, half::f16::from_f64);
                        Baseline::GemmF16ThenEpilogue {
                            gpu,
                            blas: gpu.cublas()?,
                            a: upload(&[m, k])?,
                            b: upload(&[k, n])?,
                            bias: upload(&[n])?,
                            residual: if reads_residual { Some(upload(&[m, n])?) } else { None },
                            c: gpu.zeros([m, n])?,
                            b_transposed: false,
                        }
                    }
                    _ => Baseline::SgemmThenEpilogue {
                        gpu,
                        blas: gpu.cublas()?,
                        a: filled(&[m, k])?,
                        b: filled(&[k, n])?,
                        bias: filled(&[n])?,
                        residual: if reads_residual { Some(filled(&[m, n])?) } else { None },
                        c: gpu.zeros([m, n])?,
                    },
                })
            }
            // the anchor: cuBLAS BF16 at 4096³, the same GEMM torch's attention figures sit beside
            Family::Attention => {
                let anchor = ATTENTION_ANCHOR.map(|(n, v)| (n.to_string(), v));
                Baseline::new(gpu, Family::Hgemm, &anchor, Some(crate::dsl::ElementType::BF16), output, false)
            }
            Family::Hgemm => {
                let (m, n, k) = (value("M"), value("N"), value("K"));
                // A and B of the 16-bit baselines, from the values the kernels get
                let bf16 = |rows: usize, cols: usize| measurement_tensor_as(gpu, &[rows, cols], half::bf16::from_f64);
                let f16 = |rows: usize, cols: usize| measurement_tensor_as(gpu, &[rows, cols], half::f16::from_f64);
                let same_type_output = input == Some(output);
                Ok(match input {
                    Some(crate::dsl::ElementType::BF16) if same_type_output => Baseline::GemmBf16ToBf16 {
                        blas: gpu.cublas()?,
                        a: bf16(m, k)?,
                        b: bf16(k, n)?,
                        c: gpu.zeros([m, n])?,
                        b_transposed: false,
                    },
                    Some(crate::dsl::ElementType::F16) if same_type_output => Baseline::GemmF16ToF16 {
                        blas: gpu.cublas()?,
                        a: f16(m, k)?,
                        b: f16(k, n)?,
                        c: gpu.zeros([m, n])?,
                        b_transposed: false,
                    },
                    Some(crate::dsl::ElementType::F32) => Baseline::GemmTf32 {
                        blas: gpu.cublas()?,
                        a: filled(&[m, k])?,
                        b: filled(&[k, n])?,
                        c: gpu.zeros([m, n])?,
                    },
                    Some(crate::dsl::ElementType::F16) => Baseline::GemmF16 {
                        blas: gpu.cublas()?,
                        a: f16(m, k)?,
                        b: f16(k, n)?,
                        c: gpu.zeros([m, n])?,
                        b_transposed: false,
                    },
                    _ => Baseline::GemmBf16 {
                        blas: gpu.cublas()?,
                        a: bf16(m, k)?,
                        b: bf16(k, n)?,
                        c: gpu.zeros([m, n])?,
                        b_transposed: false,
                    },
                })
            }
        }
    }

    pub(super) fn name(&self) -> &'static str {
        match self {
            Baseline::Copy { .. } => "device copy",
            Baseline::Sgemm { b_transposed: false, .. } => "cuBLAS",
            Baseline::Sgemm { b_transposed: true, .. } => "cuBLAS (Bᵀ)",
            Baseline::SgemmThenEpilogue { residual: None, .. } => "cuBLAS + bias_gelu_f32",
            Baseline::SgemmThenEpilogue { residual: Some(_), .. } => "cuBLAS + bias_residual_f32",
            Baseline::GemmBf16ThenEpilogue { residual: None, b_transposed: false, .. } => {
                "cuBLAS bf16 + bias_gelu_bf16"
            }
            Baseline::GemmBf16ThenEpilogue { residual: Some(_), b_transposed: false, .. } => {
                "cuBLAS bf16 + bias_residual_bf16"
            }
            Baseline::GemmF16ThenEpilogue { residual: None, b_transposed: false, .. } => "cuBLAS f16 + bias_gelu_f16",
            Baseline::GemmF16ThenEpilogue { residual: Some(_), b_transposed: false, .. } => {
                "cuBLAS f16 + bias_residual_f16"
            }
            Baseline::GemmBf16ThenEpilogue { residual: None, b_transposed: true, .. } => {
                "cuBLAS bf16 (Bᵀ) + bias_gelu_bf16"
            }
            Baseline::GemmF16ThenEpilogue { residual: None, b_transposed: true, .. } => {
                "cuBLAS f16 (Bᵀ) + bias_gelu_f16"
            }
            Baseline::GemmBf16ThenEpilogue { residual: Some(_), b_transposed: true, .. } => {
                "cuBLAS bf16 (Bᵀ) + bias_residual_bf16"
            }
            Baseline::GemmF16ThenEpilogue { residual: Some(_), b_transposed: true, .. } => {
                "cuBLAS f16 (Bᵀ) + bias_residual_f16"
            }
            Baseline::GemmBf16 { b_transposed: false, .. } => "cuBLAS bf16",
            Baseline::GemmF16 { b_transposed: false, .. } => "cuBLAS f16",
            Baseline::GemmTf32 { .. } => "cuBLAS tf32",
            Baseline::GemmBf16ToBf16 { b_transposed: false, .. } => "cuBLAS bf16 (bf16 out)",
            Baseline::GemmF16ToF16 { b_transposed: false, .. } => "cuBLAS f16 (f16 out)",
            Baseline::GemmBf16 { b_transposed: true, .. } => "cuBLAS bf16 (Bᵀ)",
            Baseline::GemmF16 { b_transposed: true, .. } => "cuBLAS f16 (Bᵀ)",
            Baseline::GemmBf16ToBf16 { b_transposed: true, .. } => "cuBLAS bf16 (Bᵀ, bf16 out)",
            Baseline::GemmF16ToF16 { b_transposed: true, .. } => "cuBLAS f16 (Bᵀ, f16 out)",
        }
    }

    /// Queues one run; the plain GEMMs compute C = A·B + β·C (the epilogue baselines β = 0).
    pub(super) fn run(&mut self, beta: f32) -> Result<(), Error> {
        match self {
            Baseline::Copy { gpu, from, to } => gpu.copy(&*from, to),
            Baseline::Sgemm { blas, a, b, c, b_transposed: false } => blas.sgemm(1.0, &*a, &*b, beta, c),
            Baseline::Sgemm { blas, a, b, c, b_transposed: true } => blas.sgemm_bt(1.0, &*a, &*b, beta, c),
            Baseline::SgemmThenEpilogue { gpu, blas, a, b, bias, residual, c } => {
                blas.sgemm(1.0, &*a, &*b, 0.0, c)?;
                match residual {
                    Some(residual) => epilogue::bias_residual_f32::launch(*gpu, &*bias, &*residual, c),
                    None => epilogue::bias_gelu_f32::launch(*gpu, &*bias, c),
                }
                .map(|_| ())
            }
            Baseline::GemmBf16ThenEpilogue { gpu, blas, a, b, bias, residual, c, b_transposed } => {
                gemm_ex(blas, *b_transposed, &*a, &*b, 0.0, c)?;
                match residual {
                    Some(residual) => epilogue::bias_residual_bf16::launch(*gpu, &*bias, &*residual, c),
                    None => epilogue::bias_gelu_bf16::launch(*gpu, &*bias, c),
                }
                .map(|_| ())
            }
            Baseline::GemmF16ThenEpilogue { gpu, blas, a, b, bias, residual, c, b_transposed } => {
                gemm_ex(blas, *b_transposed, &*a, &*b, 0.0, c)?;
                match residual {
                    Some(residual) => epilogue::bias_residual_f16::launch(*gpu, &*bias, &*residual, c),
                    None => epilogue::bias_gelu_f16::launch(*gpu, &*bias, c),
                }
                .map(|_| ())
            }
            Baseline::GemmBf16 { blas, a, b, c, b_transposed } => gemm_ex(blas, *b_transposed, &*a, &*b, beta, c),
            Baseline::GemmF16 { blas, a, b, c, b_transposed } => gemm_ex(blas, *b_transposed, &*a, &*b, beta, c),
            Baseline::GemmTf32 { blas, a, b, c } => blas.sgemm_tf32(1.0, &*a, &*b, beta, c),
            Baseline::GemmBf16ToBf16 { blas, a, b, c, b_transposed } => gemm_ex(blas, *b_transposed, &*a, &*b, beta, c),
            Baseline::GemmF16ToF16 { blas, a, b, c, b_transposed } => gemm_ex(blas, *b_transposed, &*a, &*b, beta, c),
        }
    }

    /// Whether this is cuBLAS multiplying by a B stored [N, K].
    pub(super) fn b_transposed(&self) -> bool {
        match self {
            Baseline::Sgemm { b_transposed, .. }
            | Baseline::GemmBf16ThenEpilogue { b_transposed, .. }
            | Baseline::GemmF16ThenEpilogue { b_transposed, .. }
            | Baseline::GemmBf16 { b_transposed, .. }
            | Baseline::GemmF16 { b_transposed, .. }
            | Baseline::GemmBf16ToBf16 { b_transposed, .. }
            | Baseline::GemmF16ToF16 { b_transposed, .. } => *b_transposed,
            Baseline::Copy { .. } | Baseline::SgemmThenEpilogue { .. } | Baseline::GemmTf32 { .. } => false,
        }
    }

    /// The same cuBLAS GEMM with B stored [N, K] — the baseline of an `hgemm_bt` or `sgemm_bt`
    /// kernel and of the B [N, K] entry points, cuBLAS transposing its operand; other baselines
    /// as they are.
    pub(super) fn with_b_transposed(self) -> Result<Self, Error> {
        Ok(match self {
            Baseline::Sgemm { blas, a, b, c, .. } => Baseline::Sgemm { blas, a, b: turned(b)?, c, b_transposed: true },
            Baseline::GemmBf16 { blas, a, b, c, .. } => {
                Baseline::GemmBf16 { blas, a, b: turned(b)?, c, b_transposed: true }
            }
            Baseline::GemmF16 { blas, a, b, c, .. } => {
                Baseline::GemmF16 { blas, a, b: turned(b)?, c, b_transposed: true }
            }
            Baseline::GemmBf16ToBf16 { blas, a, b, c, .. } => {
                Baseline::GemmBf16ToBf16 { blas, a, b: turned(b)?, c, b_transposed: true }
            }
            Baseline::GemmF16ToF16 { blas, a, b, c, .. } => {
                Baseline::GemmF16ToF16 { blas, a, b: turned(b)?, c, b_transposed: true }
            }
            Baseline::GemmBf16ThenEpilogue { gpu, blas, a, b, bias, residual, c, .. } => {
                Baseline::GemmBf16ThenEpilogue { gpu, blas, a, b: turned(b)?, bias, residual, c, b_transposed: true }
            }
            Baseline::GemmF16ThenEpilogue { gpu, blas, a, b, bias, residual, c, .. } => {
                Baseline::GemmF16ThenEpilogue { gpu, blas, a, b: turned(b)?, bias, residual, c, b_transposed: true }
            }
            other => other,
        })
    }
}

/// B's k × n values read as n × k: the values are the measurement's, whichever way.
fn turned<T: crate::runtime::Element>(b: DeviceTensor<T>) -> Result<DeviceTensor<T>, Error> {
    use crate::runtime::Input as _;
    match *b.shape() {
        [k, n] => b.reshape([n, k]),
        _ => Ok(b),
    }
}

/// cuBLAS `cublasGemmEx` C = A·B + β·C, or A·Bᵀ where B is stored [N, K].
fn gemm_ex<T: crate::runtime::GemmExInput, C: crate::runtime::GemmExOutput<T>>(
    blas: &crate::runtime::Cublas,
    b_transposed: bool,
    a: &DeviceTensor<T>,
    b: &DeviceTensor<T>,
    beta: f32,
    c: &mut DeviceTensor<C>,
) -> Result<(), Error> {
    if b_transposed {
        blas.gemm_ex_bt(1.0, a, b, beta, c)
    } else {
        blas.gemm_ex(1.0, a, b, beta, c)
    }
}
