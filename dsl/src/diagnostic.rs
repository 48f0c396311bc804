use crate::Origin;

/// A problem with a kernel, pointing at where it was written.
///
/// ```
/// use tessera_dsl::{Diagnostic, Origin};
/// let d = Diagnostic::new(Origin::default(), "vector width 3 is not supported")
///     .with_hint("use 1, 2 or 4");
/// assert_eq!(d.to_string(), "vector width 3 is not supported\nhint: use 1, 2 or 4");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub origin: Origin,
    pub message: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn new(origin: Origin, message: impl Into<String>) -> Self {
        Self { origin, message: message.into(), hint: None }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

/// All the problems validation found, in source order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
}

impl std::fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, diagnostic) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{} ({})", diagnostic, diagnostic.origin)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}
