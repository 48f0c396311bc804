//! Fused attention, FlashAttention-2's forward pass on `mma.sync` tensor cores (every GPU since
//! Ampere): O = softmax(Q·Kᵀ·scale + mask)·V and the log-sum-exp of every row, for
//! (batch, heads, seq, head_dim) BF16 or F16 tensors, with the scores never leaving registers.
//!
//! Each block takes BQ = 128 query rows of one (batch, head) — `grid(cdiv(SQ, BQ), H, B)` —
//! and each of its four warps WQ = 32 of them (the causal kernel of head dim 128: 64 and 16,
//! as its masking code leaves 32 rows a warp too few registers; head dim 256: 64 and 16). K
//! and V tiles of BKV keys (64 at head dim 64, 32 at 128, 16 at 256) come through a 3-stage
//! cp.async ring. Per tile the warp computes
//! its WQ × BKV scores S = Q·Kᵀ (`mma(&q_s, &k_s.t(), &mut s).overwrite()`), masks the keys past the
//! sequence (and, causal, those after the query) on the tiles that have any, keeps a running
//! row maximum `m` (log2 units: the scale folds into the exponent) and row sum `l` — the online
//! softmax: `s.row_max(i)`, `exp2(fma(s, scale, −m))`, `s.row_sum(i)` — rescales its output
//! rows by exp2(m_old − m_new), and adds P·V with P still in registers
//! (`mma(&s, &v_s, &mut o_acc)` rounds it to the inputs' 16-bit type). After the last tile
//! each row is divided by its sum and stored; the log-sum-exp (natural log, what a backward
//! pass needs) goes to `lse`.
//!
//! Grouped-query attention: K and V have HKV heads, query head h reads K/V head
//! h / (H / HKV). Causal masks follow `torch.nn.functional.scaled_dot_product_attention`'s
//! `is_causal`: query i sees keys 0 ..= i (aligned at the top left when SQ ≠ SKV). Any SQ and
//! SKV: tiles past the end are zero-filled on load and masked, and nothing past SQ is stored.
//!
//! [`forward`] checks the shapes and picks the kernel by element type, head dim and causality,
//! and on Hopper (sm_90a) takes the wgmma kernels instead: wgmma with a cp.async ring, or
//! wgmma fed by TMA from a producer warpgroup ([`TensorCores::fastest`] says which, from
//! measurements).

use crate::prelude::*;
use crate::{Input, Output};

// One macro stamps the kernel for an element type, a head dim (`D`, the width of the Q, K, V
// tiles: a smaller head dim is zero-filled to it) and causality (`CAUSAL`, a constant, so the
// causal kernel's k loop stops at the diagonal and the other's mask has no causal term).
macro_rules! attention_forward {
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, wq = $wq:literal, bkv = $bkv:literal, stages = $stages:literal) => {
        $(#[$doc])*
        #[tile_kernel(threads = 128, vector = 8, consts(BQ = $bq, BKV = $bkv, WQ = $wq), fixed(D = $d, CAUSAL = $causal), require(HD <= D))]
        pub fn $name(
            q: Global<$t, (B, H, SQ, HD)>,
            k: Global<$t, (B, HKV, SKV, HD)>,
            v: Global<$t, (B, HKV, SKV, HD)>,
            o: GlobalMut<$t, (B, H, SQ, HD)>,
            lse: GlobalMut<f32, (B, H, SQ)>,
            scale_log2: f32,
        ) {
            let (qt, h, b) = grid(cdiv(SQ, BQ), H, B);
            let q_s = shared::<$t>([BQ, D]).swizzle_bytes(128);
            let k_s = shared::<$t>([BKV, D]).swizzle_bytes(128);
            let v_s = shared::<$t>([BKV, D]).swizzle_bytes(128);
            let mut s = fragment::<f32>([BQ, BKV]).warp_tile([WQ, BKV]);
            let mut o_acc = fragment::<f32>([BQ, D]).warp_tile([WQ, D]);
            // the running maximum (in log2 units) and sum of each of this lane's two rows
            let mut m = [-f32::INFINITY; WQ / 8];
            let mut l = [0.0f32; WQ / 8];
            copy(q.at([b, h]).tile([qt, 0], [BQ, D]), &q_s);
            // causal: the key tiles at or before the block's last query row
            for j in pipeline(0..min(cdiv(SKV, BKV), CAUSAL * cdiv((qt + 1) * BQ, BKV) + (1 - CAUSAL) * cdiv(SKV, BKV)), stages = $stages) {
                copy(k.at([b, h / (H / HKV)]).tile([j, 0], [BKV, D]), &k_s);
                copy(v.at([b, h / (H / HKV)]).tile([j, 0], [BKV, D]), &v_s);
                mma(&q_s, &k_s.t(), &mut s).overwrite();
                // only the last key tile (keys past SKV) and, causal, tiles that reach past the
                // block's first query row hold masked scores
                let edge = (j + 1) * BKV > SKV || (CAUSAL == 1 && (j + 1) * BKV > qt * BQ + 1);
                for i in 0..WQ / 8 {
                    if edge {
                        let row = qt * BQ + s.row(i);
                        for c in 0..BKV / 4 {
                            let col = j * BKV + s.col(c);
                            if col >= SKV || (CAUSAL == 1 && col > row) {
                                s[[i, c]] = -f32::INFINITY;
                            }
                        }
                    }
                    // the running maximum in log2 units: the scale folds into the exponent
                    let m_new = max(m[i], s.row_max(i) * scale_log2);
                    // a row with every key so far masked keeps m = -inf: subtract 0 instead
                    let mut base = m_new;
                    if m_new == -f32::INFINITY {
                        base = 0.0;
                    }
                    let rescale = exp2(m[i] - base);
                    for c in 0..BKV / 4 {
                        s[[i, c]] = exp2(fma(s[[i, c]], scale_log2, -base));
                    }
                    l[i] = l[i] * rescale + s.row_sum(i);
                    for c in 0..D / 4 {
                        o_acc[[i, c]] = o_acc[[i, c]] * rescale;
                    }
                    m[i] = m_new;
                }
                mma(&s, &v_s, &mut o_acc);
            }
            for i in 0..WQ / 8 {
                // l > 0 wherever a key was seen; a row that saw none (SKV = 0) stores zeros
                let mut inverse = 0.0f32;
                if l[i] > 0.0 {
                    inverse = 1.0f32 / l[i];
                }
                for c in 0..D / 4 {
                    o_acc[[i, c]] = o_acc[[i, c]] * inverse;
                }
                let row = qt * BQ + o_acc.row(i);
                if row < SQ && lane() % 4 == 0 {
                    // natural log: ln(2^m · l) = m · ln 2 + ln l
                    lse[[b, h, row]] = m[i] * 0.6931471805599453 + log(l[i]);
                }
            }
            copy(&o_acc, o.at([b, h]).tile([qt, 0], [BQ, D]));
        }
    };
}

attention_forward!(
    /// BF16, head dim ≤ 64, no mask but the sequence ends.
    attention_forward_bf16_d64, bf16, d = 64, causal = 0, bq = 128, wq = 32, bkv = 64, stages = 3
);
attention_forward!(
    /// BF16, head dim ≤ 64, causal.
    attention_forward_bf16_d64_causal, bf16, d = 64, causal = 1, bq = 128, wq = 32, bkv = 64, stages = 3
);
attention_forward!(
    /// BF16, head dim 65 to 128.
    attention_forward_bf16_d128, bf16, d = 128, causal = 0, bq = 128, wq = 32, bkv = 32, stages = 3
);
attention_forward!(
    /// BF16, head dim 65 to 128, causal.
    attention_forward_bf16_d128_causal, bf16, d = 128, causal = 1, bq = 64, wq = 16, bkv = 32, stages = 3
);
attention_forward!(
    /// F16, head dim ≤ 64.
    attention_forward_f16_d64, f16, d = 64, causal = 0, bq = 128, wq = 32, bkv = 64, stages = 3
);
attention_forward!(
    /// F16, head dim ≤ 64, causal.
    attention_forward_f16_d64_causal, f16, d = 64, causal = 1, bq = 128, wq = 32, bkv = 64, stages = 3
);
attention_forward!(
    /// F16, head dim 65 to 128.
    attention_forward_f16_d128, f16, d = 128, causal = 0, bq = 128, wq = 32, bkv = 32, stages = 3
);
attention_forward!(
    /// F16, head dim 65 to 128, causal.
    attention_forward_f16_d128_causal, f16, d = 128, causal = 1, bq = 64, wq = 16, bkv = 32, stages = 3
);
// Head dim 256: a warp's 16 × 256 f32 output is 128 registers a lane, so warps of 16 rows, and
// three stages of 16 keys (Q 32 KiB, each stage's K and V 16 KiB: 80 KiB, within the 99 KiB
// every GPU since sm_80 gives a block).
attention_forward!(
    /// BF16, head dim 129 to 256.
    attention_forward_bf16_d256, bf16, d = 256, causal = 0, bq = 64, wq = 16, bkv = 16, stages = 3
);
attention_forward!(
    /// BF16, head dim 129 to 256, causal.
    attention_forward_bf16_d256_causal, bf16, d = 256, causal = 1, bq = 64, wq = 16, bkv = 16, stages = 3
);
attention_forward!(
    /// F16, head dim 129 to 256.
    attention_forward_f16_d256, f16, d = 256, causal = 0, bq = 64, wq = 16, bkv = 16, stages = 3
);
attention_forward!(
    /// F16, head dim 129 to 256, causal.
    attention_forward_f16_d256_causal, f16, d = 256, causal = 1, bq = 64, wq = 16, bkv = 16, stages = 3
);

/// The head dims the forward kernels are stamped for: a head dim up to each is zero-filled to it.
pub const HEAD_DIMS: &[usize] = &[64, 128, 256];

/// The head dims the backward kernels on mma.sync are stamped for (at 256 a warp's K and V
/// fragments and its gradient would not fit its registers; [`backward_head_dims`]).
pub const BACKWARD_HEAD_DIMS: &[usize] = &[64, 128];

/// The head dims the backward kernels on wgmma are stamped for (at 256 dK and dV from a kernel
/// each: [`KeyGradients::Apart`]).
pub const BACKWARD_WGMMA_HEAD_DIMS: &[usize] = &[64, 128, 256];

/// Element types attention takes: BF16 and F16 (scores, softmax and accumulation in f32).
pub trait AttentionElement: crate::runtime::Element {
    /// The forward kernels for this type on mma.sync: [d64, d64 causal, d128, d128 causal,
    /// d256, d256 causal].
    const KERNELS: [&'static crate::KernelDefinition; 6];
    /// The forward kernels on wgmma (sm_90a), ordered as [`Self::KERNELS`].
    const WGMMA_KERNELS: [&'static crate::KernelDefinition; 6];
    /// The forward kernels on wgmma fed by TMA from a producer warpgroup, ordered as
    /// [`Self::KERNELS`].
    const WGMMA_TMA_KERNELS: [&'static crate::KernelDefinition; 6];
    /// The backward pass's Δ = Σ dO·O kernel.
    const BACKWARD_DELTA: &'static crate::KernelDefinition;
    /// The backward's dK, dV kernels, ordered as [`Self::KERNELS`] (to head dim 128).
    const BACKWARD_DKDV: [&'static crate::KernelDefinition; 4];
    /// The backward's dQ kernels, ordered as [`Self::KERNELS`].
    const BACKWARD_DQ: [&'static crate::KernelDefinition; 4];
    /// The backward's dK, dV kernels on wgmma (sm_90a), ordered as [`Self::KERNELS`] (head dim
    /// 256: a kernel each).
    const BACKWARD_WGMMA_DKDV: [KeyGradients; 6];
    /// The backward's dQ kernels on wgmma (sm_90a), ordered as [`Self::KERNELS`].
    const BACKWARD_WGMMA_DQ: [&'static crate::KernelDefinition; 6];
}

impl AttentionElement for bf16 {
    const KERNELS: [&'static crate::KernelDefinition; 6] = [
        &attention_forward_bf16_d64::KERNEL,
        &attention_forward_bf16_d64_causal::KERNEL,
        &attention_forward_bf16_d128::KERNEL,
        &attention_forward_bf16_d128_causal::KERNEL,
        &attention_forward_bf16_d256::KERNEL,
        &attention_forward_bf16_d256_causal::KERNEL,
    ];
    const WGMMA_KERNELS: [&'static crate::KernelDefinition; 6] = [
        &attention_forward_wgmma_bf16_d64::KERNEL,
        &attention_forward_wgmma_bf16_d64_causal::KERNEL,
        &attention_forward_wgmma_bf16_d128::KERNEL,
        &attention_forward_wgmma_bf16_d128_causal::KERNEL,
        &attention_forward_wgmma_bf16_d256::KERNEL,
        &attention_forward_wgmma_bf16_d256_causal::KERNEL,
    ];
    const WGMMA_TMA_KERNELS: [&'static crate::KernelDefinition; 6] = [
        &attention_forward_wgmma_tma_bf16_d64::KERNEL,
        &attention_forward_wgmma_tma_bf16_d64_causal::KERNEL,
        &attention_forward_wgmma_tma_bf16_d128::KERNEL,
        &attention_forward_wgmma_tma_bf16_d128_causal::KERNEL,
        &attention_forward_wgmma_tma_bf16_d256::KERNEL,
        &attention_forward_wgmma_tma_bf16_d256_causal::KERNEL,
    ];
    const BACKWARD_DELTA: &'static crate::KernelDefinition = &attention_backward_delta_bf16::KERNEL;
    const BACKWARD_DKDV: [&'static crate::KernelDefinition; 4] = [
        &attention_backward_dkdv_bf16_d64::KERNEL,
        &attention_backward_dkdv_bf16_d64_causal::KERNEL,
        &attention_backward_dkdv_bf16_d128::KERNEL,
        &attention_backward_dkdv_bf16_d128_causal::KERNEL,
    ];
    const BACKWARD_DQ: [&'static crate::KernelDefinition; 4] = [
        &attention_backward_dq_bf16_d64::KERNEL,
        &attention_backward_dq_bf16_d64_causal::KERNEL,
        &attention_backward_dq_bf16_d128::KERNEL,
        &attention_backward_dq_bf16_d128_causal::KERNEL,
    ];
    const BACKWARD_WGMMA_DKDV: [KeyGradients; 6] = [
        KeyGradients::Together(&attention_backward_wgmma_dkdv_bf16_d64::KERNEL),
        KeyGradients::Together(&attention_backward_wgmma_dkdv_bf16_d64_causal::KERNEL),
        KeyGradients::Together(&attention_backward_wgmma_dkdv_bf16_d128::KERNEL),
        KeyGradients::Together(&attention_backward_wgmma_dkdv_bf16_d128_causal::KERNEL),
        KeyGradients::Apart {
            dk: &attention_backward_wgmma_dk_bf16_d256::KERNEL,
            dv: &attention_backward_wgmma_dv_bf16_d256::KERNEL,
        },
        KeyGradients::Apart {
            dk: &attention_backward_wgmma_dk_bf16_d256_causal::KERNEL,
            dv: &attention_backward_wgmma_dv_bf16_d256_causal::KERNEL,
        },
    ];
    const BACKWARD_WGMMA_DQ: [&'static crate::KernelDefinition; 6] = [
        &attention_backward_wgmma_dq_bf16_d64::KERNEL,
        &attention_backward_wgmma_dq_bf16_d64_causal::KERNEL,
        &attention_backward_wgmma_dq_bf16_d128::KERNEL,
        &attention_backward_wgmma_dq_bf16_d128_causal::KERNEL,
        &attention_backward_wgmma_dq_bf16_d256::KERNEL,
        &attention_backward_wgmma_dq_bf16_d256_causal::KERNEL,
    ];
}

impl AttentionElement for f16 {
    const KERNELS: [&'static crate::KernelDefinition; 6] = [
        &attention_forward_f16_d64::KERNEL,
        &attention_forward_f16_d64_causal::KERNEL,
        &attention_forward_f16_d128::KERNEL,
        &attention_forward_f16_d128_causal::KERNEL,
        &attention_forward_f16_d256::KERNEL,
        &attention_forward_f16_d256_causal::KERNEL,
    ];
    const WGMMA_KERNELS: [&'static crate::KernelDefinition; 6] = [
        &attention_forward_wgmma_f16_d64::KERNEL,
        &attention_forward_wgmma_f16_d64_causal::KERNEL,
        &attention_forward_wgmma_f16_d128::KERNEL,
        &attention_forward_wgmma_f16_d128_causal::KERNEL,
        &attention_forward_wgmma_f16_d256::KERNEL,
        &attention_forward_wgmma_f16_d256_causal::KERNEL,
    ];
    const WGMMA_TMA_KERNELS: [&'static crate::KernelDefinition; 6] = [
        &attention_forward_wgmma_tma_f16_d64::KERNEL,
        &attention_forward_wgmma_tma_f16_d64_causal::KERNEL,
        &attention_forward_wgmma_tma_f16_d128::KERNEL,
        &attention_forward_wgmma_tma_f16_d128_causal::KERNEL,
        &attention_forward_wgmma_tma_f16_d256::KERNEL,
        &attention_forward_wgmma_tma_f16_d256_causal::KERNEL,
    ];
    const BACKWARD_DELTA: &'static crate::KernelDefinition = &attention_backward_delta_f16::KERNEL;
    const BACKWARD_DKDV: [&'static crate::KernelDefinition; 4] = [
        &attention_backward_dkdv_f16_d64::KERNEL,
        &attention_backward_dkdv_f16_d64_causal::KERNEL,
        &attention_backward_dkdv_f16_d128::KERNEL,
        &attention_backward_dkdv_f16_d128_causal::KERNEL,
    ];
    const BACKWARD_DQ: [&'static crate::KernelDefinition; 4] = [
        &attention_backward_dq_f16_d64::KERNEL,
        &attention_backward_dq_f16_d64_causal::KERNEL,
        &attention_backward_dq_f16_d128::KERNEL,
        &attention_backward_dq_f16_d128_causal::KERNEL,
    ];
    const BACKWARD_WGMMA_DKDV: [KeyGradients; 6] = [
        KeyGradients::Together(&attention_backward_wgmma_dkdv_f16_d64::KERNEL),
        KeyGradients::Together(&attention_backward_wgmma_dkdv_f16_d64_causal::KERNEL),
        KeyGradients::Together(&attention_backward_wgmma_dkdv_f16_d128::KERNEL),
        KeyGradients::Together(&attention_backward_wgmma_dkdv_f16_d128_causal::KERNEL),
        KeyGradients::Apart {
            dk: &attention_backward_wgmma_dk_f16_d256::KERNEL,
            dv: &attention_backward_wgmma_dv_f16_d256::KERNEL,
        },
        KeyGradients::Apart {
            dk: &attention_backward_wgmma_dk_f16_d256_causal::KERNEL,
            dv: &attention_backward_wgmma_dv_f16_d256_causal::KERNEL,
        },
    ];
    const BACKWARD_WGMMA_DQ: [&'static crate::KernelDefinition; 6] = [
        &attention_backward_wgmma_dq_f16_d64::KERNEL,
        &attention_backward_wgmma_dq_f16_d64_causal::KERNEL,
        &attention_backward_wgmma_dq_f16_d128::KERNEL,
        &attention_backward_wgmma_dq_f16_d128_causal::KERNEL,
        &attention_backward_wgmma_dq_f16_d256::KERNEL,
        &attention_backward_wgmma_dq_f16_d256_causal::KERNEL,
    ];
}

/// The tensor-core instructions a forward kernel multiplies with — and a backward pass: its
/// gradient kernels on mma.sync, or on wgmma for either Hopper form (one set of wgmma gradient
/// kernels, some fed by TMA producers; [`backward_kernels_for`]).
///
/// ```
/// use tessera::catalog::attention::{self, TensorCores};
/// use tessera::half::bf16;
/// let kernel = attention::kernel_for::<bf16>(TensorCores::Wgmma, 128, true).unwrap();
/// assert_eq!(kernel.name(), "attention_forward_wgmma_bf16_d128_causal");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorCores {
    /// `mma.sync` fed by `ldmatrix` (every GPU since Ampere, sm_80).
    MmaSync,
    /// Hopper's `wgmma` (sm_90a): Q and K read by the tensor cores from shared memory, P from
    /// registers; K and V through a cp.async ring that every thread fills.
    Wgmma,
    /// wgmma fed by the Tensor Memory Accelerator: a producer warpgroup issues Q once a tile
    /// and K, V into a ring of mbarrier-guarded stages, so the two compute warpgroups never
    /// wait at a barrier of the whole block (persistent blocks, sm_90a).
    WgmmaTma,
}

impl TensorCores {
    /// Every one, in the order of the catalog's ladder.
    pub const ALL: [TensorCores; 3] = [TensorCores::MmaSync, TensorCores::Wgmma, TensorCores::WgmmaTma];

    /// What `device` runs: wgmma (fed by TMA) on compute capability 9.0 (H100, H200),
    /// mma.sync on other GPUs; the simulation, which defines every instruction, takes wgmma as
    /// an H100 would.
    pub fn of(device: &impl crate::Device) -> Self {
        match device.device_ref() {
            crate::runtime::DeviceRef::Gpu(gpu) if gpu.arch() != crate::Arch::SM_90 => TensorCores::MmaSync,
            _ => TensorCores::WgmmaTma,
        }
    }

    /// The fastest kernels on `device` for a problem, as measured on an H100 (BENCHMARKS.md,
    /// "Fused attention forward on wgmma"): the TMA producers' everywhere on Hopper but for
    /// causal attention at head dim ≤ 64 over at most 1024 queries, where their persistent
    /// blocks have too few tiles to balance and the cp.async ring's one block a tile is faster.
    ///
    /// ```
    /// use tessera::catalog::attention::TensorCores;
    /// # fn main() -> Result<(), tessera::Error> {
    /// let simulator = tessera::Simulator::new()?;
    /// assert_eq!(TensorCores::fastest(&simulator, 64, true, 1024), TensorCores::Wgmma);
    /// assert_eq!(TensorCores::fastest(&simulator, 128, true, 1024), TensorCores::WgmmaTma);
    /// # Ok(())
    /// # }
    /// ```
    pub fn fastest(device: &impl crate::Device, head_dim: usize, causal: bool, seq_q: usize) -> Self {
        match Self::of(device) {
            TensorCores::WgmmaTma if causal && head_dim <= 64 && seq_q <= 1024 => TensorCores::Wgmma,
            cores => cores,
        }
    }
}

/// The kernel [`forward_on`] launches for `head_dim` and `causal` on `cores`, or why there is
/// none.
pub fn kernel_for<T: AttentionElement>(
    cores: TensorCores,
    head_dim: usize,
    causal: bool,
) -> Result<&'static crate::KernelDefinition, AttentionError> {
    let kernels = match cores {
        TensorCores::MmaSync => T::KERNELS,
        TensorCores::Wgmma => T::WGMMA_KERNELS,
        TensorCores::WgmmaTma => T::WGMMA_TMA_KERNELS,
    };
    Ok(kernels[width_index(head_dim, HEAD_DIMS)? + usize::from(causal)])
}

/// Where the kernels of `head_dim` sit in the tables of [`AttentionElement`] (their causal
/// twins one after), among the widths `supported` (the forward's or the backward's).
fn width_index(head_dim: usize, supported: &'static [usize]) -> Result<usize, AttentionError> {
    supported
        .iter()
        .position(|&width| head_dim >= 1 && head_dim <= width)
        .map(|position| 2 * position)
        .ok_or(AttentionError::HeadDim { head_dim, supported })
}

/// The dims of q and k/v, checked: (batch, heads, seq_q, head_dim) and (batch, kv_heads,
/// seq_kv, head_dim), kv_heads dividing heads. The other tensors are checked against them.
struct Shapes {
    q: [usize; 4],
    kv: [usize; 4],
    q_shape: Vec<usize>,
    k_shape: Vec<usize>,
}

impl Shapes {
    fn of<T: AttentionElement>(
        q: &impl Input<T>,
        k: &impl Input<T>,
        v: &impl Input<T>,
    ) -> Result<Self, AttentionError> {
        let dims = |param: &'static str, shape: &[usize]| -> Result<[usize; 4], AttentionError> {
            <[usize; 4]>::try_from(shape).map_err(|_| AttentionError::Rank { param, dims: shape.to_vec() })
        };
        let [batch, heads, _, head_dim] = dims("q", q.shape())?;
        let [_, kv_heads, seq_kv, _] = dims("k", k.shape())?;
        let shapes = Self {
            q: dims("q", q.shape())?,
            kv: [batch, kv_heads, seq_kv, head_dim],
            q_shape: q.shape().to_vec(),
            k_shape: k.shape().to_vec(),
        };
        shapes.expect("k", k.shape(), &shapes.kv)?;
        shapes.expect("v", v.shape(), &shapes.kv)?;
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(AttentionError::Heads { q_heads: heads, kv_heads });
        }
        Ok(shapes)
    }

    /// (batch, heads, seq_q): the log-sum-exp's shape.
    fn lse(&self) -> [usize; 3] {
        [self.q[0], self.q[1], self.q[2]]
    }

    fn head_dim(&self) -> usize {
        self.q[3]
    }

    /// `param`'s dims are `expected`, or a typed error that names it and q's and k's dims.
    fn expect(&self, param: &'static str, found: &[usize], expected: &[usize]) -> Result<(), AttentionError> {
        if found == expected {
            return Ok(());
        }
        Err(AttentionError::Shape {
            param,
            expected: expected.to_vec(),
            found: found.to_vec(),
            q: self.q_shape.clone(),
            k: self.k_shape.clone(),
        })
    }
}

/// O = softmax(Q·Kᵀ / √head_dim + mask)·V for every (batch, head), and each query row's
/// log-sum-exp (natural log) into `lse`: q and o are (batch, heads, seq_q, head_dim), k and v
/// (batch, kv_heads, seq_kv, head_dim) with kv_heads dividing heads (grouped-query attention),
/// lse (batch, heads, seq_q) in f32. `causal`: query i sees keys 0 ..= i, as torch's
/// `is_causal`. Shapes are checked first (typed errors name the tensor and the dims);
/// launches without synchronising. [`backward`] takes `o` and `lse` to give the gradients.
///
/// ```ignore
/// let q = backend.upload(&host_q, [batch, heads, seq, 128])?;   // bf16
/// let (k, v) = (backend.upload(&host_k, [batch, kv_heads, seq, 128])?, backend.upload(&host_v, [batch, kv_heads, seq, 128])?);
/// let mut o = backend.zeros::<bf16>([batch, heads, seq, 128])?;
/// let mut lse = backend.zeros::<f32>([batch, heads, seq])?;
/// tessera::catalog::attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, true)?;
/// ```
pub fn forward<T: AttentionElement>(
    device: &impl crate::Device,
    q: &impl Input<T>,
    k: &impl Input<T>,
    v: &impl Input<T>,
    o: &mut impl Output<T>,
    lse: &mut impl Output<f32>,
    causal: bool,
) -> Result<crate::Launched, AttentionError> {
    let cores = match q.shape() {
        [_, _, seq_q, head_dim] => TensorCores::fastest(device, *head_dim, causal, *seq_q),
        _ => TensorCores::of(device),
    };
    forward_on(device, cores, q, k, v, o, lse, causal)
}

/// [`forward`] on the kernels of `cores` rather than the fastest `device` runs (to compare
/// them, or to test both on the simulation); wgmma on a GPU other than compute capability 9.0
/// is a typed error from the launch.
#[allow(clippy::too_many_arguments)]
pub fn forward_on<T: AttentionElement>(
    device: &impl crate::Device,
    cores: TensorCores,
    q: &impl Input<T>,
    k: &impl Input<T>,
    v: &impl Input<T>,
    o: &mut impl Output<T>,
    lse: &mut impl Output<f32>,
    causal: bool,
) -> Result<crate::Launched, AttentionError> {
    let shapes = Shapes::of(q, k, v)?;
    shapes.expect("o", o.shape(), &shapes.q)?;
    shapes.expect("lse", lse.shape(), &shapes.lse())?;
    let kernel = kernel_for::<T>(cores, shapes.head_dim(), causal)?;
    let scale_log2 = std::f32::consts::LOG2_E / (shapes.head_dim() as f32).sqrt();
    Ok(kernel.launch(
        device,
        &mut [
            crate::Argument::input("q", q),
            crate::Argument::input("k", k),
            crate::Argument::input("v", v),
            crate::Argument::output("o", o),
            crate::Argument::output("lse", lse),
            crate::Argument::scalar("scale_log2", scale_log2),
        ],
    )?)
}

/// Every kernel of the family (forward on mma.sync, backward, forward on wgmma, backward on
/// wgmma), for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 82] = [
    &attention_forward_bf16_d64::KERNEL,
    &attention_forward_bf16_d64_causal::KERNEL,
    &attention_forward_bf16_d128::KERNEL,
    &attention_forward_bf16_d128_causal::KERNEL,
    &attention_forward_f16_d64::KERNEL,
    &attention_forward_f16_d64_causal::KERNEL,
    &attention_forward_f16_d128::KERNEL,
    &attention_forward_f16_d128_causal::KERNEL,
    &attention_backward_delta_bf16::KERNEL,
    &attention_backward_dkdv_bf16_d64::KERNEL,
    &attention_backward_dkdv_bf16_d64_causal::KERNEL,
    &attention_backward_dkdv_bf16_d128::KERNEL,
    &attention_backward_dkdv_bf16_d128_causal::KERNEL,
    &attention_backward_dq_bf16_d64::KERNEL,
    &attention_backward_dq_bf16_d64_causal::KERNEL,
    &attention_backward_dq_bf16_d128::KERNEL,
    &attention_backward_dq_bf16_d128_causal::KERNEL,
    &attention_backward_delta_f16::KERNEL,
    &attention_backward_dkdv_f16_d64::KERNEL,
    &attention_backward_dkdv_f16_d64_causal::KERNEL,
    &attention_backward_dkdv_f16_d128::KERNEL,
    &attention_backward_dkdv_f16_d128_causal::KERNEL,
    &attention_backward_dq_f16_d64::KERNEL,
    &attention_backward_dq_f16_d64_causal::KERNEL,
    &attention_backward_dq_f16_d128::KERNEL,
    &attention_backward_dq_f16_d128_causal::KERNEL,
    &attention_forward_wgmma_bf16_d64::KERNEL,
    &attention_forward_wgmma_bf16_d64_causal::KERNEL,
    &attention_forward_wgmma_bf16_d128::KERNEL,
    &attention_forward_wgmma_bf16_d128_causal::KERNEL,
    &attention_forward_wgmma_f16_d64::KERNEL,
    &attention_forward_wgmma_f16_d64_causal::KERNEL,
    &attention_forward_wgmma_f16_d128::KERNEL,
    &attention_forward_wgmma_f16_d128_causal::KERNEL,
    &attention_forward_wgmma_tma_bf16_d64::KERNEL,
    &attention_forward_wgmma_tma_bf16_d64_causal::KERNEL,
    &attention_forward_wgmma_tma_bf16_d128::KERNEL,
    &attention_forward_wgmma_tma_bf16_d128_causal::KERNEL,
    &attention_forward_wgmma_tma_f16_d64::KERNEL,
    &attention_forward_wgmma_tma_f16_d64_causal::KERNEL,
    &attention_forward_wgmma_tma_f16_d128::KERNEL,
    &attention_forward_wgmma_tma_f16_d128_causal::KERNEL,
    &attention_backward_wgmma_dkdv_bf16_d64::KERNEL,
    &attention_backward_wgmma_dkdv_bf16_d64_causal::KERNEL,
    &attention_backward_wgmma_dkdv_bf16_d128::KERNEL,
    &attention_backward_wgmma_dkdv_bf16_d128_causal::KERNEL,
    &attention_backward_wgmma_dq_bf16_d64::KERNEL,
    &attention_backward_wgmma_dq_bf16_d64_causal::KERNEL,
    &attention_backward_wgmma_dq_bf16_d128::KERNEL,
    &attention_backward_wgmma_dq_bf16_d128_causal::KERNEL,
    &attention_backward_wgmma_dkdv_f16_d64::KERNEL,
    &attention_backward_wgmma_dkdv_f16_d64_causal::KERNEL,
    &attention_backward_wgmma_dkdv_f16_d128::KERNEL,
    &attention_backward_wgmma_dkdv_f16_d128_causal::KERNEL,
    &attention_backward_wgmma_dq_f16_d64::KERNEL,
    &attention_backward_wgmma_dq_f16_d64_causal::KERNEL,
    &attention_backward_wgmma_dq_f16_d128::KERNEL,
    &attention_backward_wgmma_dq_f16_d128_causal::KERNEL,
    &attention_forward_bf16_d256::KERNEL,
    &attention_forward_bf16_d256_causal::KERNEL,
    &attention_forward_f16_d256::KERNEL,
    &attention_forward_f16_d256_causal::KERNEL,
    &attention_forward_wgmma_bf16_d256::KERNEL,
    &attention_forward_wgmma_bf16_d256_causal::KERNEL,
    &attention_forward_wgmma_f16_d256::KERNEL,
    &attention_forward_wgmma_f16_d256_causal::KERNEL,
    &attention_forward_wgmma_tma_bf16_d256::KERNEL,
    &attention_forward_wgmma_tma_bf16_d256_causal::KERNEL,
    &attention_forward_wgmma_tma_f16_d256::KERNEL,
    &attention_forward_wgmma_tma_f16_d256_causal::KERNEL,
    &attention_backward_wgmma_dk_bf16_d256::KERNEL,
    &attention_backward_wgmma_dk_bf16_d256_causal::KERNEL,
    &attention_backward_wgmma_dv_bf16_d256::KERNEL,
    &attention_backward_wgmma_dv_bf16_d256_causal::KERNEL,
    &attention_backward_wgmma_dq_bf16_d256::KERNEL,
    &attention_backward_wgmma_dq_bf16_d256_causal::KERNEL,
    &attention_backward_wgmma_dk_f16_d256::KERNEL,
    &attention_backward_wgmma_dk_f16_d256_causal::KERNEL,
    &attention_backward_wgmma_dv_f16_d256::KERNEL,
    &attention_backward_wgmma_dv_f16_d256_causal::KERNEL,
    &attention_backward_wgmma_dq_f16_d256::KERNEL,
    &attention_backward_wgmma_dq_f16_d256_causal::KERNEL,
];

mod backward;
pub use backward::*;

mod error;
pub use error::AttentionError;

mod hopper;
pub use hopper::*;
