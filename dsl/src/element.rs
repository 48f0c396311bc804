use serde::{Deserialize, Serialize};

use crate::VectorWidth;

/// The element type of a tensor or scalar.
///
/// ```
/// use tessera_dsl::ElementType;
/// assert_eq!(ElementType::from_rust_name("f32"), Some(ElementType::F32));
/// assert_eq!(ElementType::F32.cuda_name(), "float");
/// assert_eq!(ElementType::F32.size_bytes(), 4);
/// assert_eq!(ElementType::BF16.cuda_name(), "__nv_bfloat16");
/// assert_eq!(ElementType::F16.elements_in(16), 8); // a 128-bit access holds 8 halves
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementType {
    F32,
    F64,
    I32,
    U32,
    /// IEEE binary16 (`half::f16` on the host, `__half` in CUDA).
    F16,
    /// bfloat16 (`half::bf16` on the host, `__nv_bfloat16` in CUDA).
    BF16,
}

impl ElementType {
    /// Every element type, in the order the error messages list them.
    pub const ALL: [ElementType; 6] = [Self::F32, Self::F64, Self::I32, Self::U32, Self::F16, Self::BF16];

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
            Self::F16 => "f16",
            Self::BF16 => "bf16",
        }
    }

    pub fn cuda_name(self) -> &'static str {
        match self {
            Self::F32 => "float",
            Self::F64 => "double",
            Self::I32 => "int",
            Self::U32 => "unsigned int",
            Self::F16 => "__half",
            Self::BF16 => "__nv_bfloat16",
        }
    }

    pub fn size_bytes(self) -> u32 {
        match self {
            Self::F64 => 8,
            Self::F32 | Self::I32 | Self::U32 => 4,
            Self::F16 | Self::BF16 => 2,
        }
    }

    /// Whether this is a 16-bit float (`f16`, `bf16`): it needs `cuda_fp16.h` / `cuda_bf16.h`,
    /// and arithmetic on it goes through f32 unless the code says otherwise.
    pub fn is_half(self) -> bool {
        matches!(self, Self::F16 | Self::BF16)
    }

    /// Whether values of this type are floating point.
    pub fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F64 | Self::F16 | Self::BF16)
    }

    /// Elements in one access of `bytes` bytes (a 16-byte access holds 4 floats or 8 halves).
    pub fn elements_in(self, bytes: u32) -> u32 {
        bytes / self.size_bytes()
    }

    /// The CUDA vector type that moves `width` elements in one access, if one exists.
    ///
    /// A single global or shared access moves at most 16 bytes, so `double4` (32 bytes) is
    /// not offered even though CUDA declares it.
    /// The member that names component `i` of [`Self::vector_type`]'s type: `.x` .. `.w` for
    /// CUDA's own, `.v[i]` for tessera's half vectors.
    pub fn vector_component(self, width: VectorWidth, i: u32) -> String {
        if width.get() == 1 {
            String::new()
        } else if self.is_half() {
            format!(".v[{i}]")
        } else {
            format!(".{}", ["x", "y", "z", "w"][i as usize % 4])
        }
    }

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
            // CUDA has no 4- or 8-wide half types: tessera's own (`half_types.cu`), `.v[i]` each
            (Self::F16, 2) => Some("tessera_f16x2"),
            (Self::F16, 4) => Some("tessera_f16x4"),
            (Self::F16, 8) => Some("tessera_f16x8"),
            (Self::BF16, 2) => Some("tessera_bf16x2"),
            (Self::BF16, 4) => Some("tessera_bf16x4"),
            (Self::BF16, 8) => Some("tessera_bf16x8"),
            _ => None,
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rust_name())
    }
}
