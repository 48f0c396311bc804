//! Collectives between simulated devices: copies and reductions of host memory, reducing in
//! rank order (rank 0's element first), deterministic like the rest of the simulation.

use std::ops::Range;

use crate::tensor::Storage;
use crate::{DeviceTensor, Error};

use super::collective::{Exchange, ReduceOp, Reducible};

/// Carries out `exchange` from `input`'s shards (or, for an all-reduce, `output`'s own) into
/// `output`'s shards.
pub(crate) fn exchange<T: Reducible>(
    exchange: &Exchange,
    input: Option<&[DeviceTensor<T>]>,
    output: &mut [DeviceTensor<T>],
) -> Result<(), Error> {
    match exchange {
        Exchange::AllReduce { elements, op } => {
            let reduced = reduced(output, elements, *op)?;
            for shard in output.iter_mut() {
                host_mut(shard)?[elements.clone()].copy_from_slice(&reduced);
            }
        }
        Exchange::Gather { pieces, .. } => {
            let input = input.ok_or(Error::CollectiveInput)?;
            for (rank, piece) in pieces.iter().enumerate() {
                let sent = host(&input[rank])?[piece.from.clone()].to_vec();
                for shard in output.iter_mut() {
                    host_mut(shard)?[piece.to.clone()].copy_from_slice(&sent);
                }
            }
        }
        Exchange::Scatter { pieces, op, .. } => {
            let input = input.ok_or(Error::CollectiveInput)?;
            for (root, piece) in pieces.iter().enumerate() {
                let reduced = reduced(input, &piece.from, *op)?;
                host_mut(&mut output[root])?[piece.to.clone()].copy_from_slice(&reduced);
            }
        }
    }
    Ok(())
}

/// Elements `elements` of the shards combined with `op`, rank 0's first.
fn reduced<T: Reducible>(shards: &[DeviceTensor<T>], elements: &Range<usize>, op: ReduceOp) -> Result<Vec<T>, Error> {
    let mut reduced = host(&shards[0])?[elements.clone()].to_vec();
    for shard in &shards[1..] {
        for (acc, &value) in reduced.iter_mut().zip(&host(shard)?[elements.clone()]) {
            *acc = T::combine(op, *acc, value);
        }
    }
    Ok(reduced)
}

fn host<T: Reducible>(tensor: &DeviceTensor<T>) -> Result<&[T], Error> {
    match &tensor.storage {
        Storage::Host(buffer) => Ok(buffer.as_slice()),
        Storage::Cuda(_) => Err(Error::WrongDevice {
            param: "a collective's tensor".into(),
            tensor: tensor.location,
            launch: crate::Location::Host,
        }),
    }
}

fn host_mut<T: Reducible>(tensor: &mut DeviceTensor<T>) -> Result<&mut [T], Error> {
    let location = tensor.location;
    match &mut tensor.storage {
        Storage::Host(buffer) => Ok(buffer.as_mut_slice()),
        Storage::Cuda(_) => Err(Error::WrongDevice {
            param: "a collective's tensor".into(),
            tensor: location,
            launch: crate::Location::Host,
        }),
    }
}
