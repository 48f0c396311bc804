//! Kernel times from CUDA events, and the host time of the timed call.

/// Kernel times from CUDA events over repeated runs, after warm-up.
///
/// ```
/// let timing = tessera_runtime::Timing::from_samples(vec![3.0, 1.0, 2.0]);
/// assert_eq!(timing.median_ms, 2.0);
/// assert_eq!((timing.min_ms, timing.max_ms), (1.0, 3.0));
/// assert_eq!(timing.gb_per_s(2_000_000), 1.0); // 2 MB in 2 ms
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// The median sample, in milliseconds: the figure to compare.
    pub median_ms: f64,
    /// The fastest sample, in milliseconds.
    pub min_ms: f64,
    /// The slowest sample, in milliseconds.
    pub max_ms: f64,
    /// Every sample, in milliseconds, fastest first.
    pub samples: Vec<f64>,
    /// The median host time of the timed call itself (a launch's checks, lookups and driver
    /// call), in milliseconds, where measured. The start event is recorded before the call:
    /// what of this the GPU work queued before it (an L2 flush) does not cover, the GPU spends
    /// waiting inside the timing.
    pub host_ms: Option<f64>,
}

impl Timing {
    /// The figures of `samples` (milliseconds, in any order); NaN for each when there are none.
    ///
    /// ```
    /// let timing = tessera_runtime::Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0]);
    /// assert_eq!(timing.median_ms, 2.5);                   // the mean of the middle two
    /// assert_eq!(timing.samples, vec![1.0, 2.0, 3.0, 4.0]);
    /// assert!(tessera_runtime::Timing::from_samples(vec![]).median_ms.is_nan());
    /// ```
    pub fn from_samples(mut samples: Vec<f64>) -> Self {
        samples.sort_by(|a, b| a.total_cmp(b));
        let n = samples.len();
        let median_ms = match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => samples[n / 2],
            _ => (samples[n / 2 - 1] + samples[n / 2]) / 2.0,
        };
        Self {
            median_ms,
            min_ms: samples.first().copied().unwrap_or(f64::NAN),
            max_ms: samples.last().copied().unwrap_or(f64::NAN),
            samples,
            host_ms: None,
        }
    }

    /// These figures with `host_ms` the median of `host_samples` (milliseconds; none for none).
    ///
    /// ```
    /// let timing = tessera_runtime::Timing::from_samples(vec![0.1]).with_host_samples(vec![0.3, 0.07, 0.06]);
    /// assert_eq!(timing.host_ms, Some(0.07));
    /// ```
    pub fn with_host_samples(self, host_samples: Vec<f64>) -> Self {
        let host_ms = (!host_samples.is_empty()).then(|| Self::from_samples(host_samples).median_ms);
        Self { host_ms, ..self }
    }

    /// Bytes moved per second at the median time, in GB/s (10⁹ bytes).
    pub fn gb_per_s(&self, bytes: u64) -> f64 {
        bytes as f64 / (self.median_ms * 1e-3) / 1e9
    }

    /// Floating-point operations per second at the median time, in TFLOP/s.
    pub fn tflop_per_s(&self, flops: f64) -> f64 {
        flops / (self.median_ms * 1e-3) / 1e12
    }
}
