//! The CPU simulation on raw CUDA C: the bugs tiled kernels really have (a missing barrier,
//! an off-by-one tail, a wrong thread index, a barrier not every thread reaches) are caught
//! and named; shuffles, votes, atomics and shared memory behave as on a GPU; faults, traps
//! and asserts in a kernel are errors, not a dead test process; a tiled SGEMM runs in well
//! under a second. All of it runs in CI, without a GPU.

use std::time::Duration;

use tessera::{Argument, DiskCache, Error, Order, Simulator};

const TWO_ORDERS: &[Order] = &[Order::Forward, Order::Reverse];
const THREE_ORDERS: &[Order] = &[Order::Forward, Order::Reverse, Order::Shuffled { seed: 2024 }];

fn simulator() -> Simulator {
    Simulator::new().unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"))
}

fn ramp(len: usize) -> Vec<f32> {
    (0..len).map(|i| (i % 97) as f32 * 0.25 - 3.0).collect()
}

/// Each thread stages its element in shared memory and reads its right neighbour's:
/// `y[i] = x[i] + x[i + 1]` within each block of 256 (the last thread wraps to the first).
fn neighbour_sum(with_barrier: bool) -> String {
    format!(
        r#"
extern "C" __global__ void neighbour_sum(const float* __restrict__ x, float* __restrict__ y, int n)
{{
    __shared__ float staged[256];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * 256 + tid;
    staged[tid] = i < n ? x[i] : 0.0f;
    {barrier}
    if (i < n) y[i] = staged[tid] + staged[(tid + 1) % 256];
}}
"#,
        barrier = if with_barrier { "__syncthreads();" } else { "" }
    )
}

fn neighbour_sum_reference(x: &[f32]) -> Vec<f32> {
    (0..x.len())
        .map(|i| {
            let block = i / 256 * 256;
            let next = block + (i - block + 1) % 256;
            x[i] + x.get(next).copied().unwrap_or(0.0)
        })
        .collect()
}

fn run_neighbour_sum(sim: &Simulator, with_barrier: bool, n: usize, orders: &[Order]) -> Result<Vec<f32>, Error> {
    let x = sim.upload(&ramp(n), [n])?;
    let mut y = sim.filled([n], f32::NAN)?;
    sim.run_source(
        &neighbour_sum(with_barrier),
        "neighbour_sum",
        &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("n", n as i32)],
        [n.div_ceil(256) as u32, 1, 1],
        [256, 1, 1],
        orders,
    )?;
    sim.download(&y)
}

#[test]
fn a_missing_barrier_is_reported_as_a_race_naming_the_kernel_and_the_element() {
    match run_neighbour_sum(&simulator(), false, 1000, TWO_ORDERS) {
        Err(Error::Race { kernel, param, first_difference_at, differing, orders, .. }) => {
            assert_eq!((kernel.as_str(), param.as_str()), ("neighbour_sum", "y"));
            assert_eq!(orders, [Order::Forward, Order::Reverse]);
            assert_eq!(first_difference_at, 0, "thread 0 reads thread 1's slot first");
            assert!(differing > 900, "{differing}");
        }
        other => panic!("expected a race, got {other:?}"),
    }
}

#[test]
fn the_same_kernel_with_its_barrier_agrees_under_every_order_and_with_the_cpu() {
    let sim = simulator();
    for n in [1, 255, 256, 257, 1000] {
        let got = run_neighbour_sum(&sim, true, n, THREE_ORDERS).unwrap();
        assert_eq!(got, neighbour_sum_reference(&ramp(n)), "n = {n}");
    }
}

#[test]
fn a_single_order_runs_once_and_reports_no_race_even_with_one() {
    // One order is one run: nothing to compare, so the racy kernel "passes" with stale data:
    // the shared memory it reads is poisoned (NaN) before each block, never left over.
    let got = run_neighbour_sum(&simulator(), false, 256, &[Order::Forward]).unwrap();
    assert!(got[0].is_nan(), "thread 0 read thread 1's slot before it was written");
    assert!(!got[255].is_nan(), "the last thread reads slot 0, written before it");
}

/// `neighbour_sum` staged through cp.async (tessera's helpers, as the simulator defines them):
/// each thread copies its element into shared memory (zero past `n`), optionally waits for its
/// copy, then a barrier, then the neighbour read.
fn async_neighbour_sum(with_wait: bool) -> String {
    format!(
        r#"
extern "C" __global__ void async_neighbour_sum(const float* __restrict__ x, float* __restrict__ y, int n)
{{
    __shared__ __align__(16) float staged[256];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * 256 + tid;
    tessera_async_copy<4>(&staged[tid], i < n ? &x[i] : x, i < n ? 4 : 0);
    tessera_async_commit();
    {wait}
    __syncthreads();
    if (i < n) y[i] = staged[tid] + staged[(tid + 1) % 256];
}}
"#,
        wait = if with_wait { "tessera_async_wait<0>();" } else { "" }
    )
}

fn run_async_neighbour_sum(with_wait: bool, n: usize) -> Result<Vec<f32>, Error> {
    let sim = simulator();
    let x = sim.upload(&ramp(n), [n])?;
    let mut y = sim.filled([n], f32::NAN)?;
    sim.run_source(
        &async_neighbour_sum(with_wait),
        "async_neighbour_sum",
        &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("n", n as i32)],
        [n.div_ceil(256) as u32, 1, 1],
        [256, 1, 1],
        TWO_ORDERS,
    )?;
    sim.download(&y)
}

#[test]
fn cp_async_copies_land_at_the_wait_and_zero_fill_what_they_do_not_read() {
    for n in [1, 255, 256, 1000] {
        assert_eq!(run_async_neighbour_sum(true, n).unwrap(), neighbour_sum_reference(&ramp(n)), "n = {n}");
    }
}

#[test]
fn reading_a_cp_async_destination_without_waiting_for_it_is_a_race() {
    // Forward order lands the copies as late as allowed (here: when each thread ends), reverse
    // order at issue: the barrier alone does not make another thread's copy visible.
    match run_async_neighbour_sum(false, 512) {
        Err(Error::Race { kernel, values, .. }) => {
            assert_eq!(kernel, "async_neighbour_sum");
            assert_eq!(values[0], "NaN", "forward order read the poisoned slot: {values:?}");
        }
        other => panic!("expected a race, got {other:?}"),
    }
}

#[test]
fn a_misaligned_16_byte_cp_async_is_stopped_naming_the_addresses() {
    let source = r#"
extern "C" __global__ void misaligned(const float* x, float* y, int k)
{
    __shared__ __align__(16) float staged[8];
    tessera_async_copy<16>(&staged[0], x + k, 16);
    tessera_async_commit();
    tessera_async_wait<0>();
    y[threadIdx.x] = staged[threadIdx.x % 4];
}
"#;
    let sim = simulator();
    let x = sim.upload(&ramp(16), [16]).unwrap();
    let mut y = sim.filled([1], f32::NAN).unwrap();
    let result = sim.run_source(
        source,
        "misaligned",
        &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("k", 1)],
        [1, 1, 1],
        [1, 1, 1],
        TWO_ORDERS,
    );
    match result {
        Err(Error::SimTrap { message, .. }) => assert!(message.contains("misaligned"), "{message}"),
        other => panic!("expected a trap, got {other:?}"),
    }
}

const COPY_TAIL: &str = r#"
extern "C" __global__ void copy_tail(const float* __restrict__ x, float* __restrict__ y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = x[i];   // off by one: i == n is past the end
}
"#;

#[test]
fn an_off_by_one_tail_write_is_reported_out_of_bounds_at_the_first_missing_element() {
    let sim = simulator();
    for n in [1usize, 255, 257, 1025] {
        let x = sim.upload(&ramp(n), [n]).unwrap();
        let mut y = sim.zeros::<f32>([n]).unwrap();
        let result = sim.run_source(
            COPY_TAIL,
            "copy_tail",
            &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("n", n as i32)],
            [n.div_ceil(256) as u32 + 1, 1, 1],
            [256, 1, 1],
            TWO_ORDERS,
        );
        match result {
            Err(Error::OutOfBounds { kernel, param, element, len }) => {
                assert_eq!((kernel.as_str(), param.as_str()), ("copy_tail", "y"));
                assert_eq!((element, len), (n as i64, n));
            }
            other => panic!("n = {n}: expected an out-of-bounds write, got {other:?}"),
        }
    }
}

/// Each thread writes one row of a `rows × cols` matrix whose rows are `ld` apart, to
/// column `last` (exclusive): `cols` stays inside the view, `ld` writes the gaps too.
const FILL_ROWS: &str = r#"
extern "C" __global__ void fill_rows(float* __restrict__ y, int rows, int last, int ld)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        for (int c = 0; c < last; ++c) y[r * ld + c] = 1.0f + r;
    }
}
"#;

#[test]
fn a_kernel_writing_only_inside_its_view_leaves_the_rest_of_the_parent_as_it_was() {
    let sim = simulator();
    let (parent_rows, parent_cols) = (40, 29);
    let before = ramp(parent_rows * parent_cols);
    let mut parent = sim.upload(&before, [parent_rows, parent_cols]).unwrap();
    let (rows, cols) = (31, 17);
    let mut view = parent.submatrix_mut(5..5 + rows, 3..3 + cols).unwrap();
    sim.run_source(
        FILL_ROWS,
        "fill_rows",
        &mut [
            Argument::output("y", &mut view),
            Argument::scalar("rows", rows as i32),
            Argument::scalar("last", cols as i32),
            Argument::scalar("ld", parent_cols as i32),
        ],
        [1, 1, 1],
        [64, 1, 1],
        TWO_ORDERS,
    )
    .unwrap();
    assert_eq!(sim.download(&view).unwrap(), (0..rows * cols).map(|i| 1.0 + (i / cols) as f32).collect::<Vec<_>>());
    let after = sim.download(&parent).unwrap();
    for (i, (got, was)) in after.iter().zip(&before).enumerate() {
        let (r, c) = (i / parent_cols, i % parent_cols);
        if !(5..5 + rows).contains(&r) || !(3..3 + cols).contains(&c) {
            assert_eq!(got, was, "parent element ({r}, {c}), outside the view, changed");
        }
    }
}

#[test]
fn a_write_between_the_rows_of_a_view_is_an_error_and_undone() {
    let sim = simulator();
    let (parent_rows, parent_cols) = (12, 10);
    let before = ramp(parent_rows * parent_cols);
    let mut parent = sim.upload(&before, [parent_rows, parent_cols]).unwrap();
    let (rows, cols) = (6, 7);
    let mut view = parent.submatrix_mut(2..2 + rows, 1..1 + cols).unwrap();
    // wrong: each row is written up to the leading dimension, into the parent's next row
    let result = sim.run_source(
        FILL_ROWS,
        "fill_rows",
        &mut [
            Argument::output("y", &mut view),
            Argument::scalar("rows", rows as i32),
            Argument::scalar("last", parent_cols as i32),
            Argument::scalar("ld", parent_cols as i32),
        ],
        [1, 1, 1],
        [32, 1, 1],
        TWO_ORDERS,
    );
    match result {
        Err(error @ Error::OutsideView { .. }) => {
            let text = error.to_string();
            let Error::OutsideView { kernel, param, offset, rows: r, cols: c, ld } = error else { unreachable!() };
            assert_eq!((kernel.as_str(), param.as_str()), ("fill_rows", "y"));
            // row 0's columns 7, 8 and 9 of the view are parent columns 8, 9 and row 3's 0
            assert_eq!((offset, r, c, ld), (7, rows, cols, parent_cols));
            assert!(text.contains("outside its view, at element 7"), "{text}");
        }
        other => panic!("expected a write outside the view, got {other:?}"),
    }
    // the simulator restored what the kernel wrote outside the view
    let after = sim.download(&parent).unwrap();
    for (i, (got, was)) in after.iter().zip(&before).enumerate() {
        let (r, c) = (i / parent_cols, i % parent_cols);
        if !(2..2 + rows).contains(&r) || !(1..1 + cols).contains(&c) {
            assert_eq!(got, was, "parent element ({r}, {c}) was left changed");
        }
    }
}

const WRONG_INDEX: &str = r#"
extern "C" __global__ void copy_wrong_index(const float* __restrict__ x, float* __restrict__ y, int n)
{
    // Wrong: two threads per element (and half the elements never written).
    const int i = blockIdx.x * blockDim.x + threadIdx.x / 2;
    if (i < n) y[i] = x[blockIdx.x * blockDim.x + threadIdx.x < n ? blockIdx.x * blockDim.x + threadIdx.x : i];
}
"#;

#[test]
fn a_wrong_thread_index_is_reported_as_a_race_between_the_threads_that_share_an_element() {
    let sim = simulator();
    let n = 512;
    let x = sim.upload(&ramp(n), [n]).unwrap();
    let mut y = sim.zeros::<f32>([n]).unwrap();
    let result = sim.run_source(
        WRONG_INDEX,
        "copy_wrong_index",
        &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("n", n as i32)],
        [2, 1, 1],
        [256, 1, 1],
        TWO_ORDERS,
    );
    match result {
        Err(Error::Race { kernel, first_difference_at, values, .. }) => {
            assert_eq!(kernel, "copy_wrong_index");
            assert_eq!(first_difference_at, 0);
            // forward: thread 1 writes last (x[1]); reverse: thread 0 does (x[0]).
            assert_eq!(values, ["-2.75".to_string(), "-3.0".to_string()]);
        }
        other => panic!("expected a race, got {other:?}"),
    }
}

#[test]
fn outputs_that_depend_on_the_order_of_blocks_are_a_race() {
    let source = r#"
extern "C" __global__ void last_block_wins(int* out)
{
    if (threadIdx.x == 0) out[0] = blockIdx.x;
}
"#;
    let sim = simulator();
    let mut out = sim.zeros::<i32>([1]).unwrap();
    let result = sim.run_source(
        source,
        "last_block_wins",
        &mut [Argument::output("out", &mut out)],
        [8, 1, 1],
        [32, 1, 1],
        TWO_ORDERS,
    );
    assert!(
        matches!(&result, Err(Error::Race { values, .. }) if values == &["7".to_string(), "0".to_string()]),
        "{result:?}"
    );
}

#[test]
fn a_barrier_that_some_threads_skip_is_reported_not_waited_on_forever() {
    let source = r#"
extern "C" __global__ void early_exit(const float* x, float* y, int n)
{
    __shared__ float s[128];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;            // the tail's threads leave before the barrier
    s[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = s[(threadIdx.x + 1) % blockDim.x];
}
"#;
    let sim = simulator();
    let n = 200;
    let x = sim.upload(&ramp(n), [n]).unwrap();
    let mut y = sim.zeros::<f32>([n]).unwrap();
    let result = sim.run_source(
        source,
        "early_exit",
        &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("n", n as i32)],
        [2, 1, 1],
        [128, 1, 1],
        TWO_ORDERS,
    );
    match result {
        Err(error @ Error::BarrierDivergence { .. }) => {
            let Error::BarrierDivergence { ref kernel, block, waiting, finished, finished_thread } = error else {
                unreachable!()
            };
            assert_eq!(kernel, "early_exit");
            assert_eq!(block, [1, 0, 0]);
            assert_eq!((waiting, finished), (72, 56));
            assert!(finished_thread[0] >= 72);
            assert!(error.to_string().contains("__syncthreads"), "{error}");
        }
        other => panic!("expected barrier divergence, got {other:?}"),
    }
}

const WARP_SUM: &str = r#"
extern "C" __global__ void warp_sums(const int* __restrict__ x, int* __restrict__ sums,
                                     unsigned* __restrict__ ballots, int* __restrict__ flags)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned lanes = __activemask();
    // A partial warp (16 lanes here) starts at half its width: no lane reads a missing one.
    const int width = min(32, (int)blockDim.x - warp * 32);
    int v = x[i];
    for (int offset = width / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(lanes, v, offset);        // lane 0 ends with the warp's sum
    int all = x[i];
    for (int mask = width / 2; mask > 0; mask >>= 1)
        all += __shfl_xor_sync(lanes, all, mask);       // every lane ends with it
    const int last = __shfl_sync(lanes, x[i], width - 1); // the last lane's element, everywhere
    const unsigned odd = __ballot_sync(lanes, x[i] % 2 != 0);
    const int any_big = __any_sync(lanes, x[i] > 97);
    const int all_small = __all_sync(lanes, x[i] <= 98);
    const int slot = blockIdx.x * (blockDim.x / 32 + 1) + warp;
    if (lane == 0) {
        sums[slot] = v;
        ballots[slot] = odd;
        flags[slot] = (all == v) + 2 * (last == x[i + width - 1]) + 4 * any_big + 8 * all_small;
    }
}
"#;

#[test]
fn warp_shuffles_and_votes_exchange_exactly_the_lanes_values_in_full_and_partial_warps() {
    let sim = simulator();
    // 48 threads per block: one full warp and one of 16 lanes.
    let (blocks, threads) = (3usize, 48usize);
    let host: Vec<i32> = (0..blocks * threads).map(|i| ((i * 37) % 100) as i32).collect();
    let x = sim.upload(&host, [host.len()]).unwrap();
    let slots = blocks * (threads / 32 + 1);
    let mut sums = sim.filled([slots], -1i32).unwrap();
    let mut ballots = sim.zeros::<u32>([slots]).unwrap();
    let mut flags = sim.zeros::<i32>([slots]).unwrap();
    sim.run_source(
        WARP_SUM,
        "warp_sums",
        &mut [
            Argument::input("x", &x),
            Argument::output("sums", &mut sums),
            Argument::output("ballots", &mut ballots),
            Argument::output("flags", &mut flags),
        ],
        [blocks as u32, 1, 1],
        [threads as u32, 1, 1],
        THREE_ORDERS,
    )
    .unwrap();
    let (sums, ballots, flags) =
        (sim.download(&sums).unwrap(), sim.download(&ballots).unwrap(), sim.download(&flags).unwrap());
    // the votes must differ between warps, or a constant vote would pass
    let (mut any_seen, mut all_seen) = (Vec::new(), Vec::new());
    for block in 0..blocks {
        for (warp, range) in [(0usize, 0..32usize), (1, 32..48)] {
            let lanes = &host[block * threads + range.start..block * threads + range.end];
            let slot = block * 2 + warp;
            assert_eq!(sums[slot], lanes.iter().sum::<i32>(), "block {block} warp {warp}");
            let odd = lanes.iter().enumerate().filter(|(_, v)| *v % 2 != 0).fold(0u32, |m, (l, _)| m | 1 << l);
            assert_eq!(ballots[slot], odd, "block {block} warp {warp}");
            let any_big = lanes.iter().any(|&v| v > 97) as i32;
            let all_small = lanes.iter().all(|&v| v <= 98) as i32;
            assert_eq!(flags[slot], 1 + 2 + 4 * any_big + 8 * all_small, "block {block} warp {warp}");
            any_seen.push(any_big);
            all_seen.push(all_small);
        }
    }
    assert!(any_seen.contains(&0) && any_seen.contains(&1), "__any_sync inputs do not vary: {any_seen:?}");
    assert!(all_seen.contains(&0) && all_seen.contains(&1), "__all_sync inputs do not vary: {all_seen:?}");
}

#[test]
fn a_warp_op_waiting_for_a_lane_that_finished_is_reported() {
    let source = r#"
extern "C" __global__ void half_warp_sync(int* out)
{
    if (threadIdx.x % 32 >= 16) return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}
"#;
    let sim = simulator();
    let mut out = sim.zeros::<i32>([64]).unwrap();
    match sim.run_source(
        source,
        "half_warp_sync",
        &mut [Argument::output("out", &mut out)],
        [1, 1, 1],
        [64, 1, 1],
        TWO_ORDERS,
    ) {
        Err(Error::WarpDivergence { kernel, missing_thread, mask, detail, .. }) => {
            assert_eq!(kernel, "half_warp_sync");
            assert_eq!(mask, 0xffff_ffff);
            assert_eq!(missing_thread, [16, 0, 0]);
            assert!(detail.contains("has finished"), "{detail}");
        }
        other => panic!("expected warp divergence, got {other:?}"),
    }
}

#[test]
fn atomics_accumulate_exactly_and_shared_memory_is_per_block() {
    let source = r#"
extern "C" __global__ void histogram(const int* __restrict__ x, unsigned* __restrict__ bins,
                                     int* __restrict__ maxima, int n)
{
    __shared__ unsigned local[8];
    if (threadIdx.x < 8) local[threadIdx.x] = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&local[x[i] % 8], 1u);
        atomicMax(&maxima[0], x[i]);
    }
    __syncthreads();
    if (threadIdx.x < 8) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
"#;
    let sim = simulator();
    let n = 1000;
    let host: Vec<i32> = (0..n).map(|i| (i * 7919 % 1009) as i32).collect();
    let x = sim.upload(&host, [n]).unwrap();
    let mut bins = sim.zeros::<u32>([8]).unwrap();
    let mut maxima = sim.filled([1], i32::MIN).unwrap();
    sim.run_source(
        source,
        "histogram",
        &mut [
            Argument::input("x", &x),
            Argument::output("bins", &mut bins),
            Argument::output("maxima", &mut maxima),
            Argument::scalar("n", n as i32),
        ],
        [4, 1, 1],
        [256, 1, 1],
        THREE_ORDERS,
    )
    .unwrap();
    let mut want = [0u32; 8];
    for v in &host {
        want[(*v % 8) as usize] += 1;
    }
    assert_eq!(sim.download(&bins).unwrap(), want);
    assert_eq!(sim.download(&maxima).unwrap(), [*host.iter().max().unwrap()]);
}

/// C = A·B, 16×16 tiles staged in shared memory, two barriers per step; any shape.
fn tiled_sgemm(second_barrier: bool) -> String {
    format!(
        r#"
extern "C" __global__ void __launch_bounds__(256)
sgemm_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
            const int M, const int N, const int K)
{{
    constexpr int T = 16;
    __shared__ float a_s[T][T];
    __shared__ float b_s[T][T + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {{
        a_s[ty][tx] = (row < M && k0 + tx < K) ? a[row * K + k0 + tx] : 0.0f;
        b_s[ty][tx] = (k0 + ty < K && col < N) ? b[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < T; ++k) acc = fmaf(a_s[ty][k], b_s[k][tx], acc);
        {barrier}
    }}
    if (row < M && col < N) c[row * N + col] = acc;
}}
"#,
        barrier = if second_barrier { "__syncthreads();" } else { "" }
    )
}

fn sgemm(
    sim: &Simulator,
    source: &str,
    (m, n, k): (usize, usize, usize),
    orders: &[Order],
) -> Result<(Vec<f32>, Vec<f32>, Duration), Error> {
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 13) % 17) as f32 * 0.125 - 1.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 7) % 11) as f32 * 0.25 - 1.25).collect();
    let a_t = sim.upload(&a, [m, k])?;
    let b_t = sim.upload(&b, [k, n])?;
    let mut c_t = sim.filled([m, n], f32::NAN)?;
    let run = sim.run_source(
        source,
        "sgemm_tiled",
        &mut [
            Argument::input("a", &a_t),
            Argument::input("b", &b_t),
            Argument::output("c", &mut c_t),
            Argument::scalar("M", m as i32),
            Argument::scalar("N", n as i32),
            Argument::scalar("K", k as i32),
        ],
        [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1],
        [16, 16, 1],
        orders,
    )?;
    // The same sums in the same order (k ascending, one fused multiply-add each).
    let mut want = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for p in 0..k {
                acc = a[i * k + p].mul_add(b[p * n + j], acc);
            }
            want[i * n + j] = acc;
        }
    }
    Ok((sim.download(&c_t)?, want, run.elapsed))
}

#[test]
fn a_256_cubed_tiled_sgemm_runs_in_well_under_a_second_per_order_and_matches_bitwise() {
    let sim = simulator();
    let (got, want, elapsed) = sgemm(&sim, &tiled_sgemm(true), (256, 256, 256), TWO_ORDERS).unwrap();
    assert!(
        got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()),
        "the simulated SGEMM differs from the CPU's"
    );
    // 256 blocks × 256 threads × 33 barrier phases, twice: about 0.2 s on one core.
    assert!(elapsed < Duration::from_secs(4), "256³ SGEMM took {elapsed:?} under two orders");
}

#[test]
fn a_tiled_sgemm_handles_ragged_shapes() {
    let sim = simulator();
    for shape in [(1, 1, 1), (17, 33, 5), (31, 1, 47), (64, 48, 15)] {
        let (got, want, _) = sgemm(&sim, &tiled_sgemm(true), shape, THREE_ORDERS).unwrap();
        assert_eq!(got, want, "shape {shape:?}");
    }
}

#[test]
fn a_tiled_sgemm_without_its_second_barrier_is_a_race() {
    // The next step's staging overwrites tiles that slower threads still read.
    let result = sgemm(&simulator(), &tiled_sgemm(false), (64, 64, 64), TWO_ORDERS);
    assert!(
        matches!(&result, Err(Error::Race { kernel, param, .. }) if kernel == "sgemm_tiled" && param == "c"),
        "{result:?}"
    );
}

#[test]
fn inline_ptx_is_refused_naming_the_feature_and_line() {
    let source = r#"
extern "C" __global__ void lane_ids(unsigned* out)
{
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = lane;
}
"#;
    let sim = simulator();
    let mut out = sim.zeros::<u32>([32]).unwrap();
    let error = sim
        .run_source(source, "lane_ids", &mut [Argument::output("out", &mut out)], [1, 1, 1], [32, 1, 1], TWO_ORDERS)
        .unwrap_err();
    match &error {
        Error::SimUnsupported { kernel, feature, line, .. } => {
            assert_eq!((kernel.as_str(), *line), ("lane_ids", 5));
            assert!(feature.contains("asm"), "{feature}");
        }
        other => panic!("expected SimUnsupported, got {other:?}"),
    }
    assert!(error.to_string().contains("run it on a GPU"), "{error}");
}

fn run_one(source: &str, kernel: &str, scalar: i32) -> Result<Vec<f32>, Error> {
    let sim = simulator();
    let mut y = sim.zeros::<f32>([64]).unwrap();
    sim.run_source(
        source,
        kernel,
        &mut [Argument::output("y", &mut y), Argument::scalar("k", scalar)],
        [1, 1, 1],
        [64, 1, 1],
        TWO_ORDERS,
    )?;
    sim.download(&y)
}

#[test]
fn a_wild_write_before_a_tensor_is_a_fault_naming_the_tensor_not_a_crash() {
    let source = r#"
extern "C" __global__ void wild(float* y, int k)
{
    if (threadIdx.x == 3) y[k] = 1.0f;
}
"#;
    match run_one(source, "wild", -1000) {
        Err(Error::SimFault { kernel, thread, signal, near, .. }) => {
            assert_eq!(kernel, "wild");
            assert_eq!(thread, [3, 0, 0]);
            assert!(signal.starts_with("SIGSEGV"), "{signal}");
            assert_eq!(near, "`y`: 4000 bytes before its first element");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // The process and the simulator are fine afterwards.
    let ok = run_one("extern \"C\" __global__ void tame(float* y, int k) { y[threadIdx.x] = k; }", "tame", 5).unwrap();
    assert!(ok.iter().all(|&v| v == 5.0));
}

#[test]
fn a_null_pointer_write_and_a_division_by_zero_are_faults() {
    let null = r#"
extern "C" __global__ void null_write(float* y, int k)
{
    float* p = k == 0 ? nullptr : y;
    p[threadIdx.x] = 1.0f;
}
"#;
    assert!(
        matches!(run_one(null, "null_write", 0), Err(Error::SimFault { ref near, .. }) if near == "not near any tensor argument")
    );
    let divide = r#"
extern "C" __global__ void divide(float* y, int k)
{
    y[threadIdx.x] = (float)(100 / (k + (int)threadIdx.x % 2));
}
"#;
    match run_one(divide, "divide", 0) {
        Err(Error::SimFault { signal, thread, .. }) => {
            assert!(signal.starts_with("SIGFPE"), "{signal}");
            assert_eq!(thread, [0, 0, 0]);
        }
        other => panic!("expected SIGFPE, got {other:?}"),
    }
}

#[test]
fn a_thread_that_overflows_its_stack_is_reported() {
    let source = r#"
extern "C" __global__ void deep(float* y, int k)
{
    volatile float big[1 << 16];     // 256 KiB of locals: more than a simulated stack
    big[k] = 1.0f;
    big[(1 << 16) - 1] = 2.0f;
    y[threadIdx.x] = big[k] + big[(1 << 16) - 1];
}
"#;
    match run_one(source, "deep", 3) {
        Err(error @ Error::StackOverflow { .. }) => {
            assert!(error.to_string().contains("with_stack_bytes"), "{error}")
        }
        other => panic!("expected a stack overflow, got {other:?}"),
    }
    // With a bigger stack it runs.
    let sim = simulator().with_stack_bytes(512 * 1024);
    let mut y = sim.zeros::<f32>([64]).unwrap();
    sim.run_source(
        source,
        "deep",
        &mut [Argument::output("y", &mut y), Argument::scalar("k", 3)],
        [1, 1, 1],
        [64, 1, 1],
        &[Order::Forward],
    )
    .unwrap();
    assert!(sim.download(&y).unwrap().iter().all(|&v| v == 3.0));
}

#[test]
fn a_failed_device_assert_or_trap_stops_the_kernel_with_an_error_naming_the_thread() {
    let source = r#"
#include <assert.h>
extern "C" __global__ void checked(float* y, int k)
{
    assert(threadIdx.x < k);
    y[threadIdx.x] = 1.0f;
}
"#;
    match run_one(source, "checked", 40) {
        Err(Error::SimTrap { thread, message, .. }) => {
            assert_eq!(thread, [40, 0, 0]);
            assert!(message.contains("threadIdx.x < k"), "{message}");
            assert!(message.contains("checked.cu:5"), "{message}");
        }
        other => panic!("expected a failed assert, got {other:?}"),
    }
    let trap = "extern \"C\" __global__ void trap(float* y, int k) { if (threadIdx.x == k) __trap(); }";
    assert!(matches!(run_one(trap, "trap", 9), Err(Error::SimTrap { thread: [9, 0, 0], .. })));
}

#[test]
fn arguments_are_checked_against_the_kernels_own_parameter_types() {
    let source = "extern \"C\" __global__ void ints(const int* x, float* y, int n) { y[0] = x[0] + n; }";
    let sim = simulator();
    let floats = sim.upload(&[1.0f32], [1]).unwrap();
    let ints = sim.upload(&[1i32], [1]).unwrap();
    let mut y = sim.zeros::<f32>([1]).unwrap();
    let grid = ([1, 1, 1], [1, 1, 1]);
    // An f32 tensor where the kernel reads ints.
    let wrong_element = sim.run_source(
        source,
        "ints",
        &mut [Argument::input("x", &floats), Argument::output("y", &mut y), Argument::scalar("n", 1i32)],
        grid.0,
        grid.1,
        TWO_ORDERS,
    );
    assert!(
        matches!(&wrong_element, Err(Error::ArgumentType { position: 0, expected, .. }) if expected == "const i32*"),
        "{wrong_element:?}"
    );
    // A read-only tensor where the kernel may write.
    let mut y2 = sim.zeros::<f32>([1]).unwrap();
    let read_only = sim.run_source(
        source,
        "ints",
        &mut [Argument::input("x", &ints), Argument::input("y", &y2), Argument::scalar("n", 1i32)],
        grid.0,
        grid.1,
        TWO_ORDERS,
    );
    assert!(matches!(&read_only, Err(Error::ArgumentType { position: 1, .. })), "{read_only:?}");
    // A u32 scalar for an int, and too few arguments.
    let scalar = sim.run_source(
        source,
        "ints",
        &mut [Argument::input("x", &ints), Argument::output("y", &mut y2), Argument::scalar("n", 1u32)],
        grid.0,
        grid.1,
        TWO_ORDERS,
    );
    assert!(matches!(&scalar, Err(Error::ArgumentType { position: 2, .. })), "{scalar:?}");
    let count = sim.run_source(source, "ints", &mut [Argument::input("x", &ints)], grid.0, grid.1, TWO_ORDERS);
    assert!(matches!(count, Err(Error::ArgumentCount { given: 1, expected: 3, .. })), "{count:?}");
    // And the right ones run.
    sim.run_source(
        source,
        "ints",
        &mut [Argument::input("x", &ints), Argument::output("y", &mut y), Argument::scalar("n", 41i32)],
        grid.0,
        grid.1,
        TWO_ORDERS,
    )
    .unwrap();
    assert_eq!(sim.download(&y).unwrap(), [42.0]);
}

#[test]
fn a_compile_error_points_at_the_kernels_own_line() {
    let source = "extern \"C\" __global__ void broken(float* y)\n{\n    y[0] = undefined_name;\n}\n";
    let sim = simulator();
    let mut y = sim.zeros::<f32>([1]).unwrap();
    match sim.run_source(source, "broken", &mut [Argument::output("y", &mut y)], [1, 1, 1], [1, 1, 1], TWO_ORDERS) {
        Err(Error::HostCompile { kernel, excerpt, .. }) => {
            assert_eq!(kernel, "broken");
            assert!(excerpt.contains(">    3 |     y[0] = undefined_name;"), "{excerpt}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn a_damaged_cached_library_is_rebuilt_and_runs() {
    let dir = std::env::temp_dir().join(format!("tessera-sim-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sim = simulator().with_disk_cache(Some(DiskCache::new(&dir)));
    // A source no other test compiles, so this process has not loaded it yet.
    let source =
        format!("// {}\nextern \"C\" __global__ void cached(float* y, int k) {{ y[threadIdx.x] = k; }}", dir.display());
    let first = sim.compile(&source, "cached").unwrap();
    assert!(!first.from_disk_cache);
    let second = sim.compile(&source, "cached").unwrap();
    assert!(second.from_disk_cache);
    assert_eq!(first.path, second.path);

    let mut bytes = std::fs::read(&first.path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&first.path, &bytes).unwrap();
    let rebuilt = sim.compile(&source, "cached").unwrap();
    assert!(!rebuilt.from_disk_cache, "a damaged entry is rebuilt, never trusted");

    let mut y = sim.zeros::<f32>([32]).unwrap();
    sim.run_source(
        &source,
        "cached",
        &mut [Argument::output("y", &mut y), Argument::scalar("k", 7)],
        [1, 1, 1],
        [32, 1, 1],
        TWO_ORDERS,
    )
    .unwrap();
    assert!(sim.download(&y).unwrap().iter().all(|&v| v == 7.0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_portable_context_switch_gives_the_same_results() {
    // ucontext is what non-x86-64 hosts use; the flag selects it here too.
    let sim = simulator().with_flags(vec!["-DTESSERA_SIM_UCONTEXT".to_string()]);
    for n in [255, 700] {
        let got = run_neighbour_sum(&sim, true, n, THREE_ORDERS).unwrap();
        assert_eq!(got, neighbour_sum_reference(&ramp(n)));
    }
    assert!(matches!(run_neighbour_sum(&sim, false, 512, TWO_ORDERS), Err(Error::Race { .. })));
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_misaligned_16_byte_vector_access_faults_as_it_would_on_a_gpu() {
    let source = r#"
extern "C" __global__ void misaligned(const float* __restrict__ x, float* __restrict__ y, int k)
{
    // x + k is 16-byte aligned only when k is a multiple of 4.
    const float4 v = reinterpret_cast<const float4*>(x + k)[threadIdx.x];
    reinterpret_cast<float4*>(y)[threadIdx.x] = v;
}
"#;
    let sim = simulator();
    let x = sim.upload(&ramp(256 + 8), [256 + 8]).unwrap();
    let mut y = sim.zeros::<f32>([256]).unwrap();
    let run = |k: i32, y: &mut tessera::DeviceTensor<f32>| {
        sim.run_source(
            source,
            "misaligned",
            &mut [Argument::input("x", &x), Argument::output("y", y), Argument::scalar("k", k)],
            [1, 1, 1],
            [64, 1, 1],
            TWO_ORDERS,
        )
    };
    run(4, &mut y).unwrap();
    assert_eq!(sim.download(&y).unwrap(), ramp(264)[4..260].to_vec());
    match run(1, &mut y) {
        Err(Error::SimFault { signal, .. }) => {
            assert!(signal.contains("misaligned 16-byte vector access"), "{signal}")
        }
        other => panic!("expected a general-protection fault, got {other:?}"),
    }
}
