use crate::PtxasReport;

/// A GPU architecture as a compute capability: `sm_90` is `Arch { major: 9, minor: 0 }`.
///
/// ```
/// let arch: tessera_runtime::Arch = "sm_90".parse().unwrap();
/// assert_eq!(arch, tessera_runtime::Arch { major: 9, minor: 0 });
/// assert_eq!(arch.to_string(), "sm_90");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// The major compute capability: 9 for `sm_90`.
    pub major: u32,
    /// The minor compute capability: 0 for `sm_90`.
    pub minor: u32,
}

impl Arch {
    /// Compute capability 8.0: the A100.
    pub const SM_80: Arch = Arch { major: 8, minor: 0 };
    /// Compute capability 9.0: the H100 and H200.
    pub const SM_90: Arch = Arch { major: 9, minor: 0 };
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

impl std::str::FromStr for Arch {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.strip_prefix("sm_").ok_or_else(|| format!("`{text}` is not an architecture like sm_90"))?;
        let number: u32 = digits.parse().map_err(|_| format!("`{text}` is not an architecture like sm_90"))?;
        if !(50..=1299).contains(&number) {
            return Err(format!("`{text}` is not a CUDA architecture"));
        }
        Ok(Arch { major: number / 10, minor: number % 10 })
    }
}

/// A kernel compiled to a cubin for one architecture, with what ptxas said about it.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    /// The kernel's name (its entry point).
    pub name: String,
    /// The architecture the cubin is for.
    pub arch: Arch,
    /// The cubin's bytes, as the driver loads them.
    pub cubin: Vec<u8>,
    /// The whole NVRTC log (warnings and the ptxas figures).
    pub log: String,
    /// Registers, shared memory and spills, as ptxas reported them.
    pub ptxas: PtxasReport,
    /// Whether this came from the on-disk cache rather than a fresh compile.
    pub from_disk_cache: bool,
}
