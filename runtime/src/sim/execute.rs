//! One simulated launch: arguments checked against the kernel's real parameter types, run
//! under each thread order asked for, outputs compared between orders, red zones checked,
//! and the library's report turned into a typed error.

use std::ffi::c_void;

use tessera_dsl::ElementType;

use super::fault::signal_name;
use super::library::{status, LaunchFfi, ReportFfi, SimLibrary};
use super::Order;
use crate::argument::ScalarValue;
use crate::{span_len, Argument, Error};

/// What one launch needs besides its arguments.
pub(crate) struct Shape<'a> {
    pub kernel: &'a str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Trailing `int` parameters after the arguments (the kernel's shape symbols, then the
    /// leading dimensions of its 2-D tensors).
    pub symbols: &'a [i32],
    /// TMA tensor maps, passed by value after everything else (as the simulator's
    /// `tessera_tensor_map`).
    pub tensor_maps: &'a [crate::tensor_map::TensorMapBytes],
    pub stack_bytes: usize,
    /// Blocks of a cluster along x, y, z: they run together (1, 1, 1 without clusters).
    pub cluster: [u32; 3],
}

/// A writable host tensor, whose bytes are compared between orders.
struct Written {
    param: &'static str,
    element: ElementType,
    address: usize,
    bytes: usize,
}

impl Written {
    fn read(&self) -> Vec<u8> {
        // SAFETY: the address range is the elements of a tensor the launch borrows mutably.
        unsafe { std::slice::from_raw_parts(self.address as *const u8, self.bytes) }.to_vec()
    }

    fn write(&self, bytes: &[u8]) {
        // SAFETY: as in read; `bytes` came from read of this same range.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.address as *mut u8, self.bytes) };
    }
}

/// Runs `library`'s kernel once per order in `orders` (at least once); with two or more
/// orders, outputs that differ between them are a race. `after` are tensors the kernel takes
/// after the shape symbols (a stream-K kernel's workspace).
pub(crate) fn execute(
    library: &SimLibrary,
    shape: &Shape<'_>,
    arguments: &mut [Argument<'_>],
    after: &mut [Argument<'_>],
    orders: &[Order],
) -> Result<(), Error> {
    check_signature(library, shape, arguments, after)?;
    let threads = shape.block.iter().map(|&d| u64::from(d)).product::<u64>();
    let blocks = shape.grid.iter().map(|&d| u64::from(d)).product::<u64>();
    if blocks == 0 {
        return Ok(());
    }
    if threads == 0 || threads > 1024 || blocks > u64::from(u32::MAX) {
        return Err(Error::SimLaunch {
            kernel: shape.kernel.into(),
            message: format!(
                "grid {:?} of blocks {:?}: the simulator runs 1 to 1024 threads per block and at most {} blocks",
                shape.grid,
                shape.block,
                u32::MAX
            ),
        });
    }

    // Each parameter's value in its own 8-byte slot; the entry point gets their addresses.
    let mut slots: Vec<u64> = Vec::with_capacity(arguments.len() + shape.symbols.len());
    for argument in arguments.iter() {
        slots.push(match argument {
            Argument::Tensor { address, .. } => slot_of(*address),
            Argument::Scalar { value, .. } => match value {
                ScalarValue::F32(v) => slot_of(*v),
                ScalarValue::F64(v) => slot_of(*v),
                ScalarValue::I32(v) => slot_of(*v),
                ScalarValue::U32(v) => slot_of(*v),
                ScalarValue::F16(v) => slot_of(v.to_bits()),
                ScalarValue::BF16(v) => slot_of(v.to_bits()),
            },
        });
    }
    slots.extend(shape.symbols.iter().map(|&s| slot_of(s)));
    for argument in after.iter() {
        if let Argument::Tensor { address, .. } = argument {
            slots.push(slot_of(*address));
        }
    }
    let mut tensor_maps = shape.tensor_maps.to_vec();
    let pointers: Vec<*mut c_void> = slots
        .iter_mut()
        .map(|slot| slot as *mut u64 as *mut c_void)
        .chain(tensor_maps.iter_mut().map(|map| map as *mut _ as *mut c_void))
        .collect();

    let written: Vec<Written> = arguments
        .iter()
        .chain(after.iter())
        .filter_map(|argument| match argument {
            Argument::Tensor {
                param,
                element,
                dims,
                leading_dimension,
                address,
                writable: true,
                host: Some(_),
                ..
            } => {
                Some(Written {
                    param,
                    element: *element,
                    address: *address as usize,
                    // a sub-matrix's rows and the gaps between them (writes there are found below)
                    bytes: span_len(dims, *leading_dimension) * element.size_bytes() as usize,
                })
            }
            _ => None,
        })
        .collect();
    let surroundings: Vec<Surroundings> = arguments.iter().chain(after.iter()).filter_map(Surroundings::of).collect();
    let compare = orders.len() > 1;
    let before: Vec<Vec<u8>> = if compare { written.iter().map(Written::read).collect() } else { Vec::new() };

    let once = [Order::Forward];
    let orders = if orders.is_empty() { &once[..] } else { orders };
    let mut first: Option<Vec<Vec<u8>>> = None;
    for (run, order) in orders.iter().enumerate() {
        if run > 0 {
            for (output, bytes) in written.iter().zip(&before) {
                output.write(bytes);
            }
        }
        let thread_order = order.permutation(threads as usize);
        let block_order = order.block_permutation(blocks as usize);
        let launch = LaunchFfi {
            args: pointers.as_ptr(),
            arg_count: pointers.len() as u32,
            grid: shape.grid,
            block: shape.block,
            thread_order: thread_order.as_ptr(),
            block_order: block_order.as_ptr(),
            stack_bytes: shape.stack_bytes as u64,
            async_copies_at_issue: u32::from(order.lands_async_copies_at_issue()),
            cluster: shape.cluster,
        };
        let report = library.run(&launch);
        let overrun = take_overrun(shape.kernel, arguments).and(take_overrun(shape.kernel, after));
        check_report(shape, &report, arguments)?;
        overrun?;
        for parent in &surroundings {
            parent.check(shape.kernel)?;
        }
        if compare {
            let after: Vec<Vec<u8>> = written.iter().map(Written::read).collect();
            match &first {
                None => first = Some(after),
                Some(reference) => compare_outputs(shape.kernel, &written, reference, &after, [orders[0], *order])?,
            }
        }
    }
    Ok(())
}

/// The elements of a writable view's buffer outside the view (before it, after it, and
/// between its rows), as they were before the launch: a kernel must leave them as they are.
struct Surroundings {
    param: &'static str,
    /// The view's first element.
    start: usize,
    dims: [usize; 2],
    ld: usize,
    element_bytes: usize,
    /// The addresses of the whole buffer's elements.
    parent: std::ops::Range<usize>,
    saved: Vec<u8>,
}

impl Surroundings {
    /// `None` for a read-only tensor, or a view that covers its whole buffer.
    fn of(argument: &Argument<'_>) -> Option<Self> {
        let Argument::Tensor {
            param,
            element,
            dims,
            leading_dimension,
            address,
            writable: true,
            host: Some(region),
            ..
        } = argument
        else {
            return None;
        };
        let element_bytes = element.size_bytes() as usize;
        let (dims, ld) = match dims.as_slice() {
            [rows, cols] => ([*rows, *cols], *leading_dimension),
            _ => {
                let len = dims.iter().product();
                ([1, len], len)
            }
        };
        let parent = region.data();
        let start = *address as usize;
        // as many elements as the buffer, from its first: the whole buffer, no gaps
        if start == parent.start && dims.iter().product::<usize>() * element_bytes == parent.len() {
            return None;
        }
        // SAFETY: the buffer's elements, borrowed mutably by this launch's argument; read only.
        let saved = unsafe { std::slice::from_raw_parts(parent.start as *const u8, parent.len()) }.to_vec();
        Some(Self { param, start, dims, ld, element_bytes, parent, saved })
    }

    /// Whether byte `address` belongs to an element of the view.
    fn inside(&self, address: usize) -> bool {
        let Some(offset) = address.checked_sub(self.start) else { return false };
        let element = offset / self.element_bytes;
        let [rows, cols] = self.dims;
        self.ld > 0 && element / self.ld < rows && element % self.ld < cols
    }

    /// `Err(OutsideView)` for the first element outside the view that the kernel changed;
    /// those elements are restored either way.
    fn check(&self, kernel: &str) -> Result<(), Error> {
        // SAFETY: as in `of`; written below only where the kernel already wrote.
        let now = unsafe { std::slice::from_raw_parts_mut(self.parent.start as *mut u8, self.parent.len()) };
        if now == self.saved.as_slice() {
            return Ok(());
        }
        let mut first = None;
        for (i, (byte, was)) in now.iter_mut().zip(&self.saved).enumerate() {
            let address = self.parent.start + i;
            if *byte != *was && !self.inside(address) {
                first.get_or_insert(address);
                *byte = *was;
            }
        }
        match first {
            None => Ok(()),
            Some(address) => Err(Error::OutsideView {
                kernel: kernel.into(),
                param: self.param.into(),
                offset: (address as i64 - self.start as i64).div_euclid(self.element_bytes as i64),
                rows: self.dims[0],
                cols: self.dims[1],
                ld: self.ld,
            }),
        }
    }
}

fn slot_of<T: Copy>(value: T) -> u64 {
    const { assert!(size_of::<T>() <= 8) };
    let mut slot = 0u64;
    // SAFETY: T fits in the slot (checked above); written at its start, as C reads it.
    unsafe { std::ptr::write_unaligned(&mut slot as *mut u64 as *mut T, value) };
    slot
}

fn describe(argument: &Argument<'_>) -> String {
    match argument {
        Argument::Tensor { element, writable, .. } => {
            format!("a {} {} tensor", if *writable { "writable" } else { "read-only" }, element.rust_name())
        }
        Argument::Scalar { value, .. } => format!("a {} scalar", value.element().rust_name()),
    }
}

/// The kernel's parameter types (as its own source declares them) against the arguments.
fn check_signature(
    library: &SimLibrary,
    shape: &Shape<'_>,
    arguments: &[Argument<'_>],
    after: &[Argument<'_>],
) -> Result<(), Error> {
    let expected = &library.signature;
    let given = arguments.len() + shape.symbols.len() + after.len() + shape.tensor_maps.len();
    if expected.len() != given {
        return Err(Error::ArgumentCount { kernel: shape.kernel.into(), given, expected: expected.len() });
    }
    let symbols = arguments.len()..arguments.len() + shape.symbols.len();
    let tensors = arguments.iter().enumerate().chain(after.iter().enumerate().map(|(i, a)| (symbols.end + i, a)));
    for (position, argument) in tensors {
        let want = &expected[position];
        let fits = match argument {
            Argument::Tensor { element, writable, .. } => {
                let name = element.rust_name();
                *want == format!("const {name}*") || (*writable && *want == format!("{name}*"))
            }
            Argument::Scalar { value, .. } => want == value.element().rust_name(),
        };
        if !fits {
            return Err(Error::ArgumentType {
                kernel: shape.kernel.into(),
                position,
                param: argument.param().into(),
                given: describe(argument),
                expected: want.clone(),
            });
        }
    }
    let maps = symbols.end + after.len()..expected.len();
    for (i, want) in expected[maps.clone()].iter().enumerate() {
        if want != "tensor_map" {
            return Err(Error::ArgumentType {
                kernel: shape.kernel.into(),
                position: maps.start + i,
                param: "(TMA tensor map)".into(),
                given: "a tensor map".into(),
                expected: want.clone(),
            });
        }
    }
    for (i, want) in expected[symbols.clone()].iter().enumerate() {
        if want != "i32" {
            return Err(Error::ArgumentType {
                kernel: shape.kernel.into(),
                position: symbols.start + i,
                param: "(shape symbol)".into(),
                given: "an i32 scalar".into(),
                expected: want.clone(),
            });
        }
    }
    Ok(())
}

/// A write into any host tensor's red zones (restored afterwards).
fn take_overrun(kernel: &str, arguments: &[Argument<'_>]) -> Result<(), Error> {
    let mut found = None;
    for argument in arguments {
        if let Argument::Tensor { param, dims, leading_dimension, address, host: Some(region), .. } = argument {
            if let Some(offset) = region.take_overrun() {
                let from_view = offset + region.data_start() as isize - *address as isize;
                found.get_or_insert(Error::OutOfBounds {
                    kernel: kernel.into(),
                    param: (*param).into(),
                    element: from_view.div_euclid(region.element_bytes() as isize) as i64,
                    len: span_len(dims, *leading_dimension),
                });
            }
        }
    }
    found.map_or(Ok(()), Err)
}

fn check_report(shape: &Shape<'_>, report: &ReportFfi, arguments: &[Argument<'_>]) -> Result<(), Error> {
    let kernel = shape.kernel.to_string();
    match report.status {
        status::OK => Ok(()),
        status::BARRIER_DIVERGENCE => Err(Error::BarrierDivergence {
            kernel,
            block: report.block,
            waiting: report.waiting,
            finished: report.finished,
            finished_thread: report.thread,
        }),
        status::WARP_DIVERGENCE => Err(Error::WarpDivergence {
            kernel,
            block: report.block,
            waiting_thread: report.other,
            missing_thread: report.thread,
            mask: report.mask,
            detail: report.message(),
        }),
        status::FAULT => {
            let address = report.address as usize;
            let near = arguments
                .iter()
                .find_map(|argument| match argument {
                    Argument::Tensor { param, host: Some(region), .. } => {
                        region.describe(address).map(|where_| format!("`{param}`: {where_}"))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| "not near any tensor argument".into());
            Err(Error::SimFault {
                kernel,
                block: report.block,
                thread: report.thread,
                signal: signal_name(report.signal, report.code),
                address: report.address,
                near,
            })
        }
        status::STACK_OVERFLOW => Err(Error::StackOverflow {
            kernel,
            block: report.block,
            thread: report.thread,
            stack_bytes: shape.stack_bytes,
        }),
        status::TRAP => {
            Err(Error::SimTrap { kernel, block: report.block, thread: report.thread, message: report.message() })
        }
        _ => Err(Error::SimLaunch { kernel, message: report.message() }),
    }
}

fn element_text(element: ElementType, bytes: &[u8]) -> String {
    let word = |n: usize| bytes.get(..n).map(|b| b.to_vec()).unwrap_or_default();
    let four = || <[u8; 4]>::try_from(word(4)).unwrap_or_default();
    match element {
        ElementType::F32 => format!("{:?}", f32::from_ne_bytes(four())),
        ElementType::I32 => i32::from_ne_bytes(four()).to_string(),
        ElementType::U32 => u32::from_ne_bytes(four()).to_string(),
        ElementType::F64 => format!("{:?}", f64::from_ne_bytes(<[u8; 8]>::try_from(word(8)).unwrap_or_default())),
        ElementType::F16 | ElementType::BF16 => {
            let bits = u16::from_ne_bytes(<[u8; 2]>::try_from(word(2)).unwrap_or_default());
            if element == ElementType::F16 {
                format!("{:?}", half::f16::from_bits(bits))
            } else {
                format!("{:?}", half::bf16::from_bits(bits))
            }
        }
    }
}

fn compare_outputs(
    kernel: &str,
    written: &[Written],
    reference: &[Vec<u8>],
    after: &[Vec<u8>],
    orders: [Order; 2],
) -> Result<(), Error> {
    for ((output, want), got) in written.iter().zip(reference).zip(after) {
        if want == got {
            continue;
        }
        let size = output.element.size_bytes() as usize;
        let differs: Vec<usize> =
            want.chunks(size).zip(got.chunks(size)).enumerate().filter(|(_, (a, b))| a != b).map(|(i, _)| i).collect();
        let Some(&first) = differs.first() else {
            continue;
        };
        let at = first * size..(first + 1) * size;
        return Err(Error::Race {
            kernel: kernel.into(),
            param: output.param.into(),
            first_difference_at: first,
            differing: differs.len(),
            len: want.len() / size,
            orders,
            values: [element_text(output.element, &want[at.clone()]), element_text(output.element, &got[at])],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differing_outputs_are_a_race_naming_the_first_element_both_values_and_the_count() {
        let written = [Written { param: "y", element: ElementType::F32, address: 0, bytes: 16 }];
        let floats = |v: [f32; 4]| v.iter().flat_map(|f| f.to_ne_bytes()).collect::<Vec<u8>>();
        let reference = vec![floats([1.0, 2.0, 3.0, 4.0])];
        let same = compare_outputs("k", &written, &reference, &reference.clone(), [Order::Forward, Order::Reverse]);
        assert!(same.is_ok());
        let after = vec![floats([1.0, 2.5, 3.0, -4.0])];
        match compare_outputs("k", &written, &reference, &after, [Order::Forward, Order::Reverse]) {
            Err(error @ Error::Race { .. }) => {
                let text = error.to_string();
                let Error::Race { kernel, param, first_difference_at, differing, len, values, .. } = error else {
                    unreachable!()
                };
                assert_eq!((kernel.as_str(), param.as_str()), ("k", "y"));
                assert_eq!((first_difference_at, differing, len), (1, 2, 4));
                assert_eq!(values, ["2.0".to_string(), "2.5".to_string()]);
                assert!(text.contains("forward and reverse at element 1 (2.0 vs 2.5)"), "{text}");
            }
            other => panic!("expected a race, got {other:?}"),
        }
    }

    #[test]
    fn scalars_sit_at_the_start_of_their_slot_as_c_reads_them() {
        let slot = slot_of(1.5f32);
        assert_eq!(f32::from_ne_bytes(slot.to_ne_bytes()[..4].try_into().unwrap()), 1.5);
        let slot = slot_of(-7i32);
        assert_eq!(i32::from_ne_bytes(slot.to_ne_bytes()[..4].try_into().unwrap()), -7);
        assert_eq!(slot_of(0x1234_5678_9abc_def0u64), 0x1234_5678_9abc_def0);
    }
}
