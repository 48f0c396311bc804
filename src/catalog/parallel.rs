//! Work split over the devices of a [`DeviceGroup`]: tensor-parallel GEMMs and a
//! data-parallel sum, built from the single-device catalog kernels (any GEMM of the `sgemm`
//! or `hgemm` families) and the group's NCCL collectives. On a simulated group the same code
//! runs with in-process collectives, so CI checks the sharding and what moves when.

use crate::runtime::{DeviceGroup, Element, ReduceOp, Reducible, ShardedTensor, Sharding};
use crate::{Error, KernelDefinition};

/// C = α·A·B + β·C, with A and C split by rows over the group and B replicated: every
/// device multiplies its own rows, and nothing moves between devices (Megatron's
/// row-parallel layout for the activations).
///
/// ```
/// use tessera::catalog::{parallel, sgemm};
/// use tessera::runtime::{DeviceGroup, Sharding};
/// let group = DeviceGroup::simulated(2)?;
/// let (m, n, k) = (5, 3, 4);
/// let a = group.shard(&vec![1.0f32; m * k], [m, k], Sharding::Rows)?;
/// let b = group.shard(&vec![0.5f32; k * n], [k, n], Sharding::Replicated)?;
/// let mut c = group.sharded_zeros::<f32>([m, n], Sharding::Rows)?;
/// parallel::gemm_rows(&group, &sgemm::sgemm_v1::KERNEL, &a, &b, &mut c, 1.0, 0.0)?;
/// assert_eq!(group.gather(&c)?, vec![2.0; m * n]);
/// # Ok::<(), tessera::Error>(())
/// ```
pub fn gemm_rows<TIn: Element, TOut: Element>(
    group: &DeviceGroup,
    kernel: &KernelDefinition,
    a: &ShardedTensor<TIn>,
    b: &ShardedTensor<TIn>,
    c: &mut ShardedTensor<TOut>,
    alpha: f32,
    beta: f32,
) -> Result<(), Error> {
    a.expect_sharding("a", Sharding::Rows, group.len())?;
    b.expect_sharding("b", Sharding::Replicated, group.len())?;
    c.expect_sharding("c", Sharding::Rows, group.len())?;
    check_gemm_shapes(a.dims(), b.dims(), c.dims())?;
    group.each(|rank, device| {
        super::launch_gemm(kernel, device, a.shard(rank), b.shard(rank), c.shard_mut(rank), alpha, beta).map(drop)
    })
}

/// C = α·A·B with the inner dimension K split over the group (A by columns, B by rows):
/// every device computes a partial C = α·A[:, Kᵣ]·B[Kᵣ, :] of the whole matrix, and a
/// reduce-scatter sums the partials so that device r ends with its rows of C (Megatron's
/// row-parallel linear layer).
///
/// The rows are cut into `chunks` slices: the reduce-scatter of slice j runs on the
/// communication streams while the devices compute slice j + 1, so the transfer hides behind
/// the GEMMs. `chunks = 1` is the same work without overlap. The partial sums live in a
/// workspace (one whole C per device) kept between runs.
///
/// The overlap needs a GEMM kernel whose blocks retire as they finish their tiles (`sgemm_v11`,
/// `hgemm_v6_bf16`): a persistent one (producers, stream-K: `sgemm_v13`) keeps every SM until
/// it ends, so NCCL's kernels start only between the slices and the overlap costs more than it
/// hides (f32 16384³ on four H200s: V13 91.5% of linear without overlap, 85–88% with it; V11
/// 92.3% without, 93.8–94.4% with it; BENCHMARKS.md).
///
/// `T` is C's type and the partials': `KSplitGemm::<bf16>` with a 16-bit-output kernel
/// (`hgemm_v11_bf16_to_bf16`) reduce-scatters bf16 partials, half the bytes of f32 ones, each
/// partial and each sum rounded to bf16 (what a tensor-parallel bf16 layer's all-reduce does):
/// 1.85–1.97× faster than f32 partials on four H100s at 16384³ (BENCHMARKS.md).
///
/// ```
/// use tessera::catalog::{parallel::KSplitGemm, sgemm};
/// use tessera::runtime::{DeviceGroup, Sharding};
/// let group = DeviceGroup::simulated(2)?;
/// let (m, n, k) = (6, 3, 8);
/// let a = group.shard(&vec![1.0f32; m * k], [m, k], Sharding::Columns)?;
/// let b = group.shard(&vec![0.25f32; k * n], [k, n], Sharding::Rows)?;
/// let mut c = group.sharded_zeros::<f32>([m, n], Sharding::Rows)?;
/// let mut gemm = KSplitGemm::<f32>::new(&group, [m, n], 2)?;
/// gemm.run(&group, &sgemm::sgemm_v1::KERNEL, &a, &b, &mut c, 1.0)?;
/// assert_eq!(group.gather(&c)?, vec![2.0; m * n]);
/// # Ok::<(), tessera::Error>(())
/// ```
#[derive(Debug)]
pub struct KSplitGemm<T: Reducible> {
    /// Each device's partial C, replicated in shape.
    partial: ShardedTensor<T>,
    chunks: usize,
}

impl<T: Reducible> KSplitGemm<T> {
    /// A workspace for C of `[m, n]` over `group`, the reduction cut into `chunks` slices
    /// (at least one).
    pub fn new(group: &DeviceGroup, [m, n]: [usize; 2], chunks: usize) -> Result<Self, Error> {
        Ok(Self { partial: group.sharded_zeros([m, n], Sharding::Replicated)?, chunks: chunks.max(1) })
    }

    /// How many slices the reduction is cut into.
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// C = α·A·B (see the type's documentation). `a` is split by columns, `b` by rows (the
    /// same K ranges), `c` by rows.
    pub fn run<TIn: Element>(
        &mut self,
        group: &DeviceGroup,
        kernel: &KernelDefinition,
        a: &ShardedTensor<TIn>,
        b: &ShardedTensor<TIn>,
        c: &mut ShardedTensor<T>,
        alpha: f32,
    ) -> Result<(), Error> {
        a.expect_sharding("a", Sharding::Columns, group.len())?;
        b.expect_sharding("b", Sharding::Rows, group.len())?;
        c.expect_sharding("c", Sharding::Rows, group.len())?;
        self.partial.expect_sharding("the workspace", Sharding::Replicated, group.len())?;
        check_gemm_shapes(a.dims(), b.dims(), c.dims())?;
        if self.partial.dims() != c.dims() {
            return Err(Error::GemmShape {
                a: a.dims().to_vec(),
                b: b.dims().to_vec(),
                c: self.partial.dims().to_vec(),
            });
        }
        let n = c.dims()[1];
        let longest = (0..group.len()).map(|rank| c.range(rank).len()).max().unwrap_or(0);
        let chunk_rows = longest.div_ceil(self.chunks).max(1);
        let mut in_flight = Vec::with_capacity(self.chunks);
        for first in (0..longest).step_by(chunk_rows) {
            let local = first..(first + chunk_rows).min(longest);
            let partial = &mut self.partial;
            group.each(|rank, device| {
                let k_columns = 0..a.shard(rank).dims()[1];
                // this device's contribution to every device's rows of the slice
                for owner in 0..group.len() {
                    let rows = c.global_rows(owner, local.clone());
                    if rows.is_empty() {
                        continue;
                    }
                    let a_rows = a.shard(rank).submatrix(rows.clone(), k_columns.clone())?;
                    let mut c_rows = partial.shard_mut(rank).submatrix_mut(rows, 0..n)?;
                    super::launch_gemm(kernel, device, &a_rows, b.shard(rank), &mut c_rows, alpha, 0.0)?;
                }
                Ok(())
            })?;
            in_flight.push(group.reduce_scatter_rows(&self.partial, c, local, ReduceOp::Sum)?);
        }
        in_flight.into_iter().try_for_each(|pending| pending.wait())
    }
}

/// Σ x for a vector split by rows over the group: each device sums its part with the
/// single-device reduction ([`reduce::sum_partials_f32`](super::reduce::sum_partials_f32),
/// [`reduce::sum_finish_f32`](super::reduce::sum_finish_f32)), and an all-reduce adds the
/// devices' totals (data-parallel).
///
/// ```
/// use tessera::runtime::{DeviceGroup, Sharding};
/// let group = DeviceGroup::simulated(3)?;
/// let x = group.shard(&vec![0.5f32; 1000], [1000], Sharding::Rows)?;
/// assert_eq!(tessera::catalog::parallel::sum(&group, &x)?, 500.0);
/// # Ok::<(), tessera::Error>(())
/// ```
pub fn sum(group: &DeviceGroup, x: &ShardedTensor<f32>) -> Result<f32, Error> {
    use super::reduce::{sum_finish_f32, sum_partials_f32, PARTIALS};
    x.expect_sharding("x", Sharding::Rows, group.len())?;
    let mut totals = group.sharded_zeros::<f32>([1], Sharding::Replicated)?;
    group.each(|rank, device| {
        let mut partials = device.zeros::<f32>([PARTIALS])?;
        sum_partials_f32::launch(device, x.shard(rank), &mut partials)?;
        sum_finish_f32::launch(device, &partials, totals.shard_mut(rank))?;
        Ok(())
    })?;
    group.all_reduce(&mut totals, ReduceOp::Sum)?.wait()?;
    Ok(group.member(0).download(totals.shard(0))?[0])
}

fn check_gemm_shapes(a: &[usize], b: &[usize], c: &[usize]) -> Result<(), Error> {
    match (a, b, c) {
        ([m, k], [k2, n], [m2, n2]) if k == k2 && m == m2 && n == n2 => Ok(()),
        _ => Err(Error::GemmShape { a: a.to_vec(), b: b.to_vec(), c: c.to_vec() }),
    }
}
