//! The scratch memory a kernel gets after its own arguments ([`Workspace`]): a `.stream_k()`
//! kernel's shares of the tiles its blocks split and one counter per such tile, a `.dynamic()`
//! grid's tile counter. One buffer per GPU, grown as launches need more; the counters are
//! zeroed on the stream before every launch (stream-K leaves them zero, but a launch that
//! failed part-way might not have; a dynamic grid's counter ends at the tile count).

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use tessera_dsl::Workspace;

use crate::Error;

/// Alignment of the counters after the partial tiles.
const ALIGN: usize = 256;

/// A device buffer reused by every launch on one GPU that needs a workspace.
#[derive(Default)]
pub(crate) struct WorkspaceBuffer {
    buffer: Mutex<Option<CudaSlice<u8>>>,
}

/// Where one launch's partial tiles and counters are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WorkspaceAddresses {
    pub(crate) partials: u64,
    pub(crate) counters: u64,
}

/// Bytes of the partial tiles, rounded up so the counters after them stay aligned.
fn partial_bytes(need: &Workspace) -> usize {
    (need.partials * need.element.size_bytes() as usize).div_ceil(ALIGN) * ALIGN
}

impl WorkspaceBuffer {
    /// Room for `need` (allocated or grown on `stream`), its counters zeroed on `stream`.
    pub(crate) fn prepare(&self, stream: &Arc<CudaStream>, need: &Workspace) -> Result<WorkspaceAddresses, Error> {
        let partials = partial_bytes(need);
        let counters = need.counters * std::mem::size_of::<i32>();
        let mut guard = self
            .buffer
            .lock()
            .map_err(|_| Error::Workspace { message: "the workspace lock was poisoned by a panic".into() })?;
        if guard.as_ref().is_none_or(|b| b.len() < partials + counters) {
            // grow by half again, so a sequence of larger shapes does not reallocate each time
            let bytes = (partials + counters).max(guard.as_ref().map_or(0, |b| b.len() * 3 / 2));
            *guard = Some(stream.alloc_zeros::<u8>(bytes).map_err(Error::driver("allocating the stream-K workspace"))?);
        }
        let buffer = guard.as_mut().ok_or_else(|| Error::Workspace { message: "no workspace buffer".into() })?;
        let mut tail = buffer.slice_mut(partials..partials + counters);
        stream.memset_zeros(&mut tail).map_err(Error::driver("zeroing the stream-K tile counters"))?;
        let (base, _sync) = buffer.device_ptr(stream);
        Ok(WorkspaceAddresses { partials: base, counters: base + partials as u64 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_dsl::ElementType;

    #[test]
    fn the_counters_start_aligned_after_the_partial_tiles() {
        let need = Workspace { element: ElementType::F32, partials: 2 * 132 * 128 * 256 + 3, counters: 264 };
        let bytes = partial_bytes(&need);
        assert!(bytes >= need.partials * 4);
        assert_eq!(bytes % ALIGN, 0);
    }
}
