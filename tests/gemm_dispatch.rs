//! `tessera::gemm`: the kernel it picks is the one measured fastest at each shape of the
//! SGEMM bench on each GPU whose records ship with tessera, unmeasured shapes take the nearest
//! measured shape aligned alike, and the product is right — on the CPU simulation and,
//! ignored without one, on a GPU.

mod common;

use common::{gemm_reference, random_floats, relative_error, transposed};
use tessera::bench::Family;
use tessera::dsl::ElementType;
use tessera::gemm_dispatch::{GemmError, GemmTable, GemmTypes};
use tessera::half::bf16;
use tessera::Backend;

on_both_backends!(
    gemm_multiplies_with_the_kernel_it_reports,
    gemm_of_bf16_runs_on_tensor_cores,
    gemm_into_a_16_bit_c_rounds_the_f32_result_once,
    gemm_bt_multiplies_by_b_stored_n_by_k,
    aligned_copies_of_unaligned_16_bit_operands_give_the_same_product_at_full_width,
    gemm_copies_unaligned_16_bit_operands_only_when_the_work_pays_for_it,
    gemm_with_alpha_zero_reads_neither_a_nor_b
);

fn fastest_measured(table: &GemmTable, types: GemmTypes, shape: [usize; 3]) -> Option<&'static str> {
    table
        .records
        .iter()
        .filter(|r| r.shape == shape)
        .filter(|r| match types.input {
            // FP32 SGEMMs (B [K, N] or, `sgemm_bt`, [N, K]), not TF32
            ElementType::F32 => r.kernel.starts_with("sgemm_") && r.kernel != "sgemm_naive",
            _ => r.kernel.starts_with("hgemm_"),
        })
        .filter(|r| GemmTypes::of(tessera::catalog::find(r.kernel).unwrap()) == types)
        .max_by(|a, b| a.tflops.total_cmp(&b.tflops))
        .map(|r| r.kernel)
}

#[test]
fn at_every_shape_of_the_sgemm_bench_the_choice_is_the_fastest_measured_kernel() {
    let tables = GemmTable::shipped();
    assert!(tables.iter().any(|t| t.gpu == "H200") && tables.iter().any(|t| t.gpu == "H100"), "both tables ship");
    for table in &tables {
        use ElementType::{BF16, F16, F32};
        let plain = [[F32, F32], [BF16, F32], [F16, F32], [BF16, BF16], [F16, F16]].map(|[i, o]| GemmTypes::new(i, o));
        let transposed = plain.map(|t| t.with_b_transposed());
        for types in plain.into_iter().chain(transposed) {
            let measured =
                table.records.iter().any(|r| GemmTypes::of(tessera::catalog::find(r.kernel).unwrap()) == types);
            assert!(measured, "{}: no records of {types}", table.gpu);
            for shape in Family::Sgemm.default_sizes() {
                let value = |name: &str| shape.iter().find(|(n, _)| n == name).map(|(_, v)| *v as usize).unwrap();
                let shape = [value("M"), value("N"), value("K")];
                let got = table.choose(types, shape[0], shape[1], shape[2]);
                let sixteen_bit = types.input != F32;
                if sixteen_bit && (types.output != F32 || types.b_transposed) && shape[1] % 8 != 0 {
                    // the bench times the 16-bit-output and B [N, K] kernels (all TMA) on rows
                    // not 16 bytes apart only through aligned copies, as `gemm` runs them there:
                    // no record of their own, so the choice is the nearest aligned shape's
                    let got = got.unwrap_or_else(|| panic!("{}: no choice for {types}", table.gpu));
                    assert_eq!(GemmTypes::of(got), types, "{}", got.name());
                    continue;
                }
                let want = fastest_measured(table, types, shape)
                    .unwrap_or_else(|| panic!("{}: no record of {types} at {shape:?}", table.gpu));
                assert_eq!(got.map(|k| k.name()), Some(want), "{} {types} at {shape:?}", table.gpu);
            }
        }
    }
}

#[test]
fn an_unmeasured_shape_takes_the_nearest_measured_shape_aligned_alike() {
    let csv = "family,kernel,shape,median_ms,min_ms,max_ms,value\n\
               sgemm,sgemm_v6,\"M=4096,N=4096,K=4096\",1,1,1,40\n\
               sgemm,sgemm_v12,\"M=4096,N=4096,K=4096\",1,1,1,50\n\
               sgemm,sgemm_v4,\"M=4095,N=4095,K=4095\",1,1,1,45\n\
               sgemm,sgemm_v12,\"M=4095,N=4095,K=4095\",1,1,1,44\n\
               sgemm,sgemm_v6_128x64,\"M=1024,N=1024,K=1024\",1,1,1,30\n\
               sgemm,sgemm_v13,\"M=1024,N=1024,K=1024\",1,1,1,12\n\
               softmax,softmax_block_f32,\"R=8192,C=8192\",1,1,1,4000\n";
    let table = GemmTable::from_bench_csv("test", csv).unwrap();
    assert_eq!(table.records.len(), 6, "other families are skipped");
    let f32 = GemmTypes::new(ElementType::F32, ElementType::F32);
    let pick = |m, n, k| table.choose(f32, m, n, k).map(|k| k.name());
    assert_eq!(pick(4096, 4096, 4096), Some("sgemm_v12"));
    assert_eq!(pick(3968, 4000, 4200), Some("sgemm_v12"), "aligned, nearest 4096³");
    assert_eq!(pick(4001, 4001, 4001), Some("sgemm_v4"), "unaligned: the tail shape's winner");
    assert_eq!(pick(4001, 4096, 4096), Some("sgemm_v12"), "M does not touch the rows' alignment");
    assert_eq!(pick(1280, 1024, 768), Some("sgemm_v6_128x64"), "nearest 1024³");
    assert_eq!(
        table.choose(GemmTypes::new(ElementType::BF16, ElementType::F32), 4096, 4096, 4096).map(|k| k.name()),
        None,
        "no bf16 rows"
    );
}

#[test]
fn bias_gelu_is_fused_into_v13_where_it_beats_stream_k_and_runs_as_two_kernels_elsewhere() {
    let h200 = GemmTable::shipped().into_iter().find(|t| t.gpu == "H200").expect("the H200 table ships");
    let plain = |m, n, k| {
        h200.choose_among(ElementType::F32, m, n, k, |kernel| kernel == "sgemm_v12" || kernel == "sgemm_v13")
            .map(|kernel| kernel.name())
    };
    // 1024³: 32 tiles of 128 × 256 for 132 SMs — stream-K; 4096³: 512 tiles — V13
    assert_eq!(plain(1024, 1024, 1024), Some("sgemm_v12"));
    assert_eq!(plain(4096, 4096, 4096), Some("sgemm_v13"));
    let backend = common::simulator();
    let plan = |m: usize, n: usize, k: usize| {
        tessera::gemm_dispatch::choose_bias_gelu(&backend, &[m, k], &[k, n]).unwrap().describe()
    };
    assert_eq!(plan(1024, 1024, 1024), "sgemm_v12 + bias_gelu_f32");
    assert_eq!(plan(4097, 4097, 4097), "sgemm_v12 + bias_gelu_f32");
    assert_eq!(plan(4096, 4096, 4096), "sgemm_bias_gelu");
    assert_eq!(plan(8192, 8192, 256), "sgemm_bias_gelu");
}

/// f32 with B stored [N, K]: the direct `sgemm_bt` kernels lose ~8% at the large shapes, where
/// a transposed copy of B costs ~1% — there the choice is the B [K, N] SGEMM (run on the copy),
/// at 1024³ the direct kernel (the copy would cost more than it saves).
#[test]
fn f32_with_b_stored_n_by_k_takes_a_transposed_copy_where_the_table_says_it_pays() {
    let backend = common::simulator(); // chooses as an H200
    let f32_bt = GemmTypes::new(ElementType::F32, ElementType::F32).with_b_transposed();
    let choice = |m: usize, n: usize, k: usize| {
        tessera::gemm_dispatch::choose(&backend, f32_bt, &[m, k], &[n, k]).unwrap().name()
    };
    assert_eq!(choice(1024, 1024, 1024), "sgemm_v12_bt");
    assert_eq!(choice(4096, 4096, 4096), "sgemm_v13");
    assert_eq!(choice(8192, 8192, 8192), "sgemm_v13");
    assert_eq!(choice(8192, 8192, 256), "sgemm_v13");
}

#[test]
fn a_table_that_lacks_the_types_is_an_error_naming_them() {
    let linear = GemmTypes::new(ElementType::BF16, ElementType::BF16).with_b_transposed();
    let csv = "family,kernel,shape,median_ms,min_ms,max_ms,value\nsgemm,sgemm_v6,\"M=64,N=64,K=64\",1,1,1,40\n";
    let mine = GemmTable::from_bench_csv("mine.csv", csv).unwrap();
    assert!(mine.choose(linear, 64, 64, 64).is_none());
    let error = GemmError::NoKernel { types: linear, device: "H200".into(), table: "mine.csv".into() };
    assert_eq!(
        error.to_string(),
        "no GEMM kernel of bf16 inputs (B stored [N, K]) into a bf16 C measured in the table for H200 (table: mine.csv)"
    );
}

#[test]
fn a_malformed_record_is_an_error_naming_its_line() {
    let csv = "family,kernel,shape,median_ms,min_ms,max_ms,value\nsgemm,sgemm_v6,\"M=64,N=64\",1,1,1,40\n";
    let error = GemmTable::from_bench_csv("mine.csv", csv).unwrap_err().to_string();
    assert_eq!(error, "mine.csv line 2: no K in the shape `M=64,N=64`");
}

fn gemm_multiplies_with_the_kernel_it_reports(backend: &Backend) {
    let mut shapes = vec![(64, 48, 32), (33, 17, 9)];
    if !backend.is_simulated() {
        shapes.extend([(1024, 1024, 1024), (1000, 17, 129), (1023, 1025, 257)]);
    }
    for (m, n, k) in shapes {
        let (host_a, host_b, host_c) = (random_floats(m * k, 1), random_floats(k * n, 2), random_floats(m * n, 3));
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        let launched = tessera::gemm(backend, &a, &b, &mut c, 1.5, -0.5).unwrap();
        let chosen = tessera::gemm_dispatch::choose(
            backend,
            GemmTypes::new(ElementType::F32, ElementType::F32),
            &[m, k],
            &[k, n],
        )
        .unwrap();
        // what `Launched` reports is the kernel `choose` picks (which kernel that should be is
        // the table tests' concern)
        assert_eq!(launched.kernel, chosen.name());
        assert!(launched.kernel.starts_with("sgemm_v"), "{}", launched.kernel);
        let want = gemm_reference(&host_a, &host_b, &host_c, (m, n, k), 1.5, -0.5);
        let error = relative_error(&backend.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "{} at {m}×{n}×{k}: relative error {error:e}", launched.kernel);
    }
    let vector = backend.upload(&[1.0f32; 4], [4]).unwrap();
    let mut c = backend.zeros::<f32>([4, 4]).unwrap();
    let error = tessera::gemm(backend, &vector, &vector, &mut c, 1.0, 0.0).unwrap_err();
    assert!(matches!(error, GemmError::NotMatrices { .. }), "{error}");
    // `?` into a tessera::Error keeps it, readable as the GEMM's own error
    let mut through_question_mark = || -> Result<tessera::Launched, tessera::Error> {
        Ok(tessera::gemm(backend, &vector, &vector, &mut c, 1.0, 0.0)?)
    };
    let error = through_question_mark().unwrap_err();
    assert!(matches!(error.library::<GemmError>(), Some(GemmError::NotMatrices { a, .. }) if a == &[4]), "{error}");
}

fn gemm_of_bf16_runs_on_tensor_cores(backend: &Backend) {
    let (m, n, k) = if backend.is_simulated() { (40, 24, 48) } else { (1024, 1024, 1024) };
    let host_a: Vec<bf16> = random_floats(m * k, 4).into_iter().map(bf16::from_f32).collect();
    let host_b: Vec<bf16> = random_floats(k * n, 5).into_iter().map(bf16::from_f32).collect();
    let exact = |v: &[bf16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
    let a = backend.upload(&host_a, [m, k]).unwrap();
    let b = backend.upload(&host_b, [k, n]).unwrap();
    let mut c = backend.zeros::<f32>([m, n]).unwrap();
    let launched = tessera::gemm(backend, &a, &b, &mut c, 1.0, 0.0).unwrap();
    assert!(launched.kernel.starts_with("hgemm_") && launched.kernel.ends_with("_bf16"), "{}", launched.kernel);
    let want = gemm_reference(&exact(&host_a), &exact(&host_b), &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    let error = relative_error(&backend.download(&c).unwrap(), &want);
    assert!(error < 1e-5, "{}: relative error {error:e}", launched.kernel);
}

/// bf16 into bf16 and f16 into f16 through the entry point: a kernel that stores C in the
/// inputs' type, β · C read from 16 bits, each element within a unit in the last place of
/// the exact result plus the f32 accumulation's share — at 1024³ (V20's small tiles on an H200),
/// 4096 × 4096 × 512, and on rows not 16 bytes apart, where the work pays for aligned copies.
fn gemm_into_a_16_bit_c_rounds_the_f32_result_once(backend: &Backend) {
    let shapes: &[(usize, usize, usize)] = if backend.is_simulated() {
        &[(40, 24, 48), (33, 17, 9)]
    } else {
        &[(1024, 1024, 1024), (4096, 4096, 512), (1023, 1025, 1027)]
    };
    for &(m, n, k) in shapes {
        check_16_bit_output(backend, (m, n, k), bf16::from_f32, bf16::to_f32, 8, "_bf16_to_bf16");
        check_16_bit_output(
            backend,
            (m, n, k),
            tessera::half::f16::from_f32,
            tessera::half::f16::to_f32,
            10,
            "_f16_to_f16",
        );
    }
}

fn check_16_bit_output<T: tessera::gemm_dispatch::GemmInput + tessera::gemm_dispatch::GemmOutput<T>>(
    backend: &Backend,
    (m, n, k): (usize, usize, usize),
    from_f32: fn(f32) -> T,
    to_f32: fn(T) -> f32,
    ulp_bits: i32,
    suffix: &str,
) {
    let rounded = |count, seed| random_floats(count, seed).into_iter().map(from_f32).collect::<Vec<T>>();
    let (host_a, host_b, host_c) = (rounded(m * k, 31), rounded(k * n, 32), rounded(m * n, 33));
    let exact = |v: &[T]| v.iter().map(|&h| to_f32(h)).collect::<Vec<_>>();
    let want = gemm_reference(&exact(&host_a), &exact(&host_b), &exact(&host_c), (m, n, k), 1.5, -0.5);
    let a = backend.upload(&host_a, [m, k]).unwrap();
    let b = backend.upload(&host_b, [k, n]).unwrap();
    let mut c = backend.upload(&host_c, [m, n]).unwrap();
    let launched = tessera::gemm(backend, &a, &b, &mut c, 1.5, -0.5).unwrap();
    assert!(launched.kernel.ends_with(suffix), "{} at {m}×{n}×{k}", launched.kernel);
    let chosen = tessera::gemm_dispatch::choose(backend, GemmTypes::new(T::TYPE, T::TYPE), &[m, k], &[k, n]).unwrap();
    let unaligned = k % 8 != 0 || n % 8 != 0;
    if !unaligned {
        assert_eq!(launched.kernel, chosen.name(), "what Launched reports is what choose picks");
    }
    if unaligned && m * n * k >= tessera::gemm_dispatch::ALIGNED_COPY_WORK {
        assert!(launched.tma, "{} at {m}×{n}×{k}: A and B read by TMA from the aligned copies", launched.kernel);
    }
    let accumulation = 1e-5 * (want.iter().map(|w| w * w).sum::<f64>() / want.len() as f64).sqrt();
    for (i, (g, w)) in backend.download(&c).unwrap().into_iter().zip(&want).enumerate() {
        let bound = w.abs() * 2f64.powi(-ulp_bits) + accumulation;
        let got = f64::from(to_f32(g));
        assert!((got - w).abs() <= bound, "{} at {m}×{n}×{k}: C[{i}] = {got}, want {w}", launched.kernel);
    }
}

/// `gemm_bt`: C = α·A·Bᵀ + β·C with B stored [N, K] on an `hgemm_bt` kernel, into f32 and into
/// the inputs' type — on whole tiles, tails, and (on the GPU) rows not 16 bytes apart through
/// aligned copies of A and of B's [N, K] rows.
fn gemm_bt_multiplies_by_b_stored_n_by_k(backend: &Backend) {
    let shapes: &[(usize, usize, usize)] = if backend.is_simulated() {
        &[(40, 24, 48), (33, 17, 9)]
    } else {
        &[(1024, 1024, 1024), (4096, 4096, 512), (1023, 1025, 1027)]
    };
    for &(m, n, k) in shapes {
        let rounded = |count, seed| random_floats(count, seed).into_iter().map(bf16::from_f32).collect::<Vec<_>>();
        let exact = |v: &[bf16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
        let (host_a, host_b) = (rounded(m * k, 51), rounded(n * k, 52));
        let b_kn = transposed(&exact(&host_b), n, k);
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [n, k]).unwrap();
        // f32 C
        let host_c = random_floats(m * n, 53);
        let want = gemm_reference(&exact(&host_a), &b_kn, &host_c, (m, n, k), 1.5, -0.5);
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        let launched = tessera::gemm_bt(backend, &a, &b, &mut c, 1.5, -0.5).unwrap();
        assert!(launched.kernel.contains("_bt_bf16") && !launched.kernel.contains("_to_"), "{}", launched.kernel);
        let error = relative_error(&backend.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "{} at {m}×{n}×{k}: relative error {error:e}", launched.kernel);
        // bf16 C: within an ulp of the exact result plus the accumulation's share
        let host_c = rounded(m * n, 54);
        let want = gemm_reference(&exact(&host_a), &b_kn, &exact(&host_c), (m, n, k), 1.5, -0.5);
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        let launched = tessera::gemm_bt(backend, &a, &b, &mut c, 1.5, -0.5).unwrap();
        assert!(launched.kernel.ends_with("_bt_bf16_to_bf16"), "{}", launched.kernel);
        if k % 8 != 0 && m * n * k >= tessera::gemm_dispatch::ALIGNED_COPY_WORK {
            assert!(launched.tma, "{} at {m}×{n}×{k}: read by TMA from the aligned copies", launched.kernel);
        }
        let accumulation = 1e-5 * (want.iter().map(|w| w * w).sum::<f64>() / want.len() as f64).sqrt();
        for (i, (g, w)) in backend.download(&c).unwrap().into_iter().zip(&want).enumerate() {
            let got = f64::from(g.to_f32());
            assert!(
                (got - w).abs() <= w.abs() * 2f64.powi(-8) + accumulation,
                "{} at {m}×{n}×{k}: C[{i}] = {got}, want {w}",
                launched.kernel
            );
        }
    }
    // f32: the FP32 SGEMMs that turn B's tile as they copy it
    for &(m, n, k) in shapes {
        let (host_a, host_b, host_c) = (random_floats(m * k, 55), random_floats(n * k, 56), random_floats(m * n, 57));
        let want = gemm_reference(&host_a, &transposed(&host_b, n, k), &host_c, (m, n, k), 1.5, -0.5);
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [n, k]).unwrap();
        let mut c = backend.upload(&host_c, [m, n]).unwrap();
        let launched = tessera::gemm_bt(backend, &a, &b, &mut c, 1.5, -0.5).unwrap();
        // a sgemm_bt kernel, or a B [K, N] SGEMM on a transposed copy where that pays
        let f32_bt = GemmTypes::new(ElementType::F32, ElementType::F32).with_b_transposed();
        let chosen = tessera::gemm_dispatch::choose(backend, f32_bt, &[m, k], &[n, k]);
        assert_eq!(launched.kernel, chosen.unwrap().name());
        assert!(launched.kernel.starts_with("sgemm_v"), "{}", launched.kernel);
        let error = relative_error(&backend.download(&c).unwrap(), &want);
        assert!(error < 1e-5, "{} at {m}×{n}×{k}: relative error {error:e}", launched.kernel);
    }
    // B's shape is checked as [N, K]: A [4, 64] and B [64, 8] do not multiply as A·Bᵀ
    let one = bf16::from_f32(1.0);
    let a = backend.upload(&[one; 4 * 64], [4, 64]).unwrap();
    let b = backend.upload(&[one; 64 * 8], [64, 8]).unwrap();
    let mut c = backend.zeros::<f32>([4, 8]).unwrap();
    assert!(tessera::gemm_bt(backend, &a, &b, &mut c, 1.0, 0.0).is_err(), "B [K, N] taken for [N, K]");
}

/// bf16 and f16 operands whose rows are not 16 bytes apart (odd column counts), β ≠ 0 so C
/// is copied in as well as out; a sub-matrix C adds a leading dimension of its own.
fn aligned_copies_of_unaligned_16_bit_operands_give_the_same_product_at_full_width(backend: &Backend) {
    let mut shapes = vec![(33, 17, 41), (8, 9, 7)];
    if !backend.is_simulated() {
        shapes.extend([(1023, 1025, 257), (129, 4097, 1000)]);
    }
    for (m, n, k) in shapes {
        let rounded =
            |seed| random_floats(m.max(k) * k.max(n), seed).into_iter().map(bf16::from_f32).collect::<Vec<_>>();
        let (host_a, host_b) = (rounded(6)[..m * k].to_vec(), rounded(7)[..k * n].to_vec());
        let host_c = random_floats(m * (n + 3), 8);
        let exact = |v: &[bf16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
        let a = backend.upload(&host_a, [m, k]).unwrap();
        let b = backend.upload(&host_b, [k, n]).unwrap();
        let mut c_buffer = backend.upload(&host_c, [m * (n + 3)]).unwrap();
        let mut c = c_buffer.view_with_leading_dimension_mut(0, [m, n], n + 3).unwrap();
        let launched = tessera::gemm_dispatch::gemm_through_aligned_copies(backend, &a, &b, &mut c, 1.5, -0.5).unwrap();
        // A and B read at full width: by TMA (C's odd rows narrow only its stores), or 16 bytes
        // a cp.async
        assert!(launched.tma || launched.vector.get() == 8, "{} ran narrowed at {m}×{n}×{k}", launched.kernel);
        let c_dense: Vec<f32> = (0..m).flat_map(|r| host_c[r * (n + 3)..r * (n + 3) + n].to_vec()).collect();
        let want = gemm_reference(&exact(&host_a), &exact(&host_b), &c_dense, (m, n, k), 1.5, -0.5);
        let got = backend.download(&c_buffer).unwrap();
        let got_dense: Vec<f32> = (0..m).flat_map(|r| got[r * (n + 3)..r * (n + 3) + n].to_vec()).collect();
        let error = relative_error(&got_dense, &want);
        assert!(error < 1e-5, "{} at {m}×{n}×{k}: relative error {error:e}", launched.kernel);
        // the three padding elements of each row of C are left as they were
        for r in 0..m {
            assert_eq!(&got[r * (n + 3) + n..(r + 1) * (n + 3)], &host_c[r * (n + 3) + n..(r + 1) * (n + 3)]);
        }
    }
    // f16 takes its own copy kernel
    let (m, n, k) = (9, 5, 11);
    let host: Vec<tessera::half::f16> =
        random_floats(m * k.max(n) * 2, 9).into_iter().map(tessera::half::f16::from_f32).collect();
    let a = backend.upload(&host[..m * k], [m, k]).unwrap();
    let b = backend.upload(&host[m * k..m * k + k * n], [k, n]).unwrap();
    let mut c = backend.zeros::<f32>([m, n]).unwrap();
    tessera::gemm_dispatch::gemm_through_aligned_copies(backend, &a, &b, &mut c, 1.0, 0.0).unwrap();
    let exact: Vec<f32> = host.iter().map(|h| h.to_f32()).collect();
    let want = gemm_reference(&exact[..m * k], &exact[m * k..m * k + k * n], &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    assert!(relative_error(&backend.download(&c).unwrap(), &want) < 1e-5);
}

/// Below `ALIGNED_COPY_WORK` multiply-adds the narrowed kernel runs on the caller's rows; from
/// it on (on the GPU: the simulation would take minutes) `gemm` runs at full width.
fn gemm_copies_unaligned_16_bit_operands_only_when_the_work_pays_for_it(backend: &Backend) {
    let mut shapes = vec![(17, 9, 33)];
    if !backend.is_simulated() {
        shapes.push((513, 515, 517));
    }
    for (m, n, k) in shapes {
        let host: Vec<bf16> = random_floats(m * k + k * n, 10).into_iter().map(bf16::from_f32).collect();
        let a = backend.upload(&host[..m * k], [m, k]).unwrap();
        let b = backend.upload(&host[m * k..], [k, n]).unwrap();
        let mut c = backend.zeros::<f32>([m, n]).unwrap();
        let launched = tessera::gemm(backend, &a, &b, &mut c, 1.0, 0.0).unwrap();
        let copies = m * n * k >= tessera::gemm_dispatch::ALIGNED_COPY_WORK;
        assert_eq!(
            launched.tma || launched.vector.get() == 8,
            copies,
            "{} at {m}×{n}×{k}: vector {}",
            launched.kernel,
            launched.vector
        );
        let exact: Vec<f32> = host.iter().map(|h| h.to_f32()).collect();
        let want = gemm_reference(&exact[..m * k], &exact[m * k..], &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
        assert!(relative_error(&backend.download(&c).unwrap(), &want) < 1e-5);
    }
}

/// α = 0, as in BLAS: C = β·C whatever A and B hold (NaN and ∞ in them do not reach C), β = 0
/// writes zeros over a C holding NaN, for B stored [K, N] and [N, K] and a 16-bit C; the
/// shapes are still checked.
fn gemm_with_alpha_zero_reads_neither_a_nor_b(backend: &Backend) {
    let (m, n, k) = (37, 300, 19);
    let poisoned = |len: usize| (0..len).map(|i| if i % 3 == 0 { f32::NAN } else { f32::INFINITY }).collect::<Vec<_>>();
    let a = backend.upload(&poisoned(m * k), [m, k]).unwrap();
    let b = backend.upload(&poisoned(k * n), [k, n]).unwrap();
    let b_stored_n_by_k = backend.upload(&poisoned(n * k), [n, k]).unwrap();
    let host_c = random_floats(m * n, 21);
    let mut c = backend.upload(&host_c, [m, n]).unwrap();
    let launched = tessera::gemm(backend, &a, &b, &mut c, 0.0, -0.5).unwrap();
    assert_eq!(launched.kernel, "matrix_scale_f32");
    let want: Vec<f32> = host_c.iter().map(|v| -0.5 * v).collect();
    assert_eq!(backend.download(&c).unwrap(), want);
    tessera::gemm_bt(backend, &a, &b_stored_n_by_k, &mut c, 0.0, 2.0).unwrap();
    let want: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
    assert_eq!(backend.download(&c).unwrap(), want);

    let mut c = backend.upload(&poisoned(m * n), [m, n]).unwrap();
    tessera::gemm(backend, &a, &b, &mut c, 0.0, 0.0).unwrap();
    assert_eq!(backend.download(&c).unwrap(), vec![0.0; m * n]);

    let to_bf16 = |v: &[f32]| v.iter().copied().map(bf16::from_f32).collect::<Vec<_>>();
    let a = backend.upload(&to_bf16(&poisoned(m * k)), [m, k]).unwrap();
    let b = backend.upload(&to_bf16(&poisoned(k * n)), [k, n]).unwrap();
    let mut c = backend.upload(&to_bf16(&host_c), [m, n]).unwrap();
    let launched = tessera::gemm(backend, &a, &b, &mut c, 0.0, 3.0).unwrap();
    assert_eq!(launched.kernel, "matrix_scale_bf16");
    let want: Vec<bf16> = to_bf16(&host_c).iter().map(|v| bf16::from_f32(3.0 * v.to_f32())).collect();
    assert_eq!(backend.download(&c).unwrap(), want);

    let short_b = backend.upload(&poisoned((k - 1) * n), [k - 1, n]).unwrap();
    let a = backend.upload(&poisoned(m * k), [m, k]).unwrap();
    let mut c = backend.zeros::<f32>([m, n]).unwrap();
    let error = tessera::gemm(backend, &a, &short_b, &mut c, 0.0, 1.0).unwrap_err();
    assert!(error.to_string().contains("[37, 19]") && error.to_string().contains("[18, 300]"), "{error}");
}
