//! One GPU's NCCL communicator, made with a config (NCCL's `maxCTAs`: how many blocks its
//! collective kernels may take), and the collectives a device group queues on it. cudarc's
//! `Comm` is made by `ncclCommInitAll`, which takes no config; this wraps the same raw calls.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result as nccl_result, sys, NcclType};

use crate::Error;

use super::collective::ReduceOp;
use super::nccl::nccl;

fn nccl_op(op: ReduceOp) -> sys::ncclRedOp_t {
    match op {
        ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
        ReduceOp::Product => sys::ncclRedOp_t::ncclProd,
        ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
        ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
    }
}

/// The fields of `ncclConfig_t` that NCCL 2.17 introduced, laid out as its header lays them
/// out. NCCL copies `size` bytes of a config over its defaults, so the fields later versions
/// added keep their defaults; this crate needs no field past `maxCTAs`.
#[repr(C)]
struct ConfigV2_17 {
    size: usize,
    magic: std::ffi::c_uint,
    version: std::ffi::c_uint,
    blocking: std::ffi::c_int,
    cga_cluster_size: std::ffi::c_int,
    min_ctas: std::ffi::c_int,
    max_ctas: std::ffi::c_int,
    net_name: *const std::ffi::c_char,
    split_share: std::ffi::c_int,
}

impl ConfigV2_17 {
    /// NCCL_CONFIG_INITIALIZER's values (undefined: NCCL decides), a blocking communicator,
    /// and at most `max_blocks` blocks per collective kernel where given.
    fn new(max_blocks: Option<u32>) -> Self {
        const UNDEFINED: std::ffi::c_int = std::ffi::c_int::MIN;
        const MAGIC: std::ffi::c_uint = 0xcafe_beef;
        const VERSION_2_17: std::ffi::c_uint = 2 * 10000 + 17 * 100;
        Self {
            size: std::mem::size_of::<Self>(),
            magic: MAGIC,
            version: VERSION_2_17,
            blocking: 1,
            cga_cluster_size: UNDEFINED,
            min_ctas: UNDEFINED,
            max_ctas: max_blocks.map_or(UNDEFINED, |blocks| blocks.min(i32::MAX as u32) as std::ffi::c_int),
            net_name: std::ptr::null(),
            split_share: UNDEFINED,
        }
    }
}

/// One GPU's NCCL communicator and the stream its collectives are queued on.
pub(super) struct Communicator {
    comm: sys::ncclComm_t,
    stream: Arc<CudaStream>,
}

impl Communicator {
    /// One communicator per stream's GPU, rank = position, each limited to `max_blocks` blocks
    /// per collective where given.
    pub(super) fn for_streams(streams: &[Arc<CudaStream>], max_blocks: Option<u32>) -> Result<Vec<Self>, Error> {
        let ranks = i32::try_from(streams.len()).map_err(|_| Error::Nccl {
            action: "creating the communicators",
            code: format!("{} ranks", streams.len()),
        })?;
        let id = nccl_result::get_uniqueid().map_err(nccl("creating the communicators' id"))?;
        let mut comms = vec![std::ptr::null_mut(); streams.len()];
        nccl_result::group_start().map_err(nccl("starting a group"))?;
        let mut created = Ok(());
        for (rank, (stream, comm)) in streams.iter().zip(comms.iter_mut()).enumerate() {
            // NCCL takes the rank's GPU from the current device
            if let Err(error) = stream.context().bind_to_thread() {
                created = Err(Error::driver("binding the device")(error));
                break;
            }
            let mut config = ConfigV2_17::new(max_blocks);
            // SAFETY: `comm` is a slot for the communicator; `config` outlives the call and
            // starts with NCCL's size/magic/version header, which NCCL reads `size` bytes of.
            let result = unsafe {
                nccl_result::comm_init_rank_config(
                    comm,
                    ranks,
                    id,
                    rank as i32,
                    (&mut config as *mut ConfigV2_17).cast::<sys::ncclConfig_t>(),
                )
            };
            if let Err(error) = result {
                created = Err(nccl("creating a communicator")(error));
                break;
            }
        }
        let ended = nccl_result::group_end().map_err(nccl("creating the communicators"));
        let comms: Vec<Self> = comms
            .into_iter()
            .zip(streams)
            .filter(|(comm, _)| !comm.is_null())
            .map(|(comm, stream)| Self { comm, stream: stream.clone() })
            .collect();
        created?;
        ended?;
        Ok(comms)
    }

    pub(super) fn all_reduce_in_place<T: NcclType>(
        &self,
        buffer: &mut impl DevicePtrMut<T>,
        op: ReduceOp,
    ) -> Result<nccl_result::NcclStatus, nccl_result::NcclError> {
        let count = buffer.len();
        let (pointer, _recorded) = buffer.device_ptr_mut(&self.stream);
        // SAFETY: `count` elements of T at `pointer` on this communicator's GPU, queued on its stream
        unsafe {
            nccl_result::all_reduce(
                pointer as _,
                pointer as _,
                count,
                T::as_nccl_type(),
                nccl_op(op),
                self.comm,
                self.stream.cu_stream() as _,
            )
        }
    }

    pub(super) fn all_gather<T: NcclType>(
        &self,
        send: &impl DevicePtr<T>,
        receive: &mut impl DevicePtrMut<T>,
    ) -> Result<nccl_result::NcclStatus, nccl_result::NcclError> {
        let count = send.len();
        let (from, _recorded_from) = send.device_ptr(&self.stream);
        let (to, _recorded_to) = receive.device_ptr_mut(&self.stream);
        // SAFETY: `count` elements sent, ranks × `count` received (the caller's pieces)
        unsafe {
            nccl_result::all_gather(
                from as _,
                to as _,
                count,
                T::as_nccl_type(),
                self.comm,
                self.stream.cu_stream() as _,
            )
        }
    }

    pub(super) fn broadcast<T: NcclType>(
        &self,
        send: Option<&impl DevicePtr<T>>,
        receive: &mut impl DevicePtrMut<T>,
        root: usize,
    ) -> Result<nccl_result::NcclStatus, nccl_result::NcclError> {
        let count = receive.len();
        let (from, _recorded_from) = send.map(|send| send.device_ptr(&self.stream)).unzip();
        let (to, _recorded_to) = receive.device_ptr_mut(&self.stream);
        // SAFETY: the root sends `count` elements, every rank receives as many
        unsafe {
            nccl_result::broadcast(
                from.map_or(std::ptr::null(), |from| from as _),
                to as _,
                count,
                T::as_nccl_type(),
                root as i32,
                self.comm,
                self.stream.cu_stream() as _,
            )
        }
    }

    pub(super) fn reduce_scatter<T: NcclType>(
        &self,
        send: &impl DevicePtr<T>,
        receive: &mut impl DevicePtrMut<T>,
        op: ReduceOp,
    ) -> Result<nccl_result::NcclStatus, nccl_result::NcclError> {
        let count = receive.len();
        let (from, _recorded_from) = send.device_ptr(&self.stream);
        let (to, _recorded_to) = receive.device_ptr_mut(&self.stream);
        // SAFETY: ranks × `count` elements sent, `count` received
        unsafe {
            nccl_result::reduce_scatter(
                from as _,
                to as _,
                count,
                T::as_nccl_type(),
                nccl_op(op),
                self.comm,
                self.stream.cu_stream() as _,
            )
        }
    }

    pub(super) fn reduce<T: NcclType, R: DevicePtrMut<T>>(
        &self,
        send: &impl DevicePtr<T>,
        receive: Option<&mut R>,
        op: ReduceOp,
        root: usize,
    ) -> Result<nccl_result::NcclStatus, nccl_result::NcclError> {
        let count = send.len();
        let (from, _recorded_from) = send.device_ptr(&self.stream);
        let (to, _recorded_to) = receive.map(|receive| receive.device_ptr_mut(&self.stream)).unzip();
        // SAFETY: `count` elements from every rank, into the root's receive buffer
        unsafe {
            nccl_result::reduce(
                from as _,
                to.map_or(std::ptr::null_mut(), |to| to as _),
                count,
                T::as_nccl_type(),
                nccl_op(op),
                root as i32,
                self.comm,
                self.stream.cu_stream() as _,
            )
        }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // SAFETY: the communicator was created by NCCL and is dropped once; abort (as cudarc's
        // `Comm` does) rather than wait on work a failed launch may have left behind
        unsafe {
            let _ = nccl_result::comm_abort(self.comm);
        }
    }
}
