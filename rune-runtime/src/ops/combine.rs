//! Combining ops: `concat`, `stack`, the elementwise select `where_cond`, and `masked_fill`, a
//! `where_cond` with a constant.
//!
//! # `where_cond` and NaN gradients
//!
//! `where_cond(mask, a, b)` takes `a` where `mask` is true and `b` elsewhere. Its VJP sends the
//! cotangent to the selected side and an *exactly zero* cotangent to the other. In JAX and
//! PyTorch that zero then meets the unselected branch's local derivative, which may be infinite
//! (`where(x > 0, x.ln(), 0)` at `x = 0`: `d ln / dx = 1 / 0`), and `0 * inf = NaN` poisons the
//! gradient (the "NaN through where" trap, usually dodged by a second, "safe" `where` on the
//! input). In rune-ad every rule applies local derivatives with
//! [`strong_mul`](crate::strong_mul), for which an exactly-zero tangent or cotangent stays zero
//! whatever it is multiplied by, so the unselected branch contributes exactly nothing and the
//! gradient is the one the selected branch alone would give. The same holds in forward mode:
//! `where_cond_jvp` selects the tangents, so the unselected tangent is dropped, not multiplied.

use ndarray::{ArrayD, Axis, IxDyn, Slice, Zip};
use std::borrow::Borrow;

use crate::broadcast::{broadcast_owned, broadcast_shapes, sum_to_shape};
use crate::copy::extend_elems;
use crate::element::Element;
use crate::element::{FromScalar, OperandOf, OperandRef};
use crate::error::{checked, checked_size, panicking_twin, OrPanic, ShapeError};
use crate::ops::normalize_axis;
use crate::tensor::{row_major, small, Tensor};

fn shapes_of<T>(tensors: &[&Tensor<T>]) -> Vec<Vec<usize>> {
    tensors.iter().map(|t| t.shape().to_vec()).collect()
}

/// The normalised axis and output shape of `concat`, after checking the inputs agree.
fn concat_shape<T>(tensors: &[&Tensor<T>], axis: isize) -> Result<(usize, Vec<usize>), ShapeError> {
    let first = tensors
        .first()
        .ok_or_else(|| ShapeError::new("concat", "needs at least one tensor, got an empty list"))?;
    let ndim = first.ndim();
    let a = normalize_axis("concat", axis, ndim).map_err(|_| {
        ShapeError::new(
            "concat",
            format!(
                "axis {axis} is out of range for shapes {:?}",
                shapes_of(tensors)
            ),
        )
    })?;
    let mut shape = first.shape().to_vec();
    for t in &tensors[1..] {
        let s = t.shape();
        let agree = s.len() == ndim
            && s.iter()
                .zip(first.shape())
                .enumerate()
                .all(|(i, (x, y))| i == a || x == y);
        if !agree {
            return Err(ShapeError::new(
                "concat",
                format!(
                    "shapes {:?} must agree on every axis but axis {axis}",
                    shapes_of(tensors)
                ),
            ));
        }
        shape[a] = checked("concat", shape[a].checked_add(s[a]), || {
            format!(
                "the total length of axis {axis} of shapes {:?}",
                shapes_of(tensors)
            )
        })?;
    }
    checked_size::<T>("concat", &shape, || {
        format!("concatenating shapes {:?}", shapes_of(tensors))
    })?;
    Ok((a, shape))
}

/// The normalised axis and output shape of `stack`, after checking the inputs agree.
fn stack_shape<T>(tensors: &[&Tensor<T>], axis: isize) -> Result<(usize, Vec<usize>), ShapeError> {
    let first = tensors
        .first()
        .ok_or_else(|| ShapeError::new("stack", "needs at least one tensor, got an empty list"))?;
    if tensors.iter().any(|t| t.shape() != first.shape()) {
        return Err(ShapeError::new(
            "stack",
            format!("shapes {:?} must all be equal", shapes_of(tensors)),
        ));
    }
    let a = normalize_axis("stack", axis, first.ndim() + 1).map_err(|_| {
        ShapeError::new(
            "stack",
            format!(
                "axis {axis} is out of range for stacking tensors of shape {:?} (valid: {}..={})",
                first.shape(),
                -(first.ndim() as isize) - 1,
                first.ndim()
            ),
        )
    })?;
    let mut shape = first.shape().to_vec();
    shape.insert(a, tensors.len());
    checked_size::<T>("stack", &shape, || {
        format!(
            "stacking {} tensors of shape {:?}",
            tensors.len(),
            first.shape()
        )
    })?;
    Ok((a, shape))
}

panicking_twin! {
    /// The tensors joined along an existing `axis` (NumPy's `concatenate`): a list of references
    /// (`&[&a, &b]`) or of tensors (`&outs` for a `Vec<Tensor<T>>`).
    ///
    /// # Panics
    /// When the list is empty, `axis` is out of range, or the shapes differ on another axis.
    pub fn concat<T: Clone>(tensors: &[impl Borrow<Tensor<T>>], axis: isize) -> Tensor<T>
        => try_concat
}

/// Like [`concat()`], returning an error for bad input.
pub fn try_concat<T: Clone>(
    tensors: &[impl Borrow<Tensor<T>>],
    axis: isize,
) -> Result<Tensor<T>, ShapeError> {
    let tensors: Vec<&Tensor<T>> = tensors.iter().map(Borrow::borrow).collect();
    let tensors = &tensors[..];
    if tensors.len() == 1 {
        concat_shape(tensors, axis)?;
        return Ok(tensors[0].clone());
    }
    let (a, shape) = concat_shape(tensors, axis)?;
    // Copies of one example each (`vmap`), as many of each, joined past the leading axis: the
    // examples joined.
    if a > 0 {
        let examples: Option<Vec<(Tensor<T>, usize)>> =
            tensors.iter().map(|t| t.repeated_parts()).collect();
        if let Some(examples) = examples.filter(|e| e.iter().all(|(_, n)| *n == e[0].1)) {
            let bases: Vec<&Tensor<T>> = examples.iter().map(|(e, _)| e).collect();
            return Ok(try_concat(&bases, a as isize - 1)?.repeated(examples[0].1));
        }
    }
    if let Some(parts) = tensors
        .iter()
        .map(|t| t.as_slice())
        .collect::<Option<Vec<_>>>()
    {
        // Row-major inputs: for each position before the axis, each input's slice after it is
        // one run.
        let outer: usize = shape[..a].iter().product();
        let inner: usize = shape[a + 1..].iter().product();
        let mut out = Vec::with_capacity(shape.iter().product());
        for o in 0..outer {
            for (t, part) in tensors.iter().zip(&parts) {
                let run = t.shape()[a] * inner;
                extend_elems(&mut out, &part[o * run..(o + 1) * run]);
            }
        }
        return Ok(Tensor::from_parts(out, &shape));
    }
    let views: Vec<_> = tensors.iter().map(|t| t.view()).collect();
    let out = ndarray::concatenate(Axis(a), &views).expect("concat: shapes checked");
    Ok(Tensor::from_array(out))
}

panicking_twin! {
    /// The tensors, all of one shape, joined along a new `axis` (NumPy's `stack`); `axis` ranges
    /// over `-ndim-1..=ndim`. The list holds references (`&[&a, &b]`) or tensors (`&outs`).
    ///
    /// # Panics
    /// When the list is empty, the shapes differ, or `axis` is out of range.
    pub fn stack<T: Clone>(tensors: &[impl Borrow<Tensor<T>>], axis: isize) -> Tensor<T>
        => try_stack
}

/// Like [`stack()`], returning an error for bad input.
pub fn try_stack<T: Clone>(
    tensors: &[impl Borrow<Tensor<T>>],
    axis: isize,
) -> Result<Tensor<T>, ShapeError> {
    let tensors: Vec<&Tensor<T>> = tensors.iter().map(Borrow::borrow).collect();
    let tensors = &tensors[..];
    let (a, _) = stack_shape(tensors, axis)?;
    if let Some(t) = small::stack(tensors, a) {
        return Ok(t);
    }
    let views: Vec<_> = tensors.iter().map(|t| t.view()).collect();
    let out = ndarray::stack(Axis(a), &views).expect("stack: shapes checked");
    Ok(Tensor::from_array(out))
}

panicking_twin! {
    /// `a` where `mask` is true, `b` elsewhere, with `mask`, `a` and `b` broadcast together.
    ///
    /// `a` and `b` are tensors of `T` or scalars that such tensors take
    /// ([`FromScalar`](crate::FromScalar)): `where_cond(&m, x, &0.0)` reads for any element type.
    /// When both are scalars, the element type comes from where the result goes.
    ///
    /// Gradients flow only to the selected side; the other gets exactly zero (see the module docs).
    ///
    /// # Panics
    /// When the three shapes do not broadcast together.
    pub fn where_cond<T, A, B>(mask: &Tensor<bool>, a: &A, b: &B) -> Tensor<T>
    where
        T: Element,
        A: OperandOf<T> + ?Sized,
        B: OperandOf<T> + ?Sized,
    => try_where_cond
}

/// Like [`where_cond`], returning an error when the shapes do not broadcast.
pub fn try_where_cond<T, A, B>(mask: &Tensor<bool>, a: &A, b: &B) -> Result<Tensor<T>, ShapeError>
where
    T: Element,
    A: OperandOf<T> + ?Sized,
    B: OperandOf<T> + ?Sized,
{
    select(mask, a.operand_of(), b.operand_of())
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// `value` where `mask` is true, the tensor's elements elsewhere (PyTorch's
        /// `x.masked_fill(mask, value)`): `where_cond(mask, &value, self)`, so the gradient is
        /// exactly zero where the mask is set. The mask broadcasts with the tensor (NumPy's
        /// rules); `value` is any number `T` converts from, as `clamp`'s bounds.
        ///
        /// # Panics
        /// When the mask's shape does not broadcast with the tensor's.
        pub fn masked_fill<V>(&self, mask: &Tensor<bool>, value: V) -> Tensor<T>
        where
            T: FromScalar<V>,
        => self.try_masked_fill
    }

    /// Like [`Tensor::masked_fill`], returning an error when the shapes do not broadcast.
    pub fn try_masked_fill<V>(&self, mask: &Tensor<bool>, value: V) -> Result<Tensor<T>, ShapeError>
    where
        T: FromScalar<V>,
    {
        broadcast_shapes("masked_fill", mask.shape(), self.shape())?;
        select(
            mask,
            OperandRef::Scalar(T::from_scalar(value)),
            OperandRef::Tensor(self),
        )
    }
}

/// `select` of copies of one example (`vmap`): where the operands of most axes repeat one
/// example along the leading axis as many times, and the others (scalars, tensors of fewer
/// axes) do not reach it, the selection of one example, repeated.
fn select_per_example<T: Element>(
    mask: &Tensor<bool>,
    a: OperandRef<'_, T>,
    b: OperandRef<'_, T>,
) -> Option<Result<Tensor<T>, ShapeError>> {
    let ndim = |o: &OperandRef<'_, T>| match o {
        OperandRef::Scalar(_) => 0,
        OperandRef::Tensor(t) => t.ndim(),
    };
    let most = mask.ndim().max(ndim(&a)).max(ndim(&b));
    let me = example_of(mask, most)?;
    let side = |o: &OperandRef<'_, T>| match o {
        OperandRef::Tensor(t) => example_of(t, most),
        OperandRef::Scalar(_) => Some(None),
    };
    let (ae, be) = (side(&a)?, side(&b)?);
    let counts = [
        me.as_ref().map(|(_, n)| *n),
        ae.as_ref().map(|(_, n)| *n),
        be.as_ref().map(|(_, n)| *n),
    ];
    let n = counts.iter().flatten().next().copied()?;
    if counts.iter().flatten().any(|&m| m != n) {
        return None;
    }
    let mask = me.map_or_else(|| mask.clone(), |(e, _)| e);
    let a = ae.as_ref().map_or(a, |(e, _)| OperandRef::Tensor(e));
    let b = be.as_ref().map_or(b, |(e, _)| OperandRef::Tensor(e));
    Some(select(&mask, a, b).map(|t| t.repeated(n)))
}

/// A tensor of `most` axes as the example it repeats and how often (`None` when it is not
/// one); one of fewer axes, which does not reach the leading axis, as `Some(None)`.
fn example_of<X: Clone>(t: &Tensor<X>, most: usize) -> Option<Option<(Tensor<X>, usize)>> {
    if t.ndim() < most {
        return Some(None);
    }
    t.repeated_parts().map(Some)
}

/// A scalar or tensor operand as an array (a 0-d one for a scalar) to broadcast from.
fn operand_array<T: Clone>(o: OperandRef<'_, T>) -> ndarray::CowArray<'_, T, IxDyn> {
    match o {
        OperandRef::Scalar(s) => ArrayD::from_elem(IxDyn(&[]), s).into(),
        OperandRef::Tensor(t) => t.view().into(),
    }
}

/// The scalar form of `where_cond`: its value, and a tangent or cotangent `d` through each side
/// (`_lhs`, `_rhs`), which `d` reaches where the mask selects it and nothing reaches elsewhere.
/// The tensor kernel applies it element by element, and fused regions of `#[differentiable]`
/// code inline it.
pub mod elementwise {
    use crate::element::Element;

    /// `a` where `m`, else `b`.
    #[inline]
    pub fn where_cond<T>(m: bool, a: T, b: T) -> T {
        if m {
            a
        } else {
            b
        }
    }

    /// `d` through `where_cond`'s first side: `d` where `m`, else 0.
    #[inline]
    pub fn where_cond_lhs<T: Element>(d: T, m: bool) -> T {
        where_cond(m, d, T::zero())
    }

    /// `d` through `where_cond`'s second side: `d` where `m` is false, else 0.
    #[inline]
    pub fn where_cond_rhs<T: Element>(d: T, m: bool) -> T {
        where_cond(m, T::zero(), d)
    }
}

fn select<T: Element>(
    mask: &Tensor<bool>,
    a: OperandRef<'_, T>,
    b: OperandRef<'_, T>,
) -> Result<Tensor<T>, ShapeError> {
    if let Some(t) = select_per_example(mask, a, b) {
        return t;
    }
    let (av, bv) = (operand_array(a), operand_array(b));
    let shape = broadcast_shapes("where_cond", mask.shape(), av.shape())
        .and_then(|s| broadcast_shapes("where_cond", &s, bv.shape()))
        .map_err(|_| {
            ShapeError::new(
                "where_cond",
                format!(
                    "mask shape {:?}, a shape {:?} and b shape {:?} do not broadcast together",
                    mask.shape(),
                    av.shape(),
                    bv.shape()
                ),
            )
        })?;
    let dim = IxDyn(&shape);
    let m = mask.broadcast_view(&shape).expect("shape checked");
    let x = av.broadcast(dim.clone()).expect("shape checked");
    let y = bv.broadcast(dim).expect("shape checked");
    Ok(Tensor::from_array(row_major(
        Zip::from(&m)
            .and(&x)
            .and(&y)
            .map_collect(|&m, &u, &v| elementwise::where_cond(m, u, v)),
    )))
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op         | JVP                                | VJP (input i / lhs / rhs)               |
// |------------|------------------------------------|-----------------------------------------|
// | concat     | concat(dx_i), None as zeros        | g sliced to input i's part along axis   |
// | stack      | stack(dx_i), None as zeros         | g indexed at i along axis               |
// | where_cond | where_cond(mask, da|0, db|0)       | sum_to(where(mask, g, 0)) / (.., 0, g)  |

/// Rules of the combining ops (see the module's table).
pub mod rules {
    use super::*;

    /// Checks that there is one tangent per tensor.
    #[track_caller]
    fn check_tangents<T>(op: &str, tensors: &[&Tensor<T>], tangents: &[Option<&Tensor<T>>]) {
        assert!(
            tensors.len() == tangents.len(),
            "{op}_jvp: {} tangents given for {} tensors",
            tangents.len(),
            tensors.len()
        );
    }

    /// The lengths of `tensors` along `axis`: what `concat_vjp` needs to find each input's part.
    ///
    /// # Panics
    /// When the list is empty or `axis` is out of range.
    #[track_caller]
    pub fn concat_sizes<T: Element>(tensors: &[&Tensor<T>], axis: isize) -> Vec<usize> {
        let (a, _) = concat_shape(tensors, axis).or_panic();
        tensors.iter().map(|t| t.shape()[a]).collect()
    }

    /// JVP of `concat(tensors, axis)`; a `None` tangent (a constant input) counts as zeros.
    #[track_caller]
    pub fn concat_jvp<T: Element>(
        tensors: &[&Tensor<T>],
        axis: isize,
        tangents: &[Option<&Tensor<T>>],
    ) -> Tensor<T> {
        check_tangents("concat", tensors, tangents);
        let (a, shape) = concat_shape(tensors, axis).or_panic();
        if let Some(all) = tangents.iter().copied().collect::<Option<Vec<_>>>() {
            return concat(&all, axis);
        }
        let mut out = ArrayD::zeros(IxDyn(&shape));
        let mut offset = 0;
        for (t, d) in tensors.iter().zip(tangents) {
            let len = t.shape()[a];
            if let Some(d) = d {
                out.slice_axis_mut(Axis(a), Slice::from(offset..offset + len))
                    .assign(&d.view());
            }
            offset += len;
        }
        Tensor::from_array(out)
    }

    /// VJP of `concat(tensors, axis)` for input `index`, where `sizes` are the inputs' lengths
    /// along `axis` ([`concat_sizes`]): that input's part of `g` (a view).
    #[track_caller]
    pub fn concat_vjp<T: Element>(
        g: &Tensor<T>,
        index: usize,
        sizes: &[usize],
        axis: isize,
    ) -> Tensor<T> {
        let a = normalize_axis("concat", axis, g.ndim()).or_panic();
        let offset: usize = sizes[..index].iter().sum();
        Tensor::from_shared(
            g.to_shared()
                .slice_axis_move(Axis(a), Slice::from(offset..offset + sizes[index])),
        )
    }

    /// JVP of `stack(tensors, axis)`; a `None` tangent (a constant input) counts as zeros.
    #[track_caller]
    pub fn stack_jvp<T: Element>(
        tensors: &[&Tensor<T>],
        axis: isize,
        tangents: &[Option<&Tensor<T>>],
    ) -> Tensor<T> {
        check_tangents("stack", tensors, tangents);
        let (a, shape) = stack_shape(tensors, axis).or_panic();
        if let Some(all) = tangents.iter().copied().collect::<Option<Vec<_>>>() {
            return stack(&all, axis);
        }
        let mut out = ArrayD::zeros(IxDyn(&shape));
        for (i, d) in tangents.iter().enumerate() {
            if let Some(d) = d {
                out.index_axis_mut(Axis(a), i).assign(&d.view());
            }
        }
        Tensor::from_array(out)
    }

    /// VJP of `stack(tensors, axis)` for input `index`: `g` at `index` along `axis` (a view).
    #[track_caller]
    pub fn stack_vjp<T: Element>(g: &Tensor<T>, index: usize, axis: isize) -> Tensor<T> {
        let a = normalize_axis("stack", axis, g.ndim()).or_panic();
        if let Some(t) = small::index_axis(g, a, index) {
            return t;
        }
        Tensor::from_shared(g.to_shared().index_axis_move(Axis(a), index))
    }

    /// JVP of `y = where_cond(mask, a, b)`: the selected tangent, exactly zero where the selected
    /// side is a constant (`None`).
    #[track_caller]
    pub fn where_cond_jvp<T: Element>(
        mask: &Tensor<bool>,
        y: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let zero = T::zero();
        let out = match (da, db) {
            (Some(da), Some(db)) => where_cond(mask, da, db),
            (Some(da), None) => where_cond(mask, da, &zero),
            (None, Some(db)) => where_cond(mask, &zero, db),
            (None, None) => return Tensor::zeros(y.shape()),
        };
        broadcast_owned(&out, y.shape())
    }

    /// VJP of `where_cond(mask, a, b)` for `a`: `g` where `mask` is true, exactly zero elsewhere,
    /// summed to `a`'s shape.
    #[track_caller]
    pub fn where_cond_vjp_lhs<T: Element>(
        g: &Tensor<T>,
        mask: &Tensor<bool>,
        a_shape: &[usize],
    ) -> Tensor<T> {
        sum_to_shape(&where_cond(mask, g, &T::zero()), a_shape)
    }

    /// VJP of `where_cond(mask, a, b)` for `b`: `g` where `mask` is false, exactly zero
    /// elsewhere, summed to `b`'s shape.
    #[track_caller]
    pub fn where_cond_vjp_rhs<T: Element>(
        g: &Tensor<T>,
        mask: &Tensor<bool>,
        b_shape: &[usize],
    ) -> Tensor<T> {
        sum_to_shape(&where_cond(mask, &T::zero(), g), b_shape)
    }

    /// JVP of `x.masked_fill(mask, value)`: `dx` where `mask` is false, exactly zero elsewhere.
    #[track_caller]
    pub fn masked_fill_jvp<T: Element>(mask: &Tensor<bool>, dx: &Tensor<T>) -> Tensor<T> {
        where_cond(mask, &T::zero(), dx)
    }
    /// VJP of `x.masked_fill(mask, value)`: `g` where `mask` is false, exactly zero elsewhere,
    /// summed to `x`'s shape.
    #[track_caller]
    pub fn masked_fill_vjp<T: Element>(
        g: &Tensor<T>,
        mask: &Tensor<bool>,
        x_shape: &[usize],
    ) -> Tensor<T> {
        where_cond_vjp_rhs(g, mask, x_shape)
    }
}
