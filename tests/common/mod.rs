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

/// The simulator, under three thread orders: any output that depends on the order fails.
pub fn simulator() -> Backend {
    let sim = Simulator::new()
        .unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"))
        .with_orders([Order::Forward, Order::Reverse, Order::Shuffled { seed: 0x7e55e7a }]);
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
