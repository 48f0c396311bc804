//! The emitted CUDA of every catalog kernel, against the reviewed files in tests/golden/.
//! Regenerate after an intended change with `TESSERA_BLESS=1 cargo test --test golden`,
//! then review the diff like code.

mod common;

use tessera::catalog::{
    self, attention, copy, epilogue, gemv, hgemm, hgemm_bt, map, matrix_copy, matrix_scale, norm, reduce, sgemm,
    sgemm_bt, softmax, stencil, transpose,
};

/// (file name, emitted source, golden source) for each kernel module named.
macro_rules! cases {
    ($($family:ident :: $kernel:ident),* $(,)?) => {
        &[$((
            concat!(stringify!($kernel), ".cu"),
            $family::$kernel::CUDA_SOURCE,
            include_str!(concat!("golden/", stringify!($kernel), ".cu")),
        )),*]
    };
}

const CASES: &[(&str, &str, &str)] = with_every_catalog_kernel!(cases);

#[test]
fn emitted_cuda_matches_the_golden_files() {
    if std::env::var("TESSERA_BLESS").is_ok_and(|v| v == "1") {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        for (file, source, _) in CASES {
            std::fs::write(dir.join(file), source).unwrap();
        }
        return;
    }
    for (file, source, golden) in CASES {
        pretty_assertions::assert_eq!(*golden, *source, "tests/golden/{file} differs from the emitted CUDA");
    }
}

#[test]
fn every_catalog_kernel_has_a_golden_file() {
    for kernel in catalog::all() {
        let file = format!("{}.cu", kernel.name());
        assert!(CASES.iter().any(|(f, ..)| *f == file), "no golden file for {}", kernel.name());
    }
}

#[test]
fn a_narrower_rendering_differs_from_the_declared_one_only_in_width() {
    let narrower = copy::copy_f32x4::KERNEL.source_with_vector(tessera::dsl::VectorWidth::W2).unwrap();
    assert!(narrower.contains("constexpr int VECTOR = 2;"));
    assert!(narrower.contains("float2 staged[STEPS];"));
    assert!(!narrower.contains("float4*") && !narrower.contains("float4 staged"));
    let declared = copy::copy_f32x4::CUDA_SOURCE;
    let changed = declared.lines().zip(narrower.lines()).filter(|(a, b)| a != b).count();
    assert_eq!(declared.lines().count(), narrower.lines().count());
    // header, VECTOR, the per-thread comment, the access comment, staging, load, store
    assert_eq!(changed, 7, "{changed} lines changed:\n{narrower}");
}

#[test]
fn neighbouring_transpose_kernels_differ_only_in_their_idea() {
    // the kernels' doc comments differ in length: compare from the signature on
    let lines =
        |source: &str| source.lines().skip_while(|l| !l.starts_with("extern")).map(str::to_owned).collect::<Vec<_>>();
    let differing = |a: &str, b: &str| {
        let (a, b) = (lines(a), lines(b));
        assert_eq!(a.len(), b.len());
        a.iter().zip(&b).filter(|(x, y)| x != y).map(|(_, y)| y.trim().to_string()).collect::<Vec<_>>()
    };
    // padding: the name in the signature, the declaration and its comment
    let padded = differing(transpose::transpose_shared::CUDA_SOURCE, transpose::transpose_padded::CUDA_SOURCE);
    assert!(padded.iter().any(|l| l == "__shared__ __align__(16) float t[T][T + 1];"), "{padded:#?}");
    assert_eq!(padded.len(), 3, "{padded:#?}");
    // the note's conflict-free layout: only the thread order of the second copy changes
    let order = differing(
        transpose::transpose_f32x4_shared::CUDA_SOURCE,
        transpose::transpose_f32x4_conflict_free::CUDA_SOURCE,
    );
    assert!(order.iter().any(|l| l == "const int row = item % ROWS;"), "{order:#?}");
    assert!(order.iter().all(|l| !l.contains("__shared__")), "{order:#?}");
}

#[test]
fn each_sgemm_stage_is_its_predecessor_plus_one_idea() {
    let body = |source: &str| {
        source
            .lines()
            .skip_while(|l| !l.starts_with("extern"))
            .skip(2)
            .map(str::trim)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // V1 → V2: A's layout in shared memory and the split thread tile, nothing else
    let (v1, v2) = (body(sgemm::sgemm_v1::CUDA_SOURCE), body(sgemm::sgemm_v2::CUDA_SOURCE));
    let added: Vec<&String> = v2.iter().filter(|l| !v1.contains(l)).collect();
    assert!(added.iter().any(|l| l.contains("float a_s[BK][BM];")), "{added:#?}");
    assert!(added.iter().any(|l| l.starts_with("// let mut acc") && l.contains(".split([2, 2])")), "{added:#?}");
    let about_the_idea = ["a_s", "a_frag", "b_frag", "split", "sub-tiles", "(TM / 2)", "(TN / 2)"];
    let unrelated: Vec<&&String> = added.iter().filter(|l| !about_the_idea.iter().any(|w| l.contains(w))).collect();
    assert!(unrelated.is_empty(), "V1 → V2 changed lines unrelated to its idea: {unrelated:#?}");
    // V2 → V3: the same statements, double-buffered
    assert!(sgemm::sgemm_v3::CUDA_SOURCE.contains("float a_s[2][BK][BM];"));
    assert!(sgemm::sgemm_v3::CUDA_SOURCE.contains("if (k + 1 < k_tiles) {"));
    assert_eq!(sgemm::sgemm_v3::CUDA_SOURCE.matches("__syncthreads();").count(), 2);
}
