//! A tensor split over the devices of a [`DeviceGroup`]: which part each device holds.

use std::ops::Range;

use crate::{DeviceTensor, Element, Error};

use super::DeviceGroup;

/// How a [`ShardedTensor`] is laid out over a group of `n` devices.
///
/// ```
/// use tessera_runtime::Sharding;
/// // 10 rows over 3 devices: the first takes the extra row
/// assert_eq!(Sharding::Rows.ranges(&[10, 4], 3).unwrap(), vec![0..4, 4..7, 7..10]);
/// assert_eq!(Sharding::Replicated.ranges(&[10, 4], 3).unwrap(), vec![0..10, 0..10, 0..10]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sharding {
    /// Device `r` holds a contiguous block of rows (the first dimension); the blocks differ
    /// in size by at most one row, the larger ones first.
    Rows,
    /// Device `r` holds a contiguous block of columns (the last dimension of a matrix), as
    /// a dense matrix of its own.
    Columns,
    /// Every device holds the whole tensor (a copy, or its own partial result before a
    /// reduction).
    Replicated,
}

impl Sharding {
    /// The rows (for [`Rows`](Self::Rows) and [`Replicated`](Self::Replicated)) or columns
    /// (for [`Columns`](Self::Columns)) of a tensor of `dims` that each of `parts` devices
    /// holds.
    pub fn ranges(self, dims: &[usize], parts: usize) -> Result<Vec<Range<usize>>, Error> {
        let extent = match (self, dims) {
            (_, []) => return Err(Error::ShardingShape { sharding: self, dims: dims.to_vec() }),
            (Sharding::Columns, [_, cols]) => *cols,
            (Sharding::Columns, _) => return Err(Error::ShardingShape { sharding: self, dims: dims.to_vec() }),
            (Sharding::Rows | Sharding::Replicated, [rows, ..]) => *rows,
        };
        Ok(match self {
            Sharding::Replicated => vec![0..extent; parts],
            Sharding::Rows | Sharding::Columns => split_evenly(extent, parts),
        })
    }

    /// The dims of the part of a tensor of `dims` that holds `range` of its split dimension.
    fn shard_dims(self, dims: &[usize], range: &Range<usize>) -> Vec<usize> {
        let mut shard = dims.to_vec();
        match self {
            Sharding::Rows => shard[0] = range.len(),
            Sharding::Columns => shard[1] = range.len(),
            Sharding::Replicated => {}
        }
        shard
    }
}

impl std::fmt::Display for Sharding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sharding::Rows => "split by rows",
            Sharding::Columns => "split by columns",
            Sharding::Replicated => "replicated",
        })
    }
}

/// `0..len` cut into `parts` contiguous ranges whose lengths differ by at most one, the
/// longer ones first.
///
/// ```
/// assert_eq!(tessera_runtime::split_evenly(7, 3), vec![0..3, 3..5, 5..7]);
/// assert_eq!(tessera_runtime::split_evenly(2, 3), vec![0..1, 1..2, 2..2]);
/// ```
pub fn split_evenly(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let (base, extra) = (len / parts, len % parts);
    let mut start = 0;
    (0..parts)
        .map(|part| {
            let size = base + usize::from(part < extra);
            let range = start..start + size;
            start += size;
            range
        })
        .collect()
}

/// A tensor whose parts live on the devices of a [`DeviceGroup`], one [`DeviceTensor`] per
/// device (its *shard*), each dense.
///
/// ```
/// use tessera_runtime::{DeviceGroup, Sharding};
/// let group = DeviceGroup::simulated(2)?;
/// let host: Vec<f32> = (0..12).map(|i| i as f32).collect();
/// let a = group.shard(&host, [3, 4], Sharding::Rows)?;      // rows 0..2 and 2..3
/// assert_eq!(a.shard(1).dims(), &[1, 4]);
/// assert_eq!(group.gather(&a)?, host);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct ShardedTensor<T: Element> {
    pub(crate) dims: Vec<usize>,
    pub(crate) sharding: Sharding,
    pub(crate) ranges: Vec<Range<usize>>,
    pub(crate) shards: Vec<DeviceTensor<T>>,
}

impl<T: Element> ShardedTensor<T> {
    /// The dims of the whole tensor.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// How the tensor is split across the devices.
    ///
    /// ```
    /// use tessera_runtime::{DeviceGroup, Sharding};
    /// let group = DeviceGroup::simulated(2)?;
    /// let a = group.shard(&[0.0f32; 8], [2, 4], Sharding::Columns)?;
    /// assert_eq!(a.sharding(), Sharding::Columns);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// How many devices hold a part.
    pub fn parts(&self) -> usize {
        self.shards.len()
    }

    /// The rows (or columns, for [`Sharding::Columns`]) of the whole tensor that device
    /// `rank` holds (panics if `rank` is not in the group, like indexing).
    pub fn range(&self, rank: usize) -> Range<usize> {
        self.ranges[rank].clone()
    }

    /// Rows `local_rows` of device `rank`'s part (counted from its first row, clipped to its
    /// length), in rows of the whole tensor: the same slice of every part, as a chunked
    /// collective moves it (panics if `rank` is not in the group, like indexing).
    ///
    /// ```
    /// use tessera_runtime::{DeviceGroup, Sharding};
    /// let group = DeviceGroup::simulated(2)?;
    /// let c = group.sharded_zeros::<f32>([7, 2], Sharding::Rows)?;   // rows 0..4 and 4..7
    /// assert_eq!(c.global_rows(1, 1..4), 5..7);
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn global_rows(&self, rank: usize, local_rows: Range<usize>) -> Range<usize> {
        let range = &self.ranges[rank];
        range.start + local_rows.start.min(range.len())..range.start + local_rows.end.min(range.len())
    }

    /// The part on device `rank` (panics if `rank` is not in the group, like indexing).
    pub fn shard(&self, rank: usize) -> &DeviceTensor<T> {
        &self.shards[rank]
    }

    /// The part on device `rank`, writable (panics if `rank` is not in the group). A
    /// collective refuses a part put here that lives on another device.
    pub fn shard_mut(&mut self, rank: usize) -> &mut DeviceTensor<T> {
        &mut self.shards[rank]
    }

    /// Elements in one row (one element for a vector).
    pub(crate) fn row_len(&self) -> usize {
        self.dims.iter().skip(1).product()
    }

    /// `Err(ShardingMismatch)` unless this tensor is laid out as `expected` over `parts`
    /// devices (`param` names it in the message).
    pub fn expect_sharding(&self, param: &'static str, expected: Sharding, parts: usize) -> Result<(), Error> {
        if self.sharding != expected || self.parts() != parts {
            return Err(Error::ShardingMismatch {
                param,
                expected,
                parts,
                found: self.sharding,
                found_parts: self.parts(),
            });
        }
        Ok(())
    }
}

impl DeviceGroup {
    /// Splits `host`, a row-major tensor of shape `dims`, over the group as `sharding` says
    /// and uploads each part to its device.
    pub fn shard<T: Element>(
        &self,
        host: &[T],
        dims: impl AsRef<[usize]>,
        sharding: Sharding,
    ) -> Result<ShardedTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        let expected = crate::tensor::element_count(&dims)?;
        if host.len() != expected {
            return Err(Error::LengthMismatch { what: "shard", len: host.len(), shape: dims, expected });
        }
        let ranges = sharding.ranges(&dims, self.len())?;
        let mut shards = Vec::with_capacity(self.len());
        for (member, range) in self.members().iter().zip(&ranges) {
            let shard_dims = sharding.shard_dims(&dims, range);
            let part = part_of(host, &dims, sharding, range);
            shards.push(member.upload(&part, shard_dims)?);
        }
        Ok(ShardedTensor { dims, sharding, ranges, shards })
    }

    /// A tensor of shape `dims`, laid out as `sharding` says, filled with zeros.
    pub fn sharded_zeros<T: Element>(
        &self,
        dims: impl AsRef<[usize]>,
        sharding: Sharding,
    ) -> Result<ShardedTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        let ranges = sharding.ranges(&dims, self.len())?;
        let mut shards = Vec::with_capacity(self.len());
        for (member, range) in self.members().iter().zip(&ranges) {
            shards.push(member.zeros(sharding.shard_dims(&dims, range))?);
        }
        Ok(ShardedTensor { dims, sharding, ranges, shards })
    }

    /// The whole tensor on the host, row-major (after the work queued on every device). A
    /// replicated tensor is read from device 0.
    pub fn gather<T: Element>(&self, tensor: &ShardedTensor<T>) -> Result<Vec<T>, Error> {
        if tensor.parts() != self.len() {
            return Err(Error::ShardingMismatch {
                param: "gather",
                expected: tensor.sharding,
                parts: self.len(),
                found: tensor.sharding,
                found_parts: tensor.parts(),
            });
        }
        let parts = self
            .members()
            .iter()
            .zip(&tensor.shards)
            .map(|(member, shard)| member.download(shard))
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(match tensor.sharding {
            Sharding::Replicated => parts.into_iter().next().unwrap_or_default(),
            Sharding::Rows => parts.concat(),
            Sharding::Columns => {
                let (rows, cols) = (tensor.dims[0], tensor.dims[1]);
                let mut whole = vec![T::default(); rows * cols];
                for (part, range) in parts.iter().zip(&tensor.ranges) {
                    for row in 0..rows {
                        whole[row * cols + range.start..row * cols + range.end]
                            .copy_from_slice(&part[row * range.len()..(row + 1) * range.len()]);
                    }
                }
                whole
            }
        })
    }
}

/// The elements of `host` (shape `dims`) that the part holding `range` of the split
/// dimension holds, row-major.
fn part_of<T: Element>(host: &[T], dims: &[usize], sharding: Sharding, range: &Range<usize>) -> Vec<T> {
    let row_len: usize = dims.iter().skip(1).product();
    match sharding {
        Sharding::Replicated => host.to_vec(),
        Sharding::Rows => host[range.start * row_len..range.end * row_len].to_vec(),
        Sharding::Columns => {
            let cols = dims[1];
            (0..dims[0])
                .flat_map(|row| host[row * cols + range.start..row * cols + range.end].iter().copied())
                .collect()
        }
    }
}
