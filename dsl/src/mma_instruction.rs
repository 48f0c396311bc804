//! Which instruction an `mma` runs on: one IR node, several instructions, chosen from the
//! fragment's distribution and the operand types (and, for each, a template of its own).

use serde::{Deserialize, Serialize};

use crate::ElementType;

/// The instruction an `mma(a, b, &mut acc)` becomes.
///
/// ```
/// use tessera_dsl::{ElementType, MmaInstruction};
/// let bf16 = MmaInstruction::MmaSync { input: ElementType::BF16, k: 16 };
/// assert_eq!(bf16.ptx(), Some("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
/// assert_eq!(bf16.to_string(), "mma.sync m16n8k16 (bf16 → f32)");
/// assert_eq!(MmaInstruction::Ffma.ptx(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MmaInstruction {
    /// Outer products with FFMA on each thread's `.thread_tile(..)` (CUDA cores).
    Ffma,
    /// The warp-level tensor-core `mma.sync.aligned.m16n8k{k}` on a `.warp_tile(..)`
    /// fragment (sm_80 and newer), operands from shared memory by `ldmatrix`.
    MmaSync { input: ElementType, k: i64 },
}

impl MmaInstruction {
    /// The instruction for a fragment laid out per warp (`warp_tile`) or per thread, with
    /// operands of type `input` accumulating into `acc`; `None` where no instruction takes
    /// that combination (validation says why).
    pub fn choose(warp_tile: bool, input: ElementType, acc: ElementType) -> Option<Self> {
        match (warp_tile, input, acc) {
            (false, input, acc) if input == acc => Some(Self::Ffma),
            (true, ElementType::F16 | ElementType::BF16, ElementType::F32) => Some(Self::MmaSync { input, k: 16 }),
            _ => None,
        }
    }

    /// The PTX instruction, for the tensor-core ones.
    pub fn ptx(self) -> Option<&'static str> {
        match self {
            Self::Ffma => None,
            Self::MmaSync { input: ElementType::F16, .. } => Some("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
            Self::MmaSync { input: ElementType::BF16, .. } => {
                Some("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
            }
            Self::MmaSync { .. } => None,
        }
    }

    /// Multiply-adds one instruction does per warp (FFMA: one per thread).
    pub fn multiply_adds_per_warp(self) -> i64 {
        match self {
            Self::Ffma => 32,
            Self::MmaSync { k, .. } => 16 * 8 * k,
        }
    }
}

impl std::fmt::Display for MmaInstruction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ffma => f.write_str("FFMA outer products"),
            Self::MmaSync { input, k } => write!(f, "mma.sync m16n8k{k} ({input} → f32)"),
        }
    }
}
