//! The shape ops on tensors held inline ([`INLINE`] elements or fewer): slicing, padding,
//! stacking and the axis changes of `squeeze`/`expand_dims`/`reshape`, written as index
//! arithmetic over row-major slices instead of ndarray's dynamic-rank views, whose set-up costs
//! more than the copy on a handful of elements.
//!
//! Each function returns `None` where it does not apply (a result too large to be held inline,
//! an operand not stored row-major, more axes than an inline tensor has); the op then takes its
//! general path, which gives the same values. The ops that return views (`shrink`, `squeeze`,
//! ..) take these paths only for a tensor held inline: of shared storage they still return a
//! view of it, in its layout, without copying.

use arrayvec::ArrayVec;

use super::{fits_inline, Tensor, INLINE, INLINE_AXES};

/// `shape` and `ranges` padded with leading axes of length 1 to [`INLINE_AXES`] axes.
type Box4 = ([usize; INLINE_AXES], [(usize, usize); INLINE_AXES]);

fn box4(shape: &[usize], ranges: impl Fn(usize) -> (usize, usize)) -> Option<Box4> {
    let lead = INLINE_AXES.checked_sub(shape.len())?;
    let mut dims = [1; INLINE_AXES];
    let mut boxed = [(0, 1); INLINE_AXES];
    for (k, &d) in shape.iter().enumerate() {
        dims[lead + k] = d;
        boxed[lead + k] = ranges(k);
    }
    Some((dims, boxed))
}

/// Calls `visit(offset, run)` for each run of the innermost axis of the box `ranges` in a
/// row-major array of shape `dims`, in row-major order: `offset` is the run's first element in
/// the array, `run` its length.
#[inline]
fn for_runs((dims, ranges): Box4, mut visit: impl FnMut(usize, usize)) {
    let s2 = dims[3];
    let s1 = s2 * dims[2];
    let s0 = s1 * dims[1];
    let run = ranges[3].1 - ranges[3].0;
    for i in ranges[0].0..ranges[0].1 {
        for j in ranges[1].0..ranges[1].1 {
            for k in ranges[2].0..ranges[2].1 {
                visit(i * s0 + j * s1 + k * s2 + ranges[3].0, run);
            }
        }
    }
}

/// The sub-tensor `ranges` of `t` (one `(start, end)` per axis, checked by the caller).
pub(crate) fn shrink<T: Clone>(t: &Tensor<T>, ranges: &[(usize, usize)]) -> Option<Tensor<T>> {
    if !t.is_inline() || ranges.len() > INLINE_AXES {
        return None;
    }
    let src = t.as_slice()?;
    if let [(start, end)] = *ranges {
        // A vector's part (`u[0..1]` of a state): one slice.
        return Some(Tensor::inline(
            src[start..end].iter().cloned().collect(),
            &[end - start],
        ));
    }
    let shape: ArrayVec<usize, INLINE_AXES> = ranges.iter().map(|&(s, e)| e - s).collect();
    if !fits_inline(&shape, shape.iter().product()) {
        return None;
    }
    let mut out = ArrayVec::new();
    for_runs(box4(t.shape(), |k| ranges[k])?, |at, run| {
        out.extend(src[at..at + run].iter().cloned());
    });
    Some(Tensor::inline(out, &shape))
}

/// `t` with `ranges[i].0` elements of `fill` before and `ranges[i].1` after it along axis `i`.
pub(crate) fn pad<T: Clone>(
    t: &Tensor<T>,
    ranges: &[(usize, usize)],
    fill: &T,
) -> Option<Tensor<T>> {
    let shape = t.shape();
    if shape.len() > INLINE_AXES {
        return None;
    }
    let padded: ArrayVec<usize, INLINE_AXES> = shape
        .iter()
        .zip(ranges)
        .map(|(&d, &(before, after))| before.checked_add(d)?.checked_add(after))
        .collect::<Option<_>>()?;
    let len = padded.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
    if !fits_inline(&padded, len) {
        return None;
    }
    let src = t.as_slice()?;
    let mut out: ArrayVec<T, INLINE> = (0..len).map(|_| fill.clone()).collect();
    let mut read = 0;
    for_runs(
        box4(&padded, |k| (ranges[k].0, ranges[k].0 + shape[k]))?,
        |at, run| {
            out[at..at + run].clone_from_slice(&src[read..read + run]);
            read += run;
        },
    );
    Some(Tensor::inline(out, &padded))
}

/// The element `index` of axis `axis` of `t`, with that axis removed.
pub(crate) fn index_axis<T: Clone>(t: &Tensor<T>, axis: usize, index: usize) -> Option<Tensor<T>> {
    if !t.is_inline() {
        return None;
    }
    let mut shape: ArrayVec<usize, INLINE_AXES> = t.shape().iter().copied().collect();
    let one = shrink(t, &range_at(t.shape(), axis, index)?)?;
    shape.remove(axis);
    relabel(&one, &shape)
}

/// Every axis's whole range, and `index..index + 1` at `axis`.
fn range_at(
    shape: &[usize],
    axis: usize,
    index: usize,
) -> Option<ArrayVec<(usize, usize), INLINE_AXES>> {
    if shape.len() > INLINE_AXES {
        return None;
    }
    let mut ranges: ArrayVec<(usize, usize), INLINE_AXES> = shape.iter().map(|&d| (0, d)).collect();
    *ranges.get_mut(axis)? = (index, index + 1);
    Some(ranges)
}

/// `t`'s row-major elements under another shape of as many elements (`squeeze`,
/// `expand_dims`, `reshape`).
pub(crate) fn relabel<T: Clone>(t: &Tensor<T>, shape: &[usize]) -> Option<Tensor<T>> {
    if !t.is_inline() || !fits_inline(shape, t.len()) {
        return None;
    }
    Some(Tensor::inline(
        t.as_slice()?.iter().cloned().collect(),
        shape,
    ))
}

/// `t` with a length-1 axis inserted at `axis` (`expand_dims`).
pub(crate) fn insert_axis<T: Clone>(t: &Tensor<T>, axis: usize) -> Option<Tensor<T>> {
    if !t.is_inline() || t.ndim() >= INLINE_AXES {
        return None;
    }
    let mut shape: ArrayVec<usize, INLINE_AXES> = t.shape().iter().copied().collect();
    shape.insert(axis, 1);
    relabel(t, &shape)
}

/// `t` without its length-1 axis `axis` (`squeeze`).
pub(crate) fn remove_axis<T: Clone>(t: &Tensor<T>, axis: usize) -> Option<Tensor<T>> {
    if !t.is_inline() {
        return None;
    }
    let mut shape: ArrayVec<usize, INLINE_AXES> = t.shape().iter().copied().collect();
    shape.remove(axis);
    relabel(t, &shape)
}

/// The tensors (all of one shape, checked by the caller) stacked along a new axis `axis`.
pub(crate) fn stack<T: Clone>(tensors: &[&Tensor<T>], axis: usize) -> Option<Tensor<T>> {
    let first = tensors.first()?;
    if tensors.len() > INLINE {
        return None;
    }
    let mut shape: ArrayVec<usize, INLINE_AXES> = ArrayVec::new();
    shape.try_extend_from_slice(first.shape()).ok()?;
    shape.try_insert(axis, tensors.len()).ok()?;
    if !fits_inline(&shape, first.len().checked_mul(tensors.len())?) {
        return None;
    }
    let slices: ArrayVec<&[T], INLINE> = tensors
        .iter()
        .map(|t| t.as_slice())
        .collect::<Option<_>>()?;
    // Each tensor contributes `inner` elements in turn, `outer` times.
    let inner: usize = first.shape()[axis..].iter().product();
    let outer: usize = first.shape()[..axis].iter().product();
    let mut out = ArrayVec::new();
    for o in 0..outer {
        for s in &slices {
            out.extend(s[o * inner..(o + 1) * inner].iter().cloned());
        }
    }
    Some(Tensor::inline(out, &shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::combine::stack as stack_op;

    /// The shapes of at most [`INLINE`] elements and [`INLINE_AXES`] axes, empty ones included.
    const SHAPES: [&[usize]; 9] = [
        &[],
        &[1],
        &[4],
        &[2, 2],
        &[1, 3],
        &[2, 1, 2],
        &[1, 2, 1, 2],
        &[0],
        &[2, 0, 1],
    ];

    /// The same values held inline and in shared storage (the general paths).
    fn both(shape: &[usize]) -> (Tensor<f64>, Tensor<f64>) {
        let n = shape.iter().product();
        let data: Vec<f64> = (0..n).map(|i| i as f64 * 1.5 - 2.0).collect();
        let inline = Tensor::from_parts(data.clone(), shape);
        let shared = Tensor::from_array(ndarray::ArrayD::from_shape_vec(shape, data).unwrap());
        assert!(inline.is_inline() && !shared.is_inline());
        (inline, shared)
    }

    #[track_caller]
    fn same(got: &Tensor<f64>, want: &Tensor<f64>, what: &str) {
        assert!(got.is_inline(), "{what}: not held inline");
        assert_eq!(got.shape(), want.shape(), "{what}");
        assert_eq!(got.to_vec(), want.to_vec(), "{what}");
    }

    /// Every `(start, end)` box of `shape`, up to a few hundred.
    fn boxes(shape: &[usize]) -> Vec<Vec<(usize, usize)>> {
        let mut all = vec![Vec::new()];
        for &d in shape {
            let ranges: Vec<(usize, usize)> =
                (0..=d).flat_map(|s| (s..=d).map(move |e| (s, e))).collect();
            all = all
                .into_iter()
                .flat_map(|b| {
                    ranges.iter().map(move |&r| {
                        let mut b = b.clone();
                        b.push(r);
                        b
                    })
                })
                .collect();
        }
        all
    }

    #[test]
    fn shrink_and_pad_give_the_general_paths_values() {
        for shape in SHAPES {
            let (inline, shared) = both(shape);
            for b in boxes(shape) {
                let what = format!("shrink {shape:?} {b:?}");
                same(&inline.shrink(&b), &shared.shrink(&b), &what);
                // Pads that keep the result small: the box's start before, its length after.
                let pads: Vec<(usize, usize)> =
                    b.iter().map(|&(s, e)| (s % 2, (e - s) % 2)).collect();
                // By ndarray: `pad` of a row-major tensor takes the path under test.
                let padded: Vec<usize> = shape
                    .iter()
                    .zip(&pads)
                    .map(|(&d, &(a, b))| a + d + b)
                    .collect();
                let mut want = ndarray::ArrayD::from_elem(padded, 9.0);
                want.slice_each_axis_mut(|ad| {
                    let (i, a) = (ad.axis.index(), pads[ad.axis.index()].0);
                    ndarray::Slice::from(a..a + shape[i])
                })
                .assign(&shared.view());
                let want = Tensor::from_array(want);
                if want.len() <= INLINE {
                    same(
                        &inline.pad(&pads, 9.0),
                        &want,
                        &format!("pad {shape:?} {pads:?}"),
                    );
                }
            }
        }
    }

    #[test]
    fn axis_changes_and_stacks_give_the_general_paths_values() {
        for shape in SHAPES {
            let (inline, shared) = both(shape);
            for axis in 0..=shape.len() {
                if shape.len() < INLINE_AXES {
                    let what = format!("expand_dims {shape:?} {axis}");
                    same(
                        &inline.expand_dims(axis as isize),
                        &shared.expand_dims(axis as isize),
                        &what,
                    );
                }
                if axis < shape.len() && shape[axis] == 1 {
                    let what = format!("squeeze {shape:?} {axis}");
                    same(
                        &inline.squeeze(axis as isize),
                        &shared.squeeze(axis as isize),
                        &what,
                    );
                }
                for index in 0..shape.get(axis).copied().unwrap_or(0) {
                    let got = index_axis(&inline, axis, index).expect("inline");
                    let want = shared
                        .to_shared()
                        .index_axis_move(ndarray::Axis(axis), index);
                    same(
                        &got,
                        &Tensor::from_shared(want),
                        &format!("index {shape:?} {axis}"),
                    );
                }
                let n = shape.iter().product::<usize>();
                if 2 * n <= INLINE && shape.len() < INLINE_AXES {
                    let other = inline.map(|v| -v);
                    let got = stack_op(&[&inline, &other], axis as isize);
                    // By ndarray: `stack` of row-major tensors takes the path under test.
                    let (a, b) = (shared.view(), other.view());
                    let want =
                        Tensor::from_array(ndarray::stack(ndarray::Axis(axis), &[a, b]).unwrap());
                    same(&got, &want, &format!("stack {shape:?} {axis}"));
                }
            }
            let flat = [shape.iter().product::<usize>()];
            same(
                &inline.reshape(&flat),
                &shared.reshape(&flat),
                &format!("reshape {shape:?}"),
            );
        }
    }
}
