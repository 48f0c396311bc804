/// The limits of a GPU architecture that a configuration must respect, and the per-SM
/// resources the occupancy arithmetic ([`crate::Occupancy`]) divides up.
///
/// The figures are those of the CUDA programming guide's table of compute capabilities and
/// of the CUDA occupancy calculator (`cuda_occupancy.h`).
///
/// ```
/// let target = tessera_dsl::Target::SM_90;
/// assert_eq!(target.max_threads_per_block, 1024);
/// assert_eq!(target.name(), "sm_90");
/// assert_eq!(target.opt_in_shared_memory_bytes, 227 * 1024);
/// assert_eq!(tessera_dsl::Target::from_name("sm_86").map(|t| t.max_threads_per_sm), Some(1536));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// How messages name the target: `sm_90`, or a range for the portable limits.
    pub label: &'static str,
    /// Compute capability as `major * 10 + minor` (90 for sm_90).
    pub compute_capability: u32,
    pub max_threads_per_block: u32,
    pub max_block_dims: [u32; 3],
    /// Bytes of `__shared__` memory a block may declare statically.
    pub static_shared_memory_bytes: u32,
    /// Bytes of shared memory a block may use after opting in (dynamic shared memory).
    pub opt_in_shared_memory_bytes: u32,
    pub max_registers_per_thread: u32,
    pub warp_size: u32,
    /// Threads one SM keeps resident.
    pub max_threads_per_sm: u32,
    /// Blocks one SM keeps resident.
    pub max_blocks_per_sm: u32,
    /// 32-bit registers of one SM (and the most one block may hold).
    pub registers_per_sm: u32,
    /// Registers are allocated to each warp in units of this many.
    pub register_allocation_unit: u32,
    /// The register file is split between this many sub-partitions (schedulers); a warp's
    /// registers come from one of them.
    pub register_sub_partitions: u32,
    /// Shared memory one SM can give its blocks at the largest carveout.
    pub shared_memory_per_sm_bytes: u32,
    /// Shared memory the system reserves for each resident block (on top of its own).
    pub reserved_shared_memory_per_block_bytes: u32,
    /// A block's shared memory is allocated in units of this many bytes.
    pub shared_memory_allocation_unit: u32,
}

const KIB: u32 = 1024;

impl Target {
    pub const SM_80: Target = Target::ampere_like("sm_80", 80, 163 * KIB, 2048, 32, 164 * KIB);
    pub const SM_86: Target = Target::ampere_like("sm_86", 86, 99 * KIB, 1536, 16, 100 * KIB);
    pub const SM_89: Target = Target::ampere_like("sm_89", 89, 99 * KIB, 1536, 24, 100 * KIB);
    pub const SM_90: Target = Target::ampere_like("sm_90", 90, 227 * KIB, 2048, 32, 228 * KIB);

    /// The limits every target shares (the smallest of each); the macro validates against
    /// these unless the kernel names a target, so a kernel that compiles runs on any
    /// supported GPU.
    pub const PORTABLE: Target =
        Target::ampere_like("every supported GPU (sm_80 and newer)", 80, 99 * KIB, 1536, 16, 100 * KIB);

    pub const KNOWN: [Target; 4] = [Self::SM_80, Self::SM_86, Self::SM_89, Self::SM_90];

    const fn ampere_like(
        label: &'static str,
        compute_capability: u32,
        opt_in_shared_memory_bytes: u32,
        max_threads_per_sm: u32,
        max_blocks_per_sm: u32,
        shared_memory_per_sm_bytes: u32,
    ) -> Self {
        Self {
            label,
            compute_capability,
            max_threads_per_block: 1024,
            max_block_dims: [1024, 1024, 64],
            static_shared_memory_bytes: 48 * KIB,
            opt_in_shared_memory_bytes,
            max_registers_per_thread: 255,
            warp_size: 32,
            max_threads_per_sm,
            max_blocks_per_sm,
            registers_per_sm: 64 * KIB,
            register_allocation_unit: 256,
            register_sub_partitions: 4,
            shared_memory_per_sm_bytes,
            reserved_shared_memory_per_block_bytes: KIB,
            shared_memory_allocation_unit: 128,
        }
    }

    /// The limits of `sm_XY`, if tessera knows that architecture.
    pub fn from_compute_capability(major: u32, minor: u32) -> Option<Self> {
        Self::KNOWN.into_iter().find(|t| t.compute_capability == major * 10 + minor)
    }

    /// The limits of the architecture named `sm_XY`, if tessera knows it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::KNOWN.into_iter().find(|t| t.name() == name)
    }

    /// The names of the known architectures, for messages: `sm_80, sm_86, sm_89, sm_90`.
    pub fn known_names() -> String {
        Self::KNOWN.iter().map(Target::name).collect::<Vec<_>>().join(", ")
    }

    pub fn name(&self) -> String {
        format!("sm_{}", self.compute_capability)
    }

    /// Warps one SM keeps resident.
    pub fn max_warps_per_sm(&self) -> u32 {
        self.max_threads_per_sm / self.warp_size
    }
}
