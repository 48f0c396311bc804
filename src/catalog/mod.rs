//! The kernels people learn CUDA optimisation on, written in tessera. Each module is one
//! family; the examples run them and the tests check their source, their compile and their
//! numbers.

pub mod attention;
pub mod copy;
pub mod epilogue;
pub mod gemv;
pub mod hgemm;
pub mod hgemm_bt;
pub mod map;
pub mod matrix_copy;
pub mod matrix_scale;
pub mod norm;
pub mod parallel;
pub mod reduce;
pub mod sgemm;
pub mod sgemm_bt;
pub mod softmax;
pub mod stencil;
pub mod transpose;

/// Launches any GEMM of the catalog — parameters `a`, `b`, `c`, `alpha`, `beta`, as the
/// `sgemm`, `hgemm` and `parallel` kernels all have them — on `device`: C = α·A·B + β·C.
pub(crate) fn launch_gemm<TIn: crate::runtime::Element, TOut: crate::runtime::Element>(
    kernel: &crate::KernelDefinition,
    device: &impl crate::Device,
    a: &impl crate::Input<TIn>,
    b: &impl crate::Input<TIn>,
    c: &mut impl crate::Output<TOut>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    kernel.launch(
        device,
        &mut [
            crate::Argument::input("a", a),
            crate::Argument::input("b", b),
            crate::Argument::output("c", c),
            crate::Argument::scalar("alpha", alpha),
            crate::Argument::scalar("beta", beta),
        ],
    )
}

/// The element type of a GEMM's A and B: its first tensor parameter's (bf16 for a kernel whose
/// IR does not parse, which the launch reports).
///
/// ```
/// use tessera::catalog::{gemm_input_type, hgemm};
/// assert_eq!(gemm_input_type(&hgemm::hgemm_v20_f16_to_f16::KERNEL), tessera::dsl::ElementType::F16);
/// ```
pub fn gemm_input_type(kernel: &crate::KernelDefinition) -> crate::dsl::ElementType {
    kernel
        .ir()
        .ok()
        .and_then(|ir| ir.params.iter().find_map(|p| p.tensor().map(|t| t.element)))
        .unwrap_or(crate::dsl::ElementType::BF16)
}

/// The element type of a GEMM's C, its last tensor parameter: f32, or the inputs' 16-bit type.
///
/// ```
/// use tessera::catalog::{gemm_output_type, hgemm};
/// assert_eq!(gemm_output_type(&hgemm::hgemm_v11_bf16::KERNEL), tessera::dsl::ElementType::F32);
/// assert_eq!(gemm_output_type(&hgemm::hgemm_v11_bf16_to_bf16::KERNEL), tessera::dsl::ElementType::BF16);
/// ```
pub fn gemm_output_type(kernel: &crate::KernelDefinition) -> crate::dsl::ElementType {
    kernel
        .ir()
        .ok()
        .and_then(|ir| ir.params.iter().rev().find_map(|p| p.tensor().map(|t| t.element)))
        .unwrap_or(crate::dsl::ElementType::F32)
}

/// Whether a GEMM takes B stored [N, K] — its `b` parameter shaped `(N, K)`, as the
/// `hgemm_bt` kernels' and the TF32 `_bt` kernels' are — and multiplies by Bᵀ.
///
/// ```
/// use tessera::catalog::{gemm_b_transposed, hgemm, hgemm_bt};
/// assert!(gemm_b_transposed(&hgemm_bt::hgemm_v11_bt_bf16::KERNEL));
/// assert!(!gemm_b_transposed(&hgemm::hgemm_v11_bf16::KERNEL));
/// ```
pub fn gemm_b_transposed(kernel: &crate::KernelDefinition) -> bool {
    kernel.ir().is_ok_and(|ir| {
        ir.params.iter().any(|p| {
            p.name == "b" && p.tensor().is_some_and(|t| t.shape.iter().map(|(d, _)| d.as_str()).eq(["N", "K"]))
        })
    })
}

/// Whether `device` runs sm_90 kernels (clusters, setmaxnreg, wgmma): a GPU of compute
/// capability 9.0 or later, or the simulation, which defines them all.
pub(crate) fn runs_sm_90(device: &impl crate::Device) -> bool {
    match device.device_ref() {
        crate::runtime::DeviceRef::Gpu(gpu) => gpu.arch() >= crate::Arch::SM_90,
        crate::runtime::DeviceRef::Simulator(_) => true,
    }
}

/// Kernels by width — (the most columns a row may have, the kernel), narrowest first — as the
/// softmax's and the GEMVs' narrow rows list them: the first that holds a row of `columns`.
pub(crate) fn narrowest_holding(
    widths: &[(usize, &'static crate::KernelDefinition)],
    columns: usize,
) -> Option<&'static crate::KernelDefinition> {
    widths.iter().find(|(most, _)| columns <= *most).map(|(_, kernel)| *kernel)
}

/// Every catalog kernel, for the CLI, the examples and the tests.
pub fn all() -> Vec<&'static crate::KernelDefinition> {
    copy::ALL
        .into_iter()
        .chain(transpose::ALL)
        .chain(sgemm::ALL)
        .chain(sgemm_bt::ALL)
        .chain(hgemm::all())
        .chain(hgemm_bt::ALL)
        .chain(reduce::ALL)
        .chain(map::ALL)
        .chain(matrix_copy::ALL)
        .chain(matrix_scale::ALL)
        .chain(stencil::ALL)
        .chain(softmax::ALL)
        .chain(norm::ALL)
        .chain(gemv::ALL)
        .chain(epilogue::ALL)
        .chain(attention::ALL)
        .collect()
}

/// The catalog kernel named `name`.
pub fn find(name: &str) -> Option<&'static crate::KernelDefinition> {
    all().into_iter().find(|k| k.name() == name)
}
