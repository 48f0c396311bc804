use serde::{Deserialize, Serialize};

use crate::{ElementType, Origin};

/// A kernel parameter: a global tensor or a scalar.
///
/// ```
/// use tessera_dsl::{Access, ElementType, GlobalTensor, Origin, Param, ParamKind};
/// let x = Param {
///     name: "x".into(),
///     kind: ParamKind::Global(GlobalTensor {
///         element: ElementType::F32,
///         shape: vec![("N".into(), Origin::default())],
///         access: Access::ReadOnly,
///     }),
///     origin: Origin::default(),
/// };
/// assert_eq!(x.tensor().map(|t| t.rank()), Some(1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub origin: Origin,
}

impl Param {
    pub fn tensor(&self) -> Option<&GlobalTensor> {
        match &self.kind {
            ParamKind::Global(tensor) => Some(tensor),
            ParamKind::Scalar(_) => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ParamKind {
    /// `Global<T, (M, N)>` (read-only) or `GlobalMut<T, (M, N)>` (writable).
    Global(GlobalTensor),
    /// A scalar passed by value: `alpha: f32`.
    Scalar(ElementType),
}

/// A row-major tensor in global memory whose extents are named shape symbols.
///
/// Symbols are unified across parameters at launch: two tensors that both say `N` must agree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalTensor {
    pub element: ElementType,
    /// One symbol per dimension, outermost first, with where each is written.
    pub shape: Vec<(String, Origin)>,
    pub access: Access,
}

impl GlobalTensor {
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The symbol of the innermost (contiguous) dimension.
    pub fn contiguous_symbol(&self) -> Option<&str> {
        self.shape.last().map(|(name, _)| name.as_str())
    }

    /// Whether rows of this tensor may lie apart in memory: a 2-D tensor's rows are
    /// `<param>_ld` elements apart (its leading dimension, passed at launch), not its
    /// column count, so it may be a sub-matrix of a larger one. A tensor of rank 3 or 4 is a
    /// batch of such matrices, each `rows · <param>_ld` elements after the one before (dense
    /// tensors pass their last dimension).
    pub fn has_leading_dimension(&self) -> bool {
        self.rank() >= 2
    }

    /// How many leading (batch) dimensions select one matrix: rank − 2 for a tensor of rank
    /// 3 or 4 (`q.at([b, h])`), 0 otherwise.
    pub fn batch_rank(&self) -> usize {
        self.rank().saturating_sub(2)
    }
}

/// The name of the kernel parameter holding a 2-D (or batched) tensor's leading dimension: the number of
/// elements from the start of one row to the start of the next (cuBLAS's `lda`).
///
/// ```
/// assert_eq!(tessera_dsl::leading_dimension_name("a"), "a_ld");
/// ```
pub fn leading_dimension_name(param: &str) -> String {
    format!("{param}_ld")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Access {
    ReadOnly,
    Writable,
}
