//! NumPy broadcasting, and its undoing for gradients (`sum_to_shape`).
//!
//! Every rule whose forward op broadcasts calls [`sum_to_shape`] to bring a cotangent back to
//! its input's shape; no rule reduces broadcast axes by itself.

use ndarray::{ArrayD, ArrayViewD, Axis, CowArray, IxDyn, Zip};

use crate::element::Element;
use crate::error::{checked_size, ShapeError};
use crate::summation::{pairwise_split, pairwise_sum, sum_along, SUM_BLOCK};
use crate::tensor::Tensor;

/// Whether two shapes are equal, as `a == b` on the slices but without calling `memcmp` on
/// empty ones.
///
/// Slice equality hands even an empty slice to `memcmp`, and an empty `Vec`'s pointer is a
/// dangling address on an unmapped page. glibc's AVX-512 `memcmp` compares short slices with a
/// masked load; with an empty mask on an unmapped page the CPU suppresses the fault in a
/// microcode assist that costs about 70 ns, as much as a whole elementwise op on a small
/// tensor. The shape of a 0-d reduction is such an empty `Vec`. The axes are compared one by
/// one instead: a shape has a few, and a call of `memcmp` costs more than comparing them.
#[inline]
pub(crate) fn same_shape(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The shape two operands broadcast to under NumPy's rules.
pub fn broadcast_shapes(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, ShapeError> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out.push(match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(ShapeError::new(
                    op,
                    format!("shapes {a:?} and {b:?} do not broadcast (axis {i}: {da} vs {db})"),
                ))
            }
        });
    }
    // Elements only: the element type is not known here. (A result within this bound but not
    // in bytes needs operands of gigabytes each, e.g. [2^30, 1] and [1, 2^30] of f64.)
    checked_size::<u8>(op, &out, || format!("broadcasting shapes {a:?} and {b:?}"))?;
    Ok(out)
}

/// A read-only view of `t` broadcast to `shape`.
pub(crate) fn broadcast_view<'a, T>(
    op: &'static str,
    t: &'a Tensor<T>,
    shape: &[usize],
) -> Result<ArrayViewD<'a, T>, ShapeError> {
    t.broadcast_view(shape).ok_or_else(|| {
        ShapeError::new(
            op,
            format!("shape {:?} cannot be broadcast to {:?}", t.shape(), shape),
        )
    })
}

/// Sums `g` over the axes that broadcasting added or stretched, giving a tensor of `shape`.
///
/// The adjoint of broadcasting `shape` to `g.shape()`. Returns `g` itself (a cheap clone) when
/// the shapes already agree.
///
/// # Panics
/// When `shape` does not broadcast to `g.shape()`.
#[track_caller]
pub fn sum_to_shape<T: Element>(g: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
    if same_shape(g.shape(), shape) {
        return g.clone();
    }
    let gs = g.shape();
    assert!(
        gs.len() >= shape.len(),
        "sum_to_shape: shape {shape:?} has more axes than the gradient's {gs:?}"
    );
    if let Some(rows_summed) = sum_row_stacks(g, shape) {
        return rows_summed;
    }
    let lead = gs.len() - shape.len();
    // Reduce from a view: the first reduction allocates the (smaller) result, nothing copies
    // `g` itself.
    let mut acc = CowArray::from(g.view());
    for _ in 0..lead {
        acc = CowArray::from(sum_along(acc.view(), Axis(0)));
    }
    for (axis, &len) in shape.iter().enumerate() {
        if len == 1 && acc.shape()[axis] != 1 {
            acc = CowArray::from(sum_along(acc.view(), Axis(axis)).insert_axis(Axis(axis)));
        } else {
            assert!(
                acc.shape()[axis] == len,
                "sum_to_shape: shape {shape:?} does not broadcast to the gradient's {gs:?}"
            );
        }
    }
    Tensor::from_array(acc.into_owned())
}

/// The common cases of [`sum_to_shape`]: when `g` is in standard layout and the summed axes
/// are consecutive (counting axes of length one as either kind), `g` folds to `[a, r, c]` and
/// the result to `[a, c]`, each of whose `a` blocks is the sum of a stack of `r` rows of `c`,
/// added up in one pass over its slice. A bias's gradient (`[batch, n]` to `[n]` or `[1, n]`)
/// is `a = 1`; the gradient of a broadcast across a middle axis (`[n, n, 3]` to `[n, 1, 3]`,
/// the operand `x.expand_dims(1)` of pairwise differences) has `c = 3`. `None` when the summed
/// axes are not consecutive (or `g` is not in standard layout).
fn sum_row_stacks<T: Element>(g: &Tensor<T>, shape: &[usize]) -> Option<Tensor<T>> {
    let (r, c) = run_folding(shape, g.shape())?;
    let data = g.as_slice()?;
    if r == 0 || c == 0 || data.is_empty() {
        return Some(Tensor::zeros(shape));
    }
    let sum = if c == 1 && data.len() == r {
        vec![pairwise_sum(data)]
    } else if c == 1 {
        data.chunks_exact(r).map(pairwise_sum).collect()
    } else {
        let mut sum = Vec::with_capacity(data.len() / r);
        for stack in data.chunks_exact(r * c) {
            sum.extend(sum_rows(stack, c));
        }
        sum
    };
    Some(Tensor::from_vec(sum, shape))
}

/// How `shape` folds to `[a, r, c]` and a tensor of shape `t` broadcast to it to `[a, 1, c]`:
/// `(r, c)` when the axes `t` is broadcast along (`1` against more) are consecutive, counting
/// `shape`'s axes of length one as either kind. Read by [`sum_to_shape`] (a cotangent summed
/// over those axes) and by the fused loops (such a tensor read, or its cotangent summed, in
/// place).
pub(crate) fn run_folding(t: &[usize], shape: &[usize]) -> Option<(usize, usize)> {
    if t.len() > shape.len() {
        return None;
    }
    let lead = shape.len() - t.len();
    // 0: before the broadcast axes, 1: among them, 2: after them.
    let (mut phase, mut r, mut c) = (0, 1usize, 1usize);
    for (axis, &len) in shape.iter().enumerate() {
        let own = if axis < lead { 1 } else { t[axis - lead] };
        if len == 1 {
            continue;
        }
        if own == len {
            if phase == 1 {
                phase = 2;
            }
            if phase == 2 {
                c *= len;
            }
        } else if own == 1 {
            if phase == 2 {
                return None;
            }
            phase = 1;
            r *= len;
        } else {
            return None;
        }
    }
    Some((r, c))
}

/// The sum of the rows of length `row_len` that `data` (not empty) is a stack of, pairwise:
/// rows added in order in blocks of `SUM_BLOCK`, the blocks' sums combined as a tree.
fn sum_rows<T: Element>(data: &[T], row_len: usize) -> Vec<T> {
    let rows = data.len() / row_len;
    if rows <= SUM_BLOCK {
        let (first, rest) = data.split_at(row_len);
        let mut sum = first.to_vec();
        for row in rest.chunks_exact(row_len) {
            for (s, &v) in sum.iter_mut().zip(row) {
                *s += v;
            }
        }
        return sum;
    }
    let (a, b) = data.split_at(pairwise_split(rows) * row_len);
    let mut sum = sum_rows(a, row_len);
    for (s, v) in sum.iter_mut().zip(sum_rows(b, row_len)) {
        *s += v;
    }
    sum
}

/// `t` broadcast to `shape` as an owned tensor (cheap clone when the shapes agree).
#[track_caller]
pub(crate) fn broadcast_owned<T: Clone>(t: &Tensor<T>, shape: &[usize]) -> Tensor<T> {
    if same_shape(t.shape(), shape) {
        return t.clone();
    }
    match broadcast_view("broadcast_to", t, shape) {
        Ok(v) => Tensor::from_array(materialize(&v)),
        Err(e) => panic!("{e}"),
    }
}

/// A view (typically a broadcast one, with zero strides) copied into a new array.
///
/// ndarray's `to_owned` copies a non-contiguous view element by element through its n-d
/// iterator; a view of one repeated value is a fill instead, and any other goes through `Zip`,
/// which runs the innermost axis as a plain loop.
pub(crate) fn materialize<T: Clone>(view: &ArrayViewD<'_, T>) -> ArrayD<T> {
    if view.as_slice_memory_order().is_some() {
        return view.to_owned();
    }
    let repeats_one_value = view
        .shape()
        .iter()
        .zip(view.strides())
        .all(|(&len, &stride)| len <= 1 || stride == 0);
    match view.first() {
        Some(value) if repeats_one_value => ArrayD::from_elem(view.raw_dim(), value.clone()),
        _ => Zip::from(view).map_collect(T::clone),
    }
}

/// One operand of [`zip_broadcast`]: its storage in memory order, the offset in it of the
/// logical first element, and its strides along the output's axes (0 where it is broadcast).
struct Strided<'a, T> {
    data: &'a [T],
    first: isize,
    strides: Vec<isize>,
}

impl<'a, T: Copy> Strided<'a, T> {
    /// `t` seen along `shape`, or `None` when its elements are not one block of memory.
    fn new(t: &'a Tensor<T>, shape: &[usize]) -> Option<Self> {
        let array = t.view();
        let data = array.to_slice_memory_order()?;
        let lead = shape.len().checked_sub(array.ndim())?;
        let mut strides = vec![0; shape.len()];
        let mut first = 0;
        for (k, (&len, &stride)) in array.shape().iter().zip(array.strides()).enumerate() {
            if stride < 0 {
                first += (len as isize - 1) * -stride;
            }
            if len != 1 {
                strides[lead + k] = stride;
            }
        }
        Some(Strided {
            data,
            first,
            strides,
        })
    }

    /// The run of `len` elements from offset `at` with stride `step`, as the loops read it.
    #[inline(always)]
    fn run(&self, at: isize, step: isize, len: usize) -> Run<'a, T> {
        match step {
            0 => Run::Repeated(self.data[at as usize]),
            1 => Run::Contiguous(&self.data[at as usize..at as usize + len]),
            _ => Run::Strided(self.data, at, step),
        }
    }
}

/// An innermost run of one operand.
enum Run<'a, T> {
    Contiguous(&'a [T]),
    Repeated(T),
    Strided(&'a [T], isize, isize),
}

impl<T: Copy> Run<'_, T> {
    /// Element `k` of the run.
    #[inline(always)]
    fn at(&self, k: usize) -> T {
        match *self {
            Run::Contiguous(s) => s[k],
            Run::Repeated(v) => v,
            Run::Strided(s, at, step) => s[(at + k as isize * step) as usize],
        }
    }
}

/// `f` over two runs of `len` elements, appended to `out`: a plain loop for each pair of
/// contiguous and repeated runs, which LLVM vectorises.
#[inline(always)]
fn zip_runs<T: Copy, U: Copy, V>(
    a: Run<'_, T>,
    b: Run<'_, U>,
    len: usize,
    f: &impl Fn(T, U) -> V,
    out: &mut Vec<V>,
) {
    match (a, b) {
        (Run::Contiguous(x), Run::Contiguous(y)) => {
            out.extend(x.iter().zip(y).map(|(&u, &v)| f(u, v)));
        }
        (Run::Repeated(u), Run::Contiguous(y)) => out.extend(y.iter().map(|&v| f(u, v))),
        (Run::Contiguous(x), Run::Repeated(v)) => out.extend(x.iter().map(|&u| f(u, v))),
        (a, b) => out.extend((0..len).map(|k| f(a.at(k), b.at(k)))),
    }
}

/// Innermost runs shorter than this are widened by tiling the operand that repeats along the
/// next axis (see [`zip_broadcast`]).
const SHORT_RUN: usize = 64;

/// `f` elementwise over `a` and `b` broadcast against each other to `shape`, row-major; `None`
/// when an operand's elements are not one block of memory (the caller then zips views).
///
/// The output's axes are coalesced where both operands step through them as one (a block of
/// memory, or a broadcast over several axes), and the innermost run is a plain loop of the kind
/// its operands' strides allow: both contiguous, one repeated, or strided. A run shorter than
/// [`SHORT_RUN`] whose next axis repeats one operand and continues the other's run
/// (`x[:, None, :] - x[None, :, :]` for points in a few dimensions) is widened to that axis: the
/// repeated operand's short run is tiled once per outer index, and the loop runs over both
/// axes at once. A `Zip` over broadcast views costs about 10 ns an element there, where these
/// loops cost well under one.
pub(crate) fn zip_broadcast<T: Copy, U: Copy, V>(
    a: &Tensor<T>,
    b: &Tensor<U>,
    shape: &[usize],
    f: impl Fn(T, U) -> V,
) -> Option<ArrayD<V>> {
    let (a, b) = (Strided::new(a, shape)?, Strided::new(b, shape)?);
    let n: usize = shape.iter().product();
    let mut out: Vec<V> = Vec::with_capacity(n);
    if n > 0 {
        // (length, stride of a, stride of b), outermost first, length-1 axes dropped.
        let mut axes: Vec<(usize, isize, isize)> = Vec::with_capacity(shape.len());
        for (d, &len) in shape.iter().enumerate() {
            let (sa, sb) = (a.strides[d], b.strides[d]);
            match axes.last_mut() {
                _ if len == 1 => {}
                Some(outer) if outer.1 == sa * len as isize && outer.2 == sb * len as isize => {
                    *outer = (outer.0 * len, sa, sb);
                }
                _ => axes.push((len, sa, sb)),
            }
        }
        let (mut run, ra, rb) = axes.pop().unwrap_or((1, 0, 0));
        // Which operand, if any, is tiled: the next axis repeats it (stride 0) and continues
        // the other's run.
        let mut tiled = None;
        if let (true, Some(&(m, na, nb))) = (run < SHORT_RUN, axes.last()) {
            let continues = |next: isize, inner: isize| inner != 0 && next == inner * run as isize;
            if na == 0 && ra != 0 && continues(nb, rb) {
                tiled = Some((true, run));
            } else if nb == 0 && rb != 0 && continues(na, ra) {
                tiled = Some((false, run));
            }
            if tiled.is_some() {
                axes.pop();
                run *= m;
            }
        }
        let mut tile_a: Vec<T> = Vec::new();
        let mut tile_b: Vec<U> = Vec::new();
        let mut index = vec![0usize; axes.len()];
        let (mut oa, mut ob) = (a.first, b.first);
        crate::vmath::vectorised(
            #[inline(always)]
            || loop {
                match tiled {
                    Some((true, period)) => {
                        fill_tile(
                            &mut tile_a,
                            (0..period).map(|k| a.run(oa, ra, period).at(k)),
                            run,
                        );
                        zip_runs(
                            Run::Contiguous(&tile_a),
                            b.run(ob, rb, run),
                            run,
                            &f,
                            &mut out,
                        );
                    }
                    Some((false, period)) => {
                        fill_tile(
                            &mut tile_b,
                            (0..period).map(|k| b.run(ob, rb, period).at(k)),
                            run,
                        );
                        zip_runs(
                            a.run(oa, ra, run),
                            Run::Contiguous(&tile_b),
                            run,
                            &f,
                            &mut out,
                        );
                    }
                    None => zip_runs(a.run(oa, ra, run), b.run(ob, rb, run), run, &f, &mut out),
                }
                // The odometer over the outer axes, innermost first.
                let mut d = axes.len();
                loop {
                    if d == 0 {
                        return;
                    }
                    d -= 1;
                    let (len, sa, sb) = axes[d];
                    index[d] += 1;
                    oa += sa;
                    ob += sb;
                    if index[d] < len {
                        break;
                    }
                    index[d] = 0;
                    oa -= sa * len as isize;
                    ob -= sb * len as isize;
                }
            },
        );
    }
    Some(ArrayD::from_shape_vec(IxDyn(shape), out).expect("one element per element of the shape"))
}

/// `tile` made `len` long from `period` repeated: the period written once, then copied.
#[inline(always)]
fn fill_tile<T: Copy>(tile: &mut Vec<T>, period: impl Iterator<Item = T>, len: usize) {
    tile.clear();
    tile.extend(period);
    let p = tile.len();
    while tile.len() < len {
        let more = p.min(len - tile.len());
        tile.extend_from_within(..more);
    }
}
