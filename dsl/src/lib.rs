//! The tile IR of tessera: plain data that describes a tiled GPU kernel.
//!
//! Everything upstream (the `#[tile_kernel]` macro) produces a [`Kernel`]; everything
//! downstream (codegen, the runtime) consumes one. This crate knows neither syn nor the GPU:
//! it holds the data, the limits of the targets ([`Target`]), the checks a configuration must
//! pass ([`validate`]), the geometry of each copy ([`CopyPlan`], [`SharedLayout`]), where
//! barriers go ([`with_barriers`]), where shared buffers live ([`SharedMemoryPlan`]), what the
//! code will cost ([`analyze`], [`Occupancy`], [`roofline`]) and the arithmetic a launch needs
//! ([`LaunchPlan`]).
//!
//! ```
//! use tessera_dsl::{ElementType, VectorWidth};
//! assert_eq!(ElementType::F32.vector_type(VectorWidth::W4), Some("float4"));
//! assert_eq!(ElementType::F64.vector_type(VectorWidth::W4), None); // 32 bytes: no single access
//! ```

mod analysis;
mod async_copy;
mod barriers;
mod cluster_tiles;
mod config;
mod copy_plan;
mod deferred_mma;
mod diagnostic;
mod element;
mod expr;
mod fragment;
mod kernel;
mod launch_plan;
mod layout;
mod mma_instruction;
mod occupancy;
mod origin;
mod param;
mod reduction_report;
mod roofline;
mod shared_memory;
mod statement;
mod target;
mod tensor_map;
mod thread_access;
mod thread_code;
mod tune;
mod validate;

pub use analysis::{analyze, AccessReport, Direction, MemorySpace, Report, TmaCopyReport};
pub use async_copy::{AsyncCopyLayout, AsyncCopyMapping};
pub use barriers::with_barriers;
pub use cluster_tiles::ClusterTiles;
pub use config::{Config, Constant, Relation, Requirement, ThreadBlock, VectorWidth};
pub use copy_plan::{
    element_map_env, max_staged_elements, CopyPlan, EpiloguePlan, FragmentLoad, FragmentPlan, GlobalPlan, MmaPlan,
    OperandPlan, SharedPlan, MAX_STAGED_PER_THREAD,
};
pub use deferred_mma::DeferredMma;
pub use diagnostic::{Diagnostic, Diagnostics};
pub use element::ElementType;
pub use expr::{BinaryOp, EvalError, Expr, ExprKind, Scope};
pub use fragment::FragmentLayout;
pub use kernel::{GridMapping, Kernel, StreamKBody, TileBuffersFreed, Workspace};
pub use launch_plan::{
    check_launch_requirements, LaunchPlan, LaunchPlanError, ShapeBinding, TensorShape, MAX_ELEMENTS,
};
pub use layout::SharedLayout;
pub use mma_instruction::{MmaInstruction, Precision};
pub use occupancy::{Limiter, Occupancy};
pub use origin::Origin;
pub use param::{leading_dimension_name, Access, GlobalTensor, Param, ParamKind};
pub use reduction_report::{reduction_shared_bytes, ReductionReport, ReductionScope};
pub use roofline::{roofline, Bound, GpuSpec, Roofline, RooflineError};
pub use shared_memory::{
    SharedMemoryPlan, SharedSlot, PANEL_ALIGNMENT, RESERVED_STATIC_BYTES, SHARED_ALIGNMENT, TMA_STORE_STAGING,
};
pub use statement::{
    Barrier, ElementMap, Fragment, FragmentOperand, GridBinding, GridStrideLoop, ItemOrder, Mma, Operand, PipelineLoop,
    SharedBuffer, SharedOperand, Statement, TileCopy, TileOperand,
};
pub use target::Target;
pub use tensor_map::{
    tensor_map_of, CopyMechanism, TensorMap, TMA_MAX_BOX, TMA_STORE_ROWS, TMA_STORE_STAGE_BYTES, TMA_SWIZZLE_SPANS,
};
pub use thread_code::{
    check_thread_statement, is_varying, with_block_reduction_rounds, Binding, BlockReductionGroup, FragmentSlots,
    Guard, GuardKind, Intrinsic, SlotQuery, ThreadExpr, ThreadExprKind, ThreadOp, ThreadStatement, ThreadStatementKind,
    ThreadType, TypeEnv, UnaryOp, Varying, VectorStart, MAX_REDUCED_TOGETHER,
};
pub use tune::{configure, shape_class, Candidate, ConfigureError, TuneSpace};
pub use validate::validate;
