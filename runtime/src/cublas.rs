//! cuBLAS GEMMs, the baselines GEMM benchmarks run beside: SGEMM with pedantic FP32 math, so
//! no TF32 tensor cores — the same arithmetic as the kernels it is compared with; SGEMM on TF32
//! tensor cores; and `cublasGemmEx` on f16 or bf16 inputs with FP32 accumulation, on tensor
//! cores, writing f32 or the inputs' type.
//!
//! All take row-major matrices (dense tensors or views with a leading dimension) and check
//! their shapes the same way. The handle stays in pedantic math between calls: the TF32 and
//! half-precision GEMMs switch it for their own call and put it back.

use std::sync::{Arc, Mutex};

use cudarc::cublas::{result, sys, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut};
use half::{bf16, f16};

use crate::tensor::{Memory, MemoryMut};
use crate::{Element, Error, Gpu, Input, Output};

/// A cuBLAS handle on a [`Gpu`]'s stream.
///
/// ```no_run
/// let gpu = tessera_runtime::Gpu::new(0)?;
/// let blas = gpu.cublas()?;
/// let a = gpu.upload(&[1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
/// let b = gpu.upload(&[1.0f32, 0.0, 0.0, 1.0], [2, 2])?;
/// let mut c = gpu.zeros::<f32>([2, 2])?;
/// blas.sgemm(1.0, &a, &b, 0.0, &mut c)?;
/// assert_eq!(gpu.download(&c)?, vec![1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub struct Cublas {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
    /// Held through every call: a call that switches the math mode does so for itself alone,
    /// never for another thread's call on the same handle.
    math_mode: Mutex<()>,
}

impl Gpu {
    /// A cuBLAS handle set to pedantic FP32 math on this GPU's stream.
    pub fn cublas(&self) -> Result<Cublas, Error> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::CublasMissing { tried: cudarc::get_lib_name_candidates("cublas").join(", ") });
        }
        let blas = CudaBlas::new(self.cuda_stream().clone())
            .map_err(|source| Error::Cublas { action: "creating a handle", source })?;
        // SAFETY: a live handle; pedantic math keeps cuBLAS on plain FP32 FMA.
        unsafe { sys::cublasSetMathMode(*blas.handle(), sys::cublasMath_t::CUBLAS_PEDANTIC_MATH) }
            .result()
            .map_err(|source| Error::Cublas { action: "setting pedantic math", source })?;
        Ok(Cublas { blas, stream: self.cuda_stream().clone(), math_mode: Mutex::new(()) })
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// An element type [`Cublas::gemm_ex`] takes for A and B: [`f16`](half::f16) or [`bf16`](half::bf16).
pub trait GemmExInput: Element + sealed::Sealed {
    #[doc(hidden)]
    const DATA_TYPE: sys::cudaDataType;
}

impl GemmExInput for f16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16F;
}

impl GemmExInput for bf16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16BF;
}

/// An element type [`Cublas::gemm_ex`] writes C in for inputs of type `TIn`: `f32`, or `TIn`
/// itself (the pairs `cublasGemmEx` accepts at 32-bit compute).
pub trait GemmExOutput<TIn: GemmExInput>: Element + sealed::Sealed {
    #[doc(hidden)]
    const DATA_TYPE: sys::cudaDataType;
}

impl<TIn: GemmExInput> GemmExOutput<TIn> for f32 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_32F;
}

impl GemmExOutput<f16> for f16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16F;
}

impl GemmExOutput<bf16> for bf16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16BF;
}

/// A row-major C = A·B in cuBLAS's column-major terms: Cᵀ = Bᵀ·Aᵀ, B passed first, both
/// untransposed; a row-major leading dimension is the column-major one of the transpose. For
/// C = A·Bᵀ with B stored [N, K] (`b_transposed`), Cᵀ = B·Aᵀ: B passed first, transposed.
struct ColumnMajor {
    /// N, M, K of the row-major product.
    m: i32,
    n: i32,
    k: i32,
    /// B's, A's and C's leading dimensions (cuBLAS's A is our B).
    lda: i32,
    ldb: i32,
    ldc: i32,
    /// cuBLAS's operation on its A (our B): `CUBLAS_OP_T` where B is stored [N, K].
    op_b: sys::cublasOperation_t,
}

/// The shapes checked (A M×K, B K×N — or N×K where `b_transposed` —, C M×N, all 2-D) and
/// turned into cuBLAS's arguments; `None` when C is empty and there is nothing to do.
fn column_major<TA: Element, TC: Element>(
    a: &impl Input<TA>,
    b: &impl Input<TA>,
    c: &impl Output<TC>,
    b_transposed: bool,
) -> Result<Option<ColumnMajor>, Error> {
    let shape_error = || Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() };
    let (&[m, k], &[b_rows, b_cols], &[m2, n2]) = (a.shape(), b.shape(), c.shape()) else {
        return Err(shape_error());
    };
    let (k2, n) = if b_transposed { (b_cols, b_rows) } else { (b_rows, b_cols) };
    if k != k2 || m != m2 || n != n2 {
        return Err(shape_error());
    }
    if m == 0 || n == 0 {
        return Ok(None);
    }
    // cuBLAS takes each size and leading dimension as an i32
    let int = |v: usize| {
        i32::try_from(v)
            .map_err(|_| Error::ScalarOutOfRange { what: "a cuBLAS GEMM size or leading dimension", value: v })
    };
    let (a_ld, b_ld, c_ld) = (a.row_stride(), b.row_stride(), c.row_stride());
    Ok(Some(ColumnMajor {
        m: int(n)?,
        n: int(m)?,
        k: int(k)?,
        lda: int(b_ld.max(1))?,
        ldb: int(a_ld.max(1))?,
        ldc: int(c_ld.max(1))?,
        op_b: if b_transposed { sys::cublasOperation_t::CUBLAS_OP_T } else { sys::cublasOperation_t::CUBLAS_OP_N },
    }))
}

/// The GPU memory of A, B and C, or [`Error::WrongDevice`] naming the first that is not on a GPU.
#[allow(clippy::type_complexity)]
fn gpu_memory<'x, TA: Element, TC: Element>(
    a: &'x impl Input<TA>,
    b: &'x impl Input<TA>,
    c: &'x mut impl Output<TC>,
) -> Result<(CudaView<'x, TA>, CudaView<'x, TA>, CudaViewMut<'x, TC>), Error> {
    let (a_location, b_location, c_location) = (a.location(), b.location(), c.location());
    match (a.memory(), b.memory(), c.memory_mut()) {
        (Memory::Cuda(a), Memory::Cuda(b), MemoryMut::Cuda(c)) => Ok((a, b, c)),
        _ => {
            let (param, tensor) = [("a", a_location), ("b", b_location), ("c", c_location)]
                .into_iter()
                .find(|(_, l)| !matches!(l, crate::Location::Gpu(_)))
                .unwrap_or(("c", c_location));
            Err(Error::WrongDevice { param: param.into(), tensor, launch: crate::Location::Gpu(0) })
        }
    }
}

impl Cublas {
    /// C = α·A·B + β·C for row-major A (M×K), B (K×N), C (M×N), in FP32 with pedantic math
    /// (no tensor cores); sub-matrices
    /// ([`DeviceTensor::submatrix`](crate::DeviceTensor::submatrix)) pass their leading dimensions.
    pub fn sgemm(
        &self,
        alpha: f32,
        a: &impl Input<f32>,
        b: &impl Input<f32>,
        beta: f32,
        c: &mut impl Output<f32>,
    ) -> Result<(), Error> {
        let Some(shape) = column_major(a, b, c, false)? else {
            return Ok(());
        };
        let config = GemmConfig {
            transa: sys::cublasOperation_t::CUBLAS_OP_N,
            transb: sys::cublasOperation_t::CUBLAS_OP_N,
            m: shape.m,
            n: shape.n,
            k: shape.k,
            alpha,
            lda: shape.lda,
            ldb: shape.ldb,
            beta,
            ldc: shape.ldc,
        };
        let (a, b, mut c) = gpu_memory(a, b, c)?;
        let _mode = self.math_mode.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: the shapes were checked above; each view spans (rows − 1)·ld + cols elements,
        // all that cuBLAS reads or writes at these leading dimensions.
        unsafe { self.blas.gemm(config, &b, &a, &mut c) }
            .map_err(|source| Error::Cublas { action: "running sgemm", source })
    }

    /// [`sgemm`](Self::sgemm) with B stored [N, K]: C = α·A·Bᵀ + β·C in FP32 with pedantic math
    /// (`cublasGemmEx`, `CUBLAS_COMPUTE_32F_PEDANTIC`) — an f32 linear layer's y = x·Wᵀ, cuBLAS
    /// transposing its operand.
    ///
    /// ```no_run
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let blas = gpu.cublas()?;
    /// let x = gpu.upload(&[1.0f32; 6], [2, 3])?;
    /// let w = gpu.upload(&[0.5f32; 12], [4, 3])?; // 4 outputs × 3 inputs
    /// let mut y = gpu.zeros::<f32>([2, 4])?;
    /// blas.sgemm_bt(1.0, &x, &w, 0.0, &mut y)?;
    /// assert_eq!(gpu.download(&y)?, vec![1.5; 8]);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn sgemm_bt(
        &self,
        alpha: f32,
        a: &impl Input<f32>,
        b: &impl Input<f32>,
        beta: f32,
        c: &mut impl Output<f32>,
    ) -> Result<(), Error> {
        self.gemm_raw(
            "running sgemm on B transposed",
            [sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_32F],
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_PEDANTIC,
            sys::cublasMath_t::CUBLAS_PEDANTIC_MATH,
            (alpha, beta),
            a,
            b,
            c,
            true,
        )
    }

    /// [`sgemm`](Self::sgemm) on TF32 tensor cores (`CUBLAS_TF32_TENSOR_OP_MATH`,
    /// `CUBLAS_COMPUTE_32F_FAST_TF32`): A and B are read as f32 and multiplied with 10-bit
    /// mantissas, accumulated in FP32 — the "TF32" figures of cuBLAS and torch. The handle's
    /// math mode is put back afterwards, so [`sgemm`](Self::sgemm) stays pedantic.
    pub fn sgemm_tf32(
        &self,
        alpha: f32,
        a: &impl Input<f32>,
        b: &impl Input<f32>,
        beta: f32,
        c: &mut impl Output<f32>,
    ) -> Result<(), Error> {
        self.gemm_raw(
            "running sgemm on TF32 tensor cores",
            [sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_32F],
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
            sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
            (alpha, beta),
            a,
            b,
            c,
            false,
        )
    }

    /// C = α·A·B + β·C for row-major A (M×K) and B (K×N) of [`f16`](half::f16) or [`bf16`](half::bf16), and C (M×N) of
    /// `f32` or the inputs' type, through `cublasGemmEx` with FP32 accumulation
    /// (`CUBLAS_COMPUTE_32F`, `CUBLAS_GEMM_DEFAULT`) and default math, so on tensor cores;
    /// α and β are f32. Shapes and leading dimensions as in [`sgemm`](Self::sgemm). With a
    /// 16-bit C, default math lets cuBLAS reduce split-K partial sums in C's type (as torch
    /// allows by default); an f32 C gets every sum in FP32.
    ///
    /// ```no_run
    /// use half::bf16;
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let blas = gpu.cublas()?;
    /// let a = gpu.upload(&[bf16::from_f32(1.0); 6], [2, 3])?;
    /// let b = gpu.upload(&[bf16::from_f32(0.5); 12], [3, 4])?;
    /// let mut c = gpu.zeros::<f32>([2, 4])?;              // or gpu.zeros::<bf16>
    /// blas.gemm_ex(1.0, &a, &b, 0.0, &mut c)?;
    /// assert_eq!(gpu.download(&c)?, vec![1.5; 8]);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn gemm_ex<TIn: GemmExInput, TOut: GemmExOutput<TIn>>(
        &self,
        alpha: f32,
        a: &impl Input<TIn>,
        b: &impl Input<TIn>,
        beta: f32,
        c: &mut impl Output<TOut>,
    ) -> Result<(), Error> {
        self.gemm_raw(
            "running cublasGemmEx",
            [TIn::DATA_TYPE, TOut::DATA_TYPE],
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cublasMath_t::CUBLAS_DEFAULT_MATH,
            (alpha, beta),
            a,
            b,
            c,
            false,
        )
    }

    /// [`gemm_ex`](Self::gemm_ex) with B stored [N, K]: C = α·A·Bᵀ + β·C, a linear layer's
    /// y = x·Wᵀ (cuBLAS transposes its operand, nothing is copied).
    ///
    /// ```no_run
    /// use half::bf16;
    /// let gpu = tessera_runtime::Gpu::new(0)?;
    /// let blas = gpu.cublas()?;
    /// let x = gpu.upload(&[bf16::from_f32(1.0); 6], [2, 3])?;
    /// let w = gpu.upload(&[bf16::from_f32(0.5); 12], [4, 3])?; // 4 outputs × 3 inputs
    /// let mut y = gpu.zeros::<bf16>([2, 4])?;
    /// blas.gemm_ex_bt(1.0, &x, &w, 0.0, &mut y)?;
    /// assert_eq!(gpu.download(&y)?, vec![bf16::from_f32(1.5); 8]);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn gemm_ex_bt<TIn: GemmExInput, TOut: GemmExOutput<TIn>>(
        &self,
        alpha: f32,
        a: &impl Input<TIn>,
        b: &impl Input<TIn>,
        beta: f32,
        c: &mut impl Output<TOut>,
    ) -> Result<(), Error> {
        self.gemm_raw(
            "running cublasGemmEx on B transposed",
            [TIn::DATA_TYPE, TOut::DATA_TYPE],
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cublasMath_t::CUBLAS_DEFAULT_MATH,
            (alpha, beta),
            a,
            b,
            c,
            true,
        )
    }

    /// `cublasGemmEx` with f32 α and β under `math`, the handle's math mode put back after.
    #[allow(clippy::too_many_arguments)]
    fn gemm_raw<TA: Element, TC: Element>(
        &self,
        action: &'static str,
        [input_type, output_type]: [sys::cudaDataType; 2],
        compute: sys::cublasComputeType_t,
        math: sys::cublasMath_t,
        (alpha, beta): (f32, f32),
        a: &impl Input<TA>,
        b: &impl Input<TA>,
        c: &mut impl Output<TC>,
        b_transposed: bool,
    ) -> Result<(), Error> {
        let Some(shape) = column_major(a, b, c, b_transposed)? else {
            return Ok(());
        };
        let (a, b, mut c) = gpu_memory(a, b, c)?;
        let handle = *self.blas.handle();
        let _mode = self.math_mode.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut previous = sys::cublasMath_t::CUBLAS_PEDANTIC_MATH;
        // SAFETY: a live handle, an out-pointer to a live value.
        unsafe { sys::cublasGetMathMode(handle, &mut previous) }
            .result()
            .map_err(|source| Error::Cublas { action: "reading the math mode", source })?;
        // SAFETY: a live handle.
        unsafe { sys::cublasSetMathMode(handle, math) }
            .result()
            .map_err(|source| Error::Cublas { action: "setting the math mode", source })?;
        let ran = {
            let (a_ptr, _a_record) = a.device_ptr(&self.stream);
            let (b_ptr, _b_record) = b.device_ptr(&self.stream);
            let (c_ptr, _c_record) = c.device_ptr_mut(&self.stream);
            // SAFETY: the shapes were checked above; each view spans (rows − 1)·ld + cols
            // elements of the type named beside it, all that cuBLAS reads or writes at these
            // leading dimensions; α and β are f32, as CUBLAS_COMPUTE_32F* asks.
            unsafe {
                result::gemm_ex(
                    handle,
                    shape.op_b,
                    sys::cublasOperation_t::CUBLAS_OP_N,
                    shape.m,
                    shape.n,
                    shape.k,
                    (&alpha) as *const f32 as *const _,
                    b_ptr as *const _,
                    input_type,
                    shape.lda,
                    a_ptr as *const _,
                    input_type,
                    shape.ldb,
                    (&beta) as *const f32 as *const _,
                    c_ptr as *mut _,
                    output_type,
                    shape.ldc,
                    compute,
                    sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
        };
        // SAFETY: a live handle; restores what the caller had, whether or not the GEMM ran.
        let restored = unsafe { sys::cublasSetMathMode(handle, previous) }.result();
        ran.map_err(|source| Error::Cublas { action, source })?;
        restored.map_err(|source| Error::Cublas { action: "restoring the math mode", source })
    }
}
