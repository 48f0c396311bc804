//! The kernels people learn CUDA optimisation on, written in tessera. Each module is one
//! family; the examples run them and the tests check their source, their compile and their
//! numbers.

pub mod copy;
