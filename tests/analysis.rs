//! The static analysis tells the stories of seeds/002 and the classic transpose from the
//! kernels' own IR: the bank-conflict ways and sectors are computed, not written down.

mod common;

use tessera::catalog::{
    attention, copy, epilogue, gemv, hgemm, hgemm_bt, map, matrix_copy, matrix_scale, norm, reduce, sgemm, sgemm_bt,
    softmax, stencil, transpose,
};
use tessera::dsl::{analyze, AccessReport, Direction, MemorySpace, Report};
use tessera::KernelDefinition;

fn report(kernel: &KernelDefinition) -> Report {
    analyze(kernel.ir().unwrap()).unwrap()
}

fn shared(report: &Report, direction: Direction) -> Vec<&AccessReport> {
    report.accesses.iter().filter(|a| a.space == MemorySpace::Shared && a.direction == direction).collect()
}

fn ways(kernel: &KernelDefinition, direction: Direction) -> i64 {
    let report = report(kernel);
    let accesses = shared(&report, direction);
    assert_eq!(accesses.len(), 1, "{report}");
    accesses[0].bank_ways.unwrap()
}

#[test]
fn the_notes_f32x4_story_is_four_way_then_two_way_then_conflict_free() {
    assert_eq!(ways(&transpose::transpose_f32x4_shared::KERNEL, Direction::Load), 4);
    assert_eq!(ways(&transpose::transpose_f32x4_padded::KERNEL, Direction::Load), 2);
    assert_eq!(ways(&transpose::transpose_f32x4_conflict_free::KERNEL, Direction::Load), 1);
}

#[test]
fn padding_breaks_the_f32x4_tiles_128_bit_stores_into_two_way_scalar_ones() {
    let unpadded = report(&transpose::transpose_f32x4_shared::KERNEL);
    let store = shared(&unpadded, Direction::Store)[0];
    assert_eq!((store.width_bits, store.instructions, store.bank_ways), (128, 1, Some(1)));
    let padded = report(&transpose::transpose_f32x4_padded::KERNEL);
    let store = shared(&padded, Direction::Store)[0];
    assert_eq!((store.width_bits, store.instructions, store.bank_ways), (32, 4, Some(2)));
}

#[test]
fn the_conflict_free_layout_pays_with_scattered_global_stores() {
    let report = report(&transpose::transpose_f32x4_conflict_free::KERNEL);
    let store =
        report.accesses.iter().find(|a| a.space == MemorySpace::Global && a.direction == Direction::Store).unwrap();
    assert_eq!(store.sectors, Some((32.0, 16.0)), "{report}");
}

#[test]
fn the_classic_story_is_thirty_two_way_then_conflict_free() {
    assert_eq!(ways(&transpose::transpose_shared::KERNEL, Direction::Load), 32);
    assert_eq!(ways(&transpose::transpose_padded::KERNEL, Direction::Load), 1);
    assert_eq!(ways(&transpose::transpose_swizzled::KERNEL, Direction::Load), 1);
    assert_eq!(ways(&transpose::transpose_padded_64::KERNEL, Direction::Load), 1);
    for kernel in [&transpose::transpose_shared::KERNEL, &transpose::transpose_padded::KERNEL] {
        assert_eq!(ways(kernel, Direction::Store), 1);
    }
}

#[test]
fn the_naive_transpose_reads_a_sector_per_element() {
    let report = report(&transpose::transpose_naive::KERNEL);
    let sectors: Vec<_> = report.accesses.iter().map(|a| (a.direction, a.sectors.unwrap())).collect();
    assert_eq!(sectors, vec![(Direction::Load, (32.0, 4.0)), (Direction::Store, (4.0, 4.0))], "{report}");
    assert_eq!(report.shared_bytes, 0);
    assert_eq!(report.barriers, 0);
}

#[test]
fn shared_memory_and_barriers_are_counted() {
    let padded = report(&transpose::transpose_padded::KERNEL);
    assert_eq!((padded.shared_bytes, padded.barriers), (32 * 33 * 4, 1));
    let copy = report(&copy::copy_f32x4::KERNEL);
    assert_eq!((copy.shared_bytes, copy.barriers), (0, 0));
}

/// (kernel name, embedded REPORT, definition) for each kernel module named.
macro_rules! reports {
    ($($family:ident :: $kernel:ident),* $(,)?) => {
        [$((stringify!($kernel), $family::$kernel::REPORT, &$family::$kernel::KERNEL)),*]
    };
}

#[test]
fn every_kernel_embeds_its_report() {
    for (name, embedded, kernel) in with_every_catalog_kernel!(reports) {
        assert_eq!(embedded, report(kernel).to_string(), "{name}: the embedded REPORT differs from its analysis");
    }
    assert!(
        transpose::transpose_shared::REPORT.contains("32-way bank conflict"),
        "{}",
        transpose::transpose_shared::REPORT
    );
}

fn mma_loads(kernel: &KernelDefinition) -> Vec<(String, u32, i64)> {
    report(kernel)
        .accesses
        .iter()
        .filter(|a| a.statement.starts_with("mma(") && a.space == MemorySpace::Shared)
        .map(|a| (a.operand.clone(), a.width_bits, a.bank_ways.unwrap()))
        .collect()
}

#[test]
fn sgemm_v2_reads_its_register_tiles_with_conflict_free_128_bit_loads_where_v1_cannot() {
    assert_eq!(mma_loads(&sgemm::sgemm_v1::KERNEL), vec![("a_s".into(), 32, 2), ("b_s".into(), 128, 2)]);
    assert_eq!(mma_loads(&sgemm::sgemm_v2::KERNEL), vec![("a_s.t()".into(), 128, 1), ("b_s".into(), 128, 1)]);
    assert_eq!(mma_loads(&sgemm::sgemm_v3::KERNEL), mma_loads(&sgemm::sgemm_v2::KERNEL));
}

#[test]
fn double_buffering_doubles_shared_memory_and_keeps_two_barriers() {
    let (v2, v3) = (report(&sgemm::sgemm_v2::KERNEL), report(&sgemm::sgemm_v3::KERNEL));
    assert_eq!(v2.shared_bytes, 2 * 8 * 128 * 4);
    assert_eq!(v3.shared_bytes, 2 * v2.shared_bytes);
    assert_eq!((v2.barriers, v3.barriers), (2, 2));
}

/// Thread code's accesses, found by running each warp's lanes abstractly: the sector-aligned
/// transpose stages x and stores y with whole sectors, and its padded tile is conflict-free
/// both ways; without the padding its column reads are a 32-way conflict.
#[test]
fn thread_code_accesses_are_analyzed_like_copies() {
    let kernel = &transpose::transpose_sector_aligned::KERNEL;
    let report = report(kernel);
    let all = |report: &Report, space, direction| -> Vec<_> {
        report.accesses.iter().filter(|a| a.space == space && a.direction == direction).cloned().collect()
    };
    let find = |report: &Report, space, direction| {
        let found = all(report, space, direction);
        assert_eq!(found.len(), 1, "{report}");
        found[0].clone()
    };
    let load_x = find(&report, MemorySpace::Global, Direction::Load);
    assert_eq!((load_x.operand.as_str(), load_x.instructions, load_x.sectors), ("x", 18, Some((4.0, 4.0))));
    let store_y = find(&report, MemorySpace::Global, Direction::Store);
    assert_eq!((store_y.operand.as_str(), store_y.instructions, store_y.sectors), ("y", 16, Some((4.0, 4.0))));
    assert_eq!(store_y.statement, "y[[r, c]] = v;");
    assert_eq!(find(&report, MemorySpace::Shared, Direction::Store).bank_ways, Some(1));
    // the run's reads and the head's: columns of the padded tile, both conflict-free
    let reads = all(&report, MemorySpace::Shared, Direction::Load);
    assert_eq!(reads.len(), 2, "{report}");
    assert!(reads.iter().all(|read| read.bank_ways == Some(1)), "{report}");

    let mut unpadded = kernel.ir().unwrap().clone();
    for statement in &mut unpadded.body {
        if let tessera::dsl::Statement::Shared(buffer) = statement {
            buffer.pad = 0;
        }
    }
    let report = analyze(&unpadded).unwrap();
    let reads = all(&report, MemorySpace::Shared, Direction::Load);
    assert!(reads.len() == 2 && reads.iter().all(|read| read.bank_ways == Some(32)), "{report}");
    assert_eq!(find(&report, MemorySpace::Shared, Direction::Store).bank_ways, Some(1), "{report}");
}

/// The laplacian's loads one column left of the block's are off a sector boundary: five
/// sectors for 128 bytes, which the analyzer counts from the index expressions.
#[test]
fn thread_code_loads_off_a_sector_boundary_take_an_extra_sector() {
    let report = report(&stencil::laplacian_5pt::KERNEL);
    let load = report
        .accesses
        .iter()
        .find(|a| a.space == MemorySpace::Global && a.direction == Direction::Load && a.operand == "u")
        .unwrap();
    assert_eq!(load.sectors, Some((5.0, 4.0)), "{report}");
    let store = report.accesses.iter().find(|a| a.direction == Direction::Store && a.operand == "out").unwrap();
    assert_eq!(store.sectors, Some((4.0, 4.0)), "{report}");
}

/// Every other element: each warp request of x spans twice the sectors its bytes need.
#[tessera::tile_kernel(threads = 64, vector = 1, consts(T = 64))]
pub fn every_other(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>, stride: i32) {
    let (bx,) = grid(cdiv(N, T));
    let i = bx * T + thread_index();
    if i < N / 2 {
        y[i] = x[2 * i + stride];
    }
}

/// A row per lane of an unpadded 32 × 32 tile, read down a column: all lanes in one bank.
#[tessera::tile_kernel(threads = 32, vector = 1, consts(T = 32))]
pub fn column_reads(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, T * T));
    let t = shared::<f32>([T, T]);
    for row in 0..T {
        t[[row, lane()]] = x[min((bx * T + row) * T + lane(), N - 1)];
    }
    for col in 0..T {
        let i = (bx * T + col) * T + lane();
        if i < N {
            y[i] = t[[lane(), col]];
        }
    }
}

#[test]
fn thread_code_reports_strided_sectors_and_column_conflicts() {
    let strided = report(&every_other::KERNEL);
    let load = strided.accesses.iter().find(|a| a.operand == "x").unwrap();
    assert_eq!((load.sectors, load.instructions), (Some((8.0, 4.0)), 1), "{strided}");
    let store = strided.accesses.iter().find(|a| a.operand == "y").unwrap();
    assert_eq!(store.sectors, Some((4.0, 4.0)), "{strided}");

    let columns = report(&column_reads::KERNEL);
    let access = |direction| columns.accesses.iter().find(|a| a.operand == "t" && a.direction == direction).unwrap();
    assert_eq!((access(Direction::Store).bank_ways, access(Direction::Store).instructions), (Some(1), 32), "{columns}");
    assert_eq!(access(Direction::Load).bank_ways, Some(32), "{columns}");
}

/// The accesses of `statement`'s copy of `operand` (the first copy statement that names it).
fn copy_access<'a>(report: &'a Report, operand: &str, direction: Direction) -> &'a AccessReport {
    report
        .accesses
        .iter()
        .find(|a| a.statement.starts_with("copy(") && a.operand == operand && a.direction == direction)
        .unwrap_or_else(|| panic!("no {direction:?} of {operand} in\n{report}"))
}

#[test]
fn cp_async_copies_into_a_transposed_buffer_read_whole_sectors_and_store_conflict_free() {
    // V6 stages A through registers in the item order: 128-bit loads, 2-way transposed stores;
    // V11's cp.async pipeline deals A as 4 rows × 8 columns per warp instruction: one 4-byte
    // copy per element, 4 sectors per request, 32 banks per store (row stride 128 + 4)
    let staged = report(&sgemm::sgemm_v6::KERNEL);
    assert_eq!(copy_access(&staged, "a_s.t()", Direction::Store).bank_ways, Some(2), "{staged}");
    let cp_async = report(&sgemm::sgemm_v11::KERNEL);
    let load = copy_access(&cp_async, "a", Direction::Load);
    assert_eq!((load.width_bits, load.instructions, load.sectors), (32, 16, Some((4.0, 4.0))), "{cp_async}");
    let store = copy_access(&cp_async, "a_s.t()", Direction::Store);
    assert_eq!((store.width_bits, store.instructions, store.bank_ways), (32, 16, Some(1)), "{cp_async}");
    // B: whole 128-byte row segments, 8 copies of 16 bytes per thread
    let b = copy_access(&cp_async, "b", Direction::Load);
    assert_eq!((b.width_bits, b.instructions, b.sectors), (128, 8, Some((16.0, 16.0))), "{cp_async}");
}

#[test]
fn a_tma_pipeline_reports_its_boxes_instead_of_per_thread_copies() {
    // V10: A's 128 × 64 tile is one 128-byte panel, B's 64 × 256 tile four
    let tma = report(&hgemm::hgemm_v10_bf16::KERNEL);
    let boxes: Vec<(&str, u32, u32, u32, u32)> =
        tma.tma.iter().map(|c| (c.tensor.as_str(), c.boxes, c.box_rows, c.box_cols, c.swizzle_bytes)).collect();
    assert_eq!(boxes, [("a", 1, 128, 64, 128), ("b", 4, 64, 64, 128)]);
    assert!(tma.to_string().contains("4 boxes of 64 × 64 (8192 B each), 128-byte swizzle"), "{tma}");
    // no thread loads A or B: only the epilogue's accesses of C remain (its stores, β · C's loads)
    assert!(tma.accesses.iter().all(|a| a.operand.starts_with('c')), "{tma}");
    // the same tiles by cp.async (V8) are per-thread 128-bit copies, and no TMA
    let cp_async = report(&hgemm::hgemm_v8_bf16::KERNEL);
    assert!(cp_async.tma.is_empty());
    assert!(cp_async.accesses.iter().any(|a| a.operand == "a" && a.width_bits == 128), "{cp_async}");
}

#[test]
fn the_lanes_tf32_a_loads_from_128_byte_panels_are_two_way_and_the_transposed_store_full_sectors() {
    let report = report(&tessera::catalog::hgemm::gemm_tf32_wgmma_kn::KERNEL);
    let loads = shared(&report, Direction::Load);
    // lanes g and t read A(g, t): rows t and t ^ 1 of the panel put 8 floats in the same two chunks
    let a: Vec<_> = loads.iter().map(|a| (a.operand.as_str(), a.width_bits, a.instructions, a.bank_ways)).collect();
    assert_eq!(a, [("b_s.t()", 32, 16, Some(2))]);
    let store = report.accesses.iter().find(|a| a.space == MemorySpace::Global).unwrap();
    // one value a lane: the eight lanes of one lane % 4 fill a 32-byte sector of a row of C
    assert_eq!((store.width_bits, store.sectors), (32, Some((4.0, 4.0))));
}

#[test]
fn a_wgmma_epilogue_reports_its_16_byte_stores_and_the_residual_and_beta_c_it_loads_the_same_way() {
    let global = |report: &tessera::dsl::Report| -> Vec<(String, Direction, u32, i64, Option<(f64, f64)>)> {
        report
            .accesses
            .iter()
            .filter(|a| a.space == MemorySpace::Global)
            .map(|a| (a.operand.clone(), a.direction, a.width_bits, a.instructions, a.sectors))
            .collect()
    };
    // V11's bf16 C: each lane's 128 values leave as 16 stores of 8, a row's lanes side by side,
    // and β · C (β ≠ 0) is read the same way where the lane stores
    let bf16_out = report(&hgemm::hgemm_v11_bf16_to_bf16::KERNEL);
    assert_eq!(
        global(&bf16_out),
        [
            ("c".to_string(), Direction::Store, 128, 16, Some((16.0, 16.0))),
            ("c (β ≠ 0)".to_string(), Direction::Load, 128, 16, Some((16.0, 16.0)))
        ],
        "{bf16_out}"
    );
    // an f32 C: 32 stores of 4, β · C read as the lanes' own pairs (a row's lanes 32 bytes)
    let f32_out = report(&hgemm::hgemm_v11_bf16::KERNEL);
    assert_eq!(
        global(&f32_out),
        [
            ("c".to_string(), Direction::Store, 128, 32, Some((16.0, 16.0))),
            ("c (β ≠ 0)".to_string(), Direction::Load, 64, 64, Some((8.0, 8.0)))
        ],
        "{f32_out}"
    );
    // the residual read at each value's own place is loaded where the lane stores
    let residual = report(&epilogue::hgemm_bias_residual_bf16::KERNEL);
    assert_eq!(
        global(&residual),
        [
            ("c".to_string(), Direction::Store, 128, 16, Some((16.0, 16.0))),
            ("residual".to_string(), Direction::Load, 128, 16, Some((16.0, 16.0)))
        ],
        "{residual}"
    );
}
