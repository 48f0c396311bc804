//! All-reduce, all-gather and reduce-scatter over a [`DeviceGroup`]: what each one moves
//! (an [`Exchange`], checked against the tensors' layouts), independent of how (NCCL or in
//! process).

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};
use tessera_dsl::ElementType;

use crate::{Backend, Element, Error, Location};

use super::{DeviceGroup, ShardedTensor, Sharding, Transport};

/// How a reduction combines the members' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Product,
    Max,
    Min,
}

/// An element type collectives can reduce: every tensor element type. Integers wrap, as
/// NCCL's do; 16-bit floats round once per combination, as NCCL's do.
pub trait Reducible: Element + cudarc::nccl::NcclType {
    /// `a op b`.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! reducible_float {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a + b,
                    ReduceOp::Product => a * b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
        }
    )*};
}
reducible_float!(f32, f64, half::f16, half::bf16);

macro_rules! reducible_integer {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Product => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
        }
    )*};
}
reducible_integer!(i32, u32);

/// Which collective a [`CollectiveRecord`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Collective {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter(ReduceOp),
}

/// One collective as the group issued it (see [`DeviceGroup::take_collective_log`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveRecord {
    pub collective: Collective,
    pub element: ElementType,
    /// For each rank, the rows of the whole tensor its piece covers: the rows it sends
    /// (all-gather), receives (reduce-scatter), or, the same for all, reduces (all-reduce).
    pub rows: Vec<Range<usize>>,
    /// Whether it went as one NCCL collective (equal whole shards) rather than one
    /// broadcast or reduce per rank, grouped.
    pub native: bool,
}

/// What moves where, in elements of the shards.
#[derive(Clone, Debug)]
pub(crate) enum Exchange {
    /// Elements `elements` of every shard become their reduction over all shards.
    AllReduce { elements: Range<usize>, op: ReduceOp },
    /// Rank q's `pieces[q].from` (of its input shard) lands at `pieces[q].to` of every
    /// output shard.
    Gather { pieces: Vec<Piece>, native: bool },
    /// Every rank's `pieces[q].from` (of its input shard) is reduced into `pieces[q].to`
    /// of output shard q.
    Scatter { pieces: Vec<Piece>, op: ReduceOp, native: bool },
}

/// One rank's part of a gather or scatter, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) from: Range<usize>,
    pub(crate) to: Range<usize>,
}

/// Collectives queued on a group's communication streams, which later work on the members'
/// compute streams does not yet wait for: so a launch queued before [`wait`](Self::wait)
/// runs at the same time as the transfer (it must not touch the collective's tensors).
/// Dropping it waits, too. Waiting only orders the streams; the host does not block.
///
/// ```
/// # use tessera_runtime::{DeviceGroup, ReduceOp, Sharding};
/// # let group = DeviceGroup::simulated(2)?;
/// let mut x = group.sharded_zeros::<f32>([8, 4], Sharding::Replicated)?;
/// let first_half = group.all_reduce_rows(&mut x, 0..4, ReduceOp::Sum)?;
/// // .. queue work here that overlaps the transfer of rows 0..4 ..
/// first_half.wait()?;
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[must_use = "later launches wait for the collective only once it is waited for (or dropped)"]
pub struct Pending {
    /// For each GPU: its compute stream and the event its communication stream recorded
    /// after the collective. Empty when the collective is already done (in process).
    done: Vec<(Arc<CudaStream>, CudaEvent)>,
}

impl Pending {
    pub(crate) fn done() -> Self {
        Self { done: Vec::new() }
    }

    pub(crate) fn after(done: Vec<(Arc<CudaStream>, CudaEvent)>) -> Self {
        Self { done }
    }

    /// Makes every member's later work wait for the collective.
    pub fn wait(mut self) -> Result<(), Error> {
        self.order()
    }

    fn order(&mut self) -> Result<(), Error> {
        for (stream, event) in self.done.drain(..) {
            stream.wait(&event).map_err(Error::driver("ordering work after a collective"))?;
        }
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // An error here is a driver failure the next launch or synchronize reports again.
        let _ = self.order();
    }
}

impl DeviceGroup {
    /// Every rank's `x` (replicated: each holds a whole tensor, e.g. its partial result)
    /// becomes the element-wise `op` over all ranks.
    pub fn all_reduce<T: Reducible>(&self, x: &mut ShardedTensor<T>, op: ReduceOp) -> Result<Pending, Error> {
        let rows = 0..x.dims.first().copied().unwrap_or(0);
        self.all_reduce_rows(x, rows, op)
    }

    /// [`all_reduce`](Self::all_reduce) of rows `rows` only (to overlap one chunk's
    /// transfer with the next chunk's work).
    pub fn all_reduce_rows<T: Reducible>(
        &self,
        x: &mut ShardedTensor<T>,
        rows: Range<usize>,
        op: ReduceOp,
    ) -> Result<Pending, Error> {
        x.expect_sharding("all_reduce", Sharding::Replicated, self.len())?;
        let total_rows = x.dims.first().copied().unwrap_or(0);
        check_rows("all_reduce", &rows, total_rows)?;
        let elements = rows.start * x.row_len()..rows.end * x.row_len();
        for shard in &x.shards {
            check_shard("all_reduce", shard.len(), &elements)?;
        }
        let record = CollectiveRecord {
            collective: Collective::AllReduce(op),
            element: T::TYPE,
            rows: vec![rows; self.len()],
            native: true,
        };
        self.issue(record, Exchange::AllReduce { elements, op }, None, x)
    }

    /// Every rank's shard of `x` (split by rows) lands in every rank's copy of `out`
    /// (replicated, the same dims).
    pub fn all_gather<T: Reducible>(&self, x: &ShardedTensor<T>, out: &mut ShardedTensor<T>) -> Result<Pending, Error> {
        let longest = x.ranges.iter().map(Range::len).max().unwrap_or(0);
        self.all_gather_rows(x, out, 0..longest)
    }

    /// [`all_gather`](Self::all_gather) of rows `local_rows` of each shard (counted from
    /// the shard's first row; clipped to each shard's length).
    pub fn all_gather_rows<T: Reducible>(
        &self,
        x: &ShardedTensor<T>,
        out: &mut ShardedTensor<T>,
        local_rows: Range<usize>,
    ) -> Result<Pending, Error> {
        x.expect_sharding("all_gather input", Sharding::Rows, self.len())?;
        out.expect_sharding("all_gather output", Sharding::Replicated, self.len())?;
        check_same_dims("all_gather", &x.dims, &out.dims)?;
        let (pieces, rows) = pieces(x, &local_rows, PieceSide::Sharded)?;
        for (piece, shard) in pieces.iter().zip(&x.shards) {
            check_shard("all_gather input", shard.len(), &piece.from)?;
        }
        for shard in &out.shards {
            pieces.iter().try_for_each(|piece| check_shard("all_gather output", shard.len(), &piece.to))?;
        }
        let native = is_native(&pieces, &x.shards.iter().map(|s| s.len()).collect::<Vec<_>>(), PieceSide::Sharded);
        let record = CollectiveRecord { collective: Collective::AllGather, element: T::TYPE, rows, native };
        self.issue(record, Exchange::Gather { pieces, native }, Some(x), out)
    }

    /// Every rank's `x` (replicated: each holds a whole partial tensor) is reduced with
    /// `op`, and rank r receives the rows of its shard of `out` (split by rows).
    pub fn reduce_scatter<T: Reducible>(
        &self,
        x: &ShardedTensor<T>,
        out: &mut ShardedTensor<T>,
        op: ReduceOp,
    ) -> Result<Pending, Error> {
        let longest = out.ranges.iter().map(Range::len).max().unwrap_or(0);
        self.reduce_scatter_rows(x, out, 0..longest, op)
    }

    /// [`reduce_scatter`](Self::reduce_scatter) of rows `local_rows` of each output shard
    /// (counted from the shard's first row; clipped to each shard's length).
    pub fn reduce_scatter_rows<T: Reducible>(
        &self,
        x: &ShardedTensor<T>,
        out: &mut ShardedTensor<T>,
        local_rows: Range<usize>,
        op: ReduceOp,
    ) -> Result<Pending, Error> {
        x.expect_sharding("reduce_scatter input", Sharding::Replicated, self.len())?;
        out.expect_sharding("reduce_scatter output", Sharding::Rows, self.len())?;
        check_same_dims("reduce_scatter", &x.dims, &out.dims)?;
        let (pieces, rows) = pieces(out, &local_rows, PieceSide::Replicated)?;
        for shard in &x.shards {
            pieces.iter().try_for_each(|piece| check_shard("reduce_scatter input", shard.len(), &piece.from))?;
        }
        for (piece, shard) in pieces.iter().zip(&out.shards) {
            check_shard("reduce_scatter output", shard.len(), &piece.to)?;
        }
        let native = is_native(&pieces, &out.shards.iter().map(|s| s.len()).collect::<Vec<_>>(), PieceSide::Replicated);
        let record = CollectiveRecord { collective: Collective::ReduceScatter(op), element: T::TYPE, rows, native };
        self.issue(record, Exchange::Scatter { pieces, op, native }, Some(x), out)
    }

    /// Records `exchange` and queues it on the transport.
    fn issue<T: Reducible>(
        &self,
        record: CollectiveRecord,
        exchange: Exchange,
        input: Option<&ShardedTensor<T>>,
        output: &mut ShardedTensor<T>,
    ) -> Result<Pending, Error> {
        // each rank's shards must be on that rank's device: a tensor sharded over another
        // group of the same size (or a shard replaced through `shard_mut`) would hand the
        // transport another device's memory
        for (rank, member) in self.members.iter().enumerate() {
            let on = match member {
                Backend::Gpu(gpu) => gpu.location(),
                Backend::Simulator(_) => Location::Host,
            };
            let shards =
                input.map(|x| ("input", &x.shards[rank])).into_iter().chain([("output", &output.shards[rank])]);
            for (side, shard) in shards {
                if shard.location() != on {
                    return Err(Error::WrongDevice {
                        param: format!("the {side} shard of rank {rank} of a collective"),
                        tensor: shard.location(),
                        launch: on,
                    });
                }
            }
        }
        if let Ok(mut log) = self.log.lock() {
            log.push(record);
        }
        match &self.transport {
            Transport::InProcess => {
                super::in_process::exchange(&exchange, input.map(|x| &x.shards[..]), &mut output.shards)?;
                Ok(Pending::done())
            }
            Transport::Nccl(communicators) => {
                communicators.exchange(&self.members, &exchange, input.map(|x| &x.shards[..]), &mut output.shards)
            }
        }
    }
}

/// The pieces of rows `local_rows` of each shard of the row-split tensor `split`, as element
/// ranges in the shard and in the replicated tensor (the whole); `side` says which one the
/// piece is read `from`. Also each piece's rows of the whole tensor.
fn pieces<T: Reducible>(
    split: &ShardedTensor<T>,
    local_rows: &Range<usize>,
    side: PieceSide,
) -> Result<(Vec<Piece>, Vec<Range<usize>>), Error> {
    let longest = split.ranges.iter().map(Range::len).max().unwrap_or(0);
    check_rows("a row-split collective", local_rows, longest)?;
    let row_len = split.row_len();
    let mut pieces = Vec::with_capacity(split.parts());
    let mut rows = Vec::with_capacity(split.parts());
    for rank in 0..split.parts() {
        let global = split.global_rows(rank, local_rows.clone());
        let local = global.start - split.ranges[rank].start..global.end - split.ranges[rank].start;
        let in_shard = local.start * row_len..local.end * row_len;
        let in_whole = global.start * row_len..global.end * row_len;
        pieces.push(match side {
            PieceSide::Sharded => Piece { from: in_shard, to: in_whole },
            PieceSide::Replicated => Piece { from: in_whole, to: in_shard },
        });
        rows.push(global);
    }
    Ok((pieces, rows))
}

/// Which tensor of a row-split collective is split by rows: the input (all-gather) or the
/// output (reduce-scatter).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PieceSide {
    Sharded,
    Replicated,
}

/// Whether the pieces are whole, equal shards laid end to end in the replicated tensor, so
/// one NCCL all-gather or reduce-scatter moves them.
fn is_native(pieces: &[Piece], shard_lens: &[usize], side: PieceSide) -> bool {
    let len = shard_lens.first().copied().unwrap_or(0);
    pieces.iter().zip(shard_lens).enumerate().all(|(rank, (piece, &shard_len))| {
        let (in_shard, in_whole) = match side {
            PieceSide::Sharded => (&piece.from, &piece.to),
            PieceSide::Replicated => (&piece.to, &piece.from),
        };
        shard_len == len && *in_shard == (0..len) && *in_whole == (rank * len..(rank + 1) * len)
    })
}

fn check_rows(what: &'static str, rows: &Range<usize>, total: usize) -> Result<(), Error> {
    if rows.start > rows.end || rows.end > total {
        return Err(Error::CollectiveRows { what, rows: rows.clone(), total });
    }
    Ok(())
}

fn check_same_dims(what: &'static str, input: &[usize], output: &[usize]) -> Result<(), Error> {
    if input != output {
        return Err(Error::CollectiveShapes { what, input: input.to_vec(), output: output.to_vec() });
    }
    Ok(())
}

/// `Err` when a shard (replaced through `shard_mut` by one of another size) does not hold
/// the elements a collective moves.
fn check_shard(what: &'static str, len: usize, elements: &Range<usize>) -> Result<(), Error> {
    if elements.end > len {
        return Err(Error::ShardTooSmall { what, len, needed: elements.end });
    }
    Ok(())
}
