//! The emitted CUDA of every catalog kernel, against the reviewed files in tests/golden/.
//! Regenerate after an intended change with `TESSERA_BLESS=1 cargo test --test golden`,
//! then review the diff like code.

use tessera::catalog::copy;

/// (file name, emitted source, golden source)
const CASES: &[(&str, &str, &str)] = &[
    ("copy_f32.cu", copy::copy_f32::CUDA_SOURCE, include_str!("golden/copy_f32.cu")),
    ("copy_f32x2.cu", copy::copy_f32x2::CUDA_SOURCE, include_str!("golden/copy_f32x2.cu")),
    ("copy_f32x4.cu", copy::copy_f32x4::CUDA_SOURCE, include_str!("golden/copy_f32x4.cu")),
    (
        "copy_f32_grid_stride.cu",
        copy::copy_f32_grid_stride::CUDA_SOURCE,
        include_str!("golden/copy_f32_grid_stride.cu"),
    ),
    (
        "copy_f32x2_grid_stride.cu",
        copy::copy_f32x2_grid_stride::CUDA_SOURCE,
        include_str!("golden/copy_f32x2_grid_stride.cu"),
    ),
    (
        "copy_f32x4_grid_stride.cu",
        copy::copy_f32x4_grid_stride::CUDA_SOURCE,
        include_str!("golden/copy_f32x4_grid_stride.cu"),
    ),
];

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
    for kernel in copy::ALL {
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
