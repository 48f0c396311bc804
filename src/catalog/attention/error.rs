//! Why attention refused its tensors: the shape checks [`super::forward`] and
//! [`super::backward`] make before any launch, each naming the tensor and the dims.

/// An attention call's error: a shape that does not fit (before anything runs), or the
/// launch's own error.
///
/// `?` into a [`crate::Error`] gives a launch's error as itself and carries a shape error as
/// [`crate::Error::Library`], which [`crate::Error::library`] reads back; `?` from there into
/// an `AttentionError` gives the shape error back, not wrapped in `Launch`.
///
/// ```
/// use tessera::catalog::attention::AttentionError;
/// let error = AttentionError::Heads { q_heads: 4, kv_heads: 3 };
/// assert!(error.to_string().contains("4 heads"));
/// let carried = tessera::Error::from(error);
/// assert!(matches!(carried.library::<AttentionError>(), Some(AttentionError::Heads { q_heads: 4, kv_heads: 3 })));
/// assert!(matches!(AttentionError::from(carried), AttentionError::Heads { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttentionError {
    #[error("attention: `{param}` is (batch, heads, seq, head_dim) but has dims {dims:?}")]
    Rank { param: &'static str, dims: Vec<usize> },
    #[error("attention: `{param}` has dims {found:?} where {expected:?} follows from q {q:?} and k {k:?}")]
    Shape { param: &'static str, expected: Vec<usize>, found: Vec<usize>, q: Vec<usize>, k: Vec<usize> },
    #[error(
        "attention: q has {q_heads} heads, which the {kv_heads} heads of k and v do not divide (grouped-query attention shares each K/V head among q_heads / kv_heads query heads)"
    )]
    Heads { q_heads: usize, kv_heads: usize },
    #[error("attention: head dim {head_dim} is not one the kernels hold ({supported:?})")]
    HeadDim { head_dim: usize, supported: &'static [usize] },
    /// The shapes fit; the launch (or the compile before it) failed.
    #[error(transparent)]
    Launch(crate::Error),
}

crate::library_error::library_error_conversions!(AttentionError);
