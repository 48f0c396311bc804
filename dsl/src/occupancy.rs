//! How many blocks of a kernel one SM keeps resident, by the rules of the CUDA occupancy
//! calculator (`cuda_occupancy.h`): each resource — warp slots, block slots, shared memory,
//! registers — allows some number of blocks, and the smallest wins.
//!
//! - Warps: `floor(max warps per SM / warps per block)`, warps per block rounded up.
//! - Blocks: the architecture's resident-block limit.
//! - Shared memory: each block takes its bytes plus a 1 KiB system reserve, rounded up to
//!   128 bytes; `floor(shared memory per SM / that)`.
//! - Registers: each warp takes `registers × 32` rounded up to 256; warps are placed in the
//!   4 sub-partitions of the register file (16 384 registers each), so
//!   `floor(16 384 / per warp) × 4` warps fit, `floor(that / warps per block)` blocks. A block
//!   whose warps, rounded up to a multiple of 4, would need more than 65 536 registers, or a
//!   thread with more than 255, does not launch at all.

use serde::{Deserialize, Serialize};

use crate::Target;

/// What one SM can hold of a kernel, and why no more.
///
/// ```
/// use tessera_dsl::{Limiter, Occupancy, Target};
/// // 256 threads, 16 KiB of shared memory, 128 registers per thread, on sm_90
/// let o = Occupancy::new(&Target::SM_90, 256, 16 * 1024, Some(128));
/// assert_eq!((o.blocks_per_sm, o.warps_per_sm), (2, 16));
/// assert_eq!(o.limited_by, vec![Limiter::Registers]);
/// // before registers are known, threads are the limit: 64 warps / 8 per block
/// let o = Occupancy::new(&Target::SM_90, 256, 16 * 1024, None);
/// assert_eq!((o.blocks_per_sm, o.limited_by.as_slice()), (8, &[Limiter::Warps][..]));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// The architecture, `sm_90`.
    pub target: String,
    pub threads_per_block: u32,
    pub warps_per_block: u32,
    /// The kernel's own shared memory per block (static and dynamic).
    pub shared_bytes_per_block: u32,
    /// What a block takes of the SM's shared memory: its own, the reserve, rounded up.
    pub shared_bytes_allocated: u32,
    /// `None` until NVRTC has compiled the kernel for this architecture.
    pub registers_per_thread: Option<u32>,
    /// Registers each warp is allocated (`registers × 32` rounded up to the allocation unit).
    pub registers_per_warp: Option<u32>,
    /// Blocks each resource allows on its own.
    pub blocks_by_warps: u32,
    pub blocks_by_block_limit: u32,
    pub blocks_by_shared_memory: u32,
    pub blocks_by_registers: Option<u32>,
    /// The smallest of them: blocks resident per SM.
    pub blocks_per_sm: u32,
    pub warps_per_sm: u32,
    pub max_warps_per_sm: u32,
    /// Every resource that allows exactly `blocks_per_sm` blocks.
    pub limited_by: Vec<Limiter>,
}

/// A resource that bounds the blocks per SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// The SM's warp (thread) slots.
    Warps,
    /// The SM's resident-block limit.
    Blocks,
    SharedMemory,
    Registers,
}

impl std::fmt::Display for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::SharedMemory => "shared memory",
            Limiter::Registers => "registers",
        })
    }
}

impl Occupancy {
    /// The occupancy of blocks of `threads` threads using `shared_bytes` of shared memory
    /// and, when known, `registers` per thread, on `target`.
    pub fn new(target: &Target, threads: u32, shared_bytes: u32, registers: Option<u32>) -> Self {
        let warps_per_block = threads.div_ceil(target.warp_size).max(1);
        let max_warps_per_sm = target.max_warps_per_sm();
        let blocks_by_warps = max_warps_per_sm / warps_per_block;
        let blocks_by_block_limit = target.max_blocks_per_sm;

        let with_reserve = u64::from(shared_bytes) + u64::from(target.reserved_shared_memory_per_block_bytes);
        let allocated = round_up(with_reserve, u64::from(target.shared_memory_allocation_unit));
        let blocks_by_shared_memory = if shared_bytes > target.opt_in_shared_memory_bytes {
            0
        } else {
            (u64::from(target.shared_memory_per_sm_bytes) / allocated.max(1)) as u32
        };

        let registers_per_warp = registers.map(|r| {
            round_up(u64::from(r) * u64::from(target.warp_size), u64::from(target.register_allocation_unit)) as u32
        });
        let blocks_by_registers = registers.zip(registers_per_warp).map(|(per_thread, per_warp)| {
            let sub_partitions = target.register_sub_partitions;
            // The hardware checks a block as if its warps filled every sub-partition evenly.
            let assumed = u64::from(per_warp) * round_up(u64::from(warps_per_block), u64::from(sub_partitions));
            if per_thread > target.max_registers_per_thread || assumed > u64::from(target.registers_per_sm) {
                0
            } else {
                // No registers at all (never from ptxas) would leave registers no limit.
                (target.registers_per_sm / sub_partitions)
                    .checked_div(per_warp)
                    .map_or(u32::MAX, |warps_per_sub_partition| {
                        warps_per_sub_partition * sub_partitions / warps_per_block
                    })
            }
        });

        let limits = [
            (Limiter::Warps, Some(blocks_by_warps)),
            (Limiter::Blocks, Some(blocks_by_block_limit)),
            (Limiter::SharedMemory, Some(blocks_by_shared_memory)),
            (Limiter::Registers, blocks_by_registers),
        ];
        let blocks_per_sm = limits.iter().filter_map(|(_, b)| *b).min().unwrap_or(0);
        let limited_by = limits.iter().filter(|(_, b)| *b == Some(blocks_per_sm)).map(|(l, _)| *l).collect();
        Self {
            target: target.name(),
            threads_per_block: threads,
            warps_per_block,
            shared_bytes_per_block: shared_bytes,
            shared_bytes_allocated: allocated.min(u64::from(u32::MAX)) as u32,
            registers_per_thread: registers,
            registers_per_warp,
            blocks_by_warps,
            blocks_by_block_limit,
            blocks_by_shared_memory,
            blocks_by_registers,
            blocks_per_sm,
            warps_per_sm: blocks_per_sm * warps_per_block,
            max_warps_per_sm,
            limited_by,
        }
    }

    /// Resident warps as a fraction of the SM's warp slots (the "occupancy").
    pub fn fraction(&self) -> f64 {
        f64::from(self.warps_per_sm) / f64::from(self.max_warps_per_sm.max(1))
    }

    /// `registers`, `shared memory and warps`: what the limit is, for a line of text.
    pub fn limited_by_text(&self) -> String {
        let names: Vec<String> = self.limited_by.iter().map(Limiter::to_string).collect();
        match names.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        }
    }
}

fn round_up(value: u64, unit: u64) -> u64 {
    value.div_ceil(unit.max(1)) * unit.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each case is worked by hand from the calculator's rules; the comment is the working.

    #[test]
    fn sgemm_v3_on_sm_80_is_limited_by_registers_to_two_blocks() {
        // 256 threads = 8 warps. Shared: 16 384 + 1 024 = 17 408 (a multiple of 128);
        // 167 936 / 17 408 = 9.6 → 9. Warps: 64 / 8 = 8. Blocks: 32.
        // Registers 128: 128 × 32 = 4 096 per warp; 16 384 / 4 096 = 4 warps per
        // sub-partition, × 4 = 16 warps; 16 / 8 = 2 blocks → 2 blocks, 16 warps, 25 %.
        let o = Occupancy::new(&Target::SM_80, 256, 16_384, Some(128));
        assert_eq!(o.warps_per_block, 8);
        assert_eq!(o.shared_bytes_allocated, 17_408);
        assert_eq!(
            (o.blocks_by_warps, o.blocks_by_block_limit, o.blocks_by_shared_memory, o.blocks_by_registers),
            (8, 32, 9, Some(2))
        );
        assert_eq!((o.blocks_per_sm, o.warps_per_sm, o.limited_by.clone()), (2, 16, vec![Limiter::Registers]));
        assert_eq!(o.fraction(), 0.25);
    }

    #[test]
    fn registers_are_allocated_per_warp_in_units_of_256() {
        // 37 registers: 37 × 32 = 1 184 → rounded up to 1 280 per warp;
        // 16 384 / 1 280 = 12.8 → 12 warps per sub-partition, × 4 = 48 warps.
        // 128 threads = 4 warps: 48 / 4 = 12 blocks by registers; warps allow 64 / 4 = 16
        // on sm_90, shared memory (0 + 1 024 reserved) 233 472 / 1 024 = 228, blocks 32 → 12.
        let o = Occupancy::new(&Target::SM_90, 128, 0, Some(37));
        assert_eq!(o.registers_per_warp, Some(1_280));
        assert_eq!(o.blocks_by_registers, Some(12));
        assert_eq!(o.blocks_by_shared_memory, 228);
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (12, 48));
        assert_eq!(o.limited_by, vec![Limiter::Registers]);
    }

    #[test]
    fn shared_memory_counts_the_reserve_and_the_128_byte_granularity() {
        // sm_90, 64 threads (2 warps), 66 048 B (a 128 × 129 float tile):
        // 66 048 + 1 024 = 67 072 = 524 × 128 exactly; 233 472 / 67 072 = 3.48 → 3 blocks.
        let o = Occupancy::new(&Target::SM_90, 64, 66_048, Some(32));
        assert_eq!(o.shared_bytes_allocated, 67_072);
        assert_eq!(o.blocks_by_shared_memory, 3);
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (3, 6));
        assert_eq!(o.limited_by, vec![Limiter::SharedMemory]);
        // sm_80: 100 B + 1 024 = 1 124 → 1 152 (9 × 128); 167 936 / 1 152 = 145.8 → 145,
        // but 32 blocks at most, and 64 threads: 64 / 2 = 32 by warps too.
        let o = Occupancy::new(&Target::SM_80, 64, 100, None);
        assert_eq!(o.shared_bytes_allocated, 1_152);
        assert_eq!(o.blocks_by_shared_memory, 145);
        assert_eq!(o.blocks_per_sm, 32);
        assert_eq!(o.limited_by, vec![Limiter::Warps, Limiter::Blocks]);
    }

    #[test]
    fn a_full_size_block_on_sm_90_fits_twice_by_warps() {
        // 1 024 threads = 32 warps; 64 / 32 = 2 blocks. 32 registers: 1 024 per warp,
        // 16 384 / 1 024 = 16 per sub-partition → 64 warps → 2 blocks: a tie.
        let o = Occupancy::new(&Target::SM_90, 1024, 0, Some(32));
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (2, 64));
        assert_eq!(o.limited_by, vec![Limiter::Warps, Limiter::Registers]);
        assert_eq!(o.fraction(), 1.0);
    }

    #[test]
    fn partial_warps_count_as_whole_ones() {
        // 48 threads take 2 warp slots: sm_86 has 48 warps → 24 blocks by warps, 16 by the
        // block limit → 16 blocks, 32 warps of 48.
        let o = Occupancy::new(&Target::SM_86, 48, 0, None);
        assert_eq!(o.warps_per_block, 2);
        assert_eq!((o.blocks_by_warps, o.blocks_per_sm, o.warps_per_sm), (24, 16, 32));
        assert_eq!(o.limited_by, vec![Limiter::Blocks]);
    }

    #[test]
    fn a_block_the_register_file_cannot_hold_does_not_launch() {
        // 255 registers: 8 160 → 8 192 per warp; 1 024 threads = 32 warps (a multiple of 4):
        // 8 192 × 32 = 262 144 > 65 536 → 0 blocks.
        let o = Occupancy::new(&Target::SM_90, 1024, 0, Some(255));
        assert_eq!((o.blocks_by_registers, o.blocks_per_sm), (Some(0), 0));
        assert_eq!(o.limited_by, vec![Limiter::Registers]);
        // 128 registers and 5 warps: the hardware assumes 8 warps' worth, 4 096 × 8 = 32 768:
        // fits; 16 384 / 4 096 = 4 per sub-partition → 16 warps → 3 blocks.
        let o = Occupancy::new(&Target::SM_90, 160, 0, Some(128));
        assert_eq!(o.blocks_by_registers, Some(3));
    }

    #[test]
    fn shared_memory_over_the_opt_in_limit_allows_no_block() {
        let o = Occupancy::new(&Target::SM_86, 256, 120 * 1024, None);
        assert_eq!((o.blocks_by_shared_memory, o.blocks_per_sm), (0, 0));
        assert_eq!(o.limited_by, vec![Limiter::SharedMemory]);
    }
}
