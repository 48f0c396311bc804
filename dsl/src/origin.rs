use serde::{Deserialize, Serialize};

/// Where a piece of the IR came from in the user's source.
///
/// `id` indexes the span table of whoever built the IR (the macro keeps one, so a diagnostic
/// can point at the exact token); `line` and `column` are for humans and for errors that
/// surface at run time, long after the spans are gone.
///
/// ```
/// let origin = tessera_dsl::Origin { id: 3, line: 12, column: 8 };
/// assert_eq!(origin.to_string(), "line 12, column 8");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Origin {
    pub id: u32,
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}
