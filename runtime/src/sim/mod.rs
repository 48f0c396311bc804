//! The simulation backend: runs the exact CUDA C tessera emits on the CPU, deterministically,
//! so numeric tests run without a GPU and catch what tiled kernels get wrong (thread-to-element
//! mapping, tails, missing barriers).
//!
//! The source is compiled by the host C++ compiler after `sim/tessera_sim.h` (CUDA's built-ins
//! for the CPU) into a shared library, cached like cubins. Blocks run one after another; the
//! threads of a block run as fibers, each until its next `__syncthreads` (or warp-synchronous
//! op, or its end), in the order asked for. Running under two orders and comparing the outputs
//! finds races; a barrier that not every thread reaches is an error, not a hang.

mod compiler;
mod execute;
mod fault;
mod library;
mod memory;
mod scan;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use compiler::{base_flags, translation_unit, HostCompiler, HEADER};
pub use memory::{HostBuffer, HostRegion};

pub(crate) use execute::{execute, Shape};
pub(crate) use library::SimLibrary;

use crate::tensor::{MemoryMut, Storage};
use crate::{Argument, DeviceTensor, DiskCache, Element, Error, Input, Location, Output, Timing};

/// The order in which the simulator runs the threads of a block between barriers (and the
/// blocks of a grid). A kernel's output must not depend on it; one that does has a race.
///
/// ```
/// use tessera_runtime::Order;
/// assert_eq!(Order::Forward.permutation(4), vec![0, 1, 2, 3]);
/// assert_eq!(Order::Reverse.permutation(4), vec![3, 2, 1, 0]);
/// let shuffled = Order::Shuffled { seed: 7 }.permutation(4);
/// assert_eq!(shuffled, Order::Shuffled { seed: 7 }.permutation(4)); // the seed decides it
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    Forward,
    Reverse,
    Shuffled { seed: u64 },
}

impl Order {
    /// The order of `n` items (threads of a block): a permutation of `0..n`.
    pub fn permutation(self, n: usize) -> Vec<u32> {
        self.permute(n, 0)
    }

    /// The order of `n` blocks: like [`permutation`](Self::permutation), but a shuffle takes a
    /// different permutation than the threads' so the two are not correlated.
    pub fn block_permutation(self, n: usize) -> Vec<u32> {
        self.permute(n, 0x9e37_79b9_7f4a_7c15)
    }

    /// When cp.async copies land under this order: at issue, or (forward) as late as the
    /// program allows, at the wait that covers them. Two orders that differ here tell a
    /// stage read before its wait, or refilled while others read it, by different outputs.
    ///
    /// ```
    /// use tessera_runtime::Order;
    /// assert!(!Order::Forward.lands_async_copies_at_issue());
    /// assert!(Order::Reverse.lands_async_copies_at_issue());
    /// ```
    pub fn lands_async_copies_at_issue(self) -> bool {
        match self {
            Order::Forward => false,
            Order::Reverse => true,
            Order::Shuffled { seed } => seed % 2 == 1,
        }
    }

    fn permute(self, n: usize, salt: u64) -> Vec<u32> {
        let mut items: Vec<u32> = (0..n as u32).collect();
        match self {
            Order::Forward => {}
            Order::Reverse => items.reverse(),
            Order::Shuffled { seed } => {
                // Fisher–Yates driven by splitmix64: the same seed, the same order, everywhere.
                let mut state = seed ^ salt;
                let mut next = move || {
                    state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    z ^ (z >> 31)
                };
                for i in (1..n).rev() {
                    let j = (next() % (i as u64 + 1)) as usize;
                    items.swap(i, j);
                }
            }
        }
        items
    }
}

impl std::fmt::Display for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Order::Forward => f.write_str("forward"),
            Order::Reverse => f.write_str("reverse"),
            Order::Shuffled { seed } => write!(f, "shuffled (seed {seed})"),
        }
    }
}

/// A simulation library built for one kernel (see [`Simulator::compile`]).
#[derive(Clone, Debug)]
pub struct SimCompiled {
    /// The cache key: translation unit, compiler and flags.
    pub key: String,
    /// The shared library.
    pub path: PathBuf,
    /// Whether it came from the disk cache rather than a fresh compile.
    pub from_disk_cache: bool,
    /// The compiler's messages (warnings), empty for a cached library.
    pub log: String,
}

/// What [`Simulator::run_source`] ran.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedRun {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The orders it ran under, whose outputs agreed.
    pub orders: Vec<Order>,
    /// Wall-clock time of all the runs (CPU time, not a GPU figure).
    pub elapsed: Duration,
}

/// The CPU simulation backend: the same tensors and launches as [`Gpu`](crate::Gpu), run
/// by compiling the emitted CUDA C with the host C++ compiler. Slow, exact and deterministic.
///
/// By default every launch runs twice, threads (and blocks) in forward then reverse order, and
/// outputs that differ are reported as [`Error::Race`].
///
/// ```
/// use tessera_runtime::{Argument, Order, Simulator};
/// let sim = Simulator::new()?;                 // Err naming the compiler if there is none
/// let x = sim.upload(&[1.0f32, 2.0, 3.0], [3])?;
/// let mut y = sim.zeros::<f32>([3])?;
/// let source = r#"extern "C" __global__ void twice(const float* x, float* y, int n) {
///     int i = blockIdx.x * blockDim.x + threadIdx.x;
///     if (i < n) y[i] = 2.0f * x[i];
/// }"#;
/// sim.run_source(source, "twice",
///     &mut [Argument::input("x", &x), Argument::output("y", &mut y), Argument::scalar("n", 3i32)],
///     [1, 1, 1], [32, 1, 1], &[Order::Forward, Order::Reverse])?;
/// assert_eq!(sim.download(&y)?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Simulator {
    compiler: HostCompiler,
    cache: Option<DiskCache>,
    orders: Vec<Order>,
    resident_blocks: u32,
    stack_bytes: usize,
    flags: Vec<String>,
    no_gpu: Option<String>,
}

impl Simulator {
    /// A simulator with the host compiler from `$CXX` (else `c++`, `g++` or `clang++`), the
    /// default disk cache, and the forward-then-reverse race check.
    pub fn new() -> Result<Self, Error> {
        Ok(Self::with_compiler(HostCompiler::from_env()?))
    }

    /// A simulator that compiles with `compiler`.
    pub fn with_compiler(compiler: HostCompiler) -> Self {
        Self {
            compiler,
            cache: DiskCache::default_location(),
            orders: vec![Order::Forward, Order::Reverse],
            resident_blocks: 4,
            stack_bytes: 128 * 1024,
            flags: Vec::new(),
            no_gpu: None,
        }
    }

    /// Uses `cache` (or none) for compiled libraries instead of the default location.
    pub fn with_disk_cache(mut self, cache: Option<DiskCache>) -> Self {
        self.cache = cache;
        self
    }

    /// The thread orders every launch runs under: the first gives the output; with two or
    /// more, outputs that differ are an [`Error::Race`]. Empty means `[Order::Forward]`.
    pub fn with_orders(mut self, orders: impl Into<Vec<Order>>) -> Self {
        self.orders = orders.into();
        self
    }

    /// How many blocks a grid-stride kernel gets (a GPU's SMs × blocks per SM). Small by
    /// default (4), so grid-stride loops take several turns even on small inputs.
    pub fn with_resident_blocks(mut self, blocks: u32) -> Self {
        self.resident_blocks = blocks.max(1);
        self
    }

    /// Each simulated thread's stack (default 128 KiB; a guard page below catches overflow).
    pub fn with_stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes.max(16 * 1024);
        self
    }

    /// Extra host-compiler flags (e.g. `-O0 -g` to step through a kernel in a debugger).
    pub fn with_flags(mut self, flags: impl Into<Vec<String>>) -> Self {
        self.flags = flags.into();
        self
    }

    /// Records why no GPU was used, for [`Display`](std::fmt::Display).
    pub(crate) fn because(mut self, no_gpu: String) -> Self {
        self.no_gpu = Some(no_gpu);
        self
    }

    /// The host C++ compiler that builds the simulation libraries.
    ///
    /// ```
    /// let sim = tessera_runtime::Simulator::new()?;
    /// println!("simulating with {}", sim.compiler().version());
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn compiler(&self) -> &HostCompiler {
        &self.compiler
    }

    /// The thread orders every launch runs under (see [`Simulator::with_orders`]).
    ///
    /// ```
    /// use tessera_runtime::{Order, Simulator};
    /// let sim = Simulator::new()?;
    /// assert_eq!(sim.orders(), &[Order::Forward, Order::Reverse]); // the default race check
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn orders(&self) -> &[Order] {
        &self.orders
    }

    /// How many blocks a grid-stride kernel gets (see [`Simulator::with_resident_blocks`]).
    ///
    /// ```
    /// let sim = tessera_runtime::Simulator::new()?.with_resident_blocks(8).with_stack_bytes(1 << 20);
    /// assert_eq!((sim.resident_blocks(), sim.stack_bytes()), (8, 1 << 20));
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn resident_blocks(&self) -> u32 {
        self.resident_blocks
    }

    /// Each simulated thread's stack, in bytes (see [`Simulator::with_stack_bytes`]).
    pub fn stack_bytes(&self) -> usize {
        self.stack_bytes
    }

    /// Where compiled simulation libraries are cached (`None`: nothing is kept on disk).
    pub fn disk_cache(&self) -> Option<&DiskCache> {
        self.cache.as_ref()
    }

    /// Why no GPU was used, when the simulator was picked by [`Backend::detect`](crate::Backend::detect).
    pub fn no_gpu_reason(&self) -> Option<&str> {
        self.no_gpu.as_deref()
    }

    /// Every flag a library is compiled with.
    pub fn flags(&self) -> Vec<String> {
        let mut flags = base_flags();
        flags.extend(self.flags.iter().cloned());
        flags
    }

    /// Copies `host` into a simulated tensor of shape `dims`.
    pub fn upload<T: Element>(&self, host: &[T], dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        let expected = crate::tensor::element_count(&dims)?;
        if host.len() != expected {
            return Err(Error::LengthMismatch { what: "upload", len: host.len(), shape: dims, expected });
        }
        Ok(DeviceTensor { storage: Storage::Host(HostBuffer::from_slice(host)?), dims, location: Location::Host })
    }

    /// A simulated tensor of shape `dims` filled with zeros.
    pub fn zeros<T: Element>(&self, dims: impl AsRef<[usize]>) -> Result<DeviceTensor<T>, Error> {
        let dims = dims.as_ref().to_vec();
        Ok(DeviceTensor {
            storage: Storage::Host(HostBuffer::zeroed(crate::tensor::element_count(&dims)?)?),
            dims,
            location: Location::Host,
        })
    }

    /// A simulated tensor of shape `dims` with every element `value`.
    pub fn filled<T: Element>(&self, dims: impl AsRef<[usize]>, value: T) -> Result<DeviceTensor<T>, Error> {
        let mut tensor = self.zeros::<T>(dims)?;
        if let Storage::Host(buffer) = &mut tensor.storage {
            buffer.as_mut_slice().fill(value);
        }
        Ok(tensor)
    }

    /// Copies a simulated tensor or view back into a `Vec` (a sub-matrix packed, row after row).
    pub fn download<T: Element>(&self, tensor: &impl Input<T>) -> Result<Vec<T>, Error> {
        let location = tensor.location();
        let packed = |span: &[T]| crate::tensor::packed(span, tensor.shape(), tensor.row_stride());
        tensor.memory().host().map(packed).ok_or(Error::WrongDevice {
            param: "download".into(),
            tensor: location,
            launch: Location::Host,
        })
    }

    /// Copies `src` into `dst` (both simulated, contiguous, of equal length).
    pub fn copy<T: Element>(&self, src: &impl Input<T>, dst: &mut impl Output<T>) -> Result<(), Error> {
        crate::tensor::check_contiguous("a copy", "src", src.shape(), src.row_stride())?;
        crate::tensor::check_contiguous("a copy", "dst", dst.shape(), dst.row_stride())?;
        let wrong = |param: &str, tensor| Error::WrongDevice { param: param.into(), tensor, launch: Location::Host };
        let (src_location, dst_location) = (src.location(), dst.location());
        let from = src.memory();
        let from = from.host().ok_or_else(|| wrong("src", src_location))?;
        let MemoryMut::Host { buffer, range } = dst.memory_mut() else {
            return Err(wrong("dst", dst_location));
        };
        let to = &mut buffer.as_mut_slice()[range];
        if from.len() != to.len() {
            return Err(Error::CopyLengthMismatch { src: from.len(), dst: to.len() });
        }
        to.copy_from_slice(from);
        Ok(())
    }

    /// Nothing to wait for: simulated launches finish before they return.
    pub fn synchronize(&self) -> Result<(), Error> {
        Ok(())
    }

    /// Times `work` by the wall clock: `warmup` untimed runs, then `repetitions` timed ones
    /// (at least one: 0 is [`Error::NoRepetitions`], as on a GPU). These are CPU seconds of the
    /// simulation, not anything a GPU would take.
    pub fn time(
        &self,
        warmup: usize,
        repetitions: usize,
        mut work: impl FnMut() -> Result<(), Error>,
    ) -> Result<Timing, Error> {
        if repetitions == 0 {
            return Err(Error::NoRepetitions);
        }
        for _ in 0..warmup {
            work()?;
        }
        let mut samples = Vec::with_capacity(repetitions);
        for _ in 0..repetitions {
            let start = Instant::now();
            work()?;
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(Timing::from_samples(samples))
    }

    /// Compiles `kernel` of `source` into a simulation library (or finds it in the disk
    /// cache; a damaged entry is rebuilt). Needs no GPU.
    ///
    /// ```
    /// let sim = tessera_runtime::Simulator::new()?;
    /// let source = r#"extern "C" __global__ void fill(float* y) { y[threadIdx.x] = 1.0f; }"#;
    /// let compiled = sim.compile(source, "fill")?;
    /// assert!(compiled.path.exists());
    /// assert!(sim.compile("__global__ void other() {}", "fill").is_err()); // no such kernel
    /// # Ok::<(), tessera_runtime::Error>(())
    /// ```
    pub fn compile(&self, source: &str, kernel: &str) -> Result<SimCompiled, Error> {
        scan::check(source, kernel)?;
        let unit = translation_unit(source, kernel);
        let flags = self.flags();
        let key = DiskCache::library_key(&unit, &self.compiler.identity(), &flags);
        self.compile_unit(&unit, kernel, &key, &flags)
    }

    fn compile_unit(&self, unit: &str, kernel: &str, key: &str, flags: &[String]) -> Result<SimCompiled, Error> {
        if let Some(path) = self.cache.as_ref().and_then(|c| c.load_library(key)) {
            return Ok(SimCompiled { key: key.into(), path, from_disk_cache: true, log: String::new() });
        }
        let store_failed = |e: std::io::Error, dir: &std::path::Path| Error::SimLoad {
            path: dir.display().to_string(),
            reason: format!("could not write the library there: {e}"),
        };
        match &self.cache {
            Some(cache) => {
                std::fs::create_dir_all(cache.dir()).map_err(|e| store_failed(e, cache.dir()))?;
                let scratch = cache.scratch_path(key);
                let log = self.compiler.compile(unit, flags, &scratch, kernel).inspect_err(|_| {
                    let _ = std::fs::remove_file(&scratch);
                })?;
                let path = cache.store_library(key, &scratch).map_err(|e| store_failed(e, cache.dir()))?;
                Ok(SimCompiled { key: key.into(), path, from_disk_cache: false, log })
            }
            None => {
                // A unique file straight in the temporary folder (no folder of ours to race
                // on); `load` deletes it once the library is loaded.
                let path = DiskCache::new(std::env::temp_dir()).scratch_path(key);
                let log = self.compiler.compile(unit, flags, &path, kernel)?;
                Ok(SimCompiled { key: key.into(), path, from_disk_cache: false, log })
            }
        }
    }

    /// The loaded library for `kernel` of `source`: in memory, else the disk cache, else the
    /// host compiler.
    pub(crate) fn load(&self, source: &str, kernel: &str) -> Result<Arc<SimLibrary>, Error> {
        scan::check(source, kernel)?;
        let unit = translation_unit(source, kernel);
        let flags = self.flags();
        let key = DiskCache::library_key(&unit, &self.compiler.identity(), &flags);
        let cached = self.cache.is_some();
        library::load(
            &key,
            || Ok(self.compile_unit(&unit, kernel, &key, &flags)?.path),
            |path| {
                // An uncached library was built in a scratch folder: once loaded, its file
                // is no longer needed.
                if !cached {
                    let _ = std::fs::remove_file(path);
                }
            },
        )
    }

    /// Runs `kernel` of a raw CUDA C `source` on a `grid` of `block`s, once per order in
    /// `orders`; with two or more orders, outputs that differ are an [`Error::Race`].
    /// The arguments are checked against the kernel's own parameter types.
    pub fn run_source(
        &self,
        source: &str,
        kernel: &str,
        arguments: &mut [Argument<'_>],
        grid: [u32; 3],
        block: [u32; 3],
        orders: &[Order],
    ) -> Result<SimulatedRun, Error> {
        check_host(arguments)?;
        let library = self.load(source, kernel)?;
        let start = Instant::now();
        let shape = Shape {
            kernel,
            grid,
            block,
            symbols: &[],
            tensor_maps: &[],
            stack_bytes: self.stack_bytes,
            cluster: [1, 1, 1],
        };
        execute(&library, &shape, arguments, &mut [], orders)?;
        Ok(SimulatedRun {
            kernel: kernel.into(),
            grid,
            block,
            orders: if orders.is_empty() { vec![Order::Forward] } else { orders.to_vec() },
            elapsed: start.elapsed(),
        })
    }
}

/// Every tensor argument must be a simulated (host) one.
pub(crate) fn check_host(arguments: &[Argument<'_>]) -> Result<(), Error> {
    for argument in arguments {
        if let Argument::Tensor { param, location, host, .. } = argument {
            if *location != Location::Host || host.is_none() {
                return Err(Error::WrongDevice { param: (*param).into(), tensor: *location, launch: Location::Host });
            }
        }
    }
    Ok(())
}

impl std::fmt::Display for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let orders: Vec<String> = self.orders.iter().map(Order::to_string).collect();
        write!(
            f,
            "SIMULATED on the CPU: the emitted CUDA C compiled by {} ({}), thread orders {}",
            self.compiler.command(),
            self.compiler.version(),
            if orders.is_empty() { "forward".into() } else { orders.join(" and ") }
        )?;
        if let Some(reason) = &self.no_gpu {
            write!(f, "; no GPU: {reason}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_and_reverse_are_the_identity_and_its_reverse() {
        assert_eq!(Order::Forward.permutation(5), vec![0, 1, 2, 3, 4]);
        assert_eq!(Order::Reverse.permutation(5), vec![4, 3, 2, 1, 0]);
        assert_eq!(Order::Reverse.block_permutation(3), vec![2, 1, 0]);
        assert!(Order::Forward.permutation(0).is_empty());
    }

    #[test]
    fn a_shuffle_is_a_permutation_fixed_by_its_seed() {
        let order = Order::Shuffled { seed: 42 };
        let a = order.permutation(256);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..256).collect::<Vec<u32>>());
        assert_eq!(a, order.permutation(256), "same seed, same order");
        assert_ne!(a, Order::Shuffled { seed: 43 }.permutation(256));
        assert_ne!(a, Order::Forward.permutation(256));
        assert_ne!(a, order.block_permutation(256), "blocks and threads differ");
    }

    #[test]
    fn orders_name_themselves() {
        assert_eq!(Order::Forward.to_string(), "forward");
        assert_eq!(Order::Shuffled { seed: 3 }.to_string(), "shuffled (seed 3)");
    }
}
