//! Which instruction an `mma` runs on: one IR node, several instructions, chosen from the
//! fragment's distribution and the operand types (and, for each, a template of its own).

use serde::{Deserialize, Serialize};

use crate::ElementType;

/// How f32 operands of a tensor-core `mma` are multiplied: `#[tile_kernel(precision = tf32)]`.
///
/// ```
/// use tessera_dsl::{ElementType, MmaInstruction, Precision};
/// // f32 operands on a warp tile need tf32: the tensor cores have no f32 multiplier
/// assert_eq!(MmaInstruction::choose(true, ElementType::F32, ElementType::F32, Precision::Exact), None);
/// let tf32 = MmaInstruction::choose(true, ElementType::F32, ElementType::F32, Precision::Tf32).unwrap();
/// assert_eq!(tf32.ptx().as_deref(), Some("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Precision {
    /// Operands multiplied in their own type (f32 on CUDA cores, f16/bf16 on tensor cores).
    #[default]
    Exact,
    /// f32 operands rounded to TF32 (10-bit mantissa, round to nearest, ties away from zero,
    /// as `cvt.rna.tf32.f32` does) and multiplied on tensor cores, f32 accumulation.
    Tf32,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::Exact => "exact",
            Precision::Tf32 => "tf32",
        })
    }
}

/// The instruction an `mma(a, b, &mut acc)` becomes.
///
/// ```
/// use tessera_dsl::{ElementType, MmaInstruction};
/// let bf16 = MmaInstruction::MmaSync { input: ElementType::BF16, k: 16 };
/// assert_eq!(bf16.ptx().as_deref(), Some("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
/// assert_eq!(bf16.to_string(), "mma.sync m16n8k16 (bf16 → f32)");
/// assert_eq!(MmaInstruction::Ffma.ptx(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MmaInstruction {
    /// Outer products with FFMA on each thread's `.thread_tile(..)` (CUDA cores).
    Ffma,
    /// The warp-level tensor-core `mma.sync.aligned.m16n8k{k}` on a `.warp_tile(..)`
    /// fragment (sm_80 and newer), operands from shared memory by `ldmatrix`. `input` F32
    /// is TF32 (`precision = tf32`, k = 8).
    MmaSync { input: ElementType, k: i64 },
    /// The warpgroup-level `wgmma.mma_async.sync.aligned.m64n{n}k16` on a
    /// `.warpgroup_tile([64, n])` fragment (sm_90a): both operands read by the tensor cores
    /// straight from shared memory through matrix descriptors, f16/bf16 into f32. `input` F32
    /// is TF32 (`precision = tf32`, `m64n{n}k8`, both operands stored K-major).
    Wgmma { input: ElementType, n: i64 },
}

impl MmaInstruction {
    /// The instruction for a fragment laid out per warp (`warp_tile`) or per thread, with
    /// operands of type `input` accumulating into `acc`; `None` where no instruction takes
    /// that combination (validation says why).
    pub fn choose(warp_tile: bool, input: ElementType, acc: ElementType, precision: Precision) -> Option<Self> {
        match (warp_tile, input, acc, precision) {
            (false, input, acc, Precision::Exact) if input == acc => Some(Self::Ffma),
            (true, ElementType::F16 | ElementType::BF16, ElementType::F32, Precision::Exact) => {
                Some(Self::MmaSync { input, k: 16 })
            }
            (true, ElementType::F32, ElementType::F32, Precision::Tf32) => Some(Self::MmaSync { input, k: 8 }),
            _ => None,
        }
    }

    /// The instruction for a wgmma fragment (`.warpgroup_tile([64, n])`): f16 or bf16
    /// operands into f32, or f32 ones as TF32 (`precision = tf32`), n a multiple of 8 up to 256
    /// (wgmma's shapes); `None` otherwise.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, MmaInstruction, Precision};
    /// let wgmma = MmaInstruction::choose_wgmma(ElementType::BF16, ElementType::F32, 256, Precision::Exact).unwrap();
    /// assert_eq!(wgmma.ptx().as_deref(), Some("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
    /// assert_eq!(wgmma.to_string(), "wgmma m64n256k16 (bf16 → f32)");
    /// assert_eq!(MmaInstruction::choose_wgmma(ElementType::BF16, ElementType::F32, 260, Precision::Exact), None);
    /// let tf32 = MmaInstruction::choose_wgmma(ElementType::F32, ElementType::F32, 256, Precision::Tf32).unwrap();
    /// assert_eq!(tf32.ptx().as_deref(), Some("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32"));
    /// assert_eq!(tf32.k_step(), 8);
    /// ```
    pub fn choose_wgmma(input: ElementType, acc: ElementType, n: i64, precision: Precision) -> Option<Self> {
        let shape_ok = n % 8 == 0 && (8..=256).contains(&n);
        match (input, acc, precision) {
            (ElementType::F16 | ElementType::BF16, ElementType::F32, Precision::Exact) if shape_ok => {
                Some(Self::Wgmma { input, n })
            }
            (ElementType::F32, ElementType::F32, Precision::Tf32) if shape_ok => Some(Self::Wgmma { input, n }),
            _ => None,
        }
    }

    /// Whether the operands are f32 multiplied as TF32.
    pub fn is_tf32(self) -> bool {
        matches!(self, Self::MmaSync { input: ElementType::F32, .. } | Self::Wgmma { input: ElementType::F32, .. })
    }

    /// The k extent one instruction multiplies over: 32 bytes of each operand's rows on the
    /// tensor cores (k16 on 16-bit inputs, k8 on TF32), one on FFMA.
    pub fn k_step(self) -> i64 {
        match self {
            Self::Ffma => 1,
            Self::MmaSync { k, .. } => k,
            Self::Wgmma { input: ElementType::F32, .. } => 8,
            Self::Wgmma { .. } => 16,
        }
    }

    /// Whether `ldmatrix` can load operand A (`is_a`) or B of this instruction when it is
    /// stored with its logical columns contiguous (`columns_contiguous`) or transposed. 16-bit
    /// operands always (`.trans` turns the transposed ones); for TF32 only where each lane's
    /// 32-bit values lie along a 16-byte row: A stored [rows, k], B stored [n, k] (`b_s.t()`).
    /// The others are read one element at a time.
    pub fn ldmatrix_loads(self, is_a: bool, columns_contiguous: bool) -> bool {
        match self {
            Self::Ffma | Self::Wgmma { .. } => false,
            Self::MmaSync { input: ElementType::F32, .. } => is_a == columns_contiguous,
            Self::MmaSync { .. } => true,
        }
    }

    /// The PTX instruction, for the tensor-core ones.
    pub fn ptx(self) -> Option<String> {
        let name = match self {
            Self::Ffma => return None,
            Self::Wgmma { input: input @ (ElementType::F16 | ElementType::BF16), n } => {
                return Some(format!("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{input}.{input}"))
            }
            Self::Wgmma { input: ElementType::F32, n } => {
                return Some(format!("wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32"))
            }
            Self::Wgmma { .. } => return None,
            Self::MmaSync { input: ElementType::F16, .. } => "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            Self::MmaSync { input: ElementType::BF16, .. } => "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            Self::MmaSync { input: ElementType::F32, .. } => "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            Self::MmaSync { .. } => return None,
        };
        Some(name.to_string())
    }

    /// Multiply-adds one instruction does per warp (FFMA: one per thread).
    pub fn multiply_adds_per_warp(self) -> i64 {
        match self {
            Self::Ffma => 32,
            Self::MmaSync { k, .. } => 16 * 8 * k,
            // a quarter of the warpgroup's m64nNk16 (k8 on TF32)
            Self::Wgmma { n, .. } => 16 * n * self.k_step(),
        }
    }
}

impl std::fmt::Display for MmaInstruction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ffma => f.write_str("FFMA outer products"),
            Self::MmaSync { input: ElementType::F32, k } => write!(f, "mma.sync m16n8k{k} (tf32 → f32)"),
            Self::MmaSync { input, k } => write!(f, "mma.sync m16n8k{k} ({input} → f32)"),
            Self::Wgmma { input: ElementType::F32, n } => write!(f, "wgmma m64n{n}k8 (tf32 → f32)"),
            Self::Wgmma { input, n } => write!(f, "wgmma m64n{n}k16 ({input} → f32)"),
        }
    }
}
