//! Non-differentiable ops, whose results are constants to AD: comparisons (`lt gt le ge eq ne`
//! on float and `i64` tensors, `eq ne` on masks, giving `Tensor<bool>`), `argmax`/`argmin`
//! (giving `Tensor<i64>`), logic on masks (`and or xor not`, and the operators `& | ^ !`), and
//! integer arithmetic on `Tensor<i64>` (`+ - * / %`). Every binary op here broadcasts as NumPy
//! does.
//!
//! The comparison methods `eq`, `ne`, `lt`, ... are inherent methods, so on a tensor they shadow
//! the [`PartialEq`] methods of the same name on purpose: `a.eq(&b)` compares elementwise and
//! returns a mask, while `a == b` still tests whole tensors for equality. Floats compare with IEEE
//! semantics: every comparison with NaN is false except `ne`, which is true.
//!
//! ```
//! use rune_runtime::Tensor;
//! let logits = Tensor::from_vec(vec![0.1, 2.0, -1.0, 3.0, 0.5, 0.2], &[3, 2]);
//! let labels = Tensor::from_vec(vec![1_i64, 1, 1], &[3]);
//! let hits = logits.argmax(-1).eq(&labels); // a mask, not `PartialEq::eq`'s one bool
//! assert_eq!(hits.to_vec(), vec![true, true, false]);
//! assert_eq!(hits.cast::<f64>().mean().item(), 2.0 / 3.0); // the accuracy
//! ```
//!
//! Integer arithmetic follows Rust: `/` truncates toward zero and `%` takes the sign of the
//! dividend (`-7 / 2 == -3`, `-7 % 2 == -1`); `+ - *` overflow as Rust's `i64` operators do. A
//! zero divisor (or `i64::MIN / -1`) panics with a message naming the op and the shapes.

use std::cell::Cell;
use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Not, Rem, Sub};

use ndarray::{Axis, Zip};

use crate::broadcast::{broadcast_shapes, broadcast_view};
use crate::element::OperandRef;
use crate::element::{Element, FromScalar, Scalar};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::normalize_axis;
use crate::tensor::Tensor;

/// `f` over `a` and `b` broadcast against each other.
fn try_zip_map<A, B, U>(
    op: &'static str,
    a: &Tensor<A>,
    b: &Tensor<B>,
    f: impl Fn(&A, &B) -> U,
) -> Result<Tensor<U>, ShapeError> {
    if a.shape() == b.shape() {
        return Ok(Tensor::from_array(
            Zip::from(a.view()).and(b.view()).map_collect(&f),
        ));
    }
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let av = broadcast_view(op, a, &shape)?;
    let bv = broadcast_view(op, b, &shape)?;
    Ok(Tensor::from_array(Zip::from(&av).and(&bv).map_collect(&f)))
}

fn try_compare<T: Copy>(
    op: &'static str,
    a: &Tensor<T>,
    b: OperandRef<'_, T>,
    f: impl Fn(T, T) -> bool,
) -> Result<Tensor<bool>, ShapeError> {
    match b {
        // (`map_elems` compares one example of copies of one, `vmap`'s shared values.)
        OperandRef::Scalar(s) => Ok(a.map_elems(|&v| f(v, s))),
        OperandRef::Tensor(t) => try_zip_map(op, a, t, |&x, &y| f(x, y)),
    }
}

/// The right-hand side of a comparison: a tensor or a reference to one, of the left-hand side's
/// element type, or a scalar that such tensors take.
///
/// Implemented per kind (not through [`Operand`](crate::Operand)) so that an unsuffixed literal
/// infers from the tensor: `labels.eq(3)` compares with an `i64` when `labels` is a
/// `Tensor<i64>`, and `x.gt(0.0)` with an `f64` when `x` is a tensor of `f64`, of dual numbers,
/// or of a generic `T: Element` (converted: see [`FromScalar`]).
pub trait CompareRhs<T> {
    /// A borrowed view of the operand.
    fn compare_rhs(&self) -> OperandRef<'_, T>;
}

impl<T: Element + FromScalar<S>, S: Scalar> CompareRhs<T> for S {
    fn compare_rhs(&self) -> OperandRef<'_, T> {
        OperandRef::Scalar(T::from_scalar(*self))
    }
}

impl CompareRhs<i64> for i64 {
    fn compare_rhs(&self) -> OperandRef<'_, i64> {
        OperandRef::Scalar(*self)
    }
}

impl CompareRhs<bool> for bool {
    fn compare_rhs(&self) -> OperandRef<'_, bool> {
        OperandRef::Scalar(*self)
    }
}

impl<T> CompareRhs<T> for Tensor<T> {
    fn compare_rhs(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

impl<T> CompareRhs<T> for &Tensor<T> {
    fn compare_rhs(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

/// `x.gt(&y)` where `y` is itself a `&Tensor` (a reference parameter), as `+ - * /` take it.
impl<T> CompareRhs<T> for &&Tensor<T> {
    fn compare_rhs(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

/// The comparisons of two numbers, as the comparison methods apply them element by element and
/// fused regions of `#[differentiable]` code inline them (IEEE: false with a NaN, but `ne`).
pub mod elementwise {
    /// `a < b`.
    #[inline]
    pub fn lt<T: PartialOrd>(a: T, b: T) -> bool {
        a < b
    }

    /// `a > b`.
    #[inline]
    pub fn gt<T: PartialOrd>(a: T, b: T) -> bool {
        a > b
    }

    /// `a <= b`.
    #[inline]
    pub fn le<T: PartialOrd>(a: T, b: T) -> bool {
        a <= b
    }

    /// `a >= b`.
    #[inline]
    pub fn ge<T: PartialOrd>(a: T, b: T) -> bool {
        a >= b
    }

    /// `a == b`.
    #[inline]
    pub fn eq<T: PartialEq>(a: T, b: T) -> bool {
        a == b
    }

    /// `a != b`.
    #[inline]
    pub fn ne<T: PartialEq>(a: T, b: T) -> bool {
        a != b
    }
}

/// The comparison methods `$name` (and their `try_` twins) of `Tensor<$elem>`.
macro_rules! comparisons {
    ([$($generics:tt)*] $elem:ty; $($doc:literal $name:ident, $try_name:ident, $op:tt;)*) => {
        impl<$($generics)*> Tensor<$elem> {$(
            panicking_twin! {
                #[doc = concat!("`self ", stringify!($op), " other` elementwise, against a tensor \
                    or a scalar, broadcasting.")]
                #[doc = $doc]
                ///
                /// # Panics
                /// When the shapes do not broadcast.
                pub fn $name<B: CompareRhs<$elem>>(&self, other: B) -> Tensor<bool>
                    => self.$try_name
            }

            #[doc = concat!("Like [`Tensor::", stringify!($name),
                "`], returning an error when the shapes do not broadcast.")]
            pub fn $try_name<B: CompareRhs<$elem>>(
                &self,
                other: B,
            ) -> Result<Tensor<bool>, ShapeError> {
                try_compare(stringify!($name), self, other.compare_rhs(), elementwise::$name)
            }
        )*}
    };
}

/// `eq` and `ne` (and their `try_` twins) of `Tensor<$elem>`.
macro_rules! equalities {
    ([$($generics:tt)*] $elem:ty) => {
        comparisons! {
            [$($generics)*] $elem;
            "\n\nShadows [`PartialEq::eq`] in method-call syntax; `==` still compares whole \
                tensors."
                eq, try_eq, ==;
            "\n\nShadows [`PartialEq::ne`] in method-call syntax; `!=` still compares whole \
                tensors."
                ne, try_ne, !=;
        }
    };
}

/// `lt gt le ge` (and their `try_` twins) of `Tensor<$elem>`, for an element type with an order.
macro_rules! orderings {
    ([$($generics:tt)*] $elem:ty) => {
        comparisons! {
            [$($generics)*] $elem;
            "" lt, try_lt, <;
            "" gt, try_gt, >;
            "" le, try_le, <=;
            "" ge, try_ge, >=;
        }
    };
}

orderings!([T: Element] T);
equalities!([T: Element] T);
orderings!([] i64);
equalities!([] i64);
equalities!([] bool);

/// The index of the first largest (`max`) or smallest element of each lane along `axis`; a NaN
/// wins at once (as in NumPy).
fn try_arg_select<T: Element>(
    op: &'static str,
    x: &Tensor<T>,
    axis: isize,
    max: bool,
) -> Result<Tensor<i64>, ShapeError> {
    let ax = normalize_axis(op, axis, x.ndim())?;
    let n = x.shape()[ax];
    if n == 0 {
        return Err(ShapeError::new(
            op,
            format!(
                "axis {axis} of shape {:?} is empty, so it has no {op}",
                x.shape()
            ),
        ));
    }
    // Along the last axis of a row-major tensor (kmeans' nearest centroids), row by row over
    // the slice, where `map_axis` makes a lane view a row. A long row finds its extreme in
    // vector registers (`vmath::extreme`, NaN when the row has one), then the first element
    // equal to it, or the first NaN.
    if let (true, Some(xs)) = (ax + 1 == x.ndim(), x.as_slice()) {
        let vectorised = |row: &[T]| -> Option<usize> {
            let m = T::lane_extreme(row, max)?;
            if m.is_nan() {
                row.iter().position(|v| v.is_nan())
            } else {
                row.iter().position(|&v| v == m)
            }
        };
        let rows = if n >= LONG_ROW {
            let first = |row: &[T]| {
                let at = vectorised(row);
                at.unwrap_or_else(|| scan(row.iter().copied(), max)) as i64
            };
            xs.chunks_exact(n).map(first).collect()
        } else if max {
            scan_rows(xs, n, |v, best| v > best)
        } else {
            scan_rows(xs, n, |v, best| v < best)
        };
        return Ok(Tensor::from_parts(rows, &x.shape()[..ax]));
    }
    Ok(Tensor::from_array(x.view().map_axis(Axis(ax), |lane| {
        scan(lane.iter().copied(), max) as i64
    })))
}

/// The rows from which `argmin`/`argmax` find the extreme in vector registers first: below it,
/// one scan with comparisons is quicker than entering the vector kernel.
const LONG_ROW: usize = 64;

/// The rows of one scan each go through `scan_rows` this many at a time.
const ROWS_AT_ONCE: usize = 4;

/// [`scan`] of each row of `n` elements of `xs`, where `better(v, best)` says `v` replaces the
/// best so far, [`ROWS_AT_ONCE`] rows side by side: one row's scan is a chain of dependent
/// compares (each waits for the best before it), and independent chains keep the core busy.
/// kmeans' `argmin` over rows of 10 centroids was 21% of its cost one row at a time; four at
/// a time, its cost at n = 10⁴, d = 8 went from 0.305 to 0.282 ms (eight at a time, with a
/// NaN flag a row, spilled registers and took 0.55 ms). Rows with a NaN, which wins where it
/// first appears, are scanned again one by one.
// Column `j` of each row is read by index, side by side (zipping the rows with their bests
// measured 4% slower).
#[allow(clippy::needless_range_loop)]
fn scan_rows<T: Element>(xs: &[T], n: usize, better: impl Fn(T, T) -> bool) -> Vec<i64> {
    let mut out = Vec::with_capacity(xs.len() / n);
    let mut groups = xs.chunks_exact(n * ROWS_AT_ONCE);
    for group in &mut groups {
        let rows: [&[T]; ROWS_AT_ONCE] = std::array::from_fn(|r| &group[r * n..(r + 1) * n]);
        let mut best = rows.map(|row| row[0]);
        let mut at = [0; ROWS_AT_ONCE];
        let mut nan = best.iter().any(|b| b.is_nan());
        for j in 1..n {
            for r in 0..ROWS_AT_ONCE {
                let v = rows[r][j];
                nan |= v.is_nan();
                if better(v, best[r]) {
                    best[r] = v;
                    at[r] = j;
                }
            }
        }
        if nan {
            out.extend(rows.map(|row| scan_with(row.iter().copied(), &better) as i64));
        } else {
            out.extend(at.map(|a| a as i64));
        }
    }
    let rest = groups.remainder().chunks_exact(n);
    out.extend(rest.map(|row| scan_with(row.iter().copied(), &better) as i64));
    out
}

/// The index of the first largest (`max`) or smallest element, or of the first NaN.
fn scan<T: Element>(lane: impl Iterator<Item = T>, max: bool) -> usize {
    if max {
        scan_with(lane, |v, best| v > best)
    } else {
        scan_with(lane, |v, best| v < best)
    }
}

/// [`scan`], `better(v, best)` saying whether `v` replaces the best so far.
fn scan_with<T: Element>(
    mut lane: impl Iterator<Item = T>,
    better: impl Fn(T, T) -> bool,
) -> usize {
    let Some(mut best) = lane.next() else {
        return 0;
    };
    let mut at = 0;
    if best.is_nan() {
        return 0;
    }
    for (i, v) in lane.enumerate() {
        if v.is_nan() {
            return i + 1;
        }
        if better(v, best) {
            best = v;
            at = i + 1;
        }
    }
    at
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The index of the largest element along `axis` (negative counts from the end), which is
        /// removed from the shape. Ties go to the first index, and a NaN counts as the largest (as
        /// in NumPy).
        ///
        /// # Panics
        /// When `axis` is out of range or that axis is empty.
        pub fn argmax(&self, axis: isize) -> Tensor<i64> => self.try_argmax
    }

    /// Like [`Tensor::argmax`], returning an error for a bad or empty axis.
    pub fn try_argmax(&self, axis: isize) -> Result<Tensor<i64>, ShapeError> {
        try_arg_select("argmax", self, axis, true)
    }

    panicking_twin! {
        /// The index of the smallest element along `axis` (negative counts from the end), which is
        /// removed from the shape. Ties go to the first index, and a NaN counts as the smallest (as
        /// in NumPy).
        ///
        /// # Panics
        /// When `axis` is out of range or that axis is empty.
        pub fn argmin(&self, axis: isize) -> Tensor<i64> => self.try_argmin
    }

    /// Like [`Tensor::argmin`], returning an error for a bad or empty axis.
    pub fn try_argmin(&self, axis: isize) -> Result<Tensor<i64>, ShapeError> {
        try_arg_select("argmin", self, axis, false)
    }
}

// ---- logic on masks -------------------------------------------------------------------------

macro_rules! logic_ops {
    ($($name:ident, $try_name:ident, $trait:ident, $method:ident, $op:tt;)*) => {
        impl Tensor<bool> {$(
            panicking_twin! {
                #[doc = concat!("Elementwise logical `", stringify!($name), "`, broadcasting \
                    (also the `", stringify!($op), "` operator).")]
                ///
                /// # Panics
                /// When the shapes do not broadcast.
                pub fn $name(&self, other: &Tensor<bool>) -> Tensor<bool> => self.$try_name
            }

            #[doc = concat!("Like [`Tensor::", stringify!($name),
                "`], returning an error when the shapes do not broadcast.")]
            pub fn $try_name(&self, other: &Tensor<bool>) -> Result<Tensor<bool>, ShapeError> {
                try_zip_map(stringify!($name), self, other, |&x, &y| x $op y)
            }
        )*}

        $(
            logic_ops!(@impl $trait, $method, $name, Tensor<bool>, Tensor<bool>, &);
            logic_ops!(@impl $trait, $method, $name, Tensor<bool>, &Tensor<bool>, );
            logic_ops!(@impl $trait, $method, $name, &Tensor<bool>, Tensor<bool>, &);
            logic_ops!(@impl $trait, $method, $name, &Tensor<bool>, &Tensor<bool>, );
        )*
    };
    (@impl $trait:ident, $method:ident, $name:ident, $lhs:ty, $rhs:ty, $($borrow:tt)?) => {
        impl $trait<$rhs> for $lhs {
            type Output = Tensor<bool>;
            #[track_caller]
            #[inline]
            fn $method(self, rhs: $rhs) -> Tensor<bool> {
                self.$name($($borrow)? rhs)
            }
        }
    };
}

logic_ops! {
    and, try_and, BitAnd, bitand, &;
    or, try_or, BitOr, bitor, |;
    xor, try_xor, BitXor, bitxor, ^;
}

impl Tensor<bool> {
    /// Elementwise logical not (also the `!` operator).
    #[must_use]
    pub fn not(&self) -> Tensor<bool> {
        self.map_elems(|&v| !v)
    }
}

impl Not for Tensor<bool> {
    type Output = Tensor<bool>;
    #[inline]
    fn not(self) -> Tensor<bool> {
        Tensor::not(&self)
    }
}

impl Not for &Tensor<bool> {
    type Output = Tensor<bool>;
    #[inline]
    fn not(self) -> Tensor<bool> {
        Tensor::not(self)
    }
}

// ---- integer arithmetic ---------------------------------------------------------------------

/// An operand of integer arithmetic.
#[derive(Clone, Copy)]
enum Int<'a> {
    Scalar(i64),
    Tensor(&'a Tensor<i64>),
}

impl Int<'_> {
    fn describe(self) -> String {
        match self {
            Int::Scalar(v) => format!("the scalar {v}"),
            Int::Tensor(t) => format!("shape {:?}", t.shape()),
        }
    }
}

/// `f` over two integer operands, broadcasting; `f` returns `None` for a zero divisor or an
/// overflowing quotient, which panics naming the op and the shapes.
#[track_caller]
fn int_arith(
    op: &'static str,
    a: Int<'_>,
    b: Int<'_>,
    f: impl Fn(i64, i64) -> Option<i64>,
) -> Tensor<i64> {
    let failed = Cell::new(None);
    let g = |x: i64, y: i64| {
        f(x, y).unwrap_or_else(|| {
            if failed.get().is_none() {
                failed.set(Some((x, y)));
            }
            0
        })
    };
    let out = match (a, b) {
        (Int::Tensor(x), Int::Scalar(s)) => x.map_elems(|&v| g(v, s)),
        (Int::Scalar(s), Int::Tensor(y)) => y.map(|&v| g(s, v)),
        (Int::Tensor(x), Int::Tensor(y)) => try_zip_map(op, x, y, |&u, &v| g(u, v)).or_panic(),
        (Int::Scalar(x), Int::Scalar(y)) => Tensor::scalar(g(x, y)),
    };
    if let Some((x, y)) = failed.get() {
        let what = if y == 0 {
            "division by zero".to_string()
        } else {
            format!(
                "{x} {} {y} overflows i64",
                if op == "div" { "/" } else { "%" }
            )
        };
        panic!(
            "{op}: {what} (i64 operands of {} and {})",
            a.describe(),
            b.describe()
        );
    }
    out
}

macro_rules! int_ops {
    ($($trait:ident, $method:ident, $name:literal, $f:expr;)*) => {$(
        int_ops!(@impl $trait, $method, $name, $f, Tensor<i64>, Tensor<i64>, |a| Int::Tensor(&a), |b| Int::Tensor(&b));
        int_ops!(@impl $trait, $method, $name, $f, Tensor<i64>, &Tensor<i64>, |a| Int::Tensor(&a), |b| Int::Tensor(b));
        int_ops!(@impl $trait, $method, $name, $f, Tensor<i64>, i64, |a| Int::Tensor(&a), |b| Int::Scalar(b));
        int_ops!(@impl $trait, $method, $name, $f, &Tensor<i64>, Tensor<i64>, |a| Int::Tensor(a), |b| Int::Tensor(&b));
        int_ops!(@impl $trait, $method, $name, $f, &Tensor<i64>, &Tensor<i64>, |a| Int::Tensor(a), |b| Int::Tensor(b));
        int_ops!(@impl $trait, $method, $name, $f, &Tensor<i64>, i64, |a| Int::Tensor(a), |b| Int::Scalar(b));
        int_ops!(@impl $trait, $method, $name, $f, i64, Tensor<i64>, |a| Int::Scalar(a), |b| Int::Tensor(&b));
        int_ops!(@impl $trait, $method, $name, $f, i64, &Tensor<i64>, |a| Int::Scalar(a), |b| Int::Tensor(b));
    )*};
    (@impl $trait:ident, $method:ident, $name:literal, $f:expr, $lhs:ty, $rhs:ty,
        |$a:ident| $wrap_a:expr, |$b:ident| $wrap_b:expr) => {
        impl $trait<$rhs> for $lhs {
            type Output = Tensor<i64>;
            #[track_caller]
            fn $method(self, rhs: $rhs) -> Tensor<i64> {
                let $a = self;
                let $b = rhs;
                int_arith($name, $wrap_a, $wrap_b, $f)
            }
        }
    };
}

int_ops! {
    Add, add, "add", |x: i64, y: i64| Some(x + y);
    Sub, sub, "sub", |x: i64, y: i64| Some(x - y);
    Mul, mul, "mul", |x: i64, y: i64| Some(x * y);
    Div, div, "div", i64::checked_div;
    Rem, rem, "rem", i64::checked_rem;
}
