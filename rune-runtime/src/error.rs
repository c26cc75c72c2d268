//! The error type of the `try_` ops.

use std::fmt;

/// A shape or index problem found by an op: which op, and what was wrong with which shapes.
///
/// The panicking ops print exactly this message; their `try_` twins return it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    op: &'static str,
    message: String,
}

impl ShapeError {
    /// An error of `op` (`"matmul"`, `"reshape"`, ...) described by `message`.
    pub fn new(op: &'static str, message: impl Into<String>) -> Self {
        ShapeError {
            op,
            message: message.into(),
        }
    }

    /// The op that rejected its input.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// What was wrong, naming the shapes involved.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.message)
    }
}

impl std::error::Error for ShapeError {}

/// Unwraps a shape check, panicking at the caller's location with the error's message.
pub(crate) trait OrPanic<T> {
    fn or_panic(self) -> T;
}

impl<T> OrPanic<T> for Result<T, ShapeError> {
    #[track_caller]
    #[inline]
    fn or_panic(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}
