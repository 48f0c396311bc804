//! C = β·C over a matrix whose rows lie any distance apart: what [`gemm`](crate::gemm) and
//! [`gemm_bt`](crate::gemm_bt) run when α = 0. As in BLAS, A and B are then not read (NaN or
//! ∞ in them does not reach C), and β = 0 writes zeros without reading C (NaN in C included).

use crate::prelude::*;

macro_rules! matrix_scale {
    ($name:ident, $t:ident, $what:literal) => {
        /// A block of 256 threads per row, consecutive threads on consecutive columns.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 1)]
        pub fn $name(beta: f32, c: GlobalMut<$t, (R, C)>) {
            let (row,) = grid(R);
            for column in (thread_index()..C).step_by(THREADS) {
                if beta == 0.0f32 {
                    c[[row, column]] = 0.0 as $t;
                } else {
                    c[[row, column]] = (beta * c[[row, column]] as f32) as $t;
                }
            }
        }
    };
}
matrix_scale!(matrix_scale_f32, f32, " f32 elements.");
matrix_scale!(matrix_scale_bf16, bf16, " bf16 elements (β·C in f32, rounded once).");
matrix_scale!(matrix_scale_f16, f16, " f16 elements (β·C in f32, rounded once).");

/// Every kernel of the family.
pub const ALL: [&crate::KernelDefinition; 3] =
    [&matrix_scale_f32::KERNEL, &matrix_scale_bf16::KERNEL, &matrix_scale_f16::KERNEL];
