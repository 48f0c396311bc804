//! Compiled cubins on disk, keyed by everything that decides their bytes. An entry is
//! verified before use; a damaged one is rebuilt, never trusted.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{Arch, CompiledKernel, PtxasReport};

const MAGIC: &str = "tessera-cubin 1";

/// A folder of compiled kernels.
///
/// ```
/// use tessera_runtime::{Arch, DiskCache};
/// let cache = DiskCache::new(std::env::temp_dir().join("tessera-doc-cache"));
/// let key = cache.key("source", Arch::SM_90, (13, 0), &["-lineinfo".into()]);
/// assert_eq!(key.len(), 64);
/// assert_ne!(key, cache.key("source", Arch::SM_80, (13, 0), &["-lineinfo".into()]));
/// ```
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `$TESSERA_CACHE_DIR`, else `$XDG_CACHE_HOME/tessera`, else `~/.cache/tessera`;
    /// `None` when `TESSERA_CACHE=off` or no home is known.
    pub fn default_location() -> Option<Self> {
        if std::env::var("TESSERA_CACHE").is_ok_and(|v| v == "off" || v == "0") {
            return None;
        }
        let dir = std::env::var_os("TESSERA_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("tessera")))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("tessera")))?;
        Some(Self::new(dir))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a compile: source, architecture, NVRTC version and options.
    pub fn key(&self, source: &str, arch: Arch, nvrtc_version: (u32, u32), options: &[String]) -> String {
        let mut hasher = Sha256::new();
        hasher.update(source.as_bytes());
        hasher.update([0]);
        hasher.update(format!("{arch}\0nvrtc {}.{}\0", nvrtc_version.0, nvrtc_version.1).as_bytes());
        for option in options {
            hasher.update(option.as_bytes());
            hasher.update([0]);
        }
        hex(&hasher.finalize())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.cubin"))
    }

    /// The entry for `key`, if present and intact. A damaged entry is deleted.
    pub fn load(&self, key: &str, kernel: &str, arch: Arch) -> Option<CompiledKernel> {
        let path = self.path(key);
        let bytes = std::fs::read(&path).ok()?;
        match parse_entry(&bytes, key) {
            Some((log, cubin)) => Some(CompiledKernel {
                name: kernel.into(),
                arch,
                ptxas: PtxasReport::from_log_or_cubin(&log, &cubin, kernel),
                cubin,
                log,
                from_disk_cache: true,
            }),
            None => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Writes the entry for `key` atomically (a temporary file renamed into place).
    pub fn store(&self, key: &str, compiled: &CompiledKernel) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let header = format!(
            "{MAGIC}\nkey {key}\nsha256 {}\nlog-bytes {}\ncubin-bytes {}\n\n",
            hex(&Sha256::digest(&compiled.cubin)),
            compiled.log.len(),
            compiled.cubin.len()
        );
        let temporary = self.dir.join(format!("{key}.{}.tmp", std::process::id()));
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(header.as_bytes())?;
        file.write_all(compiled.log.as_bytes())?;
        file.write_all(&compiled.cubin)?;
        file.sync_all()?;
        std::fs::rename(&temporary, self.path(key))
    }
}

/// (log, cubin) of an intact entry written for `key`.
fn parse_entry(bytes: &[u8], key: &str) -> Option<(String, Vec<u8>)> {
    let header_end = bytes.windows(2).position(|w| w == b"\n\n")?;
    let header = std::str::from_utf8(&bytes[..header_end]).ok()?;
    let mut lines = header.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let mut field = |name: &str| lines.next()?.strip_prefix(name)?.strip_prefix(' ').map(str::to_owned);
    let stored_key = field("key")?;
    let sha = field("sha256")?;
    let log_len: usize = field("log-bytes")?.parse().ok()?;
    let cubin_len: usize = field("cubin-bytes")?.parse().ok()?;
    let body = &bytes[header_end + 2..];
    if stored_key != key || body.len() != log_len.checked_add(cubin_len)? {
        return None;
    }
    let (log, cubin) = body.split_at(log_len);
    if hex(&Sha256::digest(cubin)) != sha || cubin.is_empty() {
        return None;
    }
    Some((String::from_utf8(log.to_vec()).ok()?, cubin.to_vec()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> DiskCache {
        let dir = std::env::temp_dir().join(format!("tessera-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        DiskCache::new(dir)
    }

    fn compiled() -> CompiledKernel {
        CompiledKernel {
            name: "k".into(),
            arch: Arch::SM_90,
            cubin: vec![0x7f, b'E', b'L', b'F', 1, 2, 3],
            log: "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Used 7 registers, 368 bytes cmem[0]\n".into(),
            ptxas: PtxasReport::default(),
            from_disk_cache: false,
        }
    }

    #[test]
    fn a_stored_entry_loads_back_with_its_ptxas_figures() {
        let cache = scratch("roundtrip");
        let key = cache.key("src", Arch::SM_90, (13, 0), &[]);
        cache.store(&key, &compiled()).unwrap();
        let loaded = cache.load(&key, "k", Arch::SM_90).unwrap();
        assert_eq!(loaded.cubin, compiled().cubin);
        assert_eq!(loaded.ptxas.registers, 7);
        assert!(loaded.from_disk_cache);
    }

    #[test]
    fn a_corrupted_entry_is_refused_and_removed() {
        let cache = scratch("corrupt");
        let key = cache.key("src", Arch::SM_90, (13, 0), &[]);
        cache.store(&key, &compiled()).unwrap();
        let path = cache.path(&key);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache.load(&key, "k", Arch::SM_90).is_none());
        assert!(!path.exists());
    }

    #[test]
    fn a_truncated_entry_or_one_for_another_key_is_refused() {
        let cache = scratch("truncated");
        let key = cache.key("src", Arch::SM_90, (13, 0), &[]);
        cache.store(&key, &compiled()).unwrap();
        let bytes = std::fs::read(cache.path(&key)).unwrap();
        std::fs::write(cache.path(&key), &bytes[..bytes.len() - 3]).unwrap();
        assert!(cache.load(&key, "k", Arch::SM_90).is_none());

        let other = cache.key("other source", Arch::SM_90, (13, 0), &[]);
        cache.store(&key, &compiled()).unwrap();
        std::fs::copy(cache.path(&key), cache.path(&other)).unwrap();
        assert!(cache.load(&other, "k", Arch::SM_90).is_none());
    }
}
