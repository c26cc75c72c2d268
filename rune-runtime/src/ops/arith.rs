//! Arithmetic: `+ - * /` and unary `-`, with NumPy broadcasting and scalars on either side.
//!
//! The binary ops are free functions over [`Operand`]s (a tensor, a reference to one, or a scalar
//! of its element type); the operator impls for every owned/borrowed/scalar combination forward
//! to them. An operator takes on the right any scalar that tensors of its element type take
//! ([`FromScalar`]), and on the left an `f64` or a dual number: see the note on the impls below.

use std::borrow::Cow;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use ndarray::Zip;

use crate::broadcast::{
    broadcast_owned, broadcast_shapes, broadcast_view, same_shape, sum_to_shape, zip_broadcast,
};
use crate::element::{strong_mul, Element, FromScalar, Operand, OperandOf, OperandRef, Scalar};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::tensor::{row_major, Tensor};

/// Applies `f` elementwise to two operands, broadcasting them against each other.
pub(crate) fn try_binary_map<T: Element>(
    op: &'static str,
    a: OperandRef<'_, T>,
    b: OperandRef<'_, T>,
    f: impl Fn(T, T) -> T,
) -> Result<Tensor<T>, ShapeError> {
    binary_map(op, a, b, &f)
}

/// [`try_binary_map`] with `f` by reference, so that [`binary_map_copies`] calls it back with
/// the same closure type.
#[inline]
fn binary_map<T: Element, F: Fn(T, T) -> T>(
    op: &'static str,
    a: OperandRef<'_, T>,
    b: OperandRef<'_, T>,
    f: &F,
) -> Result<Tensor<T>, ShapeError> {
    Ok(match (a, b) {
        (OperandRef::Scalar(x), OperandRef::Scalar(y)) => Tensor::scalar(f(x, y)),
        (OperandRef::Tensor(x), OperandRef::Scalar(y)) => x.map_elems(|&v| f(v, y)),
        (OperandRef::Scalar(x), OperandRef::Tensor(y)) => y.map_elems(|&v| f(x, v)),
        (OperandRef::Tensor(x), OperandRef::Tensor(y)) => {
            if x.is_repeated() || y.is_repeated() {
                if let Some(t) = binary_map_copies(op, x, y, f) {
                    return t;
                }
            }
            if same_shape(x.shape(), y.shape()) {
                x.zip_map(y, |&u, &v| f(u, v))
            } else if let Some(t) = row_broadcast_map(x, y, f) {
                t
            } else if let Some(t) = row_broadcast_map(y, x, |v, u| f(u, v)) {
                t
            } else if let Some(t) = column_broadcast_map(x, y, f) {
                t
            } else if let Some(t) = column_broadcast_map(y, x, |v, u| f(u, v)) {
                t
            } else {
                let shape = broadcast_shapes(op, x.shape(), y.shape())?;
                match zip_broadcast(x, y, &shape, f) {
                    Some(out) => Tensor::from_array(out),
                    None => {
                        let xv = broadcast_view(op, x, &shape)?;
                        let yv = broadcast_view(op, y, &shape)?;
                        Tensor::from_array(row_major(
                            Zip::from(&xv).and(&yv).map_collect(|&u, &v| f(u, v)),
                        ))
                    }
                }
            }
        }
    })
}

/// [`try_binary_map`] where `x` or `y` repeats one example along its leading axis (`vmap`'s
/// shared values): the op of the examples, repeated, or of the one example broadcast along
/// the other's leading axis, which runs row by row over slices; `None` where neither applies.
/// Out of line, so that [`binary_map`], which it calls, does not call itself.
#[inline(never)]
fn binary_map_copies<T: Element, F: Fn(T, T) -> T>(
    op: &'static str,
    x: &Tensor<T>,
    y: &Tensor<T>,
    f: &F,
) -> Option<Result<Tensor<T>, ShapeError>> {
    let (a, b) = (OperandRef::Tensor(x), OperandRef::Tensor(y));
    if let Some((xe, ye, n)) = repeated_examples(x, y) {
        let (xe, ye) = (OperandRef::Tensor(&xe), OperandRef::Tensor(&ye));
        return Some(binary_map(op, xe, ye, f).map(|t| t.repeated(n)));
    }
    if !same_shape(x.shape(), y.shape()) {
        return None;
    }
    match (x.repeated_parts(), y.repeated_parts()) {
        (Some((xe, _)), None) => Some(binary_map(op, OperandRef::Tensor(&xe), b, f)),
        (None, Some((ye, _))) => Some(binary_map(op, a, OperandRef::Tensor(&ye), f)),
        _ => None,
    }
}

/// When `x` or `y` repeats one example along its leading axis and the other either repeats
/// as many at as many axes or has fewer axes (so that broadcasting never reaches that axis),
/// the operands of one example and the number of copies: the result is the op of those,
/// repeated.
pub(crate) fn repeated_examples<T: Element>(
    x: &Tensor<T>,
    y: &Tensor<T>,
) -> Option<(Tensor<T>, Tensor<T>, usize)> {
    match (x.repeated_parts(), y.repeated_parts()) {
        (Some((xe, n)), Some((ye, m))) if n == m && x.ndim() == y.ndim() => Some((xe, ye, n)),
        (Some((xe, n)), None) if y.ndim() < x.ndim() => Some((xe, y.clone(), n)),
        (None, Some((ye, n))) if x.ndim() < y.ndim() => Some((x.clone(), ye, n)),
        _ => None,
    }
}

/// The fewest elements [`row_broadcast_map`] runs its inner loop over.
const SHORT_ROW: usize = 64;

/// `f(u, v)` over `full` and a `row` that broadcasts along `full`'s leading axes only (a bias
/// `[n]` or `[1, n]` against `[batch, n]`): when both are row-major, `full` is a stack of rows of
/// `row`'s length and the op runs row by row over the slices, where a `Zip` over broadcast views
/// costs several times the arithmetic on small tensors. `None` when the operands do not fall
/// that way; the result has `full`'s shape.
fn row_broadcast_map<T: Element>(
    full: &Tensor<T>,
    row: &Tensor<T>,
    f: impl Fn(T, T) -> T,
) -> Option<Tensor<T>> {
    let (fs, rs) = (full.shape(), row.shape());
    let ones = rs.iter().take_while(|&&n| n == 1).count();
    let core = &rs[ones..];
    if rs.len() > fs.len() || !same_shape(&fs[fs.len() - core.len()..], core) {
        return None;
    }
    let (data, r) = (full.as_slice()?, row.as_slice()?);
    if r.is_empty() {
        return None;
    }
    // A short row is repeated into a run of at least `SHORT_ROW` elements, and the matrix
    // read a run at a time: a loop over one row of 10 did not vectorise, and set up every 10
    // elements (the `[K]` norms against `[N, K]` scores of a nearest-centroid search).
    let run: Cow<'_, [T]> = if r.len() >= SHORT_ROW {
        Cow::Borrowed(r)
    } else {
        Cow::Owned(r.repeat(SHORT_ROW.div_ceil(r.len())))
    };
    let mut out = Vec::with_capacity(data.len());
    crate::vmath::vectorised(
        #[inline(always)]
        || {
            let mut runs = data.chunks_exact(run.len());
            for chunk in &mut runs {
                out.extend(chunk.iter().zip(run.iter()).map(|(&u, &v)| f(u, v)));
            }
            // Whole rows (the run and the data are both whole rows), the run's first ones.
            let rest = runs.remainder();
            out.extend(rest.iter().zip(run.iter()).map(|(&u, &v)| f(u, v)));
        },
    );
    Some(Tensor::from_parts(out, fs))
}

/// `f(u, v)` over `full` and a `column` of one value for each of its rows (`[n, 1]` against
/// `[n, k]`, `[b, n, 1]` against `[b, n, k]`: a row's maximum or sum kept as an axis, which
/// softmax subtracts and divides by), both row-major: each row of `full` against its value,
/// where a `Zip` over broadcast views cost four times as much on rows of 10. `None` when the
/// operands do not fall that way; the result has `full`'s shape.
fn column_broadcast_map<T: Element>(
    full: &Tensor<T>,
    column: &Tensor<T>,
    f: impl Fn(T, T) -> T,
) -> Option<Tensor<T>> {
    let (fs, cs) = (full.shape(), column.shape());
    let n = fs.len();
    if n == 0 || cs.len() != n || cs[n - 1] != 1 || !same_shape(&cs[..n - 1], &fs[..n - 1]) {
        return None;
    }
    let (data, c) = (full.as_slice()?, column.as_slice()?);
    let k = fs[n - 1];
    if k == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len());
    crate::vmath::vectorised(
        #[inline(always)]
        || {
            for (row, &v) in data.chunks_exact(k).zip(c) {
                out.extend(row.iter().map(|&u| f(u, v)));
            }
        },
    );
    Some(Tensor::from_parts(out, fs))
}

macro_rules! binary_fns {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident, $f:expr;)*) => {$(
        panicking_twin! {
            $(#[$doc])*
            ///
            /// # Panics
            /// When the operands' shapes do not broadcast.
            pub fn $name<A, B>(a: &A, b: &B) -> Tensor<A::Elem>
            where
                A: Operand + ?Sized,
                A::Elem: Element,
                B: Operand<Elem = A::Elem> + ?Sized,
            => $try_name
        }

        /// Like the op without `try_`, returning an error when the shapes do not broadcast.
        pub fn $try_name<A, B>(a: &A, b: &B) -> Result<Tensor<A::Elem>, ShapeError>
        where
            A: Operand + ?Sized,
            A::Elem: Element,
            B: Operand<Elem = A::Elem> + ?Sized,
        {
            try_binary_map(stringify!($name), a.operand(), b.operand(), $f)
        }
    )*};
}

binary_fns! {
    /// `a + b`, broadcasting.
    add, try_add, |x, y| x + y;
    /// `a - b`, broadcasting.
    sub, try_sub, |x, y| x - y;
    /// `a * b`, broadcasting.
    mul, try_mul, |x, y| x * y;
    /// `a / b`, broadcasting.
    div, try_div, |x, y| x / y;
}

/// `-x`.
#[must_use]
pub fn neg<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.map_elems(|&v| -v)
}

// ---- operator impls -------------------------------------------------------------------------

// Operator impls are written per right-hand-side kind (any scalar, a tensor, one or two
// references to a tensor) rather than as one blanket impl over `Operand`, so that for every
// left-hand side and unsuffixed literal exactly one impl applies: rustc then knows the result's
// type (`Tensor<T>`) at once, whatever the literal turns out to be. A scalar on the right is any
// [`Scalar`] that tensors of `T` take ([`FromScalar`]); in code generic over `T: Element` only
// `f64` fits a float literal, so `x + 1.0` reads it as an `f64`. Scalars do not implement
// `Scalar` for tensors, which keeps the impls apart.
macro_rules! tensor_lhs_ops {
    ($($trait:ident, $method:ident, $func:ident;)*) => {$(
        tensor_lhs_ops!(@lhs $trait, $method, $func; [] Tensor<T>);
        tensor_lhs_ops!(@lhs $trait, $method, $func; ['l] &'l Tensor<T>);
        tensor_lhs_ops!(@lhs $trait, $method, $func; ['l, 'm] &'l &'m Tensor<T>);
    )*};
    (@lhs $trait:ident, $method:ident, $func:ident; [$($lt:lifetime),*] $lhs:ty) => {
        impl<$($lt,)* T: Element + FromScalar<S>, S: Scalar> $trait<S> for $lhs {
            type Output = Tensor<T>;
            #[track_caller]
            #[inline]
            fn $method(self, rhs: S) -> Tensor<T> {
                $func(&self, &T::from_scalar(rhs))
            }
        }
        tensor_lhs_ops!(@one $trait, $method, $func; [$($lt),*] $lhs; Tensor<T>);
        tensor_lhs_ops!(@one $trait, $method, $func; [$($lt,)* 'r] $lhs; &'r Tensor<T>);
        tensor_lhs_ops!(@one $trait, $method, $func; [$($lt,)* 'r, 's] $lhs; &'r &'s Tensor<T>);
    };
    (@one $trait:ident, $method:ident, $func:ident; [$($lt:lifetime),*] $lhs:ty; $rhs:ty) => {
        impl<$($lt,)* T: Element> $trait<$rhs> for $lhs {
            type Output = Tensor<T>;
            #[track_caller]
            #[inline]
            fn $method(self, rhs: $rhs) -> Tensor<T> {
                $func(&self, &rhs)
            }
        }
    };
}
tensor_lhs_ops! {
    Add, add, add;
    Sub, sub, sub;
    Mul, mul, mul;
    Div, div, div;
}

/// Writes `scalar (op) tensor` impls for a scalar type `$scalar` (and a reference to it) on the
/// left of tensors of `$elem`, which the orphan rule does not let one impl over every scalar
/// cover.
///
/// On the left, unlike on the right, the scalar is the impl's `Self`, so a float literal must
/// find exactly one scalar type's impl for rustc to know the result's type. `f64` goes with
/// tensors of every element type (`2.0 * x` in generic code), so `f32` goes with none: with both,
/// `2.0 * x` on a `Tensor<f32>` would fit two impls and `(2.0 * x).exp()` would not compile. An
/// `f32` variable goes on the right (`x * k`).
macro_rules! scalar_lhs_ops {
    ([$($gen:tt)*] $scalar:ty => $elem:ty) => {
        scalar_lhs_ops!(@op [$($gen)*] $scalar => $elem; Add, add, $crate::ops::arith::add);
        scalar_lhs_ops!(@op [$($gen)*] $scalar => $elem; Sub, sub, $crate::ops::arith::sub);
        scalar_lhs_ops!(@op [$($gen)*] $scalar => $elem; Mul, mul, $crate::ops::arith::mul);
        scalar_lhs_ops!(@op [$($gen)*] $scalar => $elem; Div, div, $crate::ops::arith::div);
    };
    (@op [$($gen:tt)*] $scalar:ty => $elem:ty; $trait:ident, $method:ident, $func:path) => {
        scalar_lhs_ops!(@one [$($gen)*] [] $elem; $scalar; $crate::Tensor<$elem>; $trait, $method, $func);
        scalar_lhs_ops!(@one [$($gen)*] ['r] $elem; $scalar; &'r $crate::Tensor<$elem>; $trait, $method, $func);
        scalar_lhs_ops!(@one [$($gen)*] ['r, 's] $elem; $scalar; &'r &'s $crate::Tensor<$elem>; $trait, $method, $func);
        scalar_lhs_ops!(@one [$($gen)*] ['l] $elem; &'l $scalar; $crate::Tensor<$elem>; $trait, $method, $func);
        scalar_lhs_ops!(@one [$($gen)*] ['l, 'r] $elem; &'l $scalar; &'r $crate::Tensor<$elem>; $trait, $method, $func);
        scalar_lhs_ops!(@one [$($gen)*] ['l, 'r, 's] $elem; &'l $scalar; &'r &'s $crate::Tensor<$elem>; $trait, $method, $func);
    };
    (@one [$($gen:tt)*] [$($lt:lifetime),*] $elem:ty; $lhs:ty; $rhs:ty; $trait:ident, $method:ident, $func:path) => {
        impl<$($lt,)* $($gen)*> ::std::ops::$trait<$rhs> for $lhs {
            type Output = $crate::Tensor<$elem>;
            #[track_caller]
            #[inline]
            fn $method(self, rhs: $rhs) -> Self::Output {
                $func(&<$elem as $crate::FromScalar<Self>>::from_scalar(self), &rhs)
            }
        }
    };
}
scalar_lhs_ops!([T: Element] f64 => T);
scalar_lhs_ops!([T: Element] crate::Dual<T> => crate::Dual<T>);

macro_rules! assign_ops {
    ($($trait:ident, $method:ident, $op:tt;)*) => {$(
        /// In place; the right-hand side (a tensor, or a scalar that the tensor takes: see
        /// [`FromScalar`]) broadcasts to the left's shape (copy-on-write storage is copied first
        /// when shared).
        ///
        /// # Panics
        /// When the right-hand side does not broadcast to the left-hand side's shape.
        impl<T: Element, B: OperandOf<T>> $trait<B> for Tensor<T> {
            #[track_caller]
            fn $method(&mut self, rhs: B) {
                // Written in place, a view in another layout (`t`, `flip`, ..) would keep it,
                // where `a + b` is row-major (see `Tensor::zip_map`), and a fused `a += b` is
                // `a + b`.
                if !self.is_standard_layout() {
                    *self = Tensor::from_array(self.standard_layout().into_owned());
                }
                match rhs.operand_of() {
                    OperandRef::Scalar(s) => match self.unique_slice_mut() {
                        Some(l) => l.iter_mut().for_each(|u| *u = *u $op s),
                        None => self.data_mut().mapv_inplace(|v| v $op s),
                    },
                    OperandRef::Tensor(t) if same_shape(t.shape(), self.shape()) => {
                        // A padded tensor not written out (`shrink`'s VJP): its input and fill
                        // where they lie, without writing it out.
                        if let (Some((r, before, &fill)), Some(l)) =
                            (t.padded_parts(), self.unique_slice_mut())
                        {
                            let (head, rest) = l.split_at_mut(before);
                            let (body, tail) = rest.split_at_mut(r.len());
                            head.iter_mut().chain(tail).for_each(|u| *u = *u $op fill);
                            body.iter_mut().zip(r).for_each(|(u, &v)| *u = *u $op v);
                            return;
                        }
                        // An inline tensor or storage of its own: no copy-on-write to check.
                        if let (Some(r), Some(l)) = (t.as_slice(), self.unique_slice_mut()) {
                            l.iter_mut().zip(r).for_each(|(u, &v)| *u = *u $op v);
                            return;
                        }
                        let rhs = t.view();
                        let lhs = self.data_mut();
                        // Row-major on both sides (the usual case): one loop over the slices.
                        match (lhs.as_slice_mut(), rhs.as_slice()) {
                            (Some(l), Some(r)) => {
                                l.iter_mut().zip(r).for_each(|(u, &v)| *u = *u $op v)
                            }
                            _ => Zip::from(lhs).and(rhs).for_each(|u, &v| *u = *u $op v),
                        }
                    }
                    OperandRef::Tensor(t) => {
                        let shape = self.shape().to_vec();
                        let view = broadcast_view(stringify!($method), t, &shape).or_panic();
                        Zip::from(self.data_mut()).and(&view).for_each(|u, &v| *u = *u $op v);
                    }
                }
            }
        }
    )*};
}
assign_ops! {
    AddAssign, add_assign, +;
    SubAssign, sub_assign, -;
    MulAssign, mul_assign, *;
    DivAssign, div_assign, /;
}

impl<T: Element> Neg for Tensor<T> {
    type Output = Tensor<T>;
    #[inline]
    fn neg(self) -> Tensor<T> {
        neg(&self)
    }
}

impl<T: Element> Neg for &Tensor<T> {
    type Output = Tensor<T>;
    #[inline]
    fn neg(self) -> Tensor<T> {
        neg(self)
    }
}

/// The sum of tensors, broadcasting as `+` does; an empty iterator sums to a 0-d zero. Inside
/// `#[differentiable]` functions `xs.iter().map(..).sum::<Tensor<T>>()` is differentiated.
impl<T: Element> std::iter::Sum for Tensor<T> {
    fn sum<I: Iterator<Item = Tensor<T>>>(iter: I) -> Self {
        iter.fold(Tensor::zeros(&[]), |total, t| &total + &t)
    }
}

/// The sum of borrowed tensors (`xs.iter().sum::<Tensor<T>>()`).
impl<'a, T: Element> std::iter::Sum<&'a Tensor<T>> for Tensor<T> {
    fn sum<I: Iterator<Item = &'a Tensor<T>>>(iter: I) -> Self {
        iter.fold(Tensor::zeros(&[]), |total, t| &total + t)
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op  | JVP                         | VJP (lhs)               | VJP (rhs)                 |
// |-----|-----------------------------|-------------------------|---------------------------|
// | add | da + db                     | sum_to(g)               | sum_to(g)                 |
// | sub | da - db                     | sum_to(g)               | -sum_to(g)                |
// | mul | da*b + a*db                 | sum_to(g*b)             | sum_to(g*a)               |
// | div | (da - db*y) / b             | sum_to(g/b)             | -sum_to(g*y/b)            |
// | neg | -dx                         | -g                      |                           |

/// Rules of the arithmetic ops (see the module's table).
pub mod rules {
    use super::*;

    /// `da * s` (strong zero in `da`) for a scalar or tensor `s`, broadcasting.
    fn scale<T: Element>(op: &'static str, d: &Tensor<T>, s: OperandRef<'_, T>) -> Tensor<T> {
        try_binary_map(op, OperandRef::Tensor(d), s, strong_mul).or_panic()
    }

    fn combine<T: Element>(
        y: &Tensor<T>,
        lhs: Option<Tensor<T>>,
        rhs: Option<Tensor<T>>,
    ) -> Tensor<T> {
        match (lhs, rhs) {
            (Some(l), Some(r)) => add(&l, &r),
            (Some(t), None) | (None, Some(t)) => broadcast_owned(&t, y.shape()),
            (None, None) => Tensor::zeros(y.shape()),
        }
    }

    /// JVP of `a + b`.
    pub fn add_jvp<T: Element>(
        y: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        combine(y, da.cloned(), db.cloned())
    }
    /// VJP of `a + b` for `a` (of shape `a_shape`).
    pub fn add_vjp_lhs<T: Element>(g: &Tensor<T>, a_shape: &[usize]) -> Tensor<T> {
        sum_to_shape(g, a_shape)
    }
    /// VJP of `a + b` for `b`.
    pub fn add_vjp_rhs<T: Element>(g: &Tensor<T>, b_shape: &[usize]) -> Tensor<T> {
        sum_to_shape(g, b_shape)
    }

    /// JVP of `a - b`.
    pub fn sub_jvp<T: Element>(
        y: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        combine(y, da.cloned(), db.map(neg))
    }
    /// VJP of `a - b` for `a`.
    pub fn sub_vjp_lhs<T: Element>(g: &Tensor<T>, a_shape: &[usize]) -> Tensor<T> {
        sum_to_shape(g, a_shape)
    }
    /// VJP of `a - b` for `b`.
    pub fn sub_vjp_rhs<T: Element>(g: &Tensor<T>, b_shape: &[usize]) -> Tensor<T> {
        neg(&sum_to_shape(g, b_shape))
    }

    /// JVP of `a * b`.
    pub fn mul_jvp<T: Element, A: OperandOf<T> + ?Sized, B: OperandOf<T> + ?Sized>(
        a: &A,
        b: &B,
        y: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        combine(
            y,
            da.map(|d| scale("mul", d, b.operand_of())),
            db.map(|d| scale("mul", d, a.operand_of())),
        )
    }
    /// VJP of `a * b` for `a`.
    pub fn mul_vjp_lhs<T: Element, B: OperandOf<T> + ?Sized>(
        g: &Tensor<T>,
        a_shape: &[usize],
        b: &B,
    ) -> Tensor<T> {
        sum_to_shape(&scale("mul", g, b.operand_of()), a_shape)
    }
    /// VJP of `a * b` for `b`.
    pub fn mul_vjp_rhs<T: Element, A: OperandOf<T> + ?Sized>(
        g: &Tensor<T>,
        a: &A,
        b_shape: &[usize],
    ) -> Tensor<T> {
        sum_to_shape(&scale("mul", g, a.operand_of()), b_shape)
    }

    /// JVP of `y = a / b`.
    pub fn div_jvp<T: Element, B: OperandOf<T> + ?Sized>(
        b: &B,
        y: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let rhs = db.map(|d| neg(&scale("div", d, OperandRef::Tensor(y))));
        let num = combine(y, da.cloned(), rhs);
        try_binary_map("div", OperandRef::Tensor(&num), b.operand_of(), |t, bv| {
            strong_mul(t, T::one() / bv)
        })
        .or_panic()
    }
    /// VJP of `y = a / b` for `a`.
    pub fn div_vjp_lhs<T: Element, B: OperandOf<T> + ?Sized>(
        g: &Tensor<T>,
        a_shape: &[usize],
        b: &B,
    ) -> Tensor<T> {
        let q = try_binary_map("div", OperandRef::Tensor(g), b.operand_of(), |gv, bv| {
            strong_mul(gv, T::one() / bv)
        })
        .or_panic();
        sum_to_shape(&q, a_shape)
    }
    /// VJP of `y = a / b` for `b` (a tensor, since it is differentiated).
    pub fn div_vjp_rhs<T: Element>(g: &Tensor<T>, b: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        let gy = scale("div", g, OperandRef::Tensor(y));
        let q = try_binary_map(
            "div",
            OperandRef::Tensor(&gy),
            OperandRef::Tensor(b),
            |t, bv| -strong_mul(t, T::one() / bv),
        )
        .or_panic();
        sum_to_shape(&q, b.shape())
    }

    /// JVP of `-x`.
    pub fn neg_jvp<T: Element>(dx: &Tensor<T>) -> Tensor<T> {
        neg(dx)
    }
    /// VJP of `-x`.
    pub fn neg_vjp<T: Element>(g: &Tensor<T>) -> Tensor<T> {
        neg(g)
    }
}
