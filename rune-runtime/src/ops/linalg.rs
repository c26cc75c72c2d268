//! Linear algebra: `matmul` with NumPy semantics (1-D operands, batched, batch axes broadcast).
//!
//! Every matrix product of the runtime, forward and in the rules (also those of
//! [`conv2d`](crate::Tensor::conv2d)), goes through one 2-D kernel, `gemm`, so that a faster
//! GEMM is chosen at one place. It takes views of any strides, so transposes stay views: faer's
//! GEMM for `f32`/`f64` products above a few thousand multiply-adds, `matrixmultiply` below, and
//! `ndarray`'s generic loop for other elements such as dual numbers (see `crate::gemm`).

use ndarray::{ArrayView2, ArrayViewD, Axis, CowArray, Ix2, Ix3, Ix4, Order};

use crate::broadcast::{broadcast_shapes, same_shape, sum_to_shape};
use crate::element::Element;
use crate::error::{checked_size, panicking_twin, OrPanic, ShapeError};
use crate::gemm::ndarray_gemm;
use crate::tensor::Tensor;

/// `c = a · b`, or `c += a · b` when `accumulate`, with `c` the row-major `m × n` slice.
///
/// The one matrix-product kernel of the runtime: the element type's own kernel when it has one
/// (faer for `f32`/`f64`, see `crate::gemm`), `ndarray`'s `general_mat_mul` otherwise. Without
/// `accumulate`, `c`'s previous contents are never read, so it needs no zero-fill.
pub(crate) fn gemm<T: Element>(
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut [T],
    accumulate: bool,
) {
    match T::gemm_kernel() {
        Some(kernel) => kernel(a, b, c, accumulate),
        None => ndarray_gemm(a, b, c, accumulate),
    }
}

/// True when every element is exactly zero: such a tangent or cotangent gives an exact zero
/// (a strong zero) without entering a product, where `0 * inf` would make `NaN`.
pub(crate) fn is_all_zero<T: Element>(t: &Tensor<T>) -> bool {
    t.view().iter().all(|v| v.is_exact_zero())
}

/// The geometry of `a · b`: 1-D operands promoted to `[1, k]` (left) and `[k, 1]` (right),
/// leading axes broadcast as batch axes.
#[derive(Clone, Debug)]
struct MatmulDims {
    a_shape: Vec<usize>,
    b_shape: Vec<usize>,
    a_batch: Vec<usize>,
    b_batch: Vec<usize>,
    batch: Vec<usize>,
    m: usize,
    k: usize,
    n: usize,
}

impl MatmulDims {
    fn new<T>(a: &[usize], b: &[usize]) -> Result<Self, ShapeError> {
        if a.is_empty() || b.is_empty() {
            return Err(ShapeError::new(
                "matmul",
                format!("operands need at least one axis, got shapes {a:?} and {b:?}"),
            ));
        }
        let (a_batch, m, ka) = match a.len() {
            1 => (&[][..], 1, a[0]),
            r => (&a[..r - 2], a[r - 2], a[r - 1]),
        };
        let (b_batch, kb, n) = match b.len() {
            1 => (&[][..], b[0], 1),
            r => (&b[..r - 2], b[r - 2], b[r - 1]),
        };
        if ka != kb {
            return Err(ShapeError::new(
                "matmul",
                format!(
                    "shapes {a:?} and {b:?} do not align: the left's last axis has {ka} \
                     elements, the right's contraction axis {kb}"
                ),
            ));
        }
        let batch = broadcast_shapes("matmul", a_batch, b_batch).map_err(|_| {
            ShapeError::new(
                "matmul",
                format!(
                    "batch axes {a_batch:?} and {b_batch:?} of shapes {a:?} and {b:?} do not \
                     broadcast"
                ),
            )
        })?;
        // The output `batch + [m, n]` must fit in a tensor (with a zero-length contraction,
        // operands of no elements can have a product of very many).
        let mut out = batch.clone();
        out.extend([m, n]);
        checked_size::<T>("matmul", &out, || {
            format!("the product of shapes {a:?} and {b:?}")
        })?;
        Ok(MatmulDims {
            a_shape: a.to_vec(),
            b_shape: b.to_vec(),
            a_batch: a_batch.to_vec(),
            b_batch: b_batch.to_vec(),
            batch,
            m,
            k: ka,
            n,
        })
    }

    fn a_is_vec(&self) -> bool {
        self.a_shape.len() == 1
    }

    fn b_is_vec(&self) -> bool {
        self.b_shape.len() == 1
    }

    /// The result's shape: the batch, then `m` unless `a` is 1-D, then `n` unless `b` is 1-D.
    fn out_shape(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        if !self.a_is_vec() {
            s.push(self.m);
        }
        if !self.b_is_vec() {
            s.push(self.n);
        }
        s
    }

    fn out_len(&self) -> usize {
        self.batch.iter().product::<usize>() * self.m * self.n
    }

    fn a_count(&self) -> usize {
        self.a_batch.iter().product()
    }

    fn b_count(&self) -> usize {
        self.b_batch.iter().product()
    }

    fn batch_count(&self) -> usize {
        self.batch.iter().product()
    }

    /// `a` with a 1-D operand's inserted axis: `a_batch + [m, k]`.
    fn a2_shape(&self) -> Vec<usize> {
        let mut s = self.a_batch.clone();
        s.extend([self.m, self.k]);
        s
    }

    /// `b` with a 1-D operand's inserted axis: `b_batch + [k, n]`.
    fn b2_shape(&self) -> Vec<usize> {
        let mut s = self.b_batch.clone();
        s.extend([self.k, self.n]);
        s
    }

    #[track_caller]
    fn check(&self, what: &str, t: &Tensor<impl Element>, expected: &[usize]) {
        if !same_shape(t.shape(), expected) {
            panic!(
                "matmul: {what} has shape {:?}, expected {expected:?} for shapes {:?} and {:?}",
                t.shape(),
                self.a_shape,
                self.b_shape
            );
        }
    }
}

/// A tensor seen as a stack of matrices: its batch axes, then `[rows, cols]` (a promoted 1-D
/// operand with its inserted axis), in whatever strides the tensor has.
///
/// Each matrix enters the GEMM as the view it is, and the GEMM copies one it cannot read in
/// place a matrix at a time (in cache), so that a transpose (`w.t()`), a column slice or
/// attention's permuted heads are never copied whole.
struct Stack<'a, T> {
    data: ArrayViewD<'a, T>,
    count: usize,
    rows: usize,
    cols: usize,
}

impl<'a, T: Element> Stack<'a, T> {
    /// The stack of `t`, of `count` matrices of `rows x cols`; `rows` or `cols` is an axis
    /// that `t` lacks when `t` is (the cotangent of) a promoted 1-D operand.
    fn new(t: &'a Tensor<T>, count: usize, (rows, cols): (usize, usize), missing: Missing) -> Self {
        let mut data = t.view();
        let nd = data.ndim() + usize::from(missing.rows) + usize::from(missing.cols);
        if missing.rows {
            data.insert_axis_inplace(Axis(nd - 2));
        }
        if missing.cols {
            data.insert_axis_inplace(Axis(nd - 1));
        }
        debug_assert_eq!(
            &data.shape()[nd - 2..],
            &[rows, cols],
            "matmul: stack geometry"
        );
        Stack {
            data,
            count,
            rows,
            cols,
        }
    }

    /// Matrix `i` of the stack (row-major over the batch axes).
    fn matrix(&self, i: usize) -> ArrayView2<'_, T> {
        let v = self.data.view();
        match v.ndim() {
            2 => v.into_dimensionality(),
            3 => v
                .into_dimensionality::<Ix3>()
                .map(|v| v.index_axis_move(Axis(0), i)),
            4 => v.into_dimensionality::<Ix4>().map(|v| {
                let inner = v.len_of(Axis(1));
                v.index_axis_move(Axis(0), i / inner)
                    .index_axis_move(Axis(0), i % inner)
            }),
            _ => {
                let mut v = v;
                let mut rem = i;
                let mut index = vec![0; v.ndim() - 2];
                for (ax, j) in index.iter_mut().enumerate().rev() {
                    let len = v.len_of(Axis(ax));
                    *j = rem % len;
                    rem /= len;
                }
                for j in index {
                    v = v.index_axis_move(Axis(0), j);
                }
                v.into_dimensionality()
            }
        }
        .expect("matmul: a stack's matrix has two axes")
    }

    /// The only matrix of a stack of one.
    fn single(&self) -> ArrayView2<'_, T> {
        debug_assert_eq!(self.count, 1);
        self.matrix(0)
    }

    /// All matrices stacked vertically: `[count * rows, cols]`, a view when the strides allow
    /// it (always for a row-major tensor or a single matrix), a copy otherwise.
    fn flat(&self) -> CowArray<'_, T, Ix2> {
        if self.count == 1 {
            return CowArray::from(self.single());
        }
        self.data
            .to_shape(((self.count * self.rows, self.cols), Order::RowMajor))
            .expect("matmul: a stack holds count x rows x cols elements")
    }
}

/// Which of a stack's matrix axes its tensor lacks (see [`Stack::new`]).
#[derive(Clone, Copy, Default)]
struct Missing {
    rows: bool,
    cols: bool,
}

impl MatmulDims {
    /// The left operand's stack.
    fn a_stack<'a, T: Element>(&self, a: &'a Tensor<T>) -> Stack<'a, T> {
        let missing = Missing {
            rows: self.a_is_vec(),
            cols: false,
        };
        Stack::new(a, self.a_count(), (self.m, self.k), missing)
    }

    /// The right operand's stack.
    fn b_stack<'a, T: Element>(&self, b: &'a Tensor<T>) -> Stack<'a, T> {
        let missing = Missing {
            rows: false,
            cols: self.b_is_vec(),
        };
        Stack::new(b, self.b_count(), (self.k, self.n), missing)
    }

    /// The stack of the product (or its cotangent).
    fn out_stack<'a, T: Element>(&self, g: &'a Tensor<T>) -> Stack<'a, T> {
        let missing = Missing {
            rows: self.a_is_vec(),
            cols: self.b_is_vec(),
        };
        Stack::new(g, self.batch_count(), (self.m, self.n), missing)
    }
}

/// For each element of the broadcast batch `batch` (row-major), the matrices `(ia, ib)` it reads
/// in operands with batch axes `a_batch` and `b_batch`.
pub(super) fn batch_pairs<'b>(
    a_batch: &[usize],
    b_batch: &[usize],
    batch: &'b [usize],
) -> impl Iterator<Item = (usize, usize)> + 'b {
    let (sa, sb) = (batch_steps(a_batch, batch), batch_steps(b_batch, batch));
    (0..batch.iter().product()).map(move |i| {
        let (mut rem, mut ia, mut ib) = (i, 0, 0);
        for ax in (0..batch.len()).rev() {
            let idx = rem % batch[ax];
            rem /= batch[ax];
            ia += idx * sa[ax];
            ib += idx * sb[ax];
        }
        (ia, ib)
    })
}

/// For each axis of `batch`, how far one step moves in an operand with batch axes `op_batch`
/// (right-aligned; `0` where the operand is broadcast), counted in matrices.
fn batch_steps(op_batch: &[usize], batch: &[usize]) -> Vec<usize> {
    let lead = batch.len() - op_batch.len();
    let mut steps = vec![0; batch.len()];
    let mut stride = 1;
    for (j, &len) in op_batch.iter().enumerate().rev() {
        if len != 1 {
            steps[lead + j] = stride;
        }
        stride *= len;
    }
    steps
}

/// `out[i] (+)= a[ia] · b[ib]` over the broadcast batch (row-major), where `ia`, `ib` are the
/// operands' matrices that batch element `i` reads, each transposed when its flag is set;
/// `out` is `[batch, rows, cols]` row-major.
#[allow(clippy::too_many_arguments)]
fn batched<T: Element>(
    (a, a_t): (&Stack<'_, T>, bool),
    a_batch: &[usize],
    (b, b_t): (&Stack<'_, T>, bool),
    b_batch: &[usize],
    batch: &[usize],
    out: &mut [T],
    accumulate: bool,
) {
    let rows = if a_t { a.cols } else { a.rows };
    let cols = if b_t { b.rows } else { b.cols };
    let size = rows * cols;
    if size == 0 {
        return;
    }
    for ((ia, ib), o) in batch_pairs(a_batch, b_batch, batch).zip(out.chunks_exact_mut(size)) {
        gemm(
            &oriented(a.matrix(ia), a_t),
            &oriented(b.matrix(ib), b_t),
            o,
            accumulate,
        );
    }
}

/// `a[ia] · b[ib]` over the broadcast batch (row-major) as in [`batched`], in a new vector.
/// Products whose contraction has length 1 (outer products: a per-example gradient of a dense
/// layer is one) are written element by element as the vector grows, so that the result is
/// written once rather than zeroed first and written again, for results many times the size of
/// their operands.
fn batched_new<T: Element>(
    (a, a_t): (&Stack<'_, T>, bool),
    a_batch: &[usize],
    (b, b_t): (&Stack<'_, T>, bool),
    b_batch: &[usize],
    batch: &[usize],
) -> Vec<T> {
    let rows = if a_t { a.cols } else { a.rows };
    let cols = if b_t { b.rows } else { b.cols };
    let inner = if a_t { a.rows } else { a.cols };
    let count: usize = batch.iter().product();
    if inner != 1 {
        let mut out = vec![T::zero(); count * rows * cols];
        batched((a, a_t), a_batch, (b, b_t), b_batch, batch, &mut out, false);
        return out;
    }
    let mut out = Vec::with_capacity(count * rows * cols);
    let mut row_copy = Vec::new();
    for (ia, ib) in batch_pairs(a_batch, b_batch, batch) {
        let column = oriented(a.matrix(ia), a_t);
        let row = oriented(b.matrix(ib), b_t);
        let row = row.row(0);
        let row = match row.as_slice() {
            Some(s) => s,
            None => {
                row_copy.clear();
                row_copy.extend(row.iter().copied());
                &row_copy
            }
        };
        for &s in column.column(0) {
            out.extend(row.iter().map(|&v| s * v));
        }
    }
    out
}

/// `m`, transposed when `t`.
fn oriented<T>(m: ArrayView2<'_, T>, t: bool) -> ArrayView2<'_, T> {
    if t {
        m.reversed_axes()
    } else {
        m
    }
}

/// `out (+)= a · b` for operands of the shapes `d` was made from; `out` holds the result in
/// row-major order.
fn product_into<T: Element>(
    d: &MatmulDims,
    a: &Tensor<T>,
    b: &Tensor<T>,
    out: &mut [T],
    accumulate: bool,
) {
    let sa = d.a_stack(a);
    let sb = d.b_stack(b);
    if d.b_count() == 1 {
        // One right matrix: the left stack is a single tall matrix (the batch equals a's).
        gemm(&sa.flat().view(), &sb.single(), out, accumulate);
    } else {
        batched(
            (&sa, false),
            &d.a_batch,
            (&sb, false),
            &d.b_batch,
            &d.batch,
            out,
            accumulate,
        );
    }
}

/// A cotangent of a promoted operand (`[1, k]` or `[k, 1]`) brought back to the 1-D operand's
/// shape; any other operand's cotangent already has its shape.
fn drop_promoted_axis<T: Element>(t: Tensor<T>, shape: &[usize]) -> Tensor<T> {
    if same_shape(t.shape(), shape) {
        t
    } else {
        Tensor::from_vec(t.to_vec(), shape)
    }
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The matrix product with NumPy `matmul` semantics.
        ///
        /// - 1-D · 1-D: the inner product, a 0-d tensor;
        /// - 1-D `[k]` · N-D `[.., k, n]`: `a` is taken as a `[1, k]` row, the row axis is removed
        ///   from the result `[.., n]`;
        /// - N-D `[.., m, k]` · 1-D `[k]`: `b` is taken as a `[k, 1]` column, giving `[.., m]`;
        /// - otherwise the last two axes are matrices and the leading (batch) axes broadcast:
        ///   `[2, 1, 3, 4] · [5, 4, 6]` gives `[2, 5, 3, 6]`.
        ///
        /// # Panics
        /// When an operand is 0-d, the contraction axes differ in length, or the batch axes do not
        /// broadcast; the message names both shapes. [`Tensor::try_matmul`] returns the error
        /// instead.
        pub fn matmul(&self, other: &Tensor<T>) -> Tensor<T> => self.try_matmul
    }

    /// Like [`Tensor::matmul`], returning a [`ShapeError`] naming both shapes when they do not
    /// fit.
    pub fn try_matmul(&self, other: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
        let d = MatmulDims::new::<T>(self.shape(), other.shape())?;
        // An operand repeating one example along a batch axis (its leading axis, which the
        // other operand does not reach) gives the product of that example, repeated.
        match (self.repeated_parts(), other.repeated_parts()) {
            (Some((a, n)), None)
                if self.ndim() >= 2 && (other.ndim() <= 2 || other.ndim() < self.ndim()) =>
            {
                return Ok(a.try_matmul(other)?.repeated(n));
            }
            (None, Some((b, n))) if other.ndim() >= 3 && self.ndim() < other.ndim() => {
                return Ok(self.try_matmul(&b)?.repeated(n));
            }
            // The other operand's leading batch axis of length 1 broadcasts along the copies.
            (Some((a, n)), None)
                if self.ndim() >= 3 && other.ndim() == self.ndim() && other.shape()[0] == 1 =>
            {
                let other = other.reshape(&other.shape()[1..]);
                return Ok(a.try_matmul(&other)?.repeated(n));
            }
            (None, Some((b, n)))
                if other.ndim() >= 3 && self.ndim() == other.ndim() && self.shape()[0] == 1 =>
            {
                let this = self.reshape(&self.shape()[1..]);
                return Ok(this.try_matmul(&b)?.repeated(n));
            }
            // Both copies of one example, as many (`vmap`'s copies of two shared values).
            (Some((a, n)), Some((b, m)))
                if n == m && self.ndim() >= 3 && other.ndim() == self.ndim() =>
            {
                return Ok(a.try_matmul(&b)?.repeated(n));
            }
            // A matrix repeated along the batch axis of a stack (a batched layer's shared
            // weights): one tall product with the matrix, not a product per batch element.
            (None, Some((b, n)))
                if other.ndim() == 3
                    && b.ndim() == 2
                    && self.ndim() >= 3
                    && self.shape()[self.ndim() - 3] == n =>
            {
                return self.try_matmul(&b);
            }
            _ => {}
        }
        let out = if d.k == 1 {
            batched_new(
                (&d.a_stack(self), false),
                &d.a_batch,
                (&d.b_stack(other), false),
                &d.b_batch,
                &d.batch,
            )
        } else {
            let mut out = vec![T::zero(); d.out_len()];
            product_into(&d, self, other, &mut out, false);
            out
        };
        Ok(Tensor::from_vec(out, &d.out_shape()))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// With 1-D operands promoted (a: [.., m, k], b: [.., k, n], y: [batch, m, n]):
//
// | JVP             | VJP (lhs)                         | VJP (rhs)                         |
// |-----------------|-----------------------------------|-----------------------------------|
// | da·b + a·db     | sum_to(g · bᵀ, a's shape)         | sum_to(aᵀ · g, b's shape)         |
//
// then the promoted axes are removed again. When one operand has a single matrix, its
// cotangent's batch sum is the contraction of one tall GEMM instead.

/// Rules of `matmul` (see the module's table).
pub mod rules {
    use super::*;

    /// JVP of `a.matmul(b)`: `da · b + a · db` (an absent or all-zero tangent adds nothing).
    ///
    /// # Panics
    /// When the shapes do not fit, as `matmul` would, or a tangent's shape differs from its
    /// operand's.
    #[track_caller]
    pub fn matmul_jvp<T: Element>(
        a: &Tensor<T>,
        b: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let d = MatmulDims::new::<T>(a.shape(), b.shape()).or_panic();
        let mut out = vec![T::zero(); d.out_len()];
        let mut written = false;
        if let Some(da) = da.filter(|t| !is_all_zero(t)) {
            d.check("the tangent of the left operand", da, a.shape());
            product_into(&d, da, b, &mut out, false);
            written = true;
        }
        if let Some(db) = db.filter(|t| !is_all_zero(t)) {
            d.check("the tangent of the right operand", db, b.shape());
            product_into(&d, a, db, &mut out, written);
        }
        Tensor::from_vec(out, &d.out_shape())
    }

    /// VJP of `a.matmul(b)` for `a` (of shape `a_shape`): `g · bᵀ`, summed over the batch axes
    /// `a` was broadcast along.
    ///
    /// # Panics
    /// When the shapes do not fit, or `g` does not have the product's shape.
    #[track_caller]
    pub fn matmul_vjp_lhs<T: Element>(
        g: &Tensor<T>,
        a_shape: &[usize],
        b: &Tensor<T>,
    ) -> Tensor<T> {
        let d = MatmulDims::new::<T>(a_shape, b.shape()).or_panic();
        d.check("the cotangent", g, &d.out_shape());
        if is_all_zero(g) {
            return Tensor::zeros(a_shape);
        }
        let sg = d.out_stack(g);
        let sb = d.b_stack(b);
        let out = if d.b_count() == 1 {
            let mut out = vec![T::zero(); d.batch_count() * d.m * d.k];
            gemm(
                &sg.flat().view(),
                &sb.single().reversed_axes(),
                &mut out,
                false,
            );
            out
        } else {
            batched_new((&sg, false), &d.batch, (&sb, true), &d.b_batch, &d.batch)
        };
        let mut full = d.batch.clone();
        full.extend([d.m, d.k]);
        drop_promoted_axis(
            sum_to_shape(&Tensor::from_vec(out, &full), &d.a2_shape()),
            a_shape,
        )
    }

    /// VJP of `a.matmul(b)` for `b` (of shape `b_shape`): `aᵀ · g`, summed over the batch axes
    /// `b` was broadcast along.
    ///
    /// # Panics
    /// When the shapes do not fit, or `g` does not have the product's shape.
    #[track_caller]
    pub fn matmul_vjp_rhs<T: Element>(
        g: &Tensor<T>,
        a: &Tensor<T>,
        b_shape: &[usize],
    ) -> Tensor<T> {
        let d = MatmulDims::new::<T>(a.shape(), b_shape).or_panic();
        d.check("the cotangent", g, &d.out_shape());
        if is_all_zero(g) {
            return Tensor::zeros(b_shape);
        }
        let sa = d.a_stack(a);
        let sg = d.out_stack(g);
        if d.b_count() == 1 {
            // b was broadcast along the whole batch, which equals a's: the batch sum is the
            // contraction of (a stacked)ᵀ · (g stacked).
            let mut out = vec![T::zero(); d.k * d.n];
            gemm(
                &sa.flat().view().reversed_axes(),
                &sg.flat().view(),
                &mut out,
                false,
            );
            return Tensor::from_vec(out, b_shape);
        }
        let out = batched_new((&sa, true), &d.a_batch, (&sg, false), &d.batch, &d.batch);
        let mut full = d.batch.clone();
        full.extend([d.k, d.n]);
        drop_promoted_axis(
            sum_to_shape(&Tensor::from_vec(out, &full), &d.b2_shape()),
            b_shape,
        )
    }
}
