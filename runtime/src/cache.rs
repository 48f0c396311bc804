//! Compiled cubins (and the simulator's shared libraries) on disk, keyed by everything that
//! decides their bytes. An entry is verified before use; a damaged one is rebuilt, never
//! trusted.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{Arch, CompiledKernel, PtxasReport};

const MAGIC: &str = "tessera-cubin 1";
const LIBRARY_MAGIC: &str = "tessera-simlib 1";

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
    /// A cache in folder `dir`, created when the first entry is stored.
    ///
    /// ```
    /// let cache = tessera_runtime::DiskCache::new("/tmp/tessera-cache");
    /// assert_eq!(cache.dir(), std::path::Path::new("/tmp/tessera-cache"));
    /// ```
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

    /// The folder the entries are kept in.
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

    /// The key of a simulation library: the whole translation unit (tessera's header, the
    /// kernel's source, the entry point), the compiler's identity (command, version, target)
    /// and the flags.
    ///
    /// ```
    /// use tessera_runtime::DiskCache;
    /// let key = DiskCache::library_key("unit", "g++ 12", &["-O2".into()]);
    /// assert_ne!(key, DiskCache::library_key("unit", "g++ 13", &["-O2".into()]));
    /// assert_ne!(key, DiskCache::library_key("unit", "g++ 12", &["-O0".into()]));
    /// ```
    pub fn library_key(translation_unit: &str, compiler: &str, flags: &[String]) -> String {
        let mut hasher = Sha256::new();
        hasher.update(LIBRARY_MAGIC.as_bytes());
        hasher.update([0]);
        hasher.update(translation_unit.as_bytes());
        hasher.update([0]);
        hasher.update(compiler.as_bytes());
        hasher.update([0]);
        for flag in flags {
            hasher.update(flag.as_bytes());
            hasher.update([0]);
        }
        hex(&hasher.finalize())
    }

    /// Where the simulation library for `key` lives once stored.
    pub fn library_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.so"))
    }

    fn library_sum_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.so.sum"))
    }

    /// A unique path in the cache folder for a library being built.
    pub(crate) fn scratch_path(&self, key: &str) -> PathBuf {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir.join(format!("tessera-{key}.{}.{n}.tmp.so", std::process::id()))
    }

    /// The stored simulation library for `key`, if present and intact (its checksum file
    /// matches its bytes). A damaged entry is deleted.
    pub fn load_library(&self, key: &str) -> Option<PathBuf> {
        let path = self.library_path(key);
        let sum = std::fs::read_to_string(self.library_sum_path(key)).ok();
        let bytes = std::fs::read(&path).ok();
        let (sum, bytes) = match (sum, bytes) {
            (None, None) => return None,
            (Some(sum), Some(bytes)) => (sum, bytes),
            _ => {
                self.remove_library(key);
                return None;
            }
        };
        let expected = library_sum(key, &bytes);
        if sum != expected || !bytes.starts_with(b"\x7fELF") {
            self.remove_library(key);
            return None;
        }
        Some(path)
    }

    /// Moves the library built at `built` into the cache as the entry for `key`; returns its
    /// path. The checksum is written last, so an interrupted store reads as no entry.
    pub fn store_library(&self, key: &str, built: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let bytes = std::fs::read(built)?;
        let path = self.library_path(key);
        std::fs::rename(built, &path)?;
        let temporary = self.dir.join(format!("{key}.so.sum.{}.tmp", std::process::id()));
        std::fs::write(&temporary, library_sum(key, &bytes))?;
        std::fs::rename(&temporary, self.library_sum_path(key))?;
        Ok(path)
    }

    fn remove_library(&self, key: &str) {
        let _ = std::fs::remove_file(self.library_sum_path(key));
        let _ = std::fs::remove_file(self.library_path(key));
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

/// The checksum file's text for a library's bytes.
fn library_sum(key: &str, bytes: &[u8]) -> String {
    format!("{LIBRARY_MAGIC}\nkey {key}\nsha256 {}\nbytes {}\n", hex(&Sha256::digest(bytes)), bytes.len())
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
    fn a_stored_library_loads_back_and_a_damaged_one_is_removed() {
        let cache = scratch("library");
        let key = DiskCache::library_key("unit", "c++", &[]);
        assert_eq!(cache.load_library(&key), None);
        std::fs::create_dir_all(cache.dir()).unwrap();
        let built = cache.scratch_path(&key);
        std::fs::write(&built, b"\x7fELF and the rest").unwrap();
        let stored = cache.store_library(&key, &built).unwrap();
        assert_eq!(cache.load_library(&key), Some(stored.clone()));

        let mut bytes = std::fs::read(&stored).unwrap();
        bytes[6] ^= 0xff;
        std::fs::write(&stored, &bytes).unwrap();
        assert_eq!(cache.load_library(&key), None);
        assert!(!stored.exists(), "a damaged library is deleted");
        assert!(!cache.library_sum_path(&key).exists());
    }

    #[test]
    fn a_library_without_its_checksum_is_no_entry() {
        let cache = scratch("library-no-sum");
        let key = DiskCache::library_key("unit", "c++", &[]);
        std::fs::create_dir_all(cache.dir()).unwrap();
        std::fs::write(cache.library_path(&key), b"\x7fELF").unwrap();
        assert_eq!(cache.load_library(&key), None);
        assert!(!cache.library_path(&key).exists());
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
