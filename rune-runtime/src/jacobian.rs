//! Jacobians and Hessians of functions of one tensor, assembled from the function's JVPs (one per
//! input element), VJPs (one per output element), Hessian-vector products, or a gradient run on
//! dual numbers.
//!
//! A Jacobian of `f: X → Y` has shape `Y.shape ++ X.shape`, entry `[o.., i..] = ∂f[o..] / ∂x[i..]`
//! (as `jax.jacfwd` / `jax.jacrev`); a Hessian has shape `X.shape ++ X.shape`.

use ndarray::Zip;

use crate::element::dual::Dual;
use crate::element::Element;
use crate::tensor::Tensor;

/// The standard basis tensor of `shape` with a one at flat (row-major) index `at`.
fn basis<T: Element>(shape: &[usize], at: usize) -> Tensor<T> {
    let mut data = vec![T::zero(); shape.iter().product()];
    data[at] = T::one();
    Tensor::from_vec(data, shape)
}

/// `outer ++ inner`.
fn joined(outer: &[usize], inner: &[usize]) -> Vec<usize> {
    outer.iter().chain(inner).copied().collect()
}

/// Checks that `op`'s closure returned a `what` of the `expected` shape.
#[track_caller]
fn expect_shape(op: &'static str, what: &str, found: &[usize], expected: &[usize]) {
    assert!(
        found == expected,
        "{op}: the {what} has shape {found:?}, expected {expected:?}"
    );
}

/// The Jacobian from its columns `J eᵢ`, one per element of `x`: `first` is `J e₀`, already
/// computed, which fixes the shape the others must have; `column(eᵢ)` gives the rest.
#[track_caller]
fn from_columns<T: Element>(
    op: &'static str,
    mut column: impl FnMut(&Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
    first: Tensor<T>,
) -> Tensor<T> {
    let (n, m) = (x.len(), first.len());
    let out_shape = first.shape().to_vec();
    let mut data = vec![T::zero(); m * n];
    let mut write = |i: usize, c: &Tensor<T>| {
        for (o, &v) in c.view().iter().enumerate() {
            data[o * n + i] = v;
        }
    };
    write(0, &first);
    for i in 1..n {
        let c = column(&basis(x.shape(), i));
        expect_shape(op, "product", c.shape(), &out_shape);
        write(i, &c);
    }
    Tensor::from_vec(data, &joined(&out_shape, x.shape()))
}

/// The Jacobian of a function of one tensor in forward mode, from its Jacobian-vector product.
///
/// `jvp(x, v)` must return `J(x) v`, the derivative of `f` at `x` along `v` (of `x`'s shape).
/// It is called once per element of `x`, with each standard basis tensor; the result has shape
/// `f(x).shape ++ x.shape`. Forward mode suits functions with fewer inputs than outputs.
///
/// ```
/// use rune_runtime::{jacfwd, Tensor};
///
/// // f(x) = x² elementwise: J v = 2x·v, and J is diagonal.
/// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
/// let j = jacfwd(|x: &Tensor<f64>, v: &Tensor<f64>| &(x * 2.0) * v, &x);
/// assert_eq!(j.shape(), &[3, 3]);
/// assert_eq!(j.to_vec(), [2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0]);
/// ```
///
/// # Panics
/// When two products come back with different shapes.
#[track_caller]
#[must_use]
pub fn jacfwd<T: Element>(
    mut jvp: impl FnMut(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
) -> Tensor<T> {
    if x.len() == 0 {
        return empty_jacobian(&mut jvp, x);
    }
    let first = jvp(x, &basis(x.shape(), 0));
    from_columns("jacfwd", |e| jvp(x, e), x, first)
}

/// The all-zero Jacobian of a function of an empty tensor, shaped by one JVP along zero.
fn empty_jacobian<T: Element>(
    jvp: &mut impl FnMut(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
) -> Tensor<T> {
    let out = jvp(x, &Tensor::zeros(x.shape()));
    Tensor::zeros(&joined(out.shape(), x.shape()))
}

/// The Jacobian of a function of one tensor in reverse mode, from its vector-Jacobian product.
///
/// `vjp(x, w)` must return `wᵀ J(x)` (of `x`'s shape) for a cotangent `w` of shape `out_shape`,
/// the shape of `f(x)`. It is called once per output element, with each standard basis
/// tensor; the result has shape `out_shape ++ x.shape`. Reverse mode suits functions with fewer
/// outputs than inputs.
///
/// ```
/// use rune_runtime::{jacrev, Tensor};
///
/// // f(x) = A x: wᵀJ = wᵀA, and J = A.
/// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
/// let x = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]);
/// let j = jacrev(|_x: &Tensor<f64>, w: &Tensor<f64>| w.matmul(&a), &x, &[2]);
/// assert_eq!(j.shape(), &[2, 3]);
/// assert_eq!(j.to_vec(), a.to_vec());
/// ```
///
/// # Panics
/// When a product does not have `x`'s shape.
#[track_caller]
#[must_use]
pub fn jacrev<T: Element>(
    mut vjp: impl FnMut(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
    out_shape: &[usize],
) -> Tensor<T> {
    let (n, m) = (x.len(), out_shape.iter().product::<usize>());
    let mut data = Vec::with_capacity(m * n);
    for o in 0..m {
        let row = vjp(x, &basis(out_shape, o));
        expect_shape("jacrev", "product", row.shape(), x.shape());
        data.extend(row.view().iter().copied());
    }
    Tensor::from_vec(data, &joined(out_shape, x.shape()))
}

/// The Jacobian of a function of one tensor in reverse mode, from one batched vector-Jacobian
/// product instead of one per output element.
///
/// `vjp_vmap(x, ws)` takes a batch of cotangents `ws` (`[m] ++ out_shape`, the standard basis)
/// and returns each `wᵀ J(x)`, stacked (`[m] ++ x.shape`): what `f_vjp_vmap(x, Batch(ws)).1`
/// of a `#[differentiable(vmap)]` function returns. The result has shape
/// `out_shape ++ x.shape`, as [`jacrev`]'s.
///
/// ```
/// use rune_runtime::{jacrev_vmap, Tensor};
///
/// // f(x) = A x: the batch of wᵀA is W A.
/// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
/// let x = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]);
/// let j = jacrev_vmap(|_x: &Tensor<f64>, ws: &Tensor<f64>| ws.matmul(&a), &x, &[2]);
/// assert_eq!(j.to_vec(), a.to_vec());
/// ```
///
/// # Panics
/// When the products do not have shape `[m] ++ x.shape`.
#[track_caller]
#[must_use]
pub fn jacrev_vmap<T: Element>(
    vjp_vmap: impl FnOnce(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
    out_shape: &[usize],
) -> Tensor<T> {
    let m = out_shape.iter().product::<usize>();
    let ws = Tensor::eye(m).reshape(&joined(&[m], out_shape));
    let rows = vjp_vmap(x, &ws);
    expect_shape(
        "jacrev_vmap",
        "batch of products",
        rows.shape(),
        &joined(&[m], x.shape()),
    );
    rows.reshape(&joined(out_shape, x.shape()))
}

/// The Jacobian of a function of one tensor in forward mode, from one batched Jacobian-vector
/// product instead of one per input element.
///
/// `jvp_vmap(x, vs)` takes a batch of tangents `vs` (`[n] ++ x.shape`, the standard basis) and
/// returns each `J(x) v`, stacked (`[n] ++ out_shape`): what `f_jvp_vmap(x, Batch(vs)).1` of a
/// `#[differentiable(vmap)]` function returns. The result has shape `out_shape ++ x.shape`,
/// as [`jacfwd`]'s.
///
/// ```
/// use rune_runtime::{jacfwd_vmap, Tensor};
///
/// // f(x) = A x: the batch of A v is V Aᵀ.
/// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
/// let x = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]);
/// let j = jacfwd_vmap(|_x: &Tensor<f64>, vs: &Tensor<f64>| vs.matmul(&a.t()), &x);
/// assert_eq!(j.to_vec(), a.to_vec());
/// ```
///
/// # Panics
/// When the products do not have a leading axis of `x.len()`.
#[track_caller]
#[must_use]
pub fn jacfwd_vmap<T: Element>(
    jvp_vmap: impl FnOnce(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
) -> Tensor<T> {
    let n = x.len();
    let vs = Tensor::eye(n).reshape(&joined(&[n], x.shape()));
    let columns = jvp_vmap(x, &vs);
    assert!(
        columns.shape().first() == Some(&n),
        "jacfwd_vmap: the batch of products has shape {:?}; it needs a leading axis of {n}, \
         one product per element of x",
        columns.shape()
    );
    let out_shape = columns.shape()[1..].to_vec();
    let m = out_shape.iter().product::<usize>();
    columns
        .reshape(&[n, m])
        .t()
        .reshape(&joined(&out_shape, x.shape()))
}

/// The Jacobian of a function of one tensor, in forward mode when it has no more inputs than
/// outputs and in reverse mode otherwise (as many products as the smaller side, plus one).
///
/// `jvp` and `vjp` are as for [`jacfwd`] and [`jacrev`]. The output's shape is learnt from a
/// first JVP, which is kept as the first column when forward mode is chosen; the result has
/// shape `f(x).shape ++ x.shape`.
///
/// ```
/// use rune_runtime::{jacobian, Tensor};
///
/// // f(x) = A x from R³ to R²: two VJPs (after the probing JVP) rather than three JVPs.
/// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
/// let x = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]);
/// let j = jacobian(
///     |_x: &Tensor<f64>, v: &Tensor<f64>| a.matmul(v),
///     |_x: &Tensor<f64>, w: &Tensor<f64>| w.matmul(&a),
///     &x,
/// );
/// assert_eq!(j.to_vec(), a.to_vec());
/// ```
///
/// # Panics
/// When products come back with inconsistent shapes.
#[track_caller]
#[must_use]
pub fn jacobian<T: Element>(
    mut jvp: impl FnMut(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    vjp: impl FnMut(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
) -> Tensor<T> {
    if x.len() == 0 {
        return empty_jacobian(&mut jvp, x);
    }
    let first = jvp(x, &basis(x.shape(), 0));
    if x.len() <= first.len() {
        from_columns("jacobian", |e| jvp(x, e), x, first)
    } else {
        jacrev(vjp, x, first.shape())
    }
}

/// The Hessian of a scalar function of one tensor, from its Hessian-vector product.
///
/// `hvp(x, v)` must return `H(x) v` (of `x`'s shape); it is called once per element of `x`. The
/// result has shape `x.shape ++ x.shape`, entry `[i.., j..] = ∂²f / ∂x[i..] ∂x[j..]`.
///
/// For a `#[differentiable]` function `f` generic over its element type, the generated
/// `f_hvp(x, v)` returns `(gradient, H v)`, so `hessian(|x, v| f_hvp(x, v).1, &x)` is its
/// Hessian (with constant arguments, `|x, v| f_hvp(x, &a, v).1`). Any closure computing `H v`
/// will do:
///
/// ```
/// use rune_runtime::{hessian, Tensor};
///
/// // f(x) = Σ x³: H = diag(6x).
/// let x = Tensor::from_vec(vec![1.0, -2.0], &[2]);
/// let h = hessian(|x: &Tensor<f64>, v: &Tensor<f64>| &(x * 6.0) * v, &x);
/// assert_eq!(h.shape(), &[2, 2]);
/// assert_eq!(h.to_vec(), [6.0, 0.0, 0.0, -12.0]);
/// ```
///
/// # Panics
/// When a product does not have `x`'s shape.
#[track_caller]
#[must_use]
pub fn hessian<T: Element>(
    mut hvp: impl FnMut(&Tensor<T>, &Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
) -> Tensor<T> {
    if x.len() == 0 {
        return Tensor::zeros(&joined(x.shape(), x.shape()));
    }
    let first = hvp(x, &basis(x.shape(), 0));
    expect_shape("hessian", "product", first.shape(), x.shape());
    from_columns("hessian", |e| hvp(x, e), x, first)
}

/// The Hessian-vector product `H(x) v` of a scalar function, from its gradient run on dual
/// numbers (forward over reverse): the tangent part of `grad(x + v·ε)`.
///
/// `grad` maps a tensor of duals to the gradient at it, elementwise dual; a gradient written
/// for any `T: Element` (such as the `f_grad` that `#[differentiable]` generates for a function
/// generic over its element) runs at `Dual<T>` unchanged.
///
/// ```
/// use rune_runtime::{hvp_from_grad, Dual, Tensor};
///
/// // f(x) = Σ x³, ∇f = 3x², H v = 6x·v.
/// let x = Tensor::from_vec(vec![1.0, -2.0], &[2]);
/// let v = Tensor::from_vec(vec![1.0, 0.5], &[2]);
/// let hv = hvp_from_grad(|x: &Tensor<Dual<f64>>| &(x * x) * 3.0, &x, &v);
/// assert_eq!(hv.to_vec(), [6.0, -6.0]);
/// ```
///
/// # Panics
/// When `v` or the gradient does not have `x`'s shape.
#[track_caller]
#[must_use]
pub fn hvp_from_grad<T: Element>(
    mut grad: impl FnMut(&Tensor<Dual<T>>) -> Tensor<Dual<T>>,
    x: &Tensor<T>,
    v: &Tensor<T>,
) -> Tensor<T> {
    expect_shape("hvp_from_grad", "direction", v.shape(), x.shape());
    let seeded = Tensor::from_array(
        Zip::from(x.view())
            .and(v.view())
            .map_collect(|&re, &du| Dual::new(re, du)),
    );
    let g = grad(&seeded);
    expect_shape("hvp_from_grad", "gradient", g.shape(), x.shape());
    g.map(|d| d.du)
}

/// The Hessian of a scalar function from its gradient run on dual numbers: one
/// [`hvp_from_grad`] per element of `x`. The result has shape `x.shape ++ x.shape`.
///
/// ```
/// use rune_runtime::{hessian_from_grad, Dual, Tensor};
///
/// // f(x) = x₀² x₁: ∇f = (2x₀x₁, x₀²), H = [[2x₁, 2x₀], [2x₀, 0]].
/// let grad = |x: &Tensor<Dual<f64>>| {
///     let (x0, x1) = (x.shrink(&[(0, 1)]), x.shrink(&[(1, 2)]));
///     rune_runtime::concat(&[&(&(&x0 * &x1) * 2.0), &(&x0 * &x0)], 0)
/// };
/// let h = hessian_from_grad(grad, &Tensor::from_vec(vec![3.0, 5.0], &[2]));
/// assert_eq!(h.to_vec(), [10.0, 6.0, 6.0, 0.0]);
/// ```
///
/// # Panics
/// When the gradient does not have `x`'s shape.
#[track_caller]
#[must_use]
pub fn hessian_from_grad<T: Element>(
    mut grad: impl FnMut(&Tensor<Dual<T>>) -> Tensor<Dual<T>>,
    x: &Tensor<T>,
) -> Tensor<T> {
    hessian(|x, v| hvp_from_grad(&mut grad, x, v), x)
}

/// The Hessian of a scalar function of an array of numbers (`[f64; N]`, `Vec<f64>`), from its
/// Hessian-vector product: one product per element, with the unit directions. The result is
/// the `n × n` tensor `[i, j] = ∂²f / ∂x[i] ∂x[j]`.
///
/// For a function of numbers `f(x: [f64; N], ..) -> f64` under `#[differentiable(hvp)]`,
/// `hessian_of_numbers(|x, v| f_hvp(x, v).1, &x)` is its Hessian (with constant arguments,
/// `|x, v| f_hvp(x, a, v).1`):
///
/// ```
/// use rune_runtime::hessian_of_numbers;
///
/// // f(x) = x₀² x₁: H = [[2x₁, 2x₀], [2x₀, 0]].
/// let hvp = |x: &[f64; 2], v: &[f64; 2]| {
///     [2.0 * x[1] * v[0] + 2.0 * x[0] * v[1], 2.0 * x[0] * v[0]]
/// };
/// let h = hessian_of_numbers(hvp, &[3.0, 5.0]);
/// assert_eq!(h.shape(), &[2, 2]);
/// assert_eq!(h.to_vec(), [10.0, 6.0, 6.0, 0.0]);
/// ```
///
/// # Panics
/// When a product does not have `x`'s length.
#[track_caller]
#[must_use]
pub fn hessian_of_numbers<T: Element, A: AsRef<[T]> + AsMut<[T]> + Clone>(
    mut hvp: impl FnMut(&A, &A) -> A,
    x: &A,
) -> Tensor<T> {
    let n = x.as_ref().len();
    let mut data = vec![T::zero(); n * n];
    let mut direction = x.clone();
    for j in 0..n {
        let d = direction.as_mut();
        d.fill(T::zero());
        d[j] = T::one();
        let column = hvp(x, &direction);
        let column = column.as_ref();
        assert!(
            column.len() == n,
            "hessian_of_numbers: the product has {} elements, expected {n}",
            column.len()
        );
        for (i, &v) in column.iter().enumerate() {
            data[i * n + j] = v;
        }
    }
    Tensor::from_vec(data, &[n, n])
}
