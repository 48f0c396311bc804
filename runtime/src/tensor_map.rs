//! TMA tensor maps: what a kernel whose pipeline copies with `copies = tma` takes besides its
//! arguments. Each is built at launch from the tensor argument it reads (address, rows,
//! columns, leading dimension) and the box its copies ask for — on a GPU by the driver
//! (`cuTensorMapEncodeTiled`), on the simulator as the plain fields `tessera_sim.h` reads —
//! and cached per tensor and box.

use cudarc::driver::{sys, DeviceRepr};
use tessera_dsl::{ElementType, TensorMap};

use crate::{Argument, Error};

/// One tensor map: a tensor's place and shape and the box its copies read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TensorMapKey {
    address: u64,
    element: ElementType,
    rows: u64,
    cols: u64,
    /// Elements from one row to the next.
    leading_dimension: u64,
    /// A batched tile's map: the matrices of the leading dimensions (rows × leading dimension
    /// elements apart), a third dimension; `None` for a 2-D map.
    matrices: Option<u64>,
    box_rows: u32,
    box_cols: u32,
    swizzle_bytes: u32,
}

/// The 128 bytes a kernel takes as `const __grid_constant__ tessera_tensor_map`, 64-byte
/// aligned as the copy engine reads it.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TensorMapBytes(pub(crate) [u64; 16]);

// SAFETY: plain bytes, passed by value as a kernel parameter of the same size and alignment.
unsafe impl DeviceRepr for TensorMapBytes {}

impl TensorMapKey {
    /// The map `map` describes over its tensor among `arguments`, checked against what TMA can
    /// read: a 16-byte aligned address and rows a multiple of 16 bytes apart (a launch narrows
    /// a kernel whose rows are not, and such a kernel copies with cp.async instead).
    pub(crate) fn of(kernel: &str, map: &TensorMap, arguments: &[Argument<'_>]) -> Result<Self, Error> {
        let failed = |reason: String| Error::TensorMap { kernel: kernel.into(), param: map.tensor.clone(), reason };
        let Some(Argument::Tensor { element, dims, leading_dimension, address, .. }) =
            arguments.iter().find(|a| a.param() == map.tensor)
        else {
            return Err(failed("the kernel copies it by TMA, but no tensor argument has that name".into()));
        };
        // a batched tile reads its matrix of a (.., rows, cols) tensor: the leading dimensions'
        // matrices are the map's third dimension
        let (matrices, rows, cols) = match (map.batched, dims.as_slice()) {
            (false, [rows, cols]) => (None, rows, cols),
            (true, [leading @ .., rows, cols]) if !leading.is_empty() => {
                (Some(leading.iter().product::<usize>() as u64), rows, cols)
            }
            _ => {
                return Err(failed(format!(
                    "the map is {} but the tensor has {} dimensions",
                    if map.batched { "batched (3-D)" } else { "2-D" },
                    dims.len()
                )))
            }
        };
        let row_bytes = *leading_dimension as u64 * u64::from(element.size_bytes());
        if address % 16 != 0 || !row_bytes.is_multiple_of(16) {
            return Err(failed(format!(
                "TMA reads from a 16-byte aligned address with rows a multiple of 16 bytes apart; the tensor starts at {address:#x} with rows {row_bytes} bytes apart"
            )));
        }
        Ok(Self {
            address: *address,
            element: *element,
            rows: *rows as u64,
            cols: *cols as u64,
            leading_dimension: *leading_dimension as u64,
            matrices,
            box_rows: map.box_rows,
            box_cols: map.box_cols,
            swizzle_bytes: map.swizzle_bytes,
        })
    }

    /// The map the driver encodes for this tensor and box: out-of-bounds elements read as zero,
    /// the box written with the buffer's swizzle, L2 lines fetched 256 bytes at a time.
    pub(crate) fn encode_for_gpu(&self, kernel: &str, param: &str) -> Result<TensorMapBytes, Error> {
        let data_type = match self.element {
            ElementType::BF16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            ElementType::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            ElementType::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            ElementType::I32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
            ElementType::U32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            ElementType::F64 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        };
        let swizzle = match self.swizzle_bytes {
            32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            other => {
                return Err(Error::TensorMap {
                    kernel: kernel.into(),
                    param: param.into(),
                    reason: format!("a {other}-byte swizzle is not one of TMA's (32, 64, 128)"),
                })
            }
        };
        // innermost dimension first: columns, then rows (then matrices)
        let row_bytes = self.leading_dimension * u64::from(self.element.size_bytes());
        let rank = if self.matrices.is_some() { 3 } else { 2 };
        let dims = [self.cols, self.rows, self.matrices.unwrap_or(1)];
        let strides = [row_bytes, row_bytes * self.rows];
        let box_dims = [self.box_cols, self.box_rows, 1];
        let element_strides = [1u32, 1, 1];
        let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
        // SAFETY: every pointer is to a live local array of at least the rank's length
        // (strides: rank − 1); the driver only writes the map.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                data_type,
                rank,
                self.address as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
        .result()
        .map_err(Error::driver("encoding a TMA tensor map (cuTensorMapEncodeTiled)"))?;
        // SAFETY: the driver filled it (the call succeeded), and zeroed bytes are a map too
        let map = unsafe { map.assume_init() };
        Ok(TensorMapBytes(map.opaque))
    }

    /// The map as the simulator's `tessera_tensor_map` reads it: base address, element bytes,
    /// columns, rows, row stride in bytes, box columns, box rows, swizzle bytes, then the
    /// matrices of a batched map (1 otherwise) and their stride in bytes.
    pub(crate) fn encode_for_simulator(&self) -> TensorMapBytes {
        let mut fields = [0u64; 16];
        let row_bytes = self.leading_dimension * u64::from(self.element.size_bytes());
        fields[8..10].copy_from_slice(&[self.matrices.unwrap_or(1), row_bytes * self.rows]);
        fields[..8].copy_from_slice(&[
            self.address,
            u64::from(self.element.size_bytes()),
            self.cols,
            self.rows,
            self.leading_dimension * u64::from(self.element.size_bytes()),
            u64::from(self.box_cols),
            u64::from(self.box_rows),
            u64::from(self.swizzle_bytes),
        ]);
        TensorMapBytes(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> TensorMap {
        TensorMap {
            tensor: "a".into(),
            element: ElementType::BF16,
            box_rows: 128,
            box_cols: 64,
            boxes: 1,
            row_slices: 1,
            swizzle_bytes: 128,
            batched: false,
        }
    }

    fn tensor(address: u64, dims: Vec<usize>, leading_dimension: usize) -> Argument<'static> {
        Argument::Tensor {
            param: "a",
            element: ElementType::BF16,
            dims,
            leading_dimension,
            location: crate::Location::Host,
            address,
            stream: None,
            writable: false,
            host: None,
            borrow: std::marker::PhantomData,
        }
    }

    #[test]
    fn the_simulator_map_carries_the_tensor_and_the_box_in_bytes() {
        let key = TensorMapKey::of("k", &map(), &[tensor(4096, vec![100, 60], 64)]).unwrap();
        let bytes = key.encode_for_simulator().0;
        assert_eq!(bytes[..10], [4096, 2, 60, 100, 128, 64, 128, 128, 1, 12800]);
    }

    #[test]
    fn a_batched_map_counts_the_leading_dimensions_matrices() {
        // (2, 3, 100, 60) with rows of 64: six matrices of 100 rows, 12 800 bytes apart
        let batched = TensorMap { batched: true, ..map() };
        let key = TensorMapKey::of("k", &batched, &[tensor(4096, vec![2, 3, 100, 60], 64)]).unwrap();
        let bytes = key.encode_for_simulator().0;
        assert_eq!(bytes[..10], [4096, 2, 60, 100, 128, 64, 128, 128, 6, 12800]);
        // a 2-D map of a 4-D tensor, and a batched one of a matrix, are errors
        assert!(TensorMapKey::of("k", &map(), &[tensor(4096, vec![2, 3, 100, 60], 64)]).is_err());
        assert!(TensorMapKey::of("k", &batched, &[tensor(4096, vec![100, 60], 64)]).is_err());
    }

    #[test]
    fn rows_not_a_multiple_of_16_bytes_apart_are_a_typed_error() {
        // 4097 bf16 columns: rows 8194 bytes apart
        let error = TensorMapKey::of("k", &map(), &[tensor(4096, vec![4097, 4097], 4097)]).unwrap_err();
        assert!(error.to_string().contains("rows 8194 bytes apart"), "{error}");
    }

    #[test]
    fn a_missing_tensor_argument_is_a_typed_error() {
        let other = TensorMap { tensor: "b".into(), ..map() };
        assert!(matches!(
            TensorMapKey::of("k", &other, &[tensor(4096, vec![8, 64], 64)]),
            Err(Error::TensorMap { .. })
        ));
    }
}
