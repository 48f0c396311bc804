//! Several devices working on one problem: a [`DeviceGroup`] of GPUs (collectives through
//! NCCL, one communication stream per GPU beside its compute stream) or of simulated devices
//! (the same collectives, in process), [`ShardedTensor`]s split over it, and launches of any
//! kernel on every shard.

mod collective;
mod communicator;
mod in_process;
mod nccl;
mod sharded;

use std::sync::Mutex;
use std::time::Instant;

pub use collective::{Collective, CollectiveRecord, Pending, ReduceOp, Reducible};
pub use sharded::{split_evenly, ShardedTensor, Sharding};

use crate::libraries::{require_driver, require_nccl};
use crate::{Backend, Error, Gpu, Simulator, Timing};

/// Devices that share work: every member runs its own launches (one stream each), and
/// collectives (all-reduce, all-gather, reduce-scatter) move data between them.
///
/// ```
/// use tessera_runtime::{DeviceGroup, ReduceOp, Sharding};
/// let group = DeviceGroup::simulated(3)?;                 // or DeviceGroup::all_gpus()?
/// // every device holds its own partial vector; all-reduce leaves the sum on each
/// let mut partial = group.sharded_zeros::<f32>([4], Sharding::Replicated)?;
/// for rank in 0..group.len() {
///     let values = vec![rank as f32 + 1.0; 4];
///     *partial.shard_mut(rank) = group.member(rank).upload(&values, [4])?;
/// }
/// group.all_reduce(&mut partial, ReduceOp::Sum)?.wait()?;
/// assert_eq!(group.member(2).download(partial.shard(2))?, vec![6.0; 4]);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub struct DeviceGroup {
    members: Vec<Backend>,
    transport: Transport,
    log: Mutex<Vec<CollectiveRecord>>,
}

/// The scheduling priority of the streams NCCL's kernels run on, beside the compute
/// streams (which have the normal priority).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CommunicationPriority {
    /// The greatest the device offers: collectives get SMs ahead of waiting compute blocks.
    #[default]
    High,
    /// The same as the compute streams.
    Normal,
}

/// How a group's NCCL communicators run their collectives beside the members' compute.
///
/// ```
/// use tessera_runtime::{CommunicationOptions, CommunicationPriority};
/// // collectives that overlap a GEMM: at most 16 blocks each, so most SMs keep computing
/// let overlap = CommunicationOptions { max_blocks: Some(16), ..CommunicationOptions::default() };
/// assert_eq!(overlap.priority, CommunicationPriority::High);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommunicationOptions {
    /// The communication streams' priority (high by default).
    pub priority: CommunicationPriority,
    /// At most this many blocks for one collective's kernel (NCCL's `maxCTAs`); `None` lets
    /// NCCL choose (on four H200s, as many as reach its full bus bandwidth). Fewer blocks move
    /// data more slowly but leave SMs to the kernels a collective overlaps: on four H200s, 16
    /// blocks took the K-split GEMM of 16384³ overlapped with its reduce-scatter from 86% to
    /// 87–88.5% of linear scaling, and the bus bandwidth of a lone all-reduce from 325 to 295
    /// GB/s (BENCHMARKS.md).
    pub max_blocks: Option<u32>,
}

/// How collectives move data between the members.
enum Transport {
    /// NCCL communicators, one per GPU, each on a communication stream of its own.
    Nccl(nccl::Communicators),
    /// The members are simulated devices in this process: collectives copy host memory.
    InProcess,
}

impl std::fmt::Debug for DeviceGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGroup").field("members", &self.members).finish()
    }
}

impl DeviceGroup {
    /// The GPUs `ordinals`, with NCCL communicators between them. `Err` (never a panic)
    /// without a driver, without NCCL, for an ordinal the driver does not have, or for a GPU
    /// named twice.
    pub fn gpus(ordinals: &[usize]) -> Result<Self, Error> {
        Self::gpus_with_priority(ordinals, CommunicationPriority::High)
    }

    /// [`gpus`](Self::gpus) with the communication streams at `priority` (high by default).
    pub fn gpus_with_priority(ordinals: &[usize], priority: CommunicationPriority) -> Result<Self, Error> {
        Self::gpus_with(ordinals, CommunicationOptions { priority, ..CommunicationOptions::default() })
    }

    /// [`gpus`](Self::gpus) with its communicators set up by `options` (stream priority, the
    /// blocks a collective may take).
    pub fn gpus_with(ordinals: &[usize], options: CommunicationOptions) -> Result<Self, Error> {
        if ordinals.is_empty() {
            return Err(Error::EmptyGroup);
        }
        for (index, ordinal) in ordinals.iter().enumerate() {
            if ordinals[..index].contains(ordinal) {
                return Err(Error::DuplicateGpu { ordinal: *ordinal });
            }
        }
        require_driver()?;
        require_nccl()?;
        let gpus = ordinals.iter().map(|&ordinal| Gpu::new(ordinal)).collect::<Result<Vec<_>, _>>()?;
        let communicators = nccl::Communicators::new(&gpus, options)?;
        Ok(Self {
            members: gpus.into_iter().map(Backend::Gpu).collect(),
            transport: Transport::Nccl(communicators),
            log: Mutex::new(Vec::new()),
        })
    }

    /// Every GPU the driver reports.
    pub fn all_gpus() -> Result<Self, Error> {
        require_driver()?;
        let count = cudarc::driver::CudaContext::device_count()
            .map_err(Error::driver("counting the CUDA devices"))?
            .max(0) as usize;
        if count == 0 {
            return Err(Error::NoGpu { ordinal: 0, count: 0 });
        }
        Self::gpus(&(0..count).collect::<Vec<_>>())
    }

    /// `devices` simulated devices in this process (the CPU simulation, each member its own
    /// [`Simulator`]), with in-process collectives that reduce in rank order.
    pub fn simulated(devices: usize) -> Result<Self, Error> {
        if devices == 0 {
            return Err(Error::EmptyGroup);
        }
        let members = (0..devices).map(|_| Simulator::new().map(Backend::Simulator)).collect::<Result<_, _>>()?;
        Ok(Self { members, transport: Transport::InProcess, log: Mutex::new(Vec::new()) })
    }

    /// GPUs 0..`devices` if the driver has that many and NCCL loads, else `devices`
    /// simulated ones. `TESSERA_BACKEND=gpu` or `=simulator` insists on one.
    pub fn detect(devices: usize) -> Result<Self, Error> {
        let gpus = || Self::gpus(&(0..devices).collect::<Vec<_>>());
        match std::env::var("TESSERA_BACKEND").ok().as_deref() {
            Some("gpu") => gpus(),
            Some("simulator") | Some("sim") => Self::simulated(devices),
            None | Some("") => gpus().or_else(|_| Self::simulated(devices)),
            Some(other) => Err(Error::BackendChoice { value: other.into() }),
        }
    }

    /// How many devices.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Never true: a group has at least one device.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether the members are simulated devices.
    pub fn is_simulated(&self) -> bool {
        matches!(self.transport, Transport::InProcess)
    }

    /// The devices, by rank.
    pub fn members(&self) -> &[Backend] {
        &self.members
    }

    /// The device of rank `rank` (panics if there is none, like indexing).
    pub fn member(&self, rank: usize) -> &Backend {
        &self.members[rank]
    }

    /// Runs `work(rank, device)` for every member in rank order. Launches are queued, not
    /// waited for, so the GPUs run them at the same time.
    ///
    /// ```
    /// use tessera_runtime::{DeviceGroup, Sharding};
    /// let group = DeviceGroup::simulated(2)?;
    /// let x = group.shard(&[1.0f32, 2.0, 3.0, 4.0], [4], Sharding::Rows)?;
    /// let mut y = group.sharded_zeros::<f32>([4], Sharding::Rows)?;
    /// group.each(|rank, device| device.copy(x.shard(rank), y.shard_mut(rank)))?;
    /// assert_eq!(group.gather(&y)?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn each(&self, mut work: impl FnMut(usize, &Backend) -> Result<(), Error>) -> Result<(), Error> {
        for (rank, member) in self.members.iter().enumerate() {
            work(rank, member)?;
        }
        Ok(())
    }

    /// Waits for the work queued on every member, collectives included.
    pub fn synchronize(&self) -> Result<(), Error> {
        if let Transport::Nccl(communicators) = &self.transport {
            communicators.synchronize()?;
        }
        self.members.iter().try_for_each(Backend::synchronize)
    }

    /// Times `work` over the whole group: `warmup` untimed runs, then `repetitions` timed
    /// ones. On GPUs each sample is the longest of the members' spans between CUDA events
    /// recorded on their compute streams before and after `work` is queued (so `work` must
    /// have waited for its collectives, as dropping a [`Pending`] does); simulated, the wall
    /// clock.
    pub fn time(
        &self,
        warmup: usize,
        repetitions: usize,
        mut work: impl FnMut() -> Result<(), Error>,
    ) -> Result<Timing, Error> {
        for _ in 0..warmup {
            work()?;
        }
        self.synchronize()?;
        let mut samples = Vec::with_capacity(repetitions);
        for _ in 0..repetitions {
            samples.push(self.time_once(&mut work)?);
        }
        Ok(Timing::from_samples(samples))
    }

    fn time_once(&self, work: &mut impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
        let gpus: Vec<&Gpu> = self.members.iter().filter_map(Backend::as_gpu).collect();
        if gpus.len() != self.members.len() {
            let start = Instant::now();
            work()?;
            self.synchronize()?;
            return Ok(start.elapsed().as_secs_f64() * 1e3);
        }
        let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let record = |gpu: &Gpu| gpu.cuda_stream().record_event(timed).map_err(Error::driver("recording an event"));
        let starts = gpus.iter().map(|gpu| record(gpu)).collect::<Result<Vec<_>, _>>()?;
        work()?;
        let ends = gpus.iter().map(|gpu| record(gpu)).collect::<Result<Vec<_>, _>>()?;
        let mut longest = 0.0f64;
        for (start, end) in starts.iter().zip(&ends) {
            end.synchronize().map_err(Error::driver("waiting for an event"))?;
            let ms = start.elapsed_ms(end).map_err(Error::driver("reading an event"))?;
            longest = longest.max(f64::from(ms));
        }
        Ok(longest)
    }

    /// The collectives queued so far, in order, and forgets them. Every member takes part
    /// in every collective in this order (NCCL needs that; the group issues each one on all
    /// members at once, so it holds by construction), and tests read it to check what a
    /// sharded algorithm exchanged.
    pub fn take_collective_log(&self) -> Vec<CollectiveRecord> {
        self.log.lock().map(|mut log| std::mem::take(&mut *log)).unwrap_or_default()
    }
}

impl std::fmt::Display for DeviceGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.transport {
            Transport::InProcess => write!(f, "{} simulated devices (in-process collectives)", self.len()),
            Transport::Nccl(_) => {
                write!(f, "{} GPUs (", self.len())?;
                for (rank, gpu) in self.members.iter().filter_map(Backend::as_gpu).enumerate() {
                    let separator = if rank == 0 { "" } else { ", " };
                    write!(f, "{separator}{}: {}", gpu.ordinal(), gpu.name())?;
                }
                f.write_str(") over NCCL")
            }
        }
    }
}
