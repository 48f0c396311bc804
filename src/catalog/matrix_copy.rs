//! 2-D copies between matrices whose rows lie any distance apart: B = A, element for
//! element, each side with its own leading dimension. [`gemm`](crate::gemm) moves operands
//! with unaligned rows (4097 columns of bf16) into 16-byte-aligned padded buffers through
//! them, so the tensor-core kernels keep their 16-byte accesses.
//!
//! The launch picks the widest access both sides' rows allow: 16 bytes between aligned
//! buffers, single elements where a row starts anywhere.

use crate::prelude::*;

macro_rules! matrix_copy {
    ($name:ident, $t:ident, $vector:literal, $cols:literal, $what:literal) => {
        /// A 32 × TC tile per block of 256 threads, copied global to global (no shared
        /// memory: nothing is reordered); tails guarded element by element.
        #[doc = $what]
        #[tile_kernel(threads = (32, 8), vector = $vector, consts(TR = 32, TC = $cols))]
        pub fn $name(x: Global<$t, (R, C)>, y: GlobalMut<$t, (R, C)>) {
            let (bx, by) = grid(cdiv(C, TC), cdiv(R, TR));
            copy(x.tile([by, bx], [TR, TC]), y.tile([by, bx], [TR, TC]));
        }
    };
}
matrix_copy!(matrix_copy_f32, f32, 4, 128, " f32 elements.");
matrix_copy!(matrix_copy_bf16, bf16, 8, 256, " bf16 elements.");
matrix_copy!(matrix_copy_f16, f16, 8, 256, " f16 elements.");

/// Every kernel of the family.
pub const ALL: [&crate::KernelDefinition; 3] =
    [&matrix_copy_f32::KERNEL, &matrix_copy_bf16::KERNEL, &matrix_copy_f16::KERNEL];
