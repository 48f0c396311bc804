//! Collectives between GPUs through NCCL (cudarc's bindings), one communicator per GPU in
//! this process (`ncclCommInitRankConfig` for each rank inside one group, so a communicator
//! can be told how many blocks its kernels may take). Each GPU gets a communication stream
//! beside its compute stream: a collective waits for the compute work queued before it and the
//! compute work queued after it waits only once its [`Pending`] is waited for, so the two
//! overlap.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result as nccl_result, sys, NcclType};

use crate::tensor::Storage;
use crate::{Backend, DeviceTensor, Error, Gpu};

use super::collective::{Exchange, Pending, ReduceOp, Reducible};
use super::{CommunicationOptions, CommunicationPriority};

pub(crate) struct Communicators {
    /// By rank; each holds its communication stream.
    comms: Vec<Communicator>,
    streams: Vec<Arc<CudaStream>>,
}

impl Communicators {
    pub(crate) fn new(gpus: &[Gpu], options: CommunicationOptions) -> Result<Self, Error> {
        let streams =
            gpus.iter().map(|gpu| communication_stream(gpu, options.priority)).collect::<Result<Vec<_>, _>>()?;
        let comms = Communicator::for_streams(&streams, options.max_blocks)?;
        Ok(Self { comms, streams })
    }

    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        for stream in &self.streams {
            stream.synchronize().map_err(Error::driver("waiting for a collective"))?;
        }
        Ok(())
    }

    /// Queues `exchange` on the communication streams, after the work queued so far on the
    /// members' compute streams.
    pub(crate) fn exchange<T: Reducible>(
        &self,
        members: &[Backend],
        exchange: &Exchange,
        input: Option<&[DeviceTensor<T>]>,
        output: &mut [DeviceTensor<T>],
    ) -> Result<Pending, Error> {
        let gpus: Vec<&Gpu> = members.iter().filter_map(Backend::as_gpu).collect();
        for (gpu, stream) in gpus.iter().zip(&self.streams) {
            let ready = gpu.cuda_stream().record_event(None).map_err(Error::driver("recording an event"))?;
            stream.wait(&ready).map_err(Error::driver("ordering a collective after compute"))?;
        }
        nccl_result::group_start().map_err(nccl("starting a group"))?;
        let queued = self.queue(exchange, input, output);
        let ended = nccl_result::group_end().map_err(nccl("ending a group"));
        queued?;
        ended?;
        let mut done = Vec::with_capacity(gpus.len());
        for (gpu, stream) in gpus.iter().zip(&self.streams) {
            let event = stream.record_event(None).map_err(Error::driver("recording an event"))?;
            done.push((gpu.cuda_stream().clone(), event));
        }
        Ok(Pending::after(done))
    }

    /// The NCCL calls of `exchange`, one per rank (or per rank and root), inside a group.
    fn queue<T: Reducible>(
        &self,
        exchange: &Exchange,
        input: Option<&[DeviceTensor<T>]>,
        output: &mut [DeviceTensor<T>],
    ) -> Result<(), Error> {
        match exchange {
            Exchange::AllReduce { elements, op } => {
                for (comm, shard) in self.comms.iter().zip(output.iter_mut()) {
                    let mut view = cuda_mut(shard)?.slice_mut(elements.clone());
                    comm.all_reduce_in_place(&mut view, *op).map_err(nccl("queuing an all-reduce"))?;
                }
            }
            Exchange::Gather { pieces, native: true } => {
                let input = input.ok_or(Error::CollectiveInput)?;
                for (rank, comm) in self.comms.iter().enumerate() {
                    let send = cuda(&input[rank])?.slice(pieces[rank].from.clone());
                    let whole = 0..pieces.last().map_or(0, |last| last.to.end);
                    let mut receive = cuda_mut(&mut output[rank])?.slice_mut(whole);
                    comm.all_gather(&send, &mut receive).map_err(nccl("queuing an all-gather"))?;
                }
            }
            Exchange::Gather { pieces, native: false } => {
                let input = input.ok_or(Error::CollectiveInput)?;
                for (root, piece) in pieces.iter().enumerate().filter(|(_, piece)| !piece.from.is_empty()) {
                    let send = cuda(&input[root])?.slice(piece.from.clone());
                    for (rank, comm) in self.comms.iter().enumerate() {
                        let mut receive = cuda_mut(&mut output[rank])?.slice_mut(piece.to.clone());
                        let send = (rank == root).then_some(&send);
                        comm.broadcast(send, &mut receive, root).map_err(nccl("queuing a broadcast"))?;
                    }
                }
            }
            Exchange::Scatter { pieces, op, native: true } => {
                let input = input.ok_or(Error::CollectiveInput)?;
                for (rank, comm) in self.comms.iter().enumerate() {
                    let whole = 0..pieces.last().map_or(0, |last| last.from.end);
                    let send = cuda(&input[rank])?.slice(whole);
                    let mut receive = cuda_mut(&mut output[rank])?.slice_mut(pieces[rank].to.clone());
                    comm.reduce_scatter(&send, &mut receive, *op).map_err(nccl("queuing a reduce-scatter"))?;
                }
            }
            Exchange::Scatter { pieces, op, native: false } => {
                let input = input.ok_or(Error::CollectiveInput)?;
                for (root, piece) in pieces.iter().enumerate().filter(|(_, piece)| !piece.from.is_empty()) {
                    for (rank, comm) in self.comms.iter().enumerate() {
                        let send = cuda(&input[rank])?.slice(piece.from.clone());
                        let status = if rank == root {
                            let mut receive = cuda_mut(&mut output[root])?.slice_mut(piece.to.clone());
                            comm.reduce(&send, Some(&mut receive), *op, root)
                        } else {
                            comm.reduce(&send, None::<&mut cudarc::driver::CudaViewMut<T>>, *op, root)
                        };
                        status.map_err(nccl("queuing a reduce"))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A non-blocking stream on `gpu` for NCCL's kernels. At high priority the SM scheduler
/// starts their blocks ahead of the compute blocks still waiting, so a collective that
/// overlaps a GEMM takes SMs as soon as some free up instead of after the whole grid.
fn communication_stream(gpu: &Gpu, priority: CommunicationPriority) -> Result<Arc<CudaStream>, Error> {
    let context = gpu.cuda_context();
    context.bind_to_thread().map_err(Error::driver("binding the device"))?;
    let level = match priority {
        CommunicationPriority::Normal => 0,
        CommunicationPriority::High => {
            let (_least, greatest) = cudarc::driver::result::stream::get_priority_range()
                .map_err(Error::driver("reading the stream priorities"))?;
            greatest
        }
    };
    context.new_stream_with_priority(level).map_err(Error::driver("creating a communication stream"))
}

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

/// One GPU's NCCL communicator and the stream its collectives are queued on. (cudarc's `Comm`
/// is made by `ncclCommInitAll`, which takes no config.)
struct Communicator {
    comm: sys::ncclComm_t,
    stream: Arc<CudaStream>,
}

impl Communicator {
    /// One communicator per stream's GPU, rank = position, each limited to `max_blocks` blocks
    /// per collective where given.
    fn for_streams(streams: &[Arc<CudaStream>], max_blocks: Option<u32>) -> Result<Vec<Self>, Error> {
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

    fn all_reduce_in_place<T: NcclType>(
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

    fn all_gather<T: NcclType>(
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

    fn broadcast<T: NcclType>(
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

    fn reduce_scatter<T: NcclType>(
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

    fn reduce<T: NcclType, R: DevicePtrMut<T>>(
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

fn nccl(action: &'static str) -> impl FnOnce(nccl_result::NcclError) -> Error {
    move |error| Error::Nccl { action, code: format!("{:?}", error.0) }
}

fn cuda<T: Reducible>(tensor: &DeviceTensor<T>) -> Result<&CudaSlice<T>, Error> {
    match &tensor.storage {
        Storage::Cuda(slice) => Ok(slice),
        Storage::Host(_) => Err(Error::WrongDevice {
            param: "a collective's tensor".into(),
            tensor: tensor.location,
            launch: crate::Location::Gpu(0),
        }),
    }
}

fn cuda_mut<T: Reducible>(tensor: &mut DeviceTensor<T>) -> Result<&mut CudaSlice<T>, Error> {
    let location = tensor.location;
    match &mut tensor.storage {
        Storage::Cuda(slice) => Ok(slice),
        Storage::Host(_) => Err(Error::WrongDevice {
            param: "a collective's tensor".into(),
            tensor: location,
            launch: crate::Location::Gpu(0),
        }),
    }
}
