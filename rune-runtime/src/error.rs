//! The error type of the `try_` ops.

use std::fmt;

/// A problem an op found with its input: which op, what kind of problem ([`ShapeErrorKind`]),
/// and what was wrong with which shapes (or with which matrix of a batch).
///
/// The panicking ops print exactly this message; their `try_` twins return it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    op: &'static str,
    kind: ShapeErrorKind,
    message: String,
}

/// What kind of problem a [`ShapeError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShapeErrorKind {
    /// Shapes, axes, indices or sizes that do not fit the op.
    Shape,
    /// A matrix of the right shape that the op cannot factor or invert: singular (`solve`,
    /// `inv`), not positive definite (`cholesky`), or not of full rank (`qr`, `lstsq`).
    Singular,
}

impl ShapeError {
    /// An error of `op` (`"matmul"`, `"reshape"`, ...) described by `message`, of kind
    /// [`ShapeErrorKind::Shape`].
    pub fn new(op: &'static str, message: impl Into<String>) -> Self {
        ShapeError {
            op,
            kind: ShapeErrorKind::Shape,
            message: message.into(),
        }
    }

    /// An error of `op` about a matrix it cannot factor or invert
    /// ([`ShapeErrorKind::Singular`]), described by `message`.
    pub fn singular(op: &'static str, message: impl Into<String>) -> Self {
        ShapeError {
            op,
            kind: ShapeErrorKind::Singular,
            message: message.into(),
        }
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> ShapeErrorKind {
        self.kind
    }

    /// The same problem, reported by `op` (an op built on another names itself).
    pub(crate) fn reported_by(self, op: &'static str) -> Self {
        ShapeError { op, ..self }
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

/// The panicking form of a `try_` op: the function whose doc comment and signature are given,
/// marked `#[track_caller]` and `#[must_use]`, calling the `try_` form named after `=>` with its
/// own arguments and panicking with the error's message ([`OrPanic`]).
///
/// ```text
/// panicking_twin! {
///     /// The axes reordered: ...
///     ///
///     /// # Panics
///     /// When `perm` is not a permutation of `0..ndim`.
///     pub fn permute(&self, perm: &[usize]) -> Tensor<T> => self.try_permute
/// }
/// ```
///
/// A method names its `try_` form `self.try_x`, a free function `try_x`. The signature may
/// have generics and a where clause; its parameters are `&self` (for a method) and `name: Type`
/// pairs.
macro_rules! panicking_twin {
    ($(#[$attr:meta])* $vis:vis fn $name:ident $($rest:tt)*) => {
        $crate::error::panicking_twin!(
            @generics [$(#[$attr])* #[track_caller] #[must_use] $vis fn $name] [] $($rest)*
        );
    };
    // The generics run up to the parameter list, the first group in parentheses, ...
    (@generics $head:tt [$($generics:tt)*] ($($params:tt)*) $($rest:tt)*) => {
        $crate::error::panicking_twin!(@tail $head [$($generics)*] ($($params)*) [] $($rest)*);
    };
    (@generics $head:tt [$($generics:tt)*] $next:tt $($rest:tt)*) => {
        $crate::error::panicking_twin!(@generics $head [$($generics)* $next] $($rest)*);
    };
    // ... and the return type and where clause up to `=>` and the `try_` form, of a method ...
    (
        @tail [$($head:tt)*] [$($generics:tt)*] (&self $(, $arg:ident: $ty:ty)* $(,)?)
        [$($tail:tt)*] => self.$try_name:ident
    ) => {
        $($head)* $($generics)* (&self $(, $arg: $ty)*) $($tail)* {
            $crate::error::OrPanic::or_panic(self.$try_name($($arg),*))
        }
    };
    // ... or of a free function.
    (
        @tail [$($head:tt)*] [$($generics:tt)*] ($($arg:ident: $ty:ty),* $(,)?)
        [$($tail:tt)*] => $try_name:ident
    ) => {
        $($head)* $($generics)* ($($arg: $ty),*) $($tail)* {
            $crate::error::OrPanic::or_panic($try_name($($arg),*))
        }
    };
    (@tail $head:tt $generics:tt $params:tt [$($tail:tt)*] $next:tt $($rest:tt)*) => {
        $crate::error::panicking_twin!(@tail $head $generics $params [$($tail)* $next] $($rest)*);
    };
}

pub(crate) use panicking_twin;

/// The number of elements of `shape` for a tensor of `T`, or an error of `op` when the shape
/// holds more than one allocation can: when the product of its axis lengths overflows `usize`,
/// that of its non-zero lengths exceeds `isize::MAX` (ndarray's bound), or the bytes do.
///
/// `what` says where the shape comes from (`"shape [2, 3]"`, `"padding 7 of shape [2, 3]"`);
/// the message names it and the shape.
pub(crate) fn checked_size<T>(
    op: &'static str,
    shape: &[usize],
    what: impl FnOnce() -> String,
) -> Result<usize, ShapeError> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let bytes = std::mem::size_of::<T>().max(1);
    match nonzero {
        Some(n) if n <= isize::MAX as usize / bytes => Ok(if shape.contains(&0) { 0 } else { n }),
        _ => Err(ShapeError::new(
            op,
            format!(
                "{} gives shape {shape:?}, more elements than a tensor can hold",
                what()
            ),
        )),
    }
}

/// The result of a checked geometry computation (`checked_add`, `checked_mul`, ...), or an
/// error of `op` saying that `what()` (naming the arguments) overflows.
pub(crate) fn checked<F>(
    op: &'static str,
    value: Option<usize>,
    what: F,
) -> Result<usize, ShapeError>
where
    F: FnOnce() -> String,
{
    value.ok_or_else(|| ShapeError::new(op, format!("{} overflows usize", what())))
}
