//! cuBLAS SGEMM, the baseline every GEMM benchmark runs beside: FP32 with pedantic math,
//! so no TF32 tensor cores — the same arithmetic as the kernels it is compared with.

use cudarc::cublas::{sys, CudaBlas, Gemm, GemmConfig};

use crate::tensor::{Memory, MemoryMut};
use crate::{Error, Gpu, Input, Output};

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
}

impl Gpu {
    /// A cuBLAS handle set to pedantic FP32 math on this GPU's stream.
    pub fn cublas(&self) -> Result<Cublas, Error> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::CublasMissing { tried: cudarc::get_lib_name_candidates("cublas").join(", ") });
        }
        let blas = CudaBlas::new(self.stream().clone())
            .map_err(|source| Error::Cublas { action: "creating a handle", source })?;
        // SAFETY: a live handle; pedantic math keeps cuBLAS on plain FP32 FMA.
        unsafe { sys::cublasSetMathMode(*blas.handle(), sys::cublasMath_t::CUBLAS_PEDANTIC_MATH) }
            .result()
            .map_err(|source| Error::Cublas { action: "setting pedantic math", source })?;
        Ok(Cublas { blas })
    }
}

impl Cublas {
    /// C = α·A·B + β·C for row-major A (M×K), B (K×N), C (M×N); sub-matrices
    /// ([`DeviceTensor::submatrix`](crate::DeviceTensor::submatrix)) pass their leading dimensions.
    pub fn sgemm(
        &self,
        alpha: f32,
        a: &impl Input<f32>,
        b: &impl Input<f32>,
        beta: f32,
        c: &mut impl Output<f32>,
    ) -> Result<(), Error> {
        let (Some(&[m, k]), Some(&[k2, n]), Some(&[m2, n2])) =
            (a.shape().get(..2), b.shape().get(..2), c.shape().get(..2))
        else {
            return Err(Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() });
        };
        if k != k2 || m != m2 || n != n2 || a.shape().len() != 2 || b.shape().len() != 2 || c.shape().len() != 2 {
            return Err(Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() });
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        let int =
            |v: usize| i32::try_from(v).map_err(|_| Error::GemmShape { a: vec![m, k], b: vec![k, n], c: vec![m, n] });
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, both untransposed; a
        // row-major leading dimension is the column-major one of the transpose.
        let (a_ld, b_ld, c_ld) = (a.row_stride(), b.row_stride(), c.row_stride());
        let config = GemmConfig {
            transa: sys::cublasOperation_t::CUBLAS_OP_N,
            transb: sys::cublasOperation_t::CUBLAS_OP_N,
            m: int(n)?,
            n: int(m)?,
            k: int(k)?,
            alpha,
            lda: int(b_ld.max(1))?,
            ldb: int(a_ld.max(1))?,
            beta,
            ldc: int(c_ld.max(1))?,
        };
        let (a_location, b_location, c_location) = (a.location(), b.location(), c.location());
        let (Memory::Cuda(a), Memory::Cuda(b), MemoryMut::Cuda(mut c)) = (a.memory(), b.memory(), c.memory_mut())
        else {
            let (param, tensor) = [("a", a_location), ("b", b_location), ("c", c_location)]
                .into_iter()
                .find(|(_, l)| !matches!(l, crate::Location::Gpu(_)))
                .unwrap_or(("c", c_location));
            return Err(Error::WrongDevice { param: param.into(), tensor, launch: crate::Location::Gpu(0) });
        };
        // SAFETY: the shapes were checked above; each view spans (rows − 1)·ld + cols elements,
        // all that cuBLAS reads or writes at these leading dimensions.
        unsafe { self.blas.gemm(config, &b, &a, &mut c) }
            .map_err(|source| Error::Cublas { action: "running sgemm", source })
    }
}
