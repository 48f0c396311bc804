/// What ptxas reported for one kernel (`--ptxas-options=-v`): the figures that decide
/// occupancy and reveal spills.
///
/// ```
/// let log = "ptxas info    : Compiling entry function 'copy' for 'sm_90'\n\
///            ptxas info    : Function properties for copy\n\
///            \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
///            ptxas info    : Used 12 registers, used 0 barriers, 8192 bytes smem, 376 bytes cmem[0]\n";
/// let report = tessera_runtime::PtxasReport::parse(log, "copy").unwrap();
/// assert_eq!(report.registers, 12);
/// assert_eq!(report.shared_bytes, 8192);
/// assert_eq!(report.spill_stores + report.spill_loads, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// False when NVRTC printed no figures (its own cache answered) and they were read from
    /// the cubin instead: then spill counts are unknown and `spills()` goes by the frame.
    pub from_log: bool,
    pub registers: u32,
    pub shared_bytes: u32,
    pub stack_frame_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub barriers: u32,
}

impl PtxasReport {
    /// The figures of `kernel` in an NVRTC log, or `None` if the log has none for it.
    pub fn parse(log: &str, kernel: &str) -> Option<Self> {
        let mut report = PtxasReport::default();
        let mut in_kernel = false;
        let mut found = false;
        for line in log.lines() {
            if line.contains("Compiling entry function") || line.contains("Function properties for") {
                in_kernel = line.contains(&format!("'{kernel}'")) || line.trim_end().ends_with(&format!(" {kernel}"));
                continue;
            }
            if !in_kernel {
                continue;
            }
            let before = |word: &str| number_before(line, word);
            if let Some(n) = before("bytes stack frame") {
                report.stack_frame_bytes = n;
            }
            if let Some(n) = before("bytes spill stores") {
                report.spill_stores = n;
            }
            if let Some(n) = before("bytes spill loads") {
                report.spill_loads = n;
            }
            if let Some(n) = number_after(line, "Used ") {
                report.registers = n;
                found = true;
                report.shared_bytes = before("bytes smem").unwrap_or(0);
                report.barriers = number_after(line, "used ").unwrap_or(0);
            }
        }
        if found {
            report.from_log = true;
            return Some(report);
        }
        // Some NVRTC versions do not name the kernel before its figures; a log with a single
        // entry function can only be about that one.
        let used: Vec<&str> = log.lines().filter(|l| l.contains("Used ") && l.contains(" registers")).collect();
        match used.as_slice() {
            [line] => {
                let stack_line = log.lines().find(|l| l.contains("bytes stack frame")).unwrap_or("");
                Some(PtxasReport {
                    from_log: true,
                    registers: number_after(line, "Used ")?,
                    shared_bytes: number_before(line, "bytes smem").unwrap_or(0),
                    barriers: number_after(line, "used ").unwrap_or(0),
                    stack_frame_bytes: number_before(stack_line, "bytes stack frame").unwrap_or(0),
                    spill_stores: number_before(stack_line, "bytes spill stores").unwrap_or(0),
                    spill_loads: number_before(stack_line, "bytes spill loads").unwrap_or(0),
                })
            }
            _ => None,
        }
    }

    /// The figures of `kernel` in `log`, else those the cubin records.
    pub fn from_log_or_cubin(log: &str, cubin: &[u8], kernel: &str) -> Self {
        Self::parse(log, kernel).unwrap_or_else(|| {
            let figures = crate::cubin_figures(cubin, kernel);
            PtxasReport {
                from_log: false,
                registers: figures.map_or(0, |f| f.registers),
                stack_frame_bytes: figures.map_or(0, |f| f.stack_frame_bytes),
                ..PtxasReport::default()
            }
        })
    }

    /// Whether registers spill to local memory. Without the log's counts, any local-memory
    /// frame counts as a possible spill.
    pub fn spills(&self) -> bool {
        self.spill_stores > 0 || self.spill_loads > 0 || (!self.from_log && self.stack_frame_bytes > 0)
    }
}

impl std::fmt::Display for PtxasReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} registers, {} B shared, {} B stack, {} B spill stores, {} B spill loads",
            self.registers, self.shared_bytes, self.stack_frame_bytes, self.spill_stores, self.spill_loads
        )
    }
}

/// The integer just before `word` in `line` (`"8192 bytes smem"` → 8192).
fn number_before(line: &str, word: &str) -> Option<u32> {
    let head = &line[..line.find(word)?];
    head.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).next_back()?.parse().ok()
}

/// The integer just after `prefix` in `line` (`"Used 12 registers"` → 12).
fn number_after(line: &str, prefix: &str) -> Option<u32> {
    let tail = &line[line.find(prefix)? + prefix.len()..];
    tail.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_KERNELS: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'first' for 'sm_80'
ptxas info    : Function properties for first
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'second' for 'sm_80'
ptxas info    : Function properties for second
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 4096 bytes smem, 368 bytes cmem[0]
";

    #[test]
    fn figures_belong_to_the_named_kernel() {
        let first = PtxasReport::parse(TWO_KERNELS, "first").unwrap();
        assert_eq!((first.registers, first.spill_stores, first.spill_loads, first.stack_frame_bytes), (255, 4, 4, 8));
        assert!(first.spills());
        let second = PtxasReport::parse(TWO_KERNELS, "second").unwrap();
        assert_eq!((second.registers, second.shared_bytes), (10, 4096));
        assert!(!second.spills());
    }

    #[test]
    fn a_single_kernel_log_without_names_still_gives_its_figures() {
        let log = "ptxas info    : 0 bytes gmem\nptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        let report = PtxasReport::parse(log, "anything").unwrap();
        assert_eq!(report.registers, 16);
        assert!(!report.spills());
    }

    #[test]
    fn a_log_without_the_kernel_gives_none() {
        assert_eq!(PtxasReport::parse(TWO_KERNELS, "third"), None);
        assert_eq!(PtxasReport::parse("", "first"), None);
    }
}
