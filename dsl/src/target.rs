/// The limits of a GPU architecture that a configuration must respect.
///
/// ```
/// let target = tessera_dsl::Target::SM_90;
/// assert_eq!(target.max_threads_per_block, 1024);
/// assert_eq!(target.name(), "sm_90");
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
}

impl Target {
    pub const SM_80: Target = Target::ampere_like("sm_80", 80, 163 * 1024);
    pub const SM_86: Target = Target::ampere_like("sm_86", 86, 99 * 1024);
    pub const SM_89: Target = Target::ampere_like("sm_89", 89, 99 * 1024);
    pub const SM_90: Target = Target::ampere_like("sm_90", 90, 227 * 1024);

    /// The limits every target shares; the macro validates against these, so a kernel that
    /// compiles runs on any supported GPU.
    pub const PORTABLE: Target = Target::ampere_like("every supported GPU (sm_80 and newer)", 80, 99 * 1024);

    pub const KNOWN: [Target; 4] = [Self::SM_80, Self::SM_86, Self::SM_89, Self::SM_90];

    const fn ampere_like(label: &'static str, compute_capability: u32, opt_in_shared_memory_bytes: u32) -> Self {
        Self {
            label,
            compute_capability,
            max_threads_per_block: 1024,
            max_block_dims: [1024, 1024, 64],
            static_shared_memory_bytes: 48 * 1024,
            opt_in_shared_memory_bytes,
            max_registers_per_thread: 255,
            warp_size: 32,
        }
    }

    /// The limits of `sm_XY`, if tessera knows that architecture.
    pub fn from_compute_capability(major: u32, minor: u32) -> Option<Self> {
        Self::KNOWN.into_iter().find(|t| t.compute_capability == major * 10 + minor)
    }

    pub fn name(&self) -> String {
        format!("sm_{}", self.compute_capability)
    }
}
