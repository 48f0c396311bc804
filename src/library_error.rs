//! The two conversions every error of tessera's own APIs (`GemmError`, `AttentionError`,
//! `NormError`) has with [`crate::Error`], stamped by one macro: each such error has a
//! `Launch(crate::Error)` variant for the launch's own failure and variants of its own for
//! what it refuses before anything runs.

/// `From<$error> for crate::Error` (a launch's error as itself, the others carried as
/// [`crate::Error::Library`]) and `From<crate::Error> for $error` (its own error, sent through
/// `?` into a `crate::Error` and back, is itself again — not `Launch(Library(..))`).
macro_rules! library_error_conversions {
    ($error:ident) => {
        impl From<$error> for crate::Error {
            /// A launch's error as it was; any other carried as [`crate::Error::Library`].
            fn from(error: $error) -> Self {
                match error {
                    $error::Launch(error) => error,
                    refused => crate::Error::Library(Box::new(refused)),
                }
            }
        }

        impl From<crate::Error> for $error {
            /// This error, if it went through `?` into a [`crate::Error`]; any other error is
            /// the launch's.
            fn from(error: crate::Error) -> Self {
                error.into_library::<Self>().unwrap_or_else(Self::Launch)
            }
        }
    };
}
pub(crate) use library_error_conversions;
