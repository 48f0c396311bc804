//! Device groups: sharding, the three collectives (whole and by rows, equal and unequal
//! shards), the tensor-parallel GEMMs and the data-parallel sum against host references, and
//! the order of the collectives the K-split GEMM issues — on three simulated devices in CI
//! (in-process collectives) and on every GPU of the machine through NCCL with
//! `cargo test --release --test device_group -- --include-ignored` (needs at least two GPUs).

mod common;

use std::ops::Range;

use common::{gemm_reference, random_floats, relative_error};
use tessera::catalog::{hgemm, parallel, sgemm};
use tessera::half::bf16;
use tessera::runtime::{Collective, CommunicationOptions, DeviceGroup, ReduceOp, Sharding};
use tessera::{Error, KernelDefinition};

macro_rules! on_both_groups {
    ($($body:ident),* $(,)?) => {$(
        mod $body {
            #[test]
            fn simulated() {
                let group = tessera::runtime::DeviceGroup::simulated(3)
                    .unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"));
                super::$body(&group, super::Scale::Simulated);
            }

            #[test]
            #[ignore = "needs a CUDA GPU"]
            fn on_the_gpus() {
                let group = tessera::runtime::DeviceGroup::all_gpus()
                    .unwrap_or_else(|e| panic!("this test needs CUDA GPUs and NCCL: {e}"));
                assert!(group.len() >= 2, "this test needs at least two GPUs, the machine has {}", group.len());
                super::$body(&group, super::Scale::Gpus);
            }
        }
    )*};
}

on_both_groups!(
    sharding_round_trips_by_rows_columns_and_replicated,
    all_reduce_combines_every_rank_in_place,
    all_gather_lands_every_shard_on_every_rank,
    reduce_scatter_leaves_each_rank_its_reduced_rows,
    row_parallel_gemm_matches_an_f64_reference,
    k_split_gemm_matches_an_f64_reference_and_overlaps_by_chunks,
    k_split_gemm_takes_bf16_tensor_core_kernels,
    k_split_gemm_reduces_bf16_partials_into_bf16_c,
    data_parallel_sum_matches_the_host_sum,
    wrong_layouts_are_typed_errors,
);

/// Communicators told to use at most two blocks a collective (NCCL's `maxCTAs`, what an
/// overlapped collective is given so the GEMM keeps its SMs) move the same numbers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn collectives_limited_to_two_blocks_each_give_the_same_results() {
    let gpus = DeviceGroup::all_gpus().unwrap_or_else(|e| panic!("this test needs CUDA GPUs and NCCL: {e}")).len();
    assert!(gpus >= 2, "this test needs at least two GPUs, the machine has {gpus}");
    let options = CommunicationOptions { max_blocks: Some(2), ..CommunicationOptions::default() };
    let group = DeviceGroup::gpus_with(&(0..gpus).collect::<Vec<_>>(), options).unwrap();
    all_reduce_combines_every_rank_in_place(&group, Scale::Gpus);
    all_gather_lands_every_shard_on_every_rank(&group, Scale::Gpus);
    reduce_scatter_leaves_each_rank_its_reduced_rows(&group, Scale::Gpus);
    k_split_gemm_matches_an_f64_reference_and_overlaps_by_chunks(&group, Scale::Gpus);
}

#[derive(Clone, Copy, PartialEq)]
enum Scale {
    Simulated,
    Gpus,
}

/// Rank r's copy of a replicated tensor: distinct per rank, so a reduction that skips or
/// repeats a rank shows.
fn rank_values(rank: usize, len: usize) -> Vec<f32> {
    random_floats(len, 0x9e37 + rank as u64 * 7919)
}

fn replicated_per_rank(group: &DeviceGroup, dims: [usize; 2]) -> tessera::ShardedTensor<f32> {
    let len = dims[0] * dims[1];
    let mut x = group.sharded_zeros::<f32>(dims, Sharding::Replicated).unwrap();
    for rank in 0..group.len() {
        *x.shard_mut(rank) = group.member(rank).upload(&rank_values(rank, len), dims).unwrap();
    }
    x
}

fn download_rank(group: &DeviceGroup, x: &tessera::ShardedTensor<f32>, rank: usize) -> Vec<f32> {
    group.member(rank).download(x.shard(rank)).unwrap()
}

/// Row counts: one a multiple of the group size (native NCCL collectives), one not
/// (grouped broadcasts and reduces), one smaller than the group (empty shards).
fn row_counts(group: &DeviceGroup) -> [usize; 3] {
    [group.len() * 4, group.len() * 4 + 1, group.len() - 1]
}

fn sharding_round_trips_by_rows_columns_and_replicated(group: &DeviceGroup, _: Scale) {
    let (rows, cols) = (group.len() * 3 + 1, group.len() + 2);
    let host = random_floats(rows * cols, 11);
    for sharding in [Sharding::Rows, Sharding::Columns, Sharding::Replicated] {
        let x = group.shard(&host, [rows, cols], sharding).unwrap();
        assert_eq!(group.gather(&x).unwrap(), host, "{sharding}");
        let extents: usize = (0..group.len()).map(|rank| x.range(rank).len()).sum();
        let whole = match sharding {
            Sharding::Rows => rows,
            Sharding::Columns => cols,
            Sharding::Replicated => rows * group.len(),
        };
        assert_eq!(extents, whole, "{sharding}: the ranges cover the tensor");
    }
    let x = group.shard(&host, [rows, cols], Sharding::Rows).unwrap();
    assert_eq!(x.shard(0).dims(), &[rows / group.len() + 1, cols], "the first shard takes the extra row");
}

fn all_reduce_combines_every_rank_in_place(group: &DeviceGroup, _: Scale) {
    let dims = [5, 7];
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        let mut x = replicated_per_rank(group, dims);
        group.all_reduce(&mut x, op).unwrap().wait().unwrap();
        let want: Vec<f32> = (0..35)
            .map(|i| {
                let values = (0..group.len()).map(|rank| rank_values(rank, 35)[i]);
                match op {
                    ReduceOp::Max => values.fold(f32::NEG_INFINITY, f32::max),
                    ReduceOp::Min => values.fold(f32::INFINITY, f32::min),
                    _ => values.map(f64::from).sum::<f64>() as f32,
                }
            })
            .collect();
        for rank in 0..group.len() {
            let got = download_rank(group, &x, rank);
            let tolerance = if op == ReduceOp::Sum { 1e-6 } else { 0.0 };
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= tolerance, "{op:?} on rank {rank}: {g} vs {w}");
            }
        }
    }
    // rows 2..4 only: the others keep each rank's own values
    let mut x = replicated_per_rank(group, dims);
    group.all_reduce_rows(&mut x, 2..4, ReduceOp::Max).unwrap().wait().unwrap();
    for rank in 0..group.len() {
        let got = download_rank(group, &x, rank);
        let own = rank_values(rank, 35);
        assert_eq!(got[..14], own[..14], "rank {rank}: rows before the range are untouched");
        assert_eq!(got[28..], own[28..], "rank {rank}: rows after the range are untouched");
        let max = (0..group.len()).map(|r| rank_values(r, 35)[14]).fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(got[14], max);
    }
    // integers and bf16 go through the same path
    let mut counts = group.sharded_zeros::<i32>([3], Sharding::Replicated).unwrap();
    for rank in 0..group.len() {
        *counts.shard_mut(rank) = group.member(rank).upload(&[rank as i32, 1, -2], [3]).unwrap();
    }
    group.all_reduce(&mut counts, ReduceOp::Sum).unwrap().wait().unwrap();
    let n = group.len() as i32;
    assert_eq!(
        group.member(n as usize - 1).download(counts.shard(n as usize - 1)).unwrap(),
        vec![n * (n - 1) / 2, n, -2 * n]
    );
    let mut halves = group.sharded_zeros::<bf16>([2], Sharding::Replicated).unwrap();
    for rank in 0..group.len() {
        let values = [bf16::from_f32(0.5), bf16::from_f32(rank as f32)];
        *halves.shard_mut(rank) = group.member(rank).upload(&values, [2]).unwrap();
    }
    group.all_reduce(&mut halves, ReduceOp::Sum).unwrap().wait().unwrap();
    let got = group.member(0).download(halves.shard(0)).unwrap();
    assert_eq!(got, vec![bf16::from_f32(0.5 * group.len() as f32), bf16::from_f32(((n - 1) * n / 2) as f32)]);
}

fn all_gather_lands_every_shard_on_every_rank(group: &DeviceGroup, _: Scale) {
    let cols = 6;
    for rows in row_counts(group) {
        let host = random_floats(rows * cols, rows as u64);
        let x = group.shard(&host, [rows, cols], Sharding::Rows).unwrap();
        let mut out = group.sharded_zeros::<f32>([rows, cols], Sharding::Replicated).unwrap();
        group.take_collective_log();
        group.all_gather(&x, &mut out).unwrap().wait().unwrap();
        for rank in 0..group.len() {
            assert_eq!(download_rank(group, &out, rank), host, "{rows} rows, rank {rank}");
        }
        let log = group.take_collective_log();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].collective, Collective::AllGather);
        assert_eq!(log[0].native, rows % group.len() == 0, "{rows} rows: one NCCL all-gather only for equal shards");
        let ranges: Vec<Range<usize>> = (0..group.len()).map(|rank| x.range(rank)).collect();
        assert_eq!(log[0].rows, ranges);
    }
    // local row 1 of each shard only
    let rows = group.len() * 3;
    let host = random_floats(rows * cols, 5);
    let x = group.shard(&host, [rows, cols], Sharding::Rows).unwrap();
    let mut out = group.sharded_zeros::<f32>([rows, cols], Sharding::Replicated).unwrap();
    group.all_gather_rows(&x, &mut out, 1..2).unwrap().wait().unwrap();
    let got = download_rank(group, &out, group.len() - 1);
    for row in 0..rows {
        let want = if row % 3 == 1 { host[row * cols..(row + 1) * cols].to_vec() } else { vec![0.0; cols] };
        assert_eq!(got[row * cols..(row + 1) * cols], want[..], "row {row}");
    }
}

fn reduce_scatter_leaves_each_rank_its_reduced_rows(group: &DeviceGroup, _: Scale) {
    let cols = 5;
    for rows in row_counts(group) {
        let x = replicated_per_rank(group, [rows, cols]);
        let mut out = group.sharded_zeros::<f32>([rows, cols], Sharding::Rows).unwrap();
        group.take_collective_log();
        group.reduce_scatter(&x, &mut out, ReduceOp::Sum).unwrap().wait().unwrap();
        let want: Vec<f64> = (0..rows * cols)
            .map(|i| (0..group.len()).map(|rank| f64::from(rank_values(rank, rows * cols)[i])).sum())
            .collect();
        let got = group.gather(&out).unwrap();
        assert!(relative_error(&got, &want) < 1e-6, "{rows} rows");
        let log = group.take_collective_log();
        assert_eq!(log[0].collective, Collective::ReduceScatter(ReduceOp::Sum));
        assert_eq!(log[0].native, rows % group.len() == 0);
    }
}

/// SGEMM kernels for the shapes of `scale`: the simulation runs the small V1, the GPUs V13
/// (what the multi-GPU benchmark runs) and V6.
fn sgemm_kernels(scale: Scale) -> Vec<&'static KernelDefinition> {
    match scale {
        Scale::Simulated => vec![&sgemm::sgemm_v1::KERNEL],
        Scale::Gpus => vec![&sgemm::sgemm_v6::KERNEL, &sgemm::sgemm_v13::KERNEL],
    }
}

fn gemm_shapes(scale: Scale) -> Vec<(usize, usize, usize)> {
    match scale {
        Scale::Simulated => vec![(1, 3, 2), (17, 9, 13), (20, 17, 31)],
        Scale::Gpus => vec![(1, 17, 127), (129, 127, 1000), (1000, 4097, 129), (4097, 129, 1000), (1024, 1024, 4096)],
    }
}

fn row_parallel_gemm_matches_an_f64_reference(group: &DeviceGroup, scale: Scale) {
    for kernel in sgemm_kernels(scale) {
        for (m, n, k) in gemm_shapes(scale) {
            let (a, b, c0) = (random_floats(m * k, 1), random_floats(k * n, 2), random_floats(m * n, 3));
            let a_rows = group.shard(&a, [m, k], Sharding::Rows).unwrap();
            let b_all = group.shard(&b, [k, n], Sharding::Replicated).unwrap();
            let mut c = group.shard(&c0, [m, n], Sharding::Rows).unwrap();
            parallel::gemm_rows(group, kernel, &a_rows, &b_all, &mut c, 1.5, -0.5).unwrap();
            let want = gemm_reference(&a, &b, &c0, (m, n, k), 1.5, -0.5);
            let error = relative_error(&group.gather(&c).unwrap(), &want);
            assert!(error < 1e-5, "{} {m}×{n}×{k}: relative error {error:.2e}", kernel.name());
        }
    }
}

fn k_split_gemm_matches_an_f64_reference_and_overlaps_by_chunks(group: &DeviceGroup, scale: Scale) {
    for kernel in sgemm_kernels(scale) {
        for (m, n, k) in gemm_shapes(scale) {
            let (a, b) = (random_floats(m * k, 4), random_floats(k * n, 5));
            let a_columns = group.shard(&a, [m, k], Sharding::Columns).unwrap();
            let b_rows = group.shard(&b, [k, n], Sharding::Rows).unwrap();
            let want = gemm_reference(&a, &b, &vec![0.0; m * n], (m, n, k), 0.75, 0.0);
            for chunks in [1, 3] {
                let mut c = group.sharded_zeros::<f32>([m, n], Sharding::Rows).unwrap();
                let mut gemm = parallel::KSplitGemm::<f32>::new(group, [m, n], chunks).unwrap();
                group.take_collective_log();
                gemm.run(group, kernel, &a_columns, &b_rows, &mut c, 0.75).unwrap();
                let error = relative_error(&group.gather(&c).unwrap(), &want);
                assert!(error < 1e-5, "{} {m}×{n}×{k}, {chunks} chunks: relative error {error:.2e}", kernel.name());
                // one reduce-scatter per slice of rows, in order, together covering every rank's rows
                let log = group.take_collective_log();
                let longest = (0..group.len()).map(|rank| c.range(rank).len()).max().unwrap();
                assert_eq!(log.len(), chunks.min(longest.max(1)), "{m}×{n}×{k}: one reduce-scatter per chunk");
                for rank in 0..group.len() {
                    let mut next = c.range(rank).start;
                    for record in &log {
                        assert_eq!(record.collective, Collective::ReduceScatter(ReduceOp::Sum));
                        assert_eq!(record.rows[rank].start, next, "chunks follow each other on rank {rank}");
                        next = record.rows[rank].end;
                    }
                    assert_eq!(next, c.range(rank).end, "the chunks cover rank {rank}'s rows");
                }
            }
        }
    }
}

fn k_split_gemm_takes_bf16_tensor_core_kernels(group: &DeviceGroup, scale: Scale) {
    let (m, n, k) = if scale == Scale::Simulated { (17, 16, 48) } else { (1000, 1024, 4097) };
    let kernel = hgemm::ALL_BF16[hgemm::ALL_BF16.len() - 1];
    let (a, b): (Vec<bf16>, Vec<bf16>) = (
        random_floats(m * k, 6).into_iter().map(bf16::from_f32).collect(),
        random_floats(k * n, 7).into_iter().map(bf16::from_f32).collect(),
    );
    let widen = |x: &[bf16]| x.iter().map(|v| v.to_f32()).collect::<Vec<f32>>();
    let want = gemm_reference(&widen(&a), &widen(&b), &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    let a_columns = group.shard(&a, [m, k], Sharding::Columns).unwrap();
    let b_rows = group.shard(&b, [k, n], Sharding::Rows).unwrap();
    let mut c = group.sharded_zeros::<f32>([m, n], Sharding::Rows).unwrap();
    let mut gemm = parallel::KSplitGemm::<f32>::new(group, [m, n], 2).unwrap();
    gemm.run(group, kernel, &a_columns, &b_rows, &mut c, 1.0).unwrap();
    let error = relative_error(&group.gather(&c).unwrap(), &want);
    assert!(error < 1e-5, "{} {m}×{n}×{k}: relative error {error:.2e}", kernel.name());
}

/// bf16 C from a 16-bit-output kernel: each device's partial C is bf16 (half the bytes to
/// reduce-scatter) and the collective sums bf16 — within a few of bf16's units of the largest
/// element of C, where an f32 partial would be exact to 1e-5.
fn k_split_gemm_reduces_bf16_partials_into_bf16_c(group: &DeviceGroup, scale: Scale) {
    let (m, n, k) = if scale == Scale::Simulated { (24, 16, 64) } else { (1000, 1024, 4096) };
    let kernel = &hgemm::hgemm_v11_bf16_to_bf16::KERNEL;
    let (a, b): (Vec<bf16>, Vec<bf16>) = (
        random_floats(m * k, 8).into_iter().map(bf16::from_f32).collect(),
        random_floats(k * n, 9).into_iter().map(bf16::from_f32).collect(),
    );
    let widen = |x: &[bf16]| x.iter().map(|v| v.to_f32()).collect::<Vec<f32>>();
    let want = gemm_reference(&widen(&a), &widen(&b), &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    let a_columns = group.shard(&a, [m, k], Sharding::Columns).unwrap();
    let b_rows = group.shard(&b, [k, n], Sharding::Rows).unwrap();
    let mut c = group.sharded_zeros::<bf16>([m, n], Sharding::Rows).unwrap();
    let mut gemm = parallel::KSplitGemm::<bf16>::new(group, [m, n], 2).unwrap();
    gemm.run(group, kernel, &a_columns, &b_rows, &mut c, 1.0).unwrap();
    let got = group.gather(&c).unwrap();
    let largest = want.iter().fold(0.0f64, |l, w| l.max(w.abs()));
    let worst = got.iter().zip(&want).map(|(g, w)| (f64::from(g.to_f32()) - w).abs()).fold(0.0, f64::max);
    // one rounding of each partial and of each sum along the ring: 2^-8 relative each
    let units = worst / largest / 2f64.powi(-8);
    assert!(units < f64::from(group.len() as u32 + 1), "{m}×{n}×{k}: {units:.2} units of bf16 off");
    // C really is bf16: rounded, it cannot equal the f64 product everywhere
    assert!(worst > 0.0, "bf16 C cannot match the f64 product exactly here");
}

fn data_parallel_sum_matches_the_host_sum(group: &DeviceGroup, scale: Scale) {
    let lengths: &[usize] = if scale == Scale::Simulated { &[1, 1000, 4099] } else { &[1, 4099, 1 << 24] };
    for &len in lengths {
        let host = random_floats(len, len as u64);
        let x = group.shard(&host, [len], Sharding::Rows).unwrap();
        let got = parallel::sum(group, &x).unwrap();
        let want: f64 = host.iter().map(|&v| f64::from(v)).sum();
        let scale_of_terms: f64 = host.iter().map(|&v| f64::from(v.abs())).sum();
        assert!((f64::from(got) - want).abs() <= 1e-6 * scale_of_terms.max(1.0), "{len}: {got} vs {want}");
    }
}

fn wrong_layouts_are_typed_errors(group: &DeviceGroup, _: Scale) {
    let x = group.shard(&[1.0f32; 12], [4, 3], Sharding::Rows).unwrap();
    let mut out = group.sharded_zeros::<f32>([4, 3], Sharding::Rows).unwrap();
    // all-gather wants a replicated output
    let error = group.all_gather(&x, &mut out).err().expect("a row-split output is refused");
    assert!(
        matches!(error, Error::ShardingMismatch { expected: Sharding::Replicated, found: Sharding::Rows, .. }),
        "{error}"
    );
    // shapes must agree
    let mut other = group.sharded_zeros::<f32>([4, 2], Sharding::Replicated).unwrap();
    assert!(matches!(group.all_gather(&x, &mut other), Err(Error::CollectiveShapes { .. })));
    // rows outside the tensor
    let mut replicated = group.sharded_zeros::<f32>([4, 3], Sharding::Replicated).unwrap();
    assert!(matches!(
        group.all_reduce_rows(&mut replicated, 3..5, ReduceOp::Sum),
        Err(Error::CollectiveRows { total: 4, .. })
    ));
    // a GEMM whose operands do not chain
    let b = group.shard(&[1.0f32; 6], [2, 3], Sharding::Replicated).unwrap();
    let mut c = group.sharded_zeros::<f32>([4, 3], Sharding::Rows).unwrap();
    let error = parallel::gemm_rows(group, &sgemm::sgemm_v1::KERNEL, &x, &b, &mut c, 1.0, 0.0).err().expect("3 ≠ 2");
    assert!(matches!(error, Error::GemmShape { .. }), "{error}");
    // columns need a matrix
    assert!(matches!(group.shard(&[1.0f32; 4], [4], Sharding::Columns), Err(Error::ShardingShape { .. })));
}

/// A tensor sharded over the same GPUs in another order holds rank 0's rows on GPU 1: a
/// collective of the first group refuses it (NCCL would be handed another device's memory).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_collective_refuses_shards_that_live_on_another_ranks_gpu() {
    let forward = DeviceGroup::gpus(&[0, 1]).unwrap_or_else(|e| panic!("this test needs two CUDA GPUs and NCCL: {e}"));
    let backward = DeviceGroup::gpus(&[1, 0]).unwrap();
    let mut theirs = backward.shard(&[1.0f32; 12], [4, 3], Sharding::Replicated).unwrap();
    let error = forward.all_reduce(&mut theirs, ReduceOp::Sum).err().expect("shards on the other GPUs are refused");
    assert!(matches!(&error, Error::WrongDevice { param, .. } if param.contains("rank 0")), "{error}");
    // and the same tensor in its own group reduces
    backward.all_reduce(&mut theirs, ReduceOp::Sum).unwrap().wait().unwrap();
    assert_eq!(backward.gather(&theirs).unwrap(), vec![2.0f32; 12]);
}

#[test]
fn a_group_names_each_gpu_once_and_is_never_empty() {
    assert!(matches!(DeviceGroup::gpus(&[0, 1, 0]), Err(Error::DuplicateGpu { ordinal: 0 })));
    assert!(matches!(DeviceGroup::gpus(&[]), Err(Error::EmptyGroup)));
    assert!(matches!(DeviceGroup::simulated(0), Err(Error::EmptyGroup)));
    let group = DeviceGroup::simulated(2).unwrap();
    assert_eq!(group.to_string(), "2 simulated devices (in-process collectives)");
}
