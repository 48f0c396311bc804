//! The kernels people learn CUDA optimisation on, written in tessera. Each module is one
//! family; the examples run them and the tests check their source, their compile and their
//! numbers.

pub mod copy;
pub mod hgemm;
pub mod map;
pub mod parallel;
pub mod reduce;
pub mod sgemm;
pub mod stencil;
pub mod transpose;

/// Every catalog kernel, for the CLI, the examples and the tests.
pub fn all() -> Vec<&'static crate::KernelDefinition> {
    copy::ALL
        .into_iter()
        .chain(transpose::ALL)
        .chain(sgemm::ALL)
        .chain(hgemm::all())
        .chain(reduce::ALL)
        .chain(map::ALL)
        .chain(stencil::ALL)
        .collect()
}

/// The catalog kernel named `name`.
pub fn find(name: &str) -> Option<&'static crate::KernelDefinition> {
    all().into_iter().find(|k| k.name() == name)
}
