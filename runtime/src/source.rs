//! A kernel's CUDA source with its digest, computed once. A GPU keeps loaded kernels under
//! the digest: hashing a whole source (tens of KB) on every launch cost about 10 µs of host
//! time per call, a third of a millisecond-scale GEMM's launch overhead.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// CUDA source text and a digest of it. Cloning shares the text.
#[derive(Clone, Debug)]
pub(crate) struct KernelSource {
    text: Arc<str>,
    digest: u64,
}

impl KernelSource {
    /// Hashes `text` (once; every later lookup uses the digest).
    pub(crate) fn new(text: impl Into<Arc<str>>) -> Self {
        let text = text.into();
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        Self { text, digest: hasher.finish() }
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The key of a map of loaded kernels (equal texts, equal digests).
    pub(crate) fn digest(&self) -> u64 {
        self.digest
    }

    /// Whether both hold the same text: the same allocation, or (for two copies, or the rare
    /// digest collision) equal bytes.
    pub(crate) fn same_text(&self, other: &Self) -> bool {
        self.digest == other.digest && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_equal_digests_and_compare_equal_without_sharing_an_allocation() {
        let one = KernelSource::new("extern \"C\" __global__ void k() {}");
        let copy = KernelSource::new(String::from("extern \"C\" __global__ void k() {}"));
        assert_eq!(one.digest(), copy.digest());
        assert!(one.same_text(&copy));
        assert!(one.same_text(&one.clone()));
    }

    #[test]
    fn different_texts_are_different_sources() {
        let one = KernelSource::new("__global__ void k() {}");
        let other = KernelSource::new("__global__ void k() { }");
        assert_ne!(one.digest(), other.digest());
        assert!(!one.same_text(&other));
    }
}
