//! What the numeric tests share: deterministic inputs, a poison pattern, and running one
//! test body on the CPU simulation (in CI) and on a GPU (ignored without one).

#![allow(dead_code)]

use tessera::{Backend, Gpu, Order, Simulator};

/// A bit pattern no input contains, so an unwritten element cannot pass for a written one.
pub const POISON: u32 = 0x7fc0_dead;

/// Every test body named, as a normal test on the simulator and an ignored one on the GPU.
#[macro_export]
macro_rules! on_both_backends {
    ($($body:ident),* $(,)?) => {$(
        mod $body {
            #[test]
            fn simulated() {
                super::$body(&super::common::simulator());
            }

            #[test]
            #[ignore = "needs a CUDA GPU"]
            fn on_the_gpu() {
                super::$body(&super::common::gpu());
            }
        }
    )*};
}

/// `$then![family::kernel, ..]` with every catalog kernel module, for tests that check
/// something each module embeds (its CUDA source, its REPORT). The golden test checks the
/// list against `catalog::all()`, so a kernel left out fails there.
#[macro_export]
macro_rules! with_every_catalog_kernel {
    ($then:ident) => {
        $then![
            copy::copy_f32,
            copy::copy_f32x2,
            copy::copy_f32x4,
            copy::copy_f32_grid_stride,
            copy::copy_f32x2_grid_stride,
            copy::copy_f32x4_grid_stride,
            transpose::transpose_naive,
            transpose::transpose_shared,
            transpose::transpose_padded,
            transpose::transpose_swizzled,
            transpose::transpose_padded_64,
            transpose::transpose_padded_64_down,
            transpose::transpose_vector_64,
            transpose::transpose_padded_128x32,
            transpose::transpose_padded_256x32,
            transpose::transpose_f32x4_shared,
            transpose::transpose_f32x4_padded,
            transpose::transpose_f32x4_conflict_free,
            transpose::transpose_sector_aligned,
            transpose::transpose_sector_aligned_down,
            sgemm::sgemm_naive,
            sgemm::sgemm_v1,
            sgemm::sgemm_v2,
            sgemm::sgemm_v3,
            sgemm::sgemm_v4,
            sgemm::sgemm_v5,
            sgemm::sgemm_v6,
            sgemm::sgemm_v7,
            sgemm::sgemm_v8,
            sgemm::sgemm_v9,
            sgemm::sgemm_v10,
            sgemm::sgemm_v11,
            sgemm::sgemm_v12,
            sgemm::sgemm_v13,
            sgemm::sgemm_v6_128x64,
            sgemm::sgemm_v4_small,
            sgemm_bt::sgemm_v12_bt,
            sgemm_bt::sgemm_v13_bt,
            hgemm::hgemm_v1_bf16,
            hgemm::hgemm_v2_bf16,
            hgemm::hgemm_v3_bf16,
            hgemm::hgemm_v4_bf16,
            hgemm::hgemm_v5_bf16,
            hgemm::hgemm_v6_bf16,
            hgemm::hgemm_v7_bf16,
            hgemm::hgemm_v8_bf16,
            hgemm::hgemm_v1_f16,
            hgemm::hgemm_v2_f16,
            hgemm::hgemm_v3_f16,
            hgemm::hgemm_v4_f16,
            hgemm::hgemm_v5_f16,
            hgemm::hgemm_v6_f16,
            hgemm::hgemm_v7_f16,
            hgemm::hgemm_v8_f16,
            hgemm::hgemm_v9_bf16,
            hgemm::hgemm_v9_f16,
            hgemm::hgemm_v10_bf16,
            hgemm::hgemm_v10_f16,
            hgemm::hgemm_v11_bf16,
            hgemm::hgemm_v11_f16,
            hgemm::hgemm_v12_bf16,
            hgemm::hgemm_v12_f16,
            hgemm::hgemm_v13_bf16,
            hgemm::hgemm_v13_f16,
            hgemm::hgemm_v14_bf16,
            hgemm::hgemm_v14_f16,
            hgemm::hgemm_v15_bf16,
            hgemm::hgemm_v15_f16,
            hgemm::hgemm_v16_bf16,
            hgemm::hgemm_v16_f16,
            hgemm::hgemm_v17_bf16,
            hgemm::hgemm_v17_f16,
            hgemm::hgemm_v18_bf16,
            hgemm::hgemm_v18_f16,
            hgemm::hgemm_v19_bf16,
            hgemm::hgemm_v19_f16,
            hgemm::hgemm_v20_bf16,
            hgemm::hgemm_v20_f16,
            hgemm::hgemm_v21_bf16,
            hgemm::hgemm_v21_f16,
            hgemm::hgemm_v11_bf16_to_bf16,
            hgemm::hgemm_v11_f16_to_f16,
            hgemm::hgemm_v19_bf16_to_bf16,
            hgemm::hgemm_v19_f16_to_f16,
            hgemm::hgemm_v20_bf16_to_bf16,
            hgemm::hgemm_v20_f16_to_f16,
            hgemm::hgemm_v21_bf16_to_bf16,
            hgemm::hgemm_v21_f16_to_f16,
            hgemm::hgemm_v22_bf16_to_bf16,
            hgemm::hgemm_v22_f16_to_f16,
            hgemm::gemm_tf32,
            hgemm::gemm_tf32_wgmma_bt,
            hgemm::gemm_tf32_wgmma_bt_64x128,
            hgemm::gemm_tf32_wgmma_bt_clusters,
            hgemm::gemm_tf32_wgmma_kn,
            hgemm::gemm_tf32_wgmma_kn_64x128,
            hgemm_bt::hgemm_v11_bt_bf16,
            hgemm_bt::hgemm_v11_bt_f16,
            hgemm_bt::hgemm_v20_bt_bf16,
            hgemm_bt::hgemm_v20_bt_f16,
            hgemm_bt::hgemm_v19_bt_bf16_to_bf16,
            hgemm_bt::hgemm_v19_bt_f16_to_f16,
            hgemm_bt::hgemm_v22_bt_bf16_to_bf16,
            hgemm_bt::hgemm_v22_bt_f16_to_f16,
            reduce::sum_partials_f32,
            reduce::dot_partials_f32,
            reduce::sum_finish_f32,
            map::saxpy,
            map::gelu_tanh,
            matrix_copy::matrix_copy_f32,
            matrix_copy::matrix_copy_bf16,
            matrix_copy::matrix_copy_f16,
            matrix_scale::matrix_scale_f32,
            matrix_scale::matrix_scale_bf16,
            matrix_scale::matrix_scale_f16,
            stencil::laplacian_5pt,
            stencil::laplacian_5pt_rows,
            stencil::gauss_seidel_red_black,
            stencil::gauss_seidel_colour,
            stencil::split_red_black,
            stencil::merge_red_black,
            stencil::residual_partials,
            stencil::residual_split_partials,
            attention::attention_forward_bf16_d64,
            attention::attention_forward_bf16_d64_causal,
            attention::attention_forward_bf16_d128,
            attention::attention_forward_bf16_d128_causal,
            attention::attention_forward_f16_d64,
            attention::attention_forward_f16_d64_causal,
            attention::attention_forward_f16_d128,
            attention::attention_forward_f16_d128_causal,
            attention::attention_backward_delta_bf16,
            attention::attention_backward_dkdv_bf16_d64,
            attention::attention_backward_dkdv_bf16_d64_causal,
            attention::attention_backward_dkdv_bf16_d128,
            attention::attention_backward_dkdv_bf16_d128_causal,
            attention::attention_backward_dq_bf16_d64,
            attention::attention_backward_dq_bf16_d64_causal,
            attention::attention_backward_dq_bf16_d128,
            attention::attention_backward_dq_bf16_d128_causal,
            attention::attention_backward_delta_f16,
            attention::attention_backward_dkdv_f16_d64,
            attention::attention_backward_dkdv_f16_d64_causal,
            attention::attention_backward_dkdv_f16_d128,
            attention::attention_backward_dkdv_f16_d128_causal,
            attention::attention_backward_dq_f16_d64,
            attention::attention_backward_dq_f16_d64_causal,
            attention::attention_backward_dq_f16_d128,
            attention::attention_backward_dq_f16_d128_causal,
            attention::attention_forward_wgmma_bf16_d64,
            attention::attention_forward_wgmma_bf16_d64_causal,
            attention::attention_forward_wgmma_bf16_d128,
            attention::attention_forward_wgmma_bf16_d128_causal,
            attention::attention_forward_wgmma_f16_d64,
            attention::attention_forward_wgmma_f16_d64_causal,
            attention::attention_forward_wgmma_f16_d128,
            attention::attention_forward_wgmma_f16_d128_causal,
            attention::attention_forward_wgmma_tma_bf16_d64,
            attention::attention_forward_wgmma_tma_bf16_d64_causal,
            attention::attention_forward_wgmma_tma_bf16_d128,
            attention::attention_forward_wgmma_tma_bf16_d128_causal,
            attention::attention_forward_wgmma_tma_f16_d64,
            attention::attention_forward_wgmma_tma_f16_d64_causal,
            attention::attention_forward_wgmma_tma_f16_d128,
            attention::attention_forward_wgmma_tma_f16_d128_causal,
            attention::attention_backward_wgmma_dkdv_bf16_d64,
            attention::attention_backward_wgmma_dkdv_bf16_d64_causal,
            attention::attention_backward_wgmma_dkdv_bf16_d128,
            attention::attention_backward_wgmma_dkdv_bf16_d128_causal,
            attention::attention_backward_wgmma_dq_bf16_d64,
            attention::attention_backward_wgmma_dq_bf16_d64_causal,
            attention::attention_backward_wgmma_dq_bf16_d128,
            attention::attention_backward_wgmma_dq_bf16_d128_causal,
            attention::attention_backward_wgmma_dkdv_f16_d64,
            attention::attention_backward_wgmma_dkdv_f16_d64_causal,
            attention::attention_backward_wgmma_dkdv_f16_d128,
            attention::attention_backward_wgmma_dkdv_f16_d128_causal,
            attention::attention_backward_wgmma_dq_f16_d64,
            attention::attention_backward_wgmma_dq_f16_d64_causal,
            attention::attention_backward_wgmma_dq_f16_d128,
            attention::attention_backward_wgmma_dq_f16_d128_causal,
            attention::attention_forward_bf16_d256,
            attention::attention_forward_bf16_d256_causal,
            attention::attention_forward_f16_d256,
            attention::attention_forward_f16_d256_causal,
            attention::attention_forward_wgmma_bf16_d256,
            attention::attention_forward_wgmma_bf16_d256_causal,
            attention::attention_forward_wgmma_f16_d256,
            attention::attention_forward_wgmma_f16_d256_causal,
            attention::attention_forward_wgmma_tma_bf16_d256,
            attention::attention_forward_wgmma_tma_bf16_d256_causal,
            attention::attention_forward_wgmma_tma_f16_d256,
            attention::attention_forward_wgmma_tma_f16_d256_causal,
            attention::attention_backward_wgmma_dk_bf16_d256,
            attention::attention_backward_wgmma_dk_bf16_d256_causal,
            attention::attention_backward_wgmma_dv_bf16_d256,
            attention::attention_backward_wgmma_dv_bf16_d256_causal,
            attention::attention_backward_wgmma_dq_bf16_d256,
            attention::attention_backward_wgmma_dq_bf16_d256_causal,
            attention::attention_backward_wgmma_dk_f16_d256,
            attention::attention_backward_wgmma_dk_f16_d256_causal,
            attention::attention_backward_wgmma_dv_f16_d256,
            attention::attention_backward_wgmma_dv_f16_d256_causal,
            attention::attention_backward_wgmma_dq_f16_d256,
            attention::attention_backward_wgmma_dq_f16_d256_causal,
            softmax::softmax_warp_64_f32,
            softmax::softmax_warp_f32,
            softmax::softmax_warp_256_f32,
            softmax::softmax_warp_512_f32,
            softmax::softmax_warp_wide_f32,
            softmax::softmax_block_f32,
            softmax::softmax_block_wide_f32,
            softmax::softmax_aligned_2048_f32,
            softmax::softmax_aligned_3072_f32,
            softmax::softmax_aligned_short_f32,
            softmax::softmax_aligned_f32,
            softmax::softmax_aligned_long_f32,
            softmax::softmax_aligned_wide_f32,
            softmax::softmax_looped_f32,
            softmax::softmax_cluster_f32,
            softmax::softmax_chunk_stats_f32,
            softmax::softmax_chunk_write_f32,
            softmax::softmax_warp_64_bf16,
            softmax::softmax_warp_bf16,
            softmax::softmax_warp_256_bf16,
            softmax::softmax_warp_512_bf16,
            softmax::softmax_warp_wide_bf16,
            softmax::softmax_aligned_2048_bf16,
            softmax::softmax_aligned_3072_bf16,
            softmax::softmax_aligned_4096_bf16,
            softmax::softmax_aligned_short_bf16,
            softmax::softmax_aligned_bf16,
            softmax::softmax_aligned_long_bf16,
            softmax::softmax_aligned_wide_bf16,
            softmax::softmax_cluster_bf16,
            softmax::softmax_chunk_stats_bf16,
            softmax::softmax_chunk_write_bf16,
            softmax::softmax_warp_64_f16,
            softmax::softmax_warp_f16,
            softmax::softmax_warp_256_f16,
            softmax::softmax_warp_512_f16,
            softmax::softmax_warp_wide_f16,
            softmax::softmax_aligned_2048_f16,
            softmax::softmax_aligned_3072_f16,
            softmax::softmax_aligned_4096_f16,
            softmax::softmax_aligned_short_f16,
            softmax::softmax_aligned_f16,
            softmax::softmax_aligned_long_f16,
            softmax::softmax_aligned_wide_f16,
            softmax::softmax_cluster_f16,
            softmax::softmax_chunk_stats_f16,
            softmax::softmax_chunk_write_f16,
            norm::layer_norm_f32,
            norm::layer_norm_wide_f32,
            norm::rms_norm_f32,
            norm::rms_norm_wide_f32,
            norm::layer_norm_bf16,
            norm::layer_norm_wide_bf16,
            norm::rms_norm_bf16,
            norm::rms_norm_wide_bf16,
            norm::layer_norm_f16,
            norm::layer_norm_wide_f16,
            norm::rms_norm_f16,
            norm::rms_norm_wide_f16,
            norm::layer_norm_warp_128_f32,
            norm::layer_norm_warp_256_f32,
            norm::layer_norm_warp_512_f32,
            norm::layer_norm_warp_1024_f32,
            norm::layer_norm_block_2048_f32,
            norm::layer_norm_block_3072_f32,
            norm::rms_norm_warp_128_f32,
            norm::rms_norm_warp_256_f32,
            norm::rms_norm_warp_512_f32,
            norm::rms_norm_warp_1024_f32,
            norm::rms_norm_block_2048_f32,
            norm::rms_norm_block_3072_f32,
            norm::layer_norm_warp_128_bf16,
            norm::layer_norm_warp_256_bf16,
            norm::layer_norm_warp_512_bf16,
            norm::layer_norm_warp_1024_bf16,
            norm::layer_norm_block_2048_bf16,
            norm::layer_norm_block_3072_bf16,
            norm::layer_norm_block_4096_bf16,
            norm::rms_norm_warp_128_bf16,
            norm::rms_norm_warp_256_bf16,
            norm::rms_norm_warp_512_bf16,
            norm::rms_norm_warp_1024_bf16,
            norm::rms_norm_block_2048_bf16,
            norm::rms_norm_block_3072_bf16,
            norm::rms_norm_block_4096_bf16,
            norm::layer_norm_warp_128_f16,
            norm::layer_norm_warp_256_f16,
            norm::layer_norm_warp_512_f16,
            norm::layer_norm_warp_1024_f16,
            norm::layer_norm_block_2048_f16,
            norm::layer_norm_block_3072_f16,
            norm::layer_norm_block_4096_f16,
            norm::rms_norm_warp_128_f16,
            norm::rms_norm_warp_256_f16,
            norm::rms_norm_warp_512_f16,
            norm::rms_norm_warp_1024_f16,
            norm::rms_norm_block_2048_f16,
            norm::rms_norm_block_3072_f16,
            norm::rms_norm_block_4096_f16,
            norm::layer_norm_short_f32,
            norm::rms_norm_short_f32,
            norm::layer_norm_short_bf16,
            norm::layer_norm_block_6144_bf16,
            norm::layer_norm_block_7168_bf16,
            norm::rms_norm_short_bf16,
            norm::layer_norm_short_f16,
            norm::layer_norm_block_6144_f16,
            norm::layer_norm_block_7168_f16,
            norm::rms_norm_short_f16,
            gemv::gemv_f32,
            gemv::gemv_bf16,
            gemv::gemv_f16,
            gemv::gemv_lanes_32_f32,
            gemv::gemv_lanes_64_f32,
            gemv::gemv_lanes_128_f32,
            gemv::gemv_lanes_256_f32,
            gemv::gemv_lanes_512_f32,
            gemv::gemv_lanes_32_bf16,
            gemv::gemv_lanes_64_bf16,
            gemv::gemv_lanes_128_bf16,
            gemv::gemv_lanes_256_bf16,
            gemv::gemv_lanes_512_bf16,
            gemv::gemv_lanes_1024_bf16,
            gemv::gemv_lanes_32_f16,
            gemv::gemv_lanes_64_f16,
            gemv::gemv_lanes_128_f16,
            gemv::gemv_lanes_256_f16,
            gemv::gemv_lanes_512_f16,
            gemv::gemv_lanes_1024_f16,
            gemv::gemv_t_f32,
            gemv::gemv_t_band_f32,
            gemv::gemv_t_band_pairs_f32,
            gemv::gemv_t_partials_f32,
            gemv::gemv_t_finish_f32,
            gemv::gemv_t_split_f32,
            gemv::gemv_t_bf16,
            gemv::gemv_t_band_bf16,
            gemv::gemv_t_band_pairs_bf16,
            gemv::gemv_t_partials_bf16,
            gemv::gemv_t_finish_bf16,
            gemv::gemv_t_f16,
            gemv::gemv_t_band_f16,
            gemv::gemv_t_band_pairs_f16,
            gemv::gemv_t_partials_f16,
            gemv::gemv_t_finish_f16,
            gemv::gemv_t_lanes_32_f32,
            gemv::gemv_t_lanes_64_f32,
            gemv::gemv_t_lanes_128_f32,
            gemv::gemv_t_lanes_256_f32,
            gemv::gemv_t_lanes_64_bf16,
            gemv::gemv_t_lanes_128_bf16,
            gemv::gemv_t_lanes_256_bf16,
            gemv::gemv_t_lanes_512_bf16,
            gemv::gemv_t_lanes_64_f16,
            gemv::gemv_t_lanes_128_f16,
            gemv::gemv_t_lanes_256_f16,
            gemv::gemv_t_lanes_512_f16,
            gemv::gemv_t_lanes_finish_f32,
            gemv::gemv_t_lanes_finish_bf16,
            gemv::gemv_t_lanes_finish_f16,
            epilogue::sgemm_bias_gelu,
            epilogue::sgemm_bias_gelu_stream_k,
            epilogue::sgemm_bias_residual,
            epilogue::sgemm_bias_relu_residual,
            epilogue::hgemm_bias_silu_bf16,
            epilogue::hgemm_bias_bf16,
            epilogue::hgemm_bias_f16,
            epilogue::hgemm_bias_residual_bf16,
            epilogue::hgemm_bias_residual_f16,
            epilogue::hgemm_bias_residual_small_tiles_bf16,
            epilogue::hgemm_bias_residual_small_tiles_f16,
            epilogue::hgemm_bias_small_tiles_bf16,
            epilogue::hgemm_bias_small_tiles_f16,
            epilogue::hgemm_bt_bias_bf16,
            epilogue::hgemm_bt_bias_f16,
            epilogue::hgemm_bt_bias_small_tiles_bf16,
            epilogue::hgemm_bt_bias_small_tiles_f16,
            epilogue::hgemm_bt_bias_residual_bf16,
            epilogue::hgemm_bt_bias_residual_f16,
            epilogue::hgemm_bt_bias_residual_small_tiles_bf16,
            epilogue::hgemm_bt_bias_residual_small_tiles_f16,
            epilogue::hgemm_bias_gelu_bf16,
            epilogue::hgemm_bias_gelu_f16,
            epilogue::bias_gelu_f32,
            epilogue::bias_gelu_bf16,
            epilogue::bias_residual_f32,
            epilogue::bias_residual_bf16,
            epilogue::bias_residual_f16,
            epilogue::bias_gelu_f16,
            epilogue::gelu_bf16,
            epilogue::gelu_f16,
        ]
    };
}

/// The simulator, under three thread orders: any output that depends on the order fails.
pub fn simulator() -> Backend {
    let sim = Simulator::new()
        .unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"))
        .with_orders([Order::Forward, Order::Reverse, Order::Shuffled { seed: 0x7e55e7a }]);
    Backend::Simulator(sim)
}

/// The simulator with `blocks` resident blocks (what caps a stream-K or persistent grid),
/// under the forward, reverse and a `seed`-shuffled thread and block order.
pub fn simulator_with_resident_blocks(blocks: u32, seed: u64) -> Backend {
    let sim = Simulator::new()
        .unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"))
        .with_resident_blocks(blocks)
        .with_orders([Order::Forward, Order::Reverse, Order::Shuffled { seed }]);
    Backend::Simulator(sim)
}

pub fn gpu() -> Backend {
    Backend::Gpu(Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}")))
}

/// Uniform values in [-1, 1) from a xorshift generator.
pub fn random_floats(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

/// α·A·B + β·C in f64, rows spread over the machine's cores.
pub fn gemm_reference(
    a: &[f32],
    b: &[f32],
    c: &[f32],
    (m, n, k): (usize, usize, usize),
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let mut out = vec![0.0f64; m * n];
    let threads = std::thread::available_parallelism().map_or(4, |p| p.get());
    let rows_per = m.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (chunk_index, chunk) in out.chunks_mut(rows_per * n.max(1)).enumerate() {
            scope.spawn(move || {
                for (r, row) in chunk.chunks_mut(n.max(1)).enumerate() {
                    let i = chunk_index * rows_per + r;
                    for (j, value) in row.iter_mut().enumerate() {
                        let mut sum = 0.0f64;
                        for p in 0..k {
                            sum += f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
                        }
                        *value = alpha * sum + beta * f64::from(c[i * n + j]);
                    }
                }
            });
        }
    });
    out
}

/// ‖got − want‖ / ‖want‖ (Frobenius), or ‖got − want‖ when want is all zeros.
pub fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        diff += (f64::from(*g) - w).powi(2);
        norm += w.powi(2);
    }
    if norm == 0.0 {
        diff.sqrt()
    } else {
        (diff / norm).sqrt()
    }
}

/// xᵀ of a row-major `rows × cols` matrix.
pub fn transposed(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    for r in 0..rows {
        for c in 0..cols {
            y[c * rows + r] = x[r * cols + c];
        }
    }
    y
}

/// Panics at the first element of `got` (a matrix with rows `row_len` long) whose bits differ
/// from `want`'s, naming it as `y[r][c]`, `what` went wrong, and whether it was never written
/// (still the poison pattern).
pub fn assert_bits_equal(what: &str, got: &[f32], want: &[f32], row_len: usize) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        let unwritten = got[i].to_bits() == POISON;
        panic!(
            "{what}: y[{}][{}] = {} (want {}){}",
            i / row_len,
            i % row_len,
            got[i],
            want[i],
            if unwritten { ", never written" } else { "" }
        );
    }
}

/// What the tensor cores multiply for an f32 that wgmma reads as TF32: its low 13 mantissa bits
/// cleared (TF32 by truncation).
pub fn tf32_truncated(value: f32) -> f32 {
    f32::from_bits(value.to_bits() & 0xffff_e000)
}
