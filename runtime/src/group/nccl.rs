//! Collectives between GPUs through NCCL (cudarc's bindings), one communicator per GPU in
//! this process (`ncclCommInitRankConfig` for each rank inside one group, so a communicator
//! can be told how many blocks its kernels may take). Each GPU gets a communication stream
//! beside its compute stream: a collective waits for the compute work queued before it and the
//! compute work queued after it waits only once its [`Pending`] is waited for, so the two
//! overlap.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use cudarc::nccl::result as nccl_result;

use crate::tensor::Storage;
use crate::{Backend, DeviceTensor, Error, Gpu};

use super::collective::{Exchange, Pending, Reducible};
use super::communicator::Communicator;
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

pub(super) fn nccl(action: &'static str) -> impl FnOnce(nccl_result::NcclError) -> Error {
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
