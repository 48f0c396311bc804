//! The scratch memory a kernel gets after its own arguments ([`Workspace`]): a `.stream_k()`
//! kernel's shares of the tiles its blocks split and one counter per such tile, a `.dynamic()`
//! grid's tile counter, `last_block_of`'s counter a block. One buffer per GPU, grown as
//! launches need more: the counters first, in an area that only grows, then the partial tiles
//! — so no kernel's counters ever lie where another kernel's partials were written. The
//! counters are zero when allocated; stream-K and `last_block_of` leave them zero (the block
//! that finishes a split tile, or the last of a group, resets its counter), a dynamic grid's
//! ends at the tile count — so they are zeroed on the stream before a launch only where such a
//! kernel used them last or the area grew, not before every stream-K launch (a memset in the
//! stream costs a small GEMM about a microsecond). A launch that stopped part-way leaves the
//! context unusable, so it cannot leave stale counts behind.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use tessera_dsl::Workspace;

use crate::Error;

/// Alignment of the partial tiles after the counters.
const ALIGN: usize = 256;

/// A device buffer reused by every launch on one GPU that needs a workspace.
#[derive(Default)]
pub(crate) struct WorkspaceBuffer {
    state: Mutex<Buffer>,
}

/// The buffer, the bytes its counter area takes, and whether those counters may be non-zero.
#[derive(Default)]
struct Buffer {
    memory: Option<CudaSlice<u8>>,
    counter_bytes: usize,
    counters_dirty: bool,
}

/// Where one launch's partial tiles and counters are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WorkspaceAddresses {
    pub(crate) partials: u64,
    pub(crate) counters: u64,
}

/// Bytes of `need`'s counters, rounded up so the partial tiles after them stay aligned.
fn counter_bytes(need: &Workspace) -> usize {
    (need.counters * std::mem::size_of::<i32>()).div_ceil(ALIGN) * ALIGN
}

impl WorkspaceBuffer {
    /// Room for `need` (allocated or grown on `stream`), its counters zero when the kernel
    /// starts: zeroed on `stream` where the kernel that used them last did not leave them so.
    pub(crate) fn prepare(&self, stream: &Arc<CudaStream>, need: &Workspace) -> Result<WorkspaceAddresses, Error> {
        let mut guard = self
            .state
            .lock()
            .map_err(|_| Error::Workspace { message: "the workspace lock was poisoned by a panic".into() })?;
        let state = &mut *guard;
        if counter_bytes(need) > state.counter_bytes {
            // the counter area grows into what partial tiles held: zero it
            state.counter_bytes = counter_bytes(need);
            state.counters_dirty = true;
        }
        let partial_bytes = need.partials * need.element.size_bytes() as usize;
        let bytes = state.counter_bytes + partial_bytes;
        if state.memory.as_ref().is_none_or(|m| m.len() < bytes) {
            // grow by half again, so a sequence of larger shapes does not reallocate each time
            let grown = bytes.max(state.memory.as_ref().map_or(0, |m| m.len() * 3 / 2));
            state.memory =
                Some(stream.alloc_zeros::<u8>(grown).map_err(Error::driver("allocating the stream-K workspace"))?);
            state.counters_dirty = false;
        }
        let memory = state.memory.as_mut().ok_or_else(|| Error::Workspace { message: "no workspace buffer".into() })?;
        if state.counters_dirty || !need.counters_left_zero {
            let mut counters = memory.slice_mut(0..state.counter_bytes);
            stream.memset_zeros(&mut counters).map_err(Error::driver("zeroing the workspace's tile counters"))?;
        }
        state.counters_dirty = !need.counters_left_zero;
        let (base, _sync) = memory.device_ptr(stream);
        Ok(WorkspaceAddresses { partials: base + state.counter_bytes as u64, counters: base })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_dsl::ElementType;

    #[test]
    fn the_counters_take_whole_aligned_lines_before_the_partial_tiles() {
        let need = Workspace { element: ElementType::F32, partials: 3, counters: 265, counters_left_zero: true };
        let bytes = counter_bytes(&need);
        assert!(bytes >= 265 * 4);
        assert_eq!(bytes % ALIGN, 0);
    }
}
