use serde::{Deserialize, Serialize};

use crate::VectorWidth;

/// The element type of a tensor or scalar.
///
/// ```
/// use tessera_dsl::ElementType;
/// assert_eq!(ElementType::from_rust_name("f32"), Some(ElementType::F32));
/// assert_eq!(ElementType::F32.cuda_name(), "float");
/// assert_eq!(ElementType::F32.size_bytes(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementType {
    F32,
    F64,
    I32,
    U32,
}

impl ElementType {
    /// Every element type, in the order the error messages list them.
    pub const ALL: [ElementType; 4] = [Self::F32, Self::F64, Self::I32, Self::U32];

    /// The type named by a Rust primitive (`f32`, `f64`, `i32`, `u32`).
    pub fn from_rust_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.rust_name() == name)
    }

    pub fn rust_name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::I32 => "i32",
            Self::U32 => "u32",
        }
    }

    pub fn cuda_name(self) -> &'static str {
        match self {
            Self::F32 => "float",
            Self::F64 => "double",
            Self::I32 => "int",
            Self::U32 => "unsigned int",
        }
    }

    pub fn size_bytes(self) -> u32 {
        match self {
            Self::F64 => 8,
            Self::F32 | Self::I32 | Self::U32 => 4,
        }
    }

    /// The CUDA vector type that moves `width` elements in one access, if one exists.
    ///
    /// A single global or shared access moves at most 16 bytes, so `double4` (32 bytes) is
    /// not offered even though CUDA declares it.
    pub fn vector_type(self, width: VectorWidth) -> Option<&'static str> {
        match (self, width.get()) {
            (_, 1) => Some(self.cuda_name()),
            (Self::F32, 2) => Some("float2"),
            (Self::F32, 4) => Some("float4"),
            (Self::F64, 2) => Some("double2"),
            (Self::I32, 2) => Some("int2"),
            (Self::I32, 4) => Some("int4"),
            (Self::U32, 2) => Some("uint2"),
            (Self::U32, 4) => Some("uint4"),
            _ => None,
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rust_name())
    }
}
