//! Host memory for simulated tensors. Each tensor gets its own mapping: a guard page, a red
//! zone, the elements, a red zone, a guard page. A kernel's write just past either end lands
//! in a red zone and is reported after the launch; a wilder access hits a guard page and is
//! reported as a fault. Either way the host process's heap is never silently corrupted.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{Element, Error};

/// The red zone before the elements. 256 bytes keeps the alignment `cudaMalloc` gives, so
/// the launcher picks the same vector width for the same views on both backends.
const FRONT_RED_ZONE: usize = 256;
/// The least red zone after the elements.
const BACK_RED_ZONE: usize = 256;

static NEXT_PATTERN: AtomicUsize = AtomicUsize::new(0);

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).unwrap_or(4096).max(4096)
}

fn round_up(value: usize, to: usize) -> Option<usize> {
    value.checked_add(to - 1).map(|v| v / to * to)
}

/// A tensor's elements in host memory, between red zones and guard pages.
pub struct HostBuffer<T: Element> {
    mapping: NonNull<u8>,
    mapping_bytes: usize,
    page: usize,
    data: NonNull<T>,
    len: usize,
    pattern: u8,
}

// SAFETY: the buffer owns its mapping exclusively, like a Vec owns its allocation.
unsafe impl<T: Element> Send for HostBuffer<T> {}
// SAFETY: shared access only reads.
unsafe impl<T: Element> Sync for HostBuffer<T> {}

impl<T: Element> std::fmt::Debug for HostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer").field("address", &self.data).field("len", &self.len).finish()
    }
}

impl<T: Element> HostBuffer<T> {
    /// `len` zeroed elements.
    pub(crate) fn zeroed(len: usize) -> Result<Self, Error> {
        let too_large = || Error::HostAllocation {
            bytes: len as u128 * size_of::<T>() as u128,
            reason: "the size overflows".into(),
        };
        let page = page_size();
        let data_bytes = len.checked_mul(size_of::<T>()).ok_or_else(too_large)?;
        let inner = FRONT_RED_ZONE
            .checked_add(round_up(data_bytes, 256).ok_or_else(too_large)?)
            .and_then(|v| v.checked_add(BACK_RED_ZONE))
            .and_then(|v| round_up(v, page))
            .ok_or_else(too_large)?;
        let mapping_bytes = inner.checked_add(2 * page).ok_or_else(too_large)?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapping_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return Err(Error::HostAllocation {
                bytes: mapping_bytes as u128,
                reason: std::io::Error::last_os_error().to_string(),
            });
        }
        let mapping = NonNull::new(mapping.cast::<u8>()).ok_or_else(too_large)?;
        let patterns = [0xf1u8, 0xf3, 0xf5, 0xf7, 0xf9, 0xfb, 0xfd, 0xf2, 0xf4, 0xf6];
        let pattern = patterns[NEXT_PATTERN.fetch_add(1, Ordering::Relaxed) % patterns.len()];
        // SAFETY: the offsets stay inside the mapping just made; FRONT_RED_ZONE is a multiple
        // of every element's alignment.
        let buffer = unsafe {
            let base = mapping.as_ptr();
            let guards_ok = libc::mprotect(base.cast(), page, libc::PROT_NONE) == 0
                && libc::mprotect(base.add(page + inner).cast(), page, libc::PROT_NONE) == 0;
            let data = NonNull::new_unchecked(base.add(page + FRONT_RED_ZONE).cast::<T>());
            let buffer = HostBuffer { mapping, mapping_bytes, page, data, len, pattern };
            if !guards_ok {
                return Err(Error::HostAllocation {
                    bytes: mapping_bytes as u128,
                    reason: format!("could not protect the guard pages: {}", std::io::Error::last_os_error()),
                });
            }
            buffer
        };
        buffer.region().fill_red_zones();
        Ok(buffer)
    }

    /// A copy of `host`.
    pub(crate) fn from_slice(host: &[T]) -> Result<Self, Error> {
        let mut buffer = Self::zeroed(host.len())?;
        buffer.as_mut_slice().copy_from_slice(host);
        Ok(buffer)
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `data` points at `len` initialized elements owned by this buffer.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Where the red zones and guard pages are, for the checks after a launch.
    pub(crate) fn region(&self) -> HostRegion {
        let base = self.mapping.as_ptr() as usize;
        let data = self.data.as_ptr() as usize;
        HostRegion {
            mapping: base..base + self.mapping_bytes,
            data: data..data + self.len * size_of::<T>(),
            inner: base + self.page..base + self.mapping_bytes - self.page,
            element_bytes: size_of::<T>(),
            pattern: self.pattern,
        }
    }
}

impl<T: Element> Drop for HostBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this buffer made, once.
        unsafe { libc::munmap(self.mapping.as_ptr().cast(), self.mapping_bytes) };
    }
}

/// The address layout of one simulated tensor's mapping: what a launch checks afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRegion {
    mapping: std::ops::Range<usize>,
    inner: std::ops::Range<usize>,
    data: std::ops::Range<usize>,
    element_bytes: usize,
    pattern: u8,
}

impl HostRegion {
    fn red_zones(&self) -> [std::ops::Range<usize>; 2] {
        [self.inner.start..self.data.start, self.data.end..self.inner.end]
    }

    fn fill_red_zones(&self) {
        for zone in self.red_zones() {
            // SAFETY: the red zones are readable and writable parts of the mapping, outside
            // the elements that any slice of the buffer covers.
            unsafe { std::ptr::write_bytes(zone.start as *mut u8, self.pattern, zone.len()) };
        }
    }

    /// The byte offset from the first element of the first red-zone byte a kernel changed
    /// (negative: before the elements), after restoring the red zones for the next launch.
    pub(crate) fn take_overrun(&self) -> Option<isize> {
        let mut first = None;
        for zone in self.red_zones() {
            // SAFETY: as in fill_red_zones; only read here.
            let bytes = unsafe { std::slice::from_raw_parts(zone.start as *const u8, zone.len()) };
            if let Some(i) = bytes.iter().position(|&b| b != self.pattern) {
                first.get_or_insert((zone.start + i) as isize - self.data.start as isize);
            }
        }
        if first.is_some() {
            self.fill_red_zones();
        }
        first
    }

    /// Where `address` lies relative to this tensor, if in its mapping: "12 bytes past the
    /// end", "in the guard page before the start", ...
    pub(crate) fn describe(&self, address: usize) -> Option<String> {
        if !self.mapping.contains(&address) {
            return None;
        }
        Some(if address < self.data.start {
            format!("{} bytes before its first element", self.data.start - address)
        } else if address < self.data.end {
            format!("inside it, element {}", (address - self.data.start) / self.element_bytes)
        } else {
            format!(
                "{} bytes past its last element (element {} of {})",
                address - self.data.end,
                (address - self.data.start) / self.element_bytes,
                (self.data.end - self.data.start) / self.element_bytes
            )
        })
    }

    /// The addresses of the buffer's elements (all of them, whichever view a launch got).
    pub(crate) fn data(&self) -> std::ops::Range<usize> {
        self.data.clone()
    }

    /// The address of the first element.
    pub(crate) fn data_start(&self) -> usize {
        self.data.start
    }

    pub(crate) fn element_bytes(&self) -> usize {
        self.element_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_start_256_byte_aligned_between_intact_red_zones() {
        let buffer = HostBuffer::<f32>::from_slice(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(buffer.as_slice(), &[1.0, 2.0, 3.0]);
        assert_eq!(buffer.region().data_start() % 256, 0);
        assert_eq!(buffer.region().take_overrun(), None);
    }

    #[test]
    fn a_write_past_the_end_is_found_and_the_red_zone_restored() {
        let buffer = HostBuffer::<f32>::zeroed(5).unwrap();
        let region = buffer.region();
        // SAFETY: the byte after the last element is in the back red zone, inside the mapping.
        unsafe { *((region.data_start() + 5 * 4) as *mut f32) = 7.0 };
        assert_eq!(region.take_overrun(), Some(20));
        assert_eq!(region.take_overrun(), None);
        // SAFETY: one element before the first is in the front red zone.
        unsafe { *((region.data_start() - 4) as *mut f32) = 7.0 };
        assert_eq!(region.take_overrun(), Some(-4));
    }

    #[test]
    fn addresses_are_described_relative_to_the_tensor() {
        let buffer = HostBuffer::<f64>::zeroed(4).unwrap();
        let region = buffer.region();
        let start = region.data_start();
        assert_eq!(region.describe(start + 40).unwrap(), "8 bytes past its last element (element 5 of 4)");
        assert_eq!(region.describe(start - 8).unwrap(), "8 bytes before its first element");
        assert_eq!(region.describe(1), None);
    }

    #[test]
    fn an_empty_buffer_has_red_zones_from_its_first_element() {
        let buffer = HostBuffer::<u32>::zeroed(0).unwrap();
        let region = buffer.region();
        // SAFETY: element 0 of an empty buffer is the first byte of the back red zone.
        unsafe { *(region.data_start() as *mut u32) = 1 };
        assert_eq!(region.take_overrun(), Some(0));
    }
}
