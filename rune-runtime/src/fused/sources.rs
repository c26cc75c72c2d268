//! Where a region's inputs come from: each input as a [`Source`] read a block at a time
//! (a slice, a splat, a repeated row or tile), and the fast paths of inputs of a few elements.

use super::*;
use crate::broadcast::{broadcast_shapes, broadcast_view, run_folding, same_shape};
use crate::element::operand::OperandRef;
use crate::element::Element;
use crate::error::ShapeError;
use crate::summation::SUM_BLOCK;
use crate::tensor::{fits_inline, Tensor};

/// Where a block's elements of one input come from.
pub(super) enum Source<'a, T> {
    /// A scalar, or a tensor of one element.
    Splat(T),
    /// Data of the region's shape, in row-major order.
    Slice(&'a [T]),
    /// Data repeated along the region's leading axes, in row-major order.
    Cycle(&'a [T]),
    /// Data broadcast along a run of the region's middle axes ([`Tile`]), read in place.
    /// Boxed: the arrays of sources that every region moves stay a few words an input.
    Tile(Box<Tile<'a, T>>),
    /// A copy of a tensor broadcast to the region's shape.
    Owned(Vec<T>),
    /// A tensor of the region's shape padded along its first axis, not written out
    /// ([`Tensor::padded_parts`]): `data` after `before` elements of `fill`, and `fill` after.
    Padded {
        data: &'a [T],
        before: usize,
        fill: T,
    },
}

/// A tensor in row-major order broadcast along one run of consecutive axes of the region: the
/// region's shape folds to `[a, r, c]` and the tensor's to `[a, 1, c]`, so that element
/// `(i, j, k)` of the region is element `i * c + k` of the data. `[512, 1, 3]` against
/// `[512, 512, 3]` is a row of three repeated 512 times per body (`c = 3`); a reduction's
/// cotangent `[n, 1]` spread over lanes `[n, 3]` is each element three times (`c = 1`); a bias
/// is `a = 1` and a tensor of the region's shape `r = 1`, though those are read as
/// [`Source::Cycle`] and [`Source::Slice`].
///
/// A block of a short row (`c` below [`SHORT_ROW`]) is mostly the row over and over, which
/// would take a copy of a few elements at a time; when the region repeats each row enough for
/// it to pay (`r * c` at least [`TILE_REUSE`] times a tile's length), each row is laid out once
/// repeated over a tile of `SUM_BLOCK + c` elements (`tiles`), and a block within one row is
/// one copy from its tile.
pub(super) struct Tile<'a, T> {
    pub(super) data: &'a [T],
    pub(super) r: usize,
    pub(super) c: usize,
    /// Row `i` repeated from its start over `tile` elements, for each row, or empty.
    pub(super) tiles: Vec<T>,
    pub(super) tile: usize,
}

/// Rows shorter than this are repeated by [`Tile`]'s tiles or element by element, not copied
/// run by run.
pub(super) const SHORT_ROW: usize = 16;

/// How many times the region must read a short row's tile for [`Tile`] to lay the tiles out.
pub(super) const TILE_REUSE: usize = 4;

impl<'a, T: Copy> Tile<'a, T> {
    pub(super) fn new(data: &'a [T], r: usize, c: usize) -> Self {
        let tile = SUM_BLOCK + c;
        let rows = data.len() / c;
        let tiles = if c < SHORT_ROW && r * c >= TILE_REUSE * tile {
            let mut tiles = Vec::with_capacity(rows * tile);
            for row in data.chunks_exact(c) {
                tiles.extend(row.iter().cycle().take(tile));
            }
            tiles
        } else {
            Vec::new()
        };
        Tile {
            data,
            r,
            c,
            tiles,
            tile,
        }
    }

    /// Fills `dst` with the region's elements from `start` on.
    #[inline(always)]
    pub(super) fn fill(&self, start: usize, dst: &mut [T]) {
        let (c, period) = (self.c, self.r * self.c);
        let (mut i, mut at) = (start / period, start % period);
        if c == 1 && self.r < SHORT_ROW {
            // Each element a few times over (a cotangent spread over short lanes).
            let mut v = self.data[i];
            for d in dst {
                *d = v;
                at += 1;
                if at == period {
                    at = 0;
                    i += 1;
                    v = *self.data.get(i).unwrap_or(&v);
                }
            }
            return;
        }
        let mut filled = 0;
        while filled < dst.len() {
            let n = (period - at).min(dst.len() - filled);
            let out = &mut dst[filled..filled + n];
            let k = at % c;
            if !self.tiles.is_empty() {
                // `n` is at most a block, `k + n <= c + SUM_BLOCK`.
                let t = &self.tiles[i * self.tile..(i + 1) * self.tile];
                out.copy_from_slice(&t[k..k + n]);
            } else {
                cycle_row(&self.data[i * c..(i + 1) * c], k, out);
            }
            filled += n;
            i += 1;
            at = 0;
        }
    }
}

/// Fills `dst` with `row` over and over, from its element `k` on.
#[inline(always)]
pub(super) fn cycle_row<T: Copy>(row: &[T], mut k: usize, dst: &mut [T]) {
    if row.len() == 1 {
        dst.fill(row[0]);
    } else if row.len() < SHORT_ROW {
        // One period from element `k`, then the filled part copied after itself: its length
        // stays a multiple of the row's, so each copy continues the cycle.
        let c = row.len();
        let head = (c - k).min(dst.len());
        dst[..head].copy_from_slice(&row[k..k + head]);
        let tail = k.min(dst.len() - head);
        dst[head..head + tail].copy_from_slice(&row[..tail]);
        let mut filled = head + tail;
        while filled < dst.len() {
            let n = filled.min(dst.len() - filled);
            dst.copy_within(..n, filled);
            filled += n;
        }
    } else {
        let mut filled = 0;
        while filled < dst.len() {
            let n = (row.len() - k).min(dst.len() - filled);
            dst[filled..filled + n].copy_from_slice(&row[k..k + n]);
            filled += n;
            k = 0;
        }
    }
}

impl<T: Copy> Source<'_, T> {
    /// Element `e` of the region, read without blocks (a region held inline).
    #[inline(always)]
    pub(super) fn at(&self, e: usize) -> T {
        match self {
            Source::Splat(v) => *v,
            Source::Slice(s) => s[e],
            Source::Owned(s) => s[e],
            Source::Cycle(s) => s[e % s.len()],
            // Element `(i, j, k)` of the folded region `[a, r, c]` is `i * c + k` of the data.
            Source::Tile(t) => t.data[e / (t.r * t.c) * t.c + e % t.c],
            Source::Padded { data, before, fill } => match e.checked_sub(*before) {
                Some(i) if i < data.len() => data[i],
                _ => *fill,
            },
        }
    }

    pub(super) fn fill(&self, start: usize, dst: &mut [T]) {
        match self {
            Source::Splat(v) => dst.fill(*v),
            Source::Slice(s) => dst.copy_from_slice(&s[start..start + dst.len()]),
            Source::Owned(s) => dst.copy_from_slice(&s[start..start + dst.len()]),
            Source::Tile(t) => t.fill(start, dst),
            Source::Padded { data, before, fill } => {
                // The fill before the data, the data, the fill after it.
                let len = dst.len();
                let head = before.saturating_sub(start).min(len);
                dst[..head].fill(*fill);
                if head < len {
                    // `start + head` is at or past `before` here.
                    let from = (start + head - before).min(data.len());
                    let body = (data.len() - from).min(len - head);
                    dst[head..head + body].copy_from_slice(&data[from..from + body]);
                    dst[head + body..].fill(*fill);
                }
            }
            Source::Cycle(s) => {
                let mut at = start % s.len();
                let mut filled = 0;
                while filled < dst.len() {
                    let n = (s.len() - at).min(dst.len() - filled);
                    dst[filled..filled + n].copy_from_slice(&s[at..at + n]);
                    filled += n;
                    at = 0;
                }
            }
        }
    }
}

/// Element `e` of each source, read without blocks (a region held inline). A loop, not
/// `array::map`, which the compiler leaves a call in each element's iteration.
#[inline(always)]
pub(super) fn column_at<T: Element, const N: usize>(
    sources: &[Source<'_, T>; N],
    e: usize,
) -> [T; N] {
    let mut x = [T::zero(); N];
    for (x, s) in x.iter_mut().zip(sources) {
        *x = s.at(e);
    }
    x
}

/// When every input is a scalar or a row-major tensor, the tensors all of one shape of at most
/// [`INLINE`] elements (a result held inline): that shape and each input's elements (a
/// scalar's one). A region of a few elements is then read by index, with no sources worked
/// out.
#[inline(always)]
pub(super) fn inline_inputs<'a, T: Element, const N: usize>(
    inputs: &'a [OperandRef<'a, T>; N],
) -> Option<(&'a [usize], [&'a [T]; N])> {
    let mut shape: Option<&'a [usize]> = None;
    let mut data: [&'a [T]; N] = [&[]; N];
    for (d, input) in data.iter_mut().zip(inputs) {
        *d = match input {
            OperandRef::Scalar(v) => std::slice::from_ref(v),
            OperandRef::Tensor(t) => {
                match shape {
                    None if fits_inline(t.shape(), t.len()) => shape = Some(t.shape()),
                    Some(shape) if shape == t.shape() => {}
                    _ => return None,
                }
                t.as_slice()?
            }
        };
    }
    Some((shape?, data))
}

/// [`inline_inputs`] for a backward pass: the inputs given by their shape alone of that shape
/// too (read as zeros, with no elements), and the cotangent row-major in that shape.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn inline_vjp_inputs<'a, T: Element, const N: usize>(
    inputs: &'a [FusedInput<'a, T>; N],
    g: &'a Tensor<T>,
) -> Option<(&'a [usize], [&'a [T]; N], &'a [T])> {
    let shape = g.shape();
    if !fits_inline(shape, g.len()) {
        return None;
    }
    let gs = g.as_slice()?;
    let mut data: [&'a [T]; N] = [&[]; N];
    for (d, input) in data.iter_mut().zip(inputs) {
        *d = match input {
            FusedInput::Shape(s) if *s == shape => &[],
            FusedInput::Shape(_) => return None,
            FusedInput::Value(OperandRef::Scalar(v)) => std::slice::from_ref(v),
            FusedInput::Value(OperandRef::Tensor(t)) if t.shape() == shape => t.as_slice()?,
            FusedInput::Value(OperandRef::Tensor(_)) => return None,
        };
    }
    Some((shape, data, gs))
}

/// Element `e` of each of [`inline_inputs`]' inputs (a scalar's at every index, zero for an
/// input given by its shape alone).
#[inline(always)]
pub(super) fn inline_column<T: Element, const N: usize>(data: &[&[T]; N], e: usize) -> [T; N] {
    let mut x = [T::zero(); N];
    for (x, d) in x.iter_mut().zip(data) {
        *x = match d.len() {
            0 => T::zero(),
            1 => d[0],
            _ => d[e],
        };
    }
    x
}

/// The region's shape: the broadcast of its tensor inputs' shapes (`None` for a scalar). On a
/// mismatch, the error of the first op whose operands do not broadcast, naming it and their
/// shapes.
pub(super) fn region_shape(
    shapes: &[Option<&[usize]>],
    ops: FusedOps,
) -> Result<Vec<usize>, ShapeError> {
    let mut shape: Option<Vec<usize>> = None;
    for s in shapes.iter().flatten() {
        shape = Some(match shape {
            None => s.to_vec(),
            // Most operands of a region have its shape: no new shape to build.
            Some(r) if r == *s => r,
            Some(r) => match broadcast_shapes("fused", &r, s) {
                Ok(r) => r,
                Err(_) => return Err(locate(shapes, ops)),
            },
        });
    }
    Ok(shape.unwrap_or_default())
}

/// The error of the op that fails to broadcast, found by following the shapes through the ops.
pub(super) fn locate(inputs: &[Option<&[usize]>], ops: FusedOps) -> ShapeError {
    // `None` is a scalar.
    let mut shapes: Vec<Option<Vec<usize>>> =
        inputs.iter().map(|s| s.map(<[usize]>::to_vec)).collect();
    for op in ops.split(';') {
        let mut parts = op.split(' ');
        let name = parts.next().unwrap_or("fused");
        // Each operand's shape; a literal (`_`) is a scalar.
        let operands: Vec<Vec<usize>> = parts
            .filter_map(|i| i.parse::<usize>().ok())
            .filter_map(|i| shapes.get(i).cloned().flatten())
            .collect();
        let mut shape: Option<Vec<usize>> = None;
        for o in operands {
            shape = Some(match shape {
                Some(a) => match broadcast_shapes(op_name(name), &a, &o) {
                    Ok(s) => s,
                    Err(e) => return e,
                },
                None => o,
            });
        }
        shapes.push(shape);
    }
    ShapeError::new("fused", "the inputs' shapes do not broadcast".to_string())
}

/// The registry's name of an op (`ShapeError` takes a `'static` name).
pub(super) fn op_name(name: &str) -> &'static str {
    rune_ops::all()
        .map(|op| op.name)
        .find(|n| *n == name)
        .unwrap_or("fused")
}

pub(super) fn operand_shape<'a, T>(o: &OperandRef<'a, T>) -> Option<&'a [usize]> {
    match o {
        OperandRef::Scalar(_) => None,
        OperandRef::Tensor(t) => Some(t.shape()),
    }
}

/// A tensor's elements as a source for a region of `shape`.
pub(super) fn source<'a, T: Element>(
    op: &'static str,
    t: &'a Tensor<T>,
    shape: &[usize],
) -> Result<Source<'a, T>, ShapeError> {
    if same_shape(t.shape(), shape) {
        if let Some(source) = padded_source(t) {
            return Ok(source);
        }
    }
    if t.len() == 1 && shape.iter().product::<usize>() != 1 {
        let view = broadcast_view(op, t, shape)?;
        return Ok(Source::Splat(*view.iter().next().expect("one element")));
    }
    if let Some(s) = t.as_slice() {
        if same_shape(t.shape(), shape) {
            return Ok(Source::Slice(s));
        }
        // Broadcast along leading axes only (a bias `[n]` or `[1, n]` against `[batch, n]`):
        // the region's elements are the data over and over.
        let lead = shape.len() - t.ndim().min(shape.len());
        let leading_ones = t.shape().iter().take_while(|&&d| d == 1).count();
        let rest = &t.shape()[leading_ones..];
        if t.ndim() <= shape.len()
            && !s.is_empty()
            && same_shape(rest, &shape[lead + leading_ones..])
        {
            return Ok(Source::Cycle(s));
        }
        if let Some((r, c)) = run_folding(t.shape(), shape) {
            if !s.is_empty() && c > 0 && r > 0 {
                return Ok(Source::Tile(Box::new(Tile::new(s, r, c))));
            }
        }
    }
    // A strided tensor of the region's shape (a layer's weights cut from a packed matrix, read
    // again at every step of a loop; a transpose): copied out a row at a time, which costs
    // less to set up than a copy through dynamic-rank views, and much less per element.
    if same_shape(t.shape(), shape) {
        return Ok(Source::Owned(crate::copy::row_major_vec(t.view())));
    }
    // Any other layout or broadcast: one strided copy into row-major order.
    let view = broadcast_view(op, t, shape)?;
    let mut copy = ndarray::ArrayD::from_elem(ndarray::IxDyn(shape), T::zero());
    copy.assign(&view);
    let (data, _) = copy.into_raw_vec_and_offset();
    Ok(Source::Owned(data))
}

/// A padded tensor whose elements are not written out, read in place.
#[inline]
pub(super) fn padded_source<T: Element>(t: &Tensor<T>) -> Option<Source<'_, T>> {
    let (data, before, &fill) = t.padded_parts()?;
    Some(Source::Padded { data, before, fill })
}

/// A tensor of the region's shape in row-major order, read in place: its data, or a padded
/// tensor's input and fill.
#[inline]
pub(super) fn flat_source<T: Element>(t: &Tensor<T>) -> Option<Source<'_, T>> {
    padded_source(t).or_else(|| t.as_slice().map(Source::Slice))
}

pub(super) fn operand_source<'a, T: Element>(
    input: &OperandRef<'a, T>,
    shape: &[usize],
) -> Result<Source<'a, T>, ShapeError> {
    match *input {
        OperandRef::Scalar(v) => Ok(Source::Splat(v)),
        OperandRef::Tensor(t) => source("fused", t, shape),
    }
}
