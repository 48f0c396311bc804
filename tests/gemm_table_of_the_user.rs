//! `TESSERA_GEMM_TABLE`: a user's own measurements decide what `tessera::gemm` runs, and for
//! element types or B layouts that table lacks, the first shipped table that has them does. A
//! test binary of its own: the variable is read once per process, before the first choice.

use tessera::dsl::ElementType::{BF16, F32};
use tessera::gemm_dispatch::{choose, GemmTable, GemmTypes};
use tessera::{Backend, Simulator};

#[test]
fn a_users_table_decides_and_the_shipped_tables_fill_the_types_it_lacks() {
    // one f32 record: sgemm_v6 measured at 1024³ (no 16-bit kernel, no B stored [N, K])
    let path = std::env::temp_dir().join(format!("tessera-gemm-table-{}.csv", std::process::id()));
    // and sgemm_v12_bt (B stored [N, K]) measured far slower at 64³
    let csv = "family,kernel,shape,median_ms,min_ms,max_ms,value\n\
               sgemm,sgemm_v6,\"M=1024,N=1024,K=1024\",1,1,1,40\n\
               sgemm,sgemm_v6,\"M=64,N=64,K=64\",1,1,1,40\n\
               sgemm,sgemm_v12_bt,\"M=64,N=64,K=64\",1,1,1,0.001\n";
    std::fs::write(&path, csv).unwrap();
    std::env::set_var("TESSERA_GEMM_TABLE", &path);
    let backend = Backend::Simulator(Simulator::new().expect("the simulation needs a host C++ compiler"));

    // the user's record decides f32 at every shape (the nearest measured one)
    let f32 = GemmTypes::new(F32, F32);
    for [m, n, k] in [[1024, 1024, 1024], [4096, 4096, 4096], [33, 17, 9]] {
        assert_eq!(choose(&backend, f32, &[m, k], &[k, n]).unwrap().name(), "sgemm_v6", "{m}×{n}×{k}");
    }
    let a = backend.upload(&vec![1.0f32; 64 * 32], [64, 32]).unwrap();
    let b = backend.upload(&vec![0.5f32; 32 * 48], [32, 48]).unwrap();
    let mut c = backend.zeros::<f32>([64, 48]).unwrap();
    let launched = tessera::gemm(&backend, &a, &b, &mut c, 1.0, 0.0).unwrap();
    assert_eq!(launched.kernel, "sgemm_v6");
    assert!(backend.download(&c).unwrap().iter().all(|&v| v == 16.0));

    // f32 with B [N, K]: sgemm_v6 on a transposed copy of B beats the slow direct kernel, so
    // gemm_bt runs that — and the product is A·Bᵀ
    let (m, n, k) = (64, 48, 32);
    let host_a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
    let host_b: Vec<f32> = (0..n * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let a = backend.upload(&host_a, [m, k]).unwrap();
    let b = backend.upload(&host_b, [n, k]).unwrap();
    let mut c = backend.zeros::<f32>([m, n]).unwrap();
    let f32_bt = f32.with_b_transposed();
    assert_eq!(choose(&backend, f32_bt, &[m, k], &[n, k]).unwrap().name(), "sgemm_v6");
    let launched = tessera::gemm_bt(&backend, &a, &b, &mut c, 1.0, 0.0).unwrap();
    assert_eq!(launched.kernel, "sgemm_v6");
    let got = backend.download(&c).unwrap();
    for (index, value) in got.iter().enumerate() {
        let (row, col) = (index / n, index % n);
        let want: f32 = (0..k).map(|kk| host_a[row * k + kk] * host_b[col * k + kk]).sum();
        assert_eq!(*value, want, "C[{row}, {col}]"); // small integers: exact in f32
    }

    // bf16 → bf16 with B [N, K] is not in it: the H200's table (the first shipped) decides
    let h200 = GemmTable::shipped().into_iter().next().unwrap();
    assert_eq!(h200.gpu, "H200", "the table choose_once falls back to first");
    let linear = GemmTypes::new(BF16, BF16).with_b_transposed();
    for [m, n, k] in [[1024, 1024, 1024], [4096, 4096, 4096], [8192, 8192, 256]] {
        let chosen = choose(&backend, linear, &[m, k], &[n, k]).unwrap();
        assert_eq!(Some(chosen.name()), h200.choose(linear, m, n, k).map(|k| k.name()), "{m}×{n}×{k}");
    }
    std::fs::remove_file(&path).ok();
}
