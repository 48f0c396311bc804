//! The figures a cubin records about each kernel, read from its ELF sections: registers and
//! the local-memory frame from the `.nv.info` attributes of the kernel's symbol (older
//! cubins keep the register count in the top byte of `.text.<kernel>`'s sh_info). They do
//! not depend on NVRTC printing its ptxas log, which it skips when its own compile cache
//! (CUDA 12.9+) answers. (Shared memory is not read here: the `.nv.shared` section also
//! holds the system's reservation; the IR's analysis knows the kernel's own bytes.)

/// `EIATTR_FRAME_SIZE`: bytes of local memory (stack frame) per thread.
const FRAME_SIZE: u8 = 0x11;
/// `EIATTR_REGCOUNT`: registers per thread.
const REGISTER_COUNT: u8 = 0x2f;
/// `EIFMT_SVAL`: an attribute with a sized payload.
const SIZED_VALUE: u8 = 0x04;

/// What the cubin says about one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubinFigures {
    pub registers: u32,
    pub stack_frame_bytes: u32,
}

struct Section<'a> {
    name: &'a str,
    info: u32,
    data: &'a [u8],
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?)).ok()
}

/// The sections of a 64-bit little-endian ELF file; `None` if it is not one.
fn sections(elf: &[u8]) -> Option<Vec<Section<'_>>> {
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let table = u64_at(elf, 0x28)?;
    let entry_size = usize::from(u16_at(elf, 0x3a)?);
    let count = usize::from(u16_at(elf, 0x3c)?);
    let names_index = usize::from(u16_at(elf, 0x3e)?);
    let header = |i: usize| table.checked_add(i.checked_mul(entry_size)?);
    let data = |h: usize| -> Option<&[u8]> {
        let offset = u64_at(elf, h.checked_add(24)?)?;
        let size = u64_at(elf, h.checked_add(32)?)?;
        let sh_type = u32_at(elf, h.checked_add(4)?)?;
        // SHT_NOBITS (8) occupies no file space: shared memory sections are like that.
        if sh_type == 8 {
            return Some(&[]);
        }
        elf.get(offset..offset.checked_add(size)?)
    };
    let names = data(header(names_index)?)?;
    (0..count)
        .map(|i| {
            let h = header(i)?;
            let name_offset = u32_at(elf, h)? as usize;
            let name_bytes = names.get(name_offset..)?;
            let end = name_bytes.iter().position(|&b| b == 0)?;
            let name = std::str::from_utf8(&name_bytes[..end]).ok()?;
            let info = u32_at(elf, h.checked_add(44)?)?;
            let size = u64_at(elf, h.checked_add(32)?)?;
            let data = data(h)?;
            Some(Section { name, info, data: if data.is_empty() && size > 0 { &[] } else { data } })
        })
        .collect()
}

/// The figures of `kernel` in `cubin`, or `None` if the cubin has no such kernel.
///
/// ```no_run
/// let compiled = tessera_runtime::nvrtc::compile_cubin(
///     "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }", "k", tessera_runtime::Arch::SM_90)?;
/// let figures = tessera_runtime::cubin_figures(&compiled.cubin, "k").unwrap();
/// assert!(figures.registers > 0);
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub fn cubin_figures(cubin: &[u8], kernel: &str) -> Option<CubinFigures> {
    let list = sections(cubin)?;
    let text = list.iter().find(|s| s.name == format!(".text.{kernel}"))?;
    let symbol = text.info & 0x00ff_ffff;
    let kernel_info = format!(".nv.info.{kernel}");
    let attribute = |wanted: u8| {
        list.iter()
            .filter(|s| s.name == ".nv.info" || s.name == kernel_info)
            .find_map(|s| symbol_attribute(s.data, wanted, symbol))
    };
    let registers = attribute(REGISTER_COUNT).unwrap_or(text.info >> 24);
    let stack_frame_bytes = attribute(FRAME_SIZE).unwrap_or(0);
    Some(CubinFigures { registers, stack_frame_bytes })
}

/// The value of attribute `wanted` for `symbol` in an `.nv.info` section, whose entries
/// are (format: u8, attribute: u8, value or payload size: u16[, payload]); per-symbol
/// attributes carry (symbol: u32, value: u32).
fn symbol_attribute(info: &[u8], wanted: u8, symbol: u32) -> Option<u32> {
    let mut at = 0;
    while at + 4 <= info.len() {
        let (format, attribute) = (info[at], info[at + 1]);
        let value = usize::from(u16_at(info, at + 2)?);
        let payload = if format == SIZED_VALUE { value } else { 0 };
        if attribute == wanted && format == SIZED_VALUE && payload == 8 && u32_at(info, at + 4)? == symbol {
            return u32_at(info, at + 8);
        }
        at += 4 + payload;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_an_elf_file_give_no_figures() {
        assert_eq!(cubin_figures(b"not an elf", "k"), None);
        assert_eq!(cubin_figures(&[], "k"), None);
        let mut truncated = b"\x7fELF\x02\x01".to_vec();
        truncated.resize(0x40, 0xff);
        assert_eq!(cubin_figures(&truncated, "k"), None);
        // a section table at the end of the address space: offsets past it are None, not an
        // overflow (which panics in a debug build)
        let mut far = b"\x7fELF\x02\x01".to_vec();
        far.resize(0x40, 0);
        far[0x28..0x30].copy_from_slice(&(u64::MAX - 16).to_le_bytes());
        far[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        far[0x3c..0x3e].copy_from_slice(&1u16.to_le_bytes());
        assert_eq!(cubin_figures(&far, "k"), None);
    }

    #[test]
    fn an_attribute_is_found_for_its_symbol_among_others() {
        // (HVAL 0x03, attr 0x1b, 255), (SVAL, REGCOUNT, sym 2 → 40), (SVAL, REGCOUNT, sym 3 → 32),
        // (SVAL, FRAME_SIZE, sym 3 → 48)
        let info = [
            0x03,
            0x1b,
            255,
            0, //
            SIZED_VALUE,
            REGISTER_COUNT,
            8,
            0,
            2,
            0,
            0,
            0,
            40,
            0,
            0,
            0, //
            SIZED_VALUE,
            REGISTER_COUNT,
            8,
            0,
            3,
            0,
            0,
            0,
            32,
            0,
            0,
            0, //
            SIZED_VALUE,
            FRAME_SIZE,
            8,
            0,
            3,
            0,
            0,
            0,
            48,
            0,
            0,
            0,
        ];
        assert_eq!(symbol_attribute(&info, REGISTER_COUNT, 3), Some(32));
        assert_eq!(symbol_attribute(&info, REGISTER_COUNT, 2), Some(40));
        assert_eq!(symbol_attribute(&info, FRAME_SIZE, 3), Some(48));
        assert_eq!(symbol_attribute(&info, FRAME_SIZE, 2), None);
        assert_eq!(symbol_attribute(&info[..4], REGISTER_COUNT, 3), None);
    }
}
