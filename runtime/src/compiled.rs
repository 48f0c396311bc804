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

/// Text that [`Arch`]'s `FromStr` does not read as an architecture.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a CUDA architecture like sm_90 (sm_50 to sm_129)")]
pub struct ArchParseError {
    /// The text as given.
    pub text: String,
}

/// `sm_90` → 9.0, `sm_120` → 12.0.
///
/// ```
/// use tessera_runtime::Arch;
/// assert_eq!("sm_90".parse::<Arch>(), Ok(Arch::SM_90));
/// assert!("90".parse::<Arch>().unwrap_err().to_string().contains("like sm_90"));
/// ```
impl std::str::FromStr for Arch {
    type Err = ArchParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ArchParseError { text: text.to_string() };
        let number: u32 = text.strip_prefix("sm_").ok_or_else(error)?.parse().map_err(|_| error())?;
        if !(50..=1299).contains(&number) {
            return Err(error());
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
