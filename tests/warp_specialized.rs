//! `pipeline(.., producers = 128)` (sgemm_v13): the producers refill a stage only after every
//! compute warp has freed it, the compute threads read a stage only after it is full, and each
//! resident block takes every gridDim.x-th tile. Simulated with more k-tiles than stages and
//! more tiles than resident blocks under three thread and block orders (a copy lands at its
//! arrival in one, at issue in the others, so a stage refilled too early or read too soon
//! changes the result), and on a GPU with `cargo test --release --test warp_specialized -- --include-ignored`.

mod common;

use common::{gemm_reference, random_floats, relative_error};
use tessera::catalog::sgemm::sgemm_v13;
use tessera::Backend;

on_both_backends!(every_stage_is_refilled_and_read_in_order);

fn simulator_with(blocks: u32) -> Backend {
    common::simulator_with_resident_blocks(blocks, 0xfeed)
}

fn check(gpu: &Backend, (m, n, k): (usize, usize, usize), seed: u64) {
    let (host_a, host_b, host_c) =
        (random_floats(m * k, seed), random_floats(k * n, seed + 1), random_floats(m * n, seed + 2));
    let (alpha, beta) = (1.25f32, -0.75f32);
    let want = gemm_reference(&host_a, &host_b, &host_c, (m, n, k), f64::from(alpha), f64::from(beta));
    let a = gpu.upload(&host_a, [m, k]).unwrap();
    let b = gpu.upload(&host_b, [k, n]).unwrap();
    let mut c = gpu.upload(&host_c, [m, n]).unwrap();
    sgemm_v13::launch(gpu, &a, &b, &mut c, alpha, beta).unwrap();
    let error = relative_error(&gpu.download(&c).unwrap(), &want);
    assert!(error < 1e-5, "M={m} N={n} K={k}: relative error {error:e}");
}

fn every_stage_is_refilled_and_read_in_order(gpu: &Backend) {
    // 7 k-tiles of 32 through 3 stages (each refilled twice), tails in M, N and K; 4 tiles
    check(gpu, (129, 300, 200), 3);
    if !gpu.is_simulated() {
        check(gpu, (1000, 1000, 1000), 4);
        check(gpu, (4097, 4095, 1023), 5);
    }
}

/// Two resident blocks for four tiles: each block's producers run on into its second tile
/// while its compute threads finish the first, through the same ring and mbarrier phases.
#[test]
fn a_block_takes_several_tiles_through_one_ring() {
    check(&simulator_with(2), (129, 300, 200), 7);
    check(&simulator_with(1), (200, 260, 70), 8);
}

/// A K of 0: no k-tile goes through the ring, and C is still scaled by β.
#[test]
fn k_zero_scales_c_by_beta() {
    let gpu = simulator_with(2);
    let (m, n) = (130, 257);
    let host_c = random_floats(m * n, 9);
    let a = gpu.upload(&Vec::<f32>::new(), [m, 0]).unwrap();
    let b = gpu.upload(&Vec::<f32>::new(), [0, n]).unwrap();
    let mut c = gpu.upload(&host_c, [m, n]).unwrap();
    sgemm_v13::launch(&gpu, &a, &b, &mut c, 2.0, 0.5).unwrap();
    let want: Vec<f64> = host_c.iter().map(|v| 0.5 * f64::from(*v)).collect();
    assert!(relative_error(&gpu.download(&c).unwrap(), &want) < 1e-6);
}
