//! Without a host C++ compiler the simulator is a typed error that names the compiler it
//! tried. This binary sets `CXX` for its one test, so nothing else here reads it concurrently.

use tessera::runtime::Error;
use tessera::{Backend, Gpu, Simulator};

#[test]
fn a_missing_host_compiler_is_a_typed_error_naming_it_everywhere_it_matters() {
    std::env::set_var("CXX", "/nonexistent/c++");
    std::env::remove_var("TESSERA_BACKEND");

    let missing = Simulator::new().unwrap_err();
    match &missing {
        Error::HostCompilerMissing { compiler, reason } => {
            assert_eq!(compiler, "/nonexistent/c++ (from $CXX)");
            assert!(!reason.is_empty());
        }
        other => panic!("expected HostCompilerMissing, got {other:?}"),
    }
    assert!(missing.to_string().contains("set CXX"), "{missing}");

    match (Gpu::new(0), Backend::detect()) {
        (Ok(_), Ok(backend)) => assert!(!backend.is_simulated()),
        (Err(_), Err(Error::NoBackend { gpu, simulator })) => {
            assert!(matches!(*simulator, Error::HostCompilerMissing { .. }), "{simulator}");
            assert!(!gpu.to_string().is_empty());
        }
        (gpu, detected) => panic!("GPU: {gpu:?}; detected: {detected:?}"),
    }

    std::env::set_var("TESSERA_BACKEND", "simulator");
    assert!(matches!(Backend::detect(), Err(Error::HostCompilerMissing { .. })));
    std::env::set_var("TESSERA_BACKEND", "tpu");
    assert!(matches!(
        Backend::detect(),
        Err(Error::BackendChoice { value }) if value == "tpu"
    ));
    std::env::remove_var("TESSERA_BACKEND");
}
