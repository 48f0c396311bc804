//! Where each shared buffer lives in a block's shared memory, and whether the block needs
//! dynamic shared memory (more than the 48 KiB a kernel may declare statically).

use serde::{Deserialize, Serialize};

use crate::{Kernel, SharedLayout};

/// Each buffer starts at a multiple of this many bytes, so every vector access stays aligned.
pub const SHARED_ALIGNMENT: i64 = 16;

/// A `.panels()` buffer starts at a multiple of this many bytes: the hardware swizzle (TMA's,
/// wgmma's) XORs address bits 4-6 with bits 7-9, so each 8-row atom must start on 1024.
pub const PANEL_ALIGNMENT: i64 = 1024;

/// Static shared memory kept for tessera's own variables beside the buffers — stream-K's
/// schedule, a pipeline's mbarriers, the warp slots of block reductions, a cluster's slot —
/// so buffers that fill the 48 KiB static limit go to dynamic shared memory instead of
/// pushing the block over it (HGEMM V4's 48 KiB of stages under `.stream_k()` did).
pub const RESERVED_STATIC_BYTES: u32 = 1024;

/// The slot of a `.by_tma()` copy's staging buffers (two of 16 rows × 128 bytes a compute warp).
pub const TMA_STORE_STAGING: &str = "tessera_store_staging";

/// A block's shared memory, buffer by buffer.
///
/// Under the static limit codegen declares each buffer `__shared__`; over it, the buffers
/// are carved out of one `extern __shared__` allocation at these offsets, and the launch
/// passes [`SharedMemoryPlan::bytes`] as the dynamic size.
///
/// ```
/// use tessera_dsl::SharedMemoryPlan;
/// let plan = SharedMemoryPlan::from_slots(
///     vec![("a_s".into(), 1, 32 * 132 * 4), ("b_s".into(), 2, 6)],
///     48 * 1024,
/// );
/// assert_eq!(plan.slots[1].offset, 16_896);   // a multiple of 16
/// assert_eq!(plan.bytes, 16_896 + 2 * 6);
/// assert!(!plan.dynamic);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedMemoryPlan {
    pub slots: Vec<SharedSlot>,
    /// Bytes of the whole allocation (every stage of every buffer, alignment included).
    pub bytes: i64,
    /// True when `bytes` exceeds the static limit, so the buffers live in dynamic shared memory.
    pub dynamic: bool,
    /// Static shared memory the kernel's block reductions declare beside the buffers (their
    /// warp slots, [`crate::reduction_shared_bytes`]): not in `bytes`, but the block holds it.
    pub reduction_bytes: i64,
}

/// One buffer: `stages` copies of `stage_bytes` each (a double-buffered one has two),
/// starting `offset` bytes into the block's shared memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedSlot {
    pub buffer: String,
    pub offset: i64,
    pub stages: u32,
    pub stage_bytes: i64,
}

impl SharedSlot {
    /// Bytes of every stage together.
    ///
    /// ```
    /// let slot = tessera_dsl::SharedSlot { buffer: "a_s".into(), offset: 0, stages: 2, stage_bytes: 4096 };
    /// assert_eq!(slot.bytes(), 8192);
    /// ```
    pub fn bytes(&self) -> i64 {
        self.stage_bytes * i64::from(self.stages)
    }
}

impl SharedMemoryPlan {
    /// The plan of `kernel`'s buffers (those whose shape is constant), in declaration order.
    pub fn of(kernel: &Kernel) -> Self {
        let mut slots: Vec<(String, u32, i64, i64)> = kernel
            .shared_buffers()
            .into_iter()
            .filter_map(|buffer| {
                let layout = SharedLayout::of(buffer, kernel)?;
                Some((buffer.name.clone(), kernel.buffer_stages(&buffer.name), layout.bytes(), layout.alignment()))
            })
            .collect();
        // a `.by_tma()` copy's staging buffers, in the 128-byte swizzle TMA reads
        let staging = kernel.tma_store_staging_bytes();
        if staging > 0 {
            slots.push((TMA_STORE_STAGING.into(), 1, staging, PANEL_ALIGNMENT));
        }
        // the reductions' warp slots are static too: the buffers' static share is less by them
        let reduction_bytes = crate::reduction_shared_bytes(kernel);
        let limit = Self::static_buffer_limit(&kernel.target())
            .saturating_sub(u32::try_from(reduction_bytes).unwrap_or(u32::MAX));
        Self { reduction_bytes, ..Self::from_aligned_slots(slots, limit) }
    }

    /// Every byte of shared memory a block holds: the buffers and the reductions' warp slots.
    ///
    /// ```
    /// let plan = tessera_dsl::SharedMemoryPlan { slots: vec![], bytes: 4096, dynamic: false, reduction_bytes: 128 };
    /// assert_eq!(plan.block_bytes(), 4224);
    /// ```
    pub fn block_bytes(&self) -> i64 {
        self.bytes + self.reduction_bytes
    }

    /// The bytes of buffers a kernel for `target` declares statically: its static limit less
    /// [`RESERVED_STATIC_BYTES`].
    ///
    /// ```
    /// use tessera_dsl::{SharedMemoryPlan, Target};
    /// assert_eq!(SharedMemoryPlan::static_buffer_limit(&Target::PORTABLE), 48 * 1024 - 1024);
    /// ```
    pub fn static_buffer_limit(target: &crate::Target) -> u32 {
        target.static_shared_memory_bytes.saturating_sub(RESERVED_STATIC_BYTES)
    }

    /// Lays out (name, stages, bytes per stage) one after another, 16-byte aligned.
    pub fn from_slots(buffers: Vec<(String, u32, i64)>, static_limit: u32) -> Self {
        let aligned =
            buffers.into_iter().map(|(name, stages, bytes)| (name, stages, bytes, SHARED_ALIGNMENT)).collect();
        Self::from_aligned_slots(aligned, static_limit)
    }

    /// Lays out (name, stages, bytes per stage, alignment) one after another, each buffer
    /// starting at a multiple of its alignment.
    ///
    /// ```
    /// use tessera_dsl::SharedMemoryPlan;
    /// let plan = SharedMemoryPlan::from_aligned_slots(
    ///     vec![("bar".into(), 1, 48, 16), ("a_s".into(), 3, 16384, 1024)],
    ///     48 * 1024,
    /// );
    /// assert_eq!(plan.slots[1].offset, 1024);
    /// assert!(plan.dynamic);
    /// ```
    pub fn from_aligned_slots(buffers: Vec<(String, u32, i64, i64)>, static_limit: u32) -> Self {
        let mut offset = 0;
        let mut bytes = 0;
        let mut slots = Vec::new();
        for (buffer, stages, stage_bytes, alignment) in buffers {
            offset = round_up(offset, alignment.max(SHARED_ALIGNMENT));
            // A stage of a multi-stage buffer is indexed as `buffer[stage]`, so each stage's
            // size is what the array type says; only the buffer's start needs aligning.
            let slot = SharedSlot { buffer, offset, stages, stage_bytes };
            offset += slot.bytes();
            bytes = offset;
            slots.push(slot);
        }
        Self { slots, bytes, dynamic: bytes > i64::from(static_limit), reduction_bytes: 0 }
    }

    /// The dynamic shared memory a launch must pass (0 for static buffers).
    pub fn dynamic_bytes(&self) -> u32 {
        if self.dynamic {
            u32::try_from(self.bytes).unwrap_or(u32::MAX)
        } else {
            0
        }
    }

    pub fn slot(&self, buffer: &str) -> Option<&SharedSlot> {
        self.slots.iter().find(|s| s.buffer == buffer)
    }
}

fn round_up(value: i64, unit: i64) -> i64 {
    (value + unit - 1) / unit * unit
}
