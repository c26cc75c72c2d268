//! Fused elementwise regions: several elementwise ops evaluated in one pass over the elements,
//! with no tensor for the values between them.
//!
//! `#[differentiable]` groups a tree of elementwise ops (`+ - * /`, unary minus, the unary
//! functions of [`crate::scalar`], and the selections, powers, smooth functions of two tensors,
//! `where_cond` and comparisons by their scalar forms in `crate::generated::elementwise`) whose
//! intermediate values nothing else reads, and writes the region's scalar expression as a
//! closure over the elements of its inputs. A mask that a region selects by is one of its inputs,
//! as ones and zeros ([`fused_mask`]). These functions run
//! such a closure over the inputs broadcast to the region's shape:
//!
//! - [`fused_map`]: the value.
//! - [`fused_vjp`]: the cotangent of each differentiated input, from the output's cotangent; the
//!   closure recomputes the region's intermediates from the inputs, so the forward pass saves
//!   none of them. A cotangent is summed over the axes its input was broadcast along.
//! - [`fused_jvp`]: the value and its tangent in one pass.
//! - [`fused_reduce`], [`fused_reduce_jvp`], [`fused_reduce_vjp`]: a full `sum` or `mean` of
//!   the region, in the same pass as its values, and in reverse mode its inputs' partial
//!   derivatives in that pass too.
//! - [`fused_reduce_axes`], [`fused_reduce_axes_jvp`], [`fused_reduce_axes_vjp`]: `sum_axes` or
//!   `mean_axes` of the region, in the same pass when the axes are the last ones; the backward
//!   pass spreads the cotangent over the reduced axes and recomputes the region. Lanes of at
//!   most a block are evaluated a whole number of lanes at a time, so that each block's lanes
//!   are summed where they lie (`Lanes::push_whole`), the short ones by an unrolled loop.
//!
//! The inputs are tensors or scalars ([`OperandRef`]). The region's shape is the broadcast of
//! its tensor inputs' shapes, which is the shape of its result: every op of the tree broadcasts
//! the shapes of the inputs below it. The elements are processed in blocks of [`BLOCK`] (of 16
//! for regions of at most 16 elements), each input's block copied into a local array: an input
//! of the region's shape is read from its data, one broadcast along leading axes only (a bias)
//! is read over and over in place, one in row-major order broadcast along any one run of
//! consecutive axes (`[n, 1, 3]` against `[n, n, 3]`, a reduction's cotangent `[n, 1]` spread
//! over its lanes) is read in place by row (`Tile`), and any other is copied once,
//! broadcast, with a strided assign. When every input has the region's shape in row-major order, the broadcasting is not
//! worked out at all, and the cotangents need no reduction. The loops run under
//! [`vectorised`], so that the closure, its scalar forms and the math kernels of
//! [`crate::vmath`] inlined into them are compiled for the CPU's vector instructions. Each
//! block is evaluated with the fast kernels ([`Kernels`], which the closures take) and again
//! with the full-range ones only when an argument was out of the fast ones' range
//! ([`fast_then_exact`]); the two agree in range, so a block's results are the same either way.
//!
//! Debug builds hand the loops the region's closure as a `&dyn Fn` instead: each entry point
//! is then a thin wrapper per region around loops generic over the element type and the sizes
//! only, which every region of the same signature shares, so that a crate of many
//! differentiated functions compiles the loops a few times rather than once per region. The
//! loops are the same code in both builds.

use std::borrow::Cow;
use std::ops::Range;

use arrayvec::ArrayVec;

use crate::broadcast::{broadcast_shapes, broadcast_view, run_folding, same_shape, sum_to_shape};
use crate::element::operand::{OperandOf, OperandRef};
use crate::element::{strong_mul, Element};
use crate::error::{OrPanic, ShapeError};
use crate::ops::reduce::{checked_axes, count, expand_back, reduced_shape};
use crate::summation::{block_sum, combine_block_sums, SUM_BLOCK};
use crate::tensor::{fits_inline, Tensor, INLINE};
use crate::vmath::{fast_then_exact, vectorised, Kernels};

/// The number of elements a fused loop processes at a time.
pub const BLOCK: usize = 64;

/// Regions of at most this many elements run in blocks of this size: whole blocks of
/// [`BLOCK`] would compute four times the elements there are on the 16-element tensors of a
/// small model.
const SMALL: usize = 16;

/// The ops of a fused region, for the error of an input shape that does not broadcast: one
/// `name a b ..` each, separated by `;`, where `a b ..` are the values the op reads (the same
/// twice for a one-input op), numbered inputs first (`0..N`) and then the region's ops in
/// order, and `_` is a literal. Read only on that error's path.
pub type FusedOps = &'static str;

/// Where a block's elements of one input come from.
enum Source<'a, T> {
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
struct Tile<'a, T> {
    data: &'a [T],
    r: usize,
    c: usize,
    /// Row `i` repeated from its start over `tile` elements, for each row, or empty.
    tiles: Vec<T>,
    tile: usize,
}

/// Rows shorter than this are repeated by [`Tile`]'s tiles or element by element, not copied
/// run by run.
const SHORT_ROW: usize = 16;

/// How many times the region must read a short row's tile for [`Tile`] to lay the tiles out.
const TILE_REUSE: usize = 4;

impl<'a, T: Copy> Tile<'a, T> {
    fn new(data: &'a [T], r: usize, c: usize) -> Self {
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
    fn fill(&self, start: usize, dst: &mut [T]) {
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
fn cycle_row<T: Copy>(row: &[T], mut k: usize, dst: &mut [T]) {
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
    fn at(&self, e: usize) -> T {
        match self {
            Source::Splat(v) => *v,
            Source::Slice(s) => s[e],
            Source::Owned(s) => s[e],
            Source::Cycle(s) => s[e % s.len()],
            // Element `(i, j, k)` of the folded region `[a, r, c]` is `i * c + k` of the data.
            Source::Tile(t) => t.data[e / (t.r * t.c) * t.c + e % t.c],
        }
    }

    fn fill(&self, start: usize, dst: &mut [T]) {
        match self {
            Source::Splat(v) => dst.fill(*v),
            Source::Slice(s) => dst.copy_from_slice(&s[start..start + dst.len()]),
            Source::Owned(s) => dst.copy_from_slice(&s[start..start + dst.len()]),
            Source::Tile(t) => t.fill(start, dst),
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
fn column_at<T: Element, const N: usize>(sources: &[Source<'_, T>; N], e: usize) -> [T; N] {
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
fn inline_inputs<'a, T: Element, const N: usize>(
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
fn inline_vjp_inputs<'a, T: Element, const N: usize>(
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
fn inline_column<T: Element, const N: usize>(data: &[&[T]; N], e: usize) -> [T; N] {
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
fn region_shape(shapes: &[Option<&[usize]>], ops: FusedOps) -> Result<Vec<usize>, ShapeError> {
    let mut shape: Option<Vec<usize>> = None;
    for s in shapes.iter().flatten() {
        shape = Some(match shape {
            None => s.to_vec(),
            Some(r) => match broadcast_shapes("fused", &r, s) {
                Ok(r) => r,
                Err(_) => return Err(locate(shapes, ops)),
            },
        });
    }
    Ok(shape.unwrap_or_default())
}

/// The error of the op that fails to broadcast, found by following the shapes through the ops.
fn locate(inputs: &[Option<&[usize]>], ops: FusedOps) -> ShapeError {
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
fn op_name(name: &str) -> &'static str {
    rune_ops::all()
        .map(|op| op.name)
        .find(|n| *n == name)
        .unwrap_or("fused")
}

fn operand_shape<'a, T>(o: &OperandRef<'a, T>) -> Option<&'a [usize]> {
    match o {
        OperandRef::Scalar(_) => None,
        OperandRef::Tensor(t) => Some(t.shape()),
    }
}

/// A tensor's elements as a source for a region of `shape`.
fn source<'a, T: Element>(
    op: &'static str,
    t: &'a Tensor<T>,
    shape: &[usize],
) -> Result<Source<'a, T>, ShapeError> {
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
    // Any other layout or broadcast: one strided copy into row-major order.
    let view = broadcast_view(op, t, shape)?;
    let mut copy = ndarray::ArrayD::from_elem(ndarray::IxDyn(shape), T::zero());
    copy.assign(&view);
    let (data, _) = copy.into_raw_vec_and_offset();
    Ok(Source::Owned(data))
}

fn operand_source<'a, T: Element>(
    input: &OperandRef<'a, T>,
    shape: &[usize],
) -> Result<Source<'a, T>, ShapeError> {
    match *input {
        OperandRef::Scalar(v) => Ok(Source::Splat(v)),
        OperandRef::Tensor(t) => source("fused", t, shape),
    }
}

/// Calls `body(n, xs, ys)` for each block of `B` of the elements of `range`, in order, `xs[k][..n]`
/// holding the block's `n` elements of source `xs_from[k]`, and `ys` those of `ys_from` (the
/// cotangent, or the tangents). The callers write each block's results to their outputs
/// ([`Out`]), so that no output is filled with zeros first.
///
/// The blocks are local arrays of a constant size. The callers evaluate a region over whole
/// blocks (the elements past `n` of the last one are left from the block before, or zero:
/// their results are not written), so their loops have a constant trip count, no bounds checks
/// and no remainder, and LLVM vectorises them completely.
#[inline(always)]
fn for_blocks<T: Element, const N: usize, const M: usize, const B: usize>(
    range: Range<usize>,
    xs_from: &[Source<'_, T>; N],
    ys_from: &[Source<'_, T>; M],
    body: impl FnMut(usize, &[[T; B]; N], &[[T; B]; M]),
) {
    for_steps(range, B, xs_from, ys_from, body);
}

/// [`for_blocks`] with `step` (at most `B`) elements a block: the rest of each block is left
/// as the block before had it. A reduction over short lanes steps by whole lanes.
#[inline(always)]
fn for_steps<T: Element, const N: usize, const M: usize, const B: usize>(
    range: Range<usize>,
    step: usize,
    xs_from: &[Source<'_, T>; N],
    ys_from: &[Source<'_, T>; M],
    mut body: impl FnMut(usize, &[[T; B]; N], &[[T; B]; M]),
) {
    debug_assert!(step > 0 && step <= B);
    let (mut xs, mut ys) = (splats(xs_from), splats(ys_from));
    let mut start = range.start;
    while start < range.end {
        let n = step.min(range.end - start);
        fill_blocks(&mut xs, xs_from, start, n);
        fill_blocks(&mut ys, ys_from, start, n);
        body(n, &xs, &ys);
        start += n;
    }
}

// The helpers of the loops below are generic over the element type and the sizes only, not
// over a region's closure, so that every region of the same arity shares one copy of each:
// a debug build of many differentiated functions compiles them once.

/// The blocks of `N` sources, a scalar's filled with it and the others' with zeros.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn splats<T: Element, const N: usize, const B: usize>(from: &[Source<'_, T>; N]) -> [[T; B]; N] {
    let mut blocks = [[T::zero(); B]; N];
    for (b, s) in blocks.iter_mut().zip(from) {
        if let Source::Splat(v) = s {
            b.fill(*v);
        }
    }
    blocks
}

/// Fills the first `n` elements of each block with its source's elements from `start` on
/// (a scalar's block is filled once, by [`splats`]).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn fill_blocks<T: Element, const N: usize, const B: usize>(
    blocks: &mut [[T; B]; N],
    from: &[Source<'_, T>; N],
    start: usize,
    n: usize,
) {
    for (b, s) in blocks.iter_mut().zip(from) {
        if !matches!(s, Source::Splat(_)) {
            s.fill(start, &mut b[..n]);
        }
    }
}

/// Element `e` of each of `N` blocks.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn column<T: Element, const N: usize, const B: usize>(blocks: &[[T; B]; N], e: usize) -> [T; N] {
    let mut c = [T::zero(); N];
    for (c, b) in c.iter_mut().zip(blocks) {
        *c = b[e];
    }
    c
}

/// Sets element `e` of each of `K` blocks.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn set_column<T: Element, const K: usize, const B: usize>(
    blocks: &mut [[T; B]; K],
    e: usize,
    values: [T; K],
) {
    for (b, v) in blocks.iter_mut().zip(values) {
        b[e] = v;
    }
}

/// Writes the first `n` elements of each block to its output.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn put_blocks<T: Element, const K: usize, const B: usize>(
    outs: &mut [Out<'_, T>; K],
    blocks: &[[T; B]; K],
    n: usize,
) {
    for (o, b) in outs.iter_mut().zip(blocks) {
        o.put(&b[..n]);
    }
}

/// Appends the sum of the first `n` elements of each block to its list of block sums.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn push_sums<T: Element, const K: usize, const B: usize>(
    sums: &mut [BlockSums<T>; K],
    blocks: &[[T; B]; K],
    n: usize,
) {
    for (s, b) in sums.iter_mut().zip(blocks) {
        s.push(block_sum(&b[..n]));
    }
}

/// Runs `$body` with the const `$b` set to the block size of a loop over `$len` elements:
/// `$small` for a region of at most [`SMALL`] elements, `$big` otherwise. Debug builds take
/// `$big` always, which gives the same results (a loop's values do not depend on its block
/// size, and a region of at most `SMALL` elements is one block either way), with one copy of
/// the loop instead of two.
macro_rules! with_block_size {
    ($len:expr, $small:expr, $big:expr, |$b:ident| $body:expr) => {{
        #[cfg(not(debug_assertions))]
        {
            if $len <= SMALL {
                const $b: usize = $small;
                $body
            } else {
                const $b: usize = $big;
                $body
            }
        }
        #[cfg(debug_assertions)]
        {
            const _: usize = $small;
            const $b: usize = $big;
            $body
        }
    }};
}

/// Where a loop writes one of its outputs: appended to a vector (the whole loop on one
/// thread), into the part of a zeroed vector that one thread's range covers, or added into a
/// [`Sink`] (a cotangent summed over the axes its input was broadcast along as it is made).
enum Out<'a, T> {
    Append(&'a mut Vec<T>),
    #[cfg(feature = "parallel")]
    Write(&'a mut [T]),
    Sink(&'a mut Sink<T>),
}

impl<T: Element> Out<'_, T> {
    /// Writes the next elements.
    #[inline(always)]
    fn put(&mut self, block: &[T]) {
        match self {
            Out::Append(v) => v.extend_from_slice(block),
            Out::Sink(s) => s.add(block),
            #[cfg(feature = "parallel")]
            Out::Write(s) => {
                let (head, tail) = std::mem::take(s).split_at_mut(block.len());
                head.copy_from_slice(block);
                *s = tail;
            }
        }
    }
}

/// Runs a loop over `len` elements that writes `K` outputs of `len` elements and `S` lists of
/// block sums: `run(range, outs, sums)` runs it over `range`. On one thread (see
/// [`crate::parallel`]) it is run once over everything, appending to outputs allocated
/// without zero-fill; split, each range's part runs on the pool, writing into its part of the
/// outputs, and the ranges' block sums are joined in order. Ranges start at multiples of
/// `align`, the loop's block.
fn drive<T: Element, const K: usize, const S: usize>(
    len: usize,
    align: usize,
    run: impl Fn(Range<usize>, [Out<'_, T>; K], &mut [BlockSums<T>; S]) + Sync,
) -> ([Vec<T>; K], [BlockSums<T>; S]) {
    drive_into(len, align, [None; K], run)
}

/// [`drive`], with the outputs that `sinks` gives a folding of summed into a [`Sink`] of it
/// instead of written out: those outputs are the sums, `a * c` elements each. A loop with a
/// sink runs on one thread, so that its sums are the same bits on any number of threads (a
/// sink's memory traffic is a fraction of the outputs' it replaces).
fn drive_into<T: Element, const K: usize, const S: usize>(
    len: usize,
    align: usize,
    sinks: [Option<Folding>; K],
    run: impl Fn(Range<usize>, [Out<'_, T>; K], &mut [BlockSums<T>; S]) + Sync,
) -> ([Vec<T>; K], [BlockSums<T>; S]) {
    #[cfg(feature = "parallel")]
    if sinks.iter().all(Option::is_none) {
        if let Some(ranges) = crate::parallel::split(len, align) {
            return drive_split(len, ranges, run);
        }
    }
    let _ = align;
    let mut outs: [Vec<T>; K] = std::array::from_fn(|k| match sinks[k] {
        Some(_) => Vec::new(),
        None => Vec::with_capacity(len),
    });
    let mut sink_of = sinks.map(|f| f.map(|f| Sink::new(f, 0)));
    let mut sums = sums_for(len);
    run(
        0..len,
        outs_of(outs.each_mut().map(Out::Append), &mut sink_of),
        &mut sums,
    );
    for (out, sink) in outs.iter_mut().zip(sink_of) {
        if let Some(sink) = sink {
            *out = sink.finish();
        }
    }
    (outs, sums)
}

/// `outs`, each replaced by its sink where it has one.
fn outs_of<'a, T, const K: usize>(
    outs: [Out<'a, T>; K],
    sinks: &'a mut [Option<Sink<T>>; K],
) -> [Out<'a, T>; K] {
    let mut sinks = sinks.iter_mut();
    outs.map(|out| match sinks.next().and_then(Option::as_mut) {
        Some(sink) => Out::Sink(sink),
        None => out,
    })
}

/// How a region of shape `[a, r, c]` (folded) is summed over its middle axis into `[a, c]`: the
/// cotangent of an input broadcast along one run of consecutive axes ([`run_folding`]).
#[derive(Clone, Copy, Debug)]
struct Folding {
    a: usize,
    r: usize,
    c: usize,
}

impl Folding {
    /// The folding of the cotangent of an input of shape `t` into a region of `shape` (of
    /// `len` elements, at least one), when `t` is broadcast along one run of its axes.
    fn of(t: &[usize], shape: &[usize], len: usize) -> Option<Folding> {
        let (r, c) = run_folding(t, shape)?;
        (len > 0 && r > 1 && c > 0).then(|| Folding {
            a: len / (r * c),
            r,
            c,
        })
    }
}

/// The sum of a region's elements over the middle axis of its [`Folding`] `[a, r, c]`, added
/// block by block as a loop makes them, so that a cotangent of an input broadcast along some
/// axes is never written out at the region's size. Element `(i, j, k)` goes to `acc[i * c + k]`.
///
/// The elements of one `i` (a stack of `r` rows of `c`) are added into `wide`, a whole number
/// `m` of rows at least a block long, each at its position modulo the width, so that a block
/// is one or two vector adds wherever it starts; `wide` is folded into `acc` (its `m` rows
/// summed) when the stack ends and every [`SUM_BLOCK`] widths, so that no sum runs over more
/// than about `SUM_BLOCK` terms in a row.
struct Sink<T> {
    acc: Vec<T>,
    wide: Vec<T>,
    /// Elements of the region in a stack, `r * c`.
    period: usize,
    c: usize,
    /// The region's element the next add starts at.
    at: usize,
    /// The stack `wide` holds elements of.
    stack: usize,
    /// Elements added into `wide` since it was last folded.
    pending: usize,
}

impl<T: Element> Sink<T> {
    /// A sink for the elements from `start` on.
    fn new(Folding { a, r, c }: Folding, start: usize) -> Self {
        let width = c * BLOCK.div_ceil(c);
        Sink {
            acc: vec![T::zero(); a * c],
            wide: vec![T::zero(); width],
            period: r * c,
            c,
            at: start,
            stack: start / (r * c),
            pending: 0,
        }
    }

    /// Adds the region's next elements: a call a block, out of line, so that the loops that
    /// write their outputs out keep their code as it was.
    #[inline(never)]
    fn add(&mut self, mut values: &[T]) {
        let width = self.wide.len();
        while !values.is_empty() {
            let (stack, within) = (self.at / self.period, self.at % self.period);
            if stack != self.stack {
                self.fold();
                self.stack = stack;
            }
            let n = (self.period - within).min(values.len());
            let (mut p, mut rest) = (within % width, &values[..n]);
            while !rest.is_empty() {
                let m = (width - p).min(rest.len());
                for (w, &v) in self.wide[p..p + m].iter_mut().zip(&rest[..m]) {
                    *w += v;
                }
                rest = &rest[m..];
                p = 0;
            }
            self.pending += n;
            if self.pending >= SUM_BLOCK * width {
                self.fold();
            }
            self.at += n;
            values = &values[n..];
        }
    }

    /// Adds `wide`'s rows into the stack's sums and clears it.
    fn fold(&mut self) {
        if self.pending == 0 {
            return;
        }
        let c = self.c;
        let sums = &mut self.acc[self.stack * c..(self.stack + 1) * c];
        for row in self.wide.chunks_exact(c) {
            for (s, &v) in sums.iter_mut().zip(row) {
                *s += v;
            }
        }
        self.wide.fill(T::zero());
        self.pending = 0;
    }

    /// The sums.
    fn finish(mut self) -> Vec<T> {
        self.fold();
        self.acc
    }
}

/// The sums of `len` elements' blocks: room for one a block.
fn sums_for<T: Copy, const S: usize>(len: usize) -> [BlockSums<T>; S] {
    std::array::from_fn(|_| BlockSums::for_len(len))
}

/// The block sums of a loop, in order. A loop of one block (every region of at most
/// [`SUM_BLOCK`] elements) keeps its one sum inline, without an allocation.
enum BlockSums<T> {
    /// No sum yet, or the first.
    Inline(Option<T>),
    /// The sums of a loop of more than one block.
    Heap(Vec<T>),
}

impl<T: Copy> BlockSums<T> {
    /// Room for the block sums of `len` elements.
    fn for_len(len: usize) -> Self {
        if len <= SUM_BLOCK {
            BlockSums::Inline(None)
        } else {
            BlockSums::Heap(Vec::with_capacity(len / SUM_BLOCK + 1))
        }
    }

    /// Appends the next block's sum.
    #[inline(always)]
    fn push(&mut self, sum: T) {
        match self {
            BlockSums::Inline(slot @ None) => *slot = Some(sum),
            BlockSums::Inline(Some(first)) => {
                let first = *first;
                *self = BlockSums::Heap(vec![first, sum]);
            }
            BlockSums::Heap(sums) => sums.push(sum),
        }
    }

    /// The sums in order.
    fn as_slice(&self) -> &[T] {
        match self {
            BlockSums::Inline(sum) => sum.as_slice(),
            BlockSums::Heap(sums) => sums,
        }
    }
}

/// [`drive`] split into `ranges` on the thread pool.
#[cfg(feature = "parallel")]
fn drive_split<T: Element, const K: usize, const S: usize>(
    len: usize,
    ranges: Vec<Range<usize>>,
    run: impl Fn(Range<usize>, [Out<'_, T>; K], &mut [BlockSums<T>; S]) + Sync,
) -> ([Vec<T>; K], [BlockSums<T>; S]) {
    let mut outs: [Vec<T>; K] = std::array::from_fn(|_| vec![T::zero(); len]);
    // Each range with its part of every output.
    let mut rests: [&mut [T]; K] = outs.each_mut().map(|o| o.as_mut_slice());
    let mut pieces = Vec::with_capacity(ranges.len());
    for range in ranges {
        let parts = rests.each_mut().map(|rest| {
            let (head, tail) = std::mem::take(rest).split_at_mut(range.len());
            *rest = tail;
            head
        });
        pieces.push((range, parts));
    }
    let piece_sums = crate::parallel::map_items(pieces, |(range, parts)| {
        let mut sums = sums_for(range.len());
        run(range, parts.map(Out::Write), &mut sums);
        sums
    });
    let mut sums = sums_for(len);
    for piece in piece_sums {
        for (all, part) in sums.iter_mut().zip(piece) {
            part.as_slice().iter().for_each(|&s| all.push(s));
        }
    }
    (outs, sums)
}

/// When every present input is a scalar or a tensor of one shape in row-major order (at least
/// one tensor), that shape and each input's data as a source (zeros for an absent one): no
/// broadcasting to work out and no copies.
#[allow(clippy::type_complexity)]
fn same_shape_sources<'a, T: Element, const N: usize>(
    inputs: &[Option<OperandRef<'a, T>>; N],
) -> Option<(&'a [usize], [Source<'a, T>; N])> {
    let mut shape: Option<&'a [usize]> = None;
    for input in inputs {
        match input {
            None | Some(OperandRef::Scalar(_)) => {}
            Some(OperandRef::Tensor(t)) => match shape {
                None => shape = Some(t.shape()),
                Some(s) if same_shape(s, t.shape()) => {}
                Some(_) => return None,
            },
        }
    }
    let mut sources: [Source<'a, T>; N] = std::array::from_fn(|_| Source::Splat(T::zero()));
    for (source, input) in sources.iter_mut().zip(inputs) {
        match input {
            Some(OperandRef::Tensor(t)) => *source = Source::Slice(t.as_slice()?),
            Some(OperandRef::Scalar(v)) => *source = Source::Splat(*v),
            None => {}
        }
    }
    Some((shape?, sources))
}

/// The region's shape, each input's shape (`None` for a scalar) and each input's source. An
/// input given by its shape alone stands for zeros: the closures do not read it.
#[allow(clippy::type_complexity)]
fn prepare<'a, T: Element, const N: usize>(
    inputs: &[FusedInput<'a, T>; N],
    ops: FusedOps,
) -> Result<(Vec<usize>, [Option<&'a [usize]>; N], [Source<'a, T>; N]), ShapeError> {
    let shapes = inputs.map(|i| match i {
        FusedInput::Value(v) => operand_shape(&v),
        FusedInput::Shape(s) => Some(s),
    });
    let shape = region_shape(&shapes, ops)?;
    let mut sources: [Source<'a, T>; N] = std::array::from_fn(|_| Source::Splat(T::zero()));
    for (source, input) in sources.iter_mut().zip(inputs) {
        if let FusedInput::Value(v) = input {
            *source = operand_source(v, &shape)?;
        }
    }
    Ok((shape, shapes, sources))
}

/// The region's shape (borrowed from the inputs when they all have it) and its inputs'
/// sources, for a pass that reads every input's value.
#[track_caller]
fn value_sources<'a, T: Element, const N: usize>(
    inputs: &[OperandRef<'a, T>; N],
    ops: FusedOps,
) -> (Cow<'a, [usize]>, [Source<'a, T>; N]) {
    match same_shape_sources(&inputs.map(Some)) {
        Some((shape, sources)) => (Cow::Borrowed(shape), sources),
        None => {
            let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
            (Cow::Owned(shape), sources)
        }
    }
}

// The regions' closures as debug builds pass them to the loops (see the module's
// documentation).

/// `f(x, literals, kernels)`: an element's value.
#[cfg(debug_assertions)]
type ValueFn<'f, T, const N: usize, const L: usize> =
    dyn Fn([T; N], &[T; L], &Kernels) -> T + Sync + 'f;
/// `f(x, literals, kernels, g)`: an element's `K` cotangents.
#[cfg(debug_assertions)]
type CotangentFn<'f, T, const N: usize, const L: usize, const K: usize> =
    dyn Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync + 'f;
/// `f(x, literals, kernels, t)`: an element's value and tangent.
#[cfg(debug_assertions)]
type TangentFn<'f, T, const N: usize, const L: usize, const K: usize> =
    dyn Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync + 'f;
/// `f(x, literals, kernels, seed)`: an element's value and `K` partials.
#[cfg(debug_assertions)]
type PartialFn<'f, T, const N: usize, const L: usize, const K: usize> =
    dyn Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]) + Sync + 'f;

/// The value of a fused region: `f` applied to the elements of the inputs, broadcast.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
pub fn fused_map<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    #[cfg(debug_assertions)]
    let f: &ValueFn<'_, T, N, L> = &f;
    map_region(ops, inputs, literals, f)
}

/// [`fused_map`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn map_region<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    let literals = literals.map(T::from_f64);
    if let Some((shape, data)) = inline_inputs(&inputs) {
        let mut out = ArrayVec::new();
        fast_then_exact(|k| {
            out.clear();
            for e in 0..shape.iter().product() {
                out.push(f(inline_column(&data, e), &literals, k));
            }
        });
        return Tensor::inline(out, shape);
    }
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let len = shape.iter().product();
    if fits_inline(shape, len) {
        let mut out = ArrayVec::new();
        fast_then_exact(|k| {
            out.clear();
            for e in 0..len {
                out.push(f(column_at(&sources, e), &literals, k));
            }
        });
        return Tensor::inline(out, shape);
    }
    let ([out], []) = drive(len, BLOCK, |range, [out], _| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || map_blocks::<T, N, L, B>(range, out, &sources, &literals, &f),
        ))
    });
    Tensor::from_parts(out, shape)
}

/// `fused_map`'s loop, over blocks of `B`.
#[inline(always)]
fn map_blocks<T: Element, const N: usize, const L: usize, const B: usize>(
    range: Range<usize>,
    mut out: Out<'_, T>,
    sources: &[Source<'_, T>; N],
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels) -> T,
) {
    let mut block = [T::zero(); B];
    for_blocks::<T, N, 0, B>(
        range,
        sources,
        &[],
        #[inline(always)]
        |n, x, _| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for (e, b) in block.iter_mut().enumerate() {
                        *b = f(column(x, e), literals, k);
                    }
                },
            );
            out.put(&block[..n]);
        },
    );
}

/// An input of a fused region's backward pass: its value, or its shape alone where the
/// partial derivatives do not read it (the closure then sees zeros for it).
#[derive(Clone, Copy, Debug)]
pub enum FusedInput<'a, T> {
    /// The value.
    Value(OperandRef<'a, T>),
    /// The shape of a tensor whose value the backward pass does not read.
    Shape(&'a [usize]),
}

/// A value as an input of a fused region's backward pass.
#[inline]
pub fn fused_value<T, X: OperandOf<T> + ?Sized>(x: &X) -> FusedInput<'_, T> {
    FusedInput::Value(x.operand_of())
}

/// A shape as an input of a fused region's backward pass.
#[inline]
pub fn fused_shape<T>(shape: &[usize]) -> FusedInput<'_, T> {
    FusedInput::Shape(shape)
}

/// The cotangents of a fused region's inputs (each of its input's shape), from the cotangent
/// `g` of its value: `f(x, literals, g)` gives `K` cotangents element by element, and each
/// `(input, k)` of `targets` says that input's is result `k` (inputs of the same cotangent,
/// such as the operands of `+`, share one).
///
/// # Panics
/// When the inputs' shapes do not broadcast, or `g` does not broadcast to the region's shape.
#[track_caller]
pub fn fused_vjp<T: Element, const N: usize, const L: usize, const K: usize, const M: usize>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
) -> [Tensor<T>; M] {
    #[cfg(debug_assertions)]
    let f: &CotangentFn<'_, T, N, L, K> = &f;
    vjp_region(ops, inputs, literals, targets, g, f)
}

/// [`fused_vjp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn vjp_region<T: Element, const N: usize, const L: usize, const K: usize, const M: usize>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
) -> [Tensor<T>; M] {
    let literals = literals.map(T::from_f64);
    if let Some((shape, data, gs)) = inline_vjp_inputs(&inputs, g) {
        let mut outs: [ArrayVec<T, INLINE>; K] = std::array::from_fn(|_| ArrayVec::new());
        fast_then_exact(|k| {
            outs.iter_mut().for_each(ArrayVec::clear);
            for (e, &g) in gs.iter().enumerate() {
                let x = inline_column(&data, e);
                for (o, d) in outs.iter_mut().zip(f(x, &literals, k, g)) {
                    o.push(d);
                }
            }
        });
        return distribute(
            outs.map(|o| Tensor::inline(o, shape)),
            &targets,
            |i, t| match inputs[i] {
                FusedInput::Value(OperandRef::Scalar(_)) => sum_to_shape(&t, &[]),
                _ => t,
            },
        );
    }
    let values = inputs.map(|i| match i {
        FusedInput::Value(v) => Some(v),
        FusedInput::Shape(_) => None,
    });
    // Every input and the cotangent of one shape, in row-major order, or scalars: nothing to
    // broadcast, and nothing to reduce but a scalar's cotangent.
    let direct = same_shape_sources(&values).and_then(|(shape, sources)| {
        let shaped = |s: &[usize]| same_shape(s, shape);
        let all_shaped = inputs.iter().all(|i| match i {
            FusedInput::Value(_) => true,
            FusedInput::Shape(s) => shaped(s),
        });
        let gs = g.as_slice()?;
        (all_shaped && shaped(g.shape())).then_some((shape, sources, Source::Slice(gs)))
    });
    let (shape, shapes, sources, g_source) = match direct {
        Some((shape, sources, gs)) => (Cow::Borrowed(shape), None, sources, gs),
        None => {
            let (shape, shapes, sources) = prepare(&inputs, ops).or_panic();
            let gs = source("fused", g, &shape).or_panic();
            (Cow::Owned(shape), Some(shapes), sources, gs)
        }
    };
    let shape = &*shape;
    let len = shape.iter().product();
    let outs = if fits_inline(shape, len) {
        let mut outs: [ArrayVec<T, INLINE>; K] = std::array::from_fn(|_| ArrayVec::new());
        fast_then_exact(|k| {
            outs.iter_mut().for_each(ArrayVec::clear);
            for e in 0..len {
                let x = column_at(&sources, e);
                for (o, d) in outs.iter_mut().zip(f(x, &literals, k, g_source.at(e))) {
                    o.push(d);
                }
            }
        });
        outs.map(|o| Tensor::inline(o, shape))
    } else {
        // A result read only by inputs of one shape broadcast along a run of axes is summed to
        // that shape as the loop makes it.
        let sunk: [Option<&[usize]>; K] = match &shapes {
            None => [None; K],
            Some(shapes) => std::array::from_fn(|k| {
                let mut readers = targets.iter().filter(|&&(_, r)| r == k);
                let first = shapes[readers.next()?.0].unwrap_or(&[]);
                readers
                    .all(|&(i, _)| shapes[i].unwrap_or(&[]) == first)
                    .then_some(first)
            }),
        };
        let sinks = sunk.map(|t| t.and_then(|t| Folding::of(t, shape, len)));
        let sources = (&sources, &[g_source]);
        let (outs, []) = drive_into(len, BLOCK, sinks, |range, outs, _| {
            with_block_size!(len, SMALL, BLOCK, |B| vectorised(
                #[inline(always)]
                || vjp_blocks::<T, N, L, K, B>(range, outs, sources, &literals, &f),
            ))
        });
        let mut k = 0;
        outs.map(|o| {
            let out_shape = match (sunk[k], sinks[k]) {
                (Some(t), Some(_)) => t,
                _ => shape,
            };
            k += 1;
            Tensor::from_parts(o, out_shape)
        })
    };
    match shapes {
        // Of the region's shape, but a scalar's: summed to one value.
        None => distribute(outs, &targets, |i, t| match inputs[i] {
            FusedInput::Value(OperandRef::Scalar(_)) => sum_to_shape(&t, &[]),
            _ => t,
        }),
        Some(shapes) => distribute(outs, &targets, |i, t| {
            sum_to_shape(&t, shapes[i].unwrap_or(&[]))
        }),
    }
}

/// The tensor of each target `(input, k)` from the loop's results `outs` (of the region's
/// shape), passed through `finish(input, result k)`. A result read by one target becomes its
/// tensor; one read by several (the operands of `+`) is one tensor they share (a copy when it
/// is held inline).
fn distribute<T: Element, const K: usize, const M: usize>(
    outs: [Tensor<T>; K],
    targets: &[(usize, usize); M],
    mut finish: impl FnMut(usize, Tensor<T>) -> Tensor<T>,
) -> [Tensor<T>; M] {
    let mut outs = outs.map(Some);
    let mut last = [0; K];
    for (at, &(_, k)) in targets.iter().enumerate() {
        last[k] = at;
    }
    let mut at = 0;
    targets.map(|(i, k)| {
        let out = if last[k] == at {
            outs[k].take()
        } else {
            outs[k].clone()
        };
        at += 1;
        finish(i, out.expect("fused: a result read after its last reader"))
    })
}

/// `fused_vjp`'s loop, over blocks of `B`: the inputs' and the cotangent's sources.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn vjp_blocks<T: Element, const N: usize, const L: usize, const K: usize, const B: usize>(
    range: Range<usize>,
    mut outs: [Out<'_, T>; K],
    (sources, g): (&[Source<'_, T>; N], &[Source<'_, T>; 1]),
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K],
) {
    let mut block = [[T::zero(); B]; K];
    for_blocks::<T, N, 1, B>(
        range,
        sources,
        g,
        #[inline(always)]
        |n, x, g| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for (e, &g) in g[0].iter().enumerate() {
                        set_column(&mut block, e, f(column(x, e), literals, k, g));
                    }
                },
            );
            put_blocks(&mut outs, &block, n);
        },
    );
}

/// The value of a fused region and its tangent, from the tangents of its inputs with tangents:
/// `f(x, t)` gives both element by element.
///
/// # Panics
/// When the inputs' shapes do not broadcast, or a tangent's does not broadcast to the region's.
#[track_caller]
pub fn fused_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    #[cfg(debug_assertions)]
    let f: &TangentFn<'_, T, N, L, K> = &f;
    jvp_region(ops, inputs, literals, tangents, f)
}

/// [`fused_jvp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn jvp_region<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    let literals = literals.map(T::from_f64);
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let tangent_sources = tangents.map(|t| source("fused", t, &shape).or_panic());
    let shape = &*shape;
    let len = shape.iter().product();
    let sources = (&sources, &tangent_sources);
    let ([value, tangent], []) = drive(len, BLOCK, |range, outs, _| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || jvp_blocks::<T, N, L, K, B>(range, outs, sources, &literals, &f),
        ))
    });
    (
        Tensor::from_parts(value, shape),
        Tensor::from_parts(tangent, shape),
    )
}

/// `fused_jvp`'s loop, over blocks of `B`: the inputs' and the tangents' sources.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn jvp_blocks<T: Element, const N: usize, const L: usize, const K: usize, const B: usize>(
    range: Range<usize>,
    mut outs: [Out<'_, T>; 2],
    (sources, tangents): (&[Source<'_, T>; N], &[Source<'_, T>; K]),
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T),
) {
    let mut block = [[T::zero(); B]; 2];
    for_blocks::<T, N, K, B>(
        range,
        sources,
        tangents,
        #[inline(always)]
        |n, x, t| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for e in 0..B {
                        let (y, u) = f(column(x, e), literals, k, column(t, e));
                        set_column(&mut block, e, [y, u]);
                    }
                },
            );
            put_blocks(&mut outs, &block, n);
        },
    );
}

/// A full reduction that ends a fused region: the sum or the mean of all its elements, added
/// in the order of the runtime's `sum` (pairwise, `crate::summation`) over the values in
/// row-major order, so that a fused sum is the unfused one bit for bit: op by op, the region's
/// value is row-major whatever its inputs' layouts, as every elementwise op writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// `.sum()`.
    Sum,
    /// `.mean()`.
    Mean,
}

impl Reduction {
    /// The reduction of `len` elements whose sum is `sum`.
    fn finish<T: Element>(self, sum: T, len: usize) -> T {
        match self {
            Reduction::Sum => sum,
            Reduction::Mean => sum / T::from_f64(len as f64),
        }
    }

    /// The cotangent of each element for a cotangent of one on the result, as `sum_vjp` and
    /// `mean_vjp` compute it.
    fn seed<T: Element>(self, len: usize) -> T {
        match self {
            Reduction::Sum => T::one(),
            Reduction::Mean => T::one() / T::from_f64(len as f64),
        }
    }
}

/// The reduction of a fused region's value: `f` applied to the elements of the inputs,
/// broadcast, and summed (or averaged) in the same pass, with no tensor for the values.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
pub fn fused_reduce<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    #[cfg(debug_assertions)]
    let f: &ValueFn<'_, T, N, L> = &f;
    reduce_region(ops, inputs, literals, reduction, f)
}

/// [`fused_reduce`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_region<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    let literals = literals.map(T::from_f64);
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let len = shape.iter().product();
    let (f, literals) = (&f, &literals);
    let ([], [sums]) = drive(len, SUM_BLOCK, |range, [], sums| {
        with_block_size!(len, SMALL, SUM_BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                sum_blocks::<T, N, 0, 1, B>(
                    range,
                    (&sources, &[]),
                    #[inline(always)]
                    |x, _, k| [f(x, literals, k)],
                    |block, n| push_sums(sums, block, n),
                )
            },
        ))
    });
    Tensor::scalar(reduction.finish(combine_block_sums(sums.as_slice(), len), len))
}

/// The reduction of a fused region's value and its tangent, in one pass: `f(x, t)` gives both
/// element by element, and each is summed (or averaged).
///
/// # Panics
/// When the inputs' shapes do not broadcast, or a tangent's does not broadcast to the region's.
#[track_caller]
pub fn fused_reduce_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    #[cfg(debug_assertions)]
    let f: &TangentFn<'_, T, N, L, K> = &f;
    reduce_jvp_region(ops, inputs, literals, reduction, tangents, f)
}

/// [`fused_reduce_jvp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_jvp_region<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    let literals = literals.map(T::from_f64);
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let tangent_sources = tangents.map(|t| source("fused", t, &shape).or_panic());
    let shape = &*shape;
    let len = shape.iter().product();
    let (f, literals, sources) = (&f, &literals, (&sources, &tangent_sources));
    let ([], sums) = drive(len, SUM_BLOCK, |range, [], sums| {
        with_block_size!(len, SMALL, SUM_BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                sum_blocks::<T, N, K, 2, B>(
                    range,
                    sources,
                    #[inline(always)]
                    |x, t, k| {
                        let (y, u) = f(x, literals, k, t);
                        [y, u]
                    },
                    |block, n| push_sums(sums, block, n),
                )
            },
        ))
    });
    let [y, u] =
        sums.map(|s| Tensor::scalar(reduction.finish(combine_block_sums(s.as_slice(), len), len)));
    (y, u)
}

/// The loop of the reductions, over blocks of `B`: `f` gives `K` values an element, and each
/// block's first `n` values of each go to `sum(blocks, n)`: [`push_sums`] for a full reduction,
/// [`Lanes::push`] for one over the last axes.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn sum_blocks<T: Element, const N: usize, const M: usize, const K: usize, const B: usize>(
    range: Range<usize>,
    (xs_from, ys_from): (&[Source<'_, T>; N], &[Source<'_, T>; M]),
    f: impl Fn([T; N], [T; M], &Kernels) -> [T; K],
    sum: impl FnMut(&[[T; B]; K], usize),
) {
    sum_steps(range, B, (xs_from, ys_from), f, sum);
}

/// [`sum_blocks`] with `step` elements a block ([`for_steps`]).
#[inline(always)]
#[allow(clippy::type_complexity)]
fn sum_steps<T: Element, const N: usize, const M: usize, const K: usize, const B: usize>(
    range: Range<usize>,
    step: usize,
    (xs_from, ys_from): (&[Source<'_, T>; N], &[Source<'_, T>; M]),
    f: impl Fn([T; N], [T; M], &Kernels) -> [T; K],
    mut sum: impl FnMut(&[[T; B]; K], usize),
) {
    let mut block = [[T::zero(); B]; K];
    for_steps::<T, N, M, B>(
        range,
        step,
        xs_from,
        ys_from,
        #[inline(always)]
        |n, x, y| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for e in 0..B {
                        set_column(&mut block, e, f(column(x, e), column(y, e), k));
                    }
                },
            );
            sum(&block, n);
        },
    );
}

/// The reduction of a fused region's value and, in the same pass, the partial derivatives of
/// the reduction with respect to its inputs: `f(x, literals, seed)` gives the element's value
/// and the `K` cotangents of the inputs for the element cotangent `seed` (one for a sum, `1/n`
/// for a mean), and each `(input, k)` of `targets` says that input's is result `k`. The
/// partials are summed to their input's shape; the backward pass scales them by the result's
/// cotangent ([`fused_scale`]) instead of running the region again.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
#[allow(clippy::type_complexity)]
pub fn fused_reduce_vjp<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    targets: [(usize, usize); M],
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]) + Sync,
) -> (Tensor<T>, [Tensor<T>; M]) {
    #[cfg(debug_assertions)]
    let f: &PartialFn<'_, T, N, L, K> = &f;
    reduce_vjp_region(ops, inputs, literals, reduction, targets, f)
}

/// [`fused_reduce_vjp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
#[allow(clippy::type_complexity)]
fn reduce_vjp_region<T: Element, const N: usize, const L: usize, const K: usize, const M: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    targets: [(usize, usize); M],
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]) + Sync,
) -> (Tensor<T>, [Tensor<T>; M]) {
    let literals = literals.map(T::from_f64);
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let len = shape.iter().product();
    let seed = reduction.seed::<T>(len);
    let (literals, f) = ((&literals, seed), &f);
    let (partials, [sums]) = drive(len, SUM_BLOCK, |range, outs, [sums]| {
        with_block_size!(len, SMALL, SUM_BLOCK, |B| vectorised(
            #[inline(always)]
            || partial_blocks::<T, N, L, K, B>(range, &sources, literals, f, (sums, outs)),
        ))
    });
    let value = Tensor::scalar(reduction.finish(combine_block_sums(sums.as_slice(), len), len));
    let partials = partials.map(|p| Tensor::from_parts(p, shape));
    let partials = distribute(partials, &targets, |i, p| match inputs[i] {
        OperandRef::Tensor(t) if !same_shape(t.shape(), shape) => sum_to_shape(&p, t.shape()),
        OperandRef::Tensor(_) => p,
        OperandRef::Scalar(_) => sum_to_shape(&p, &[]),
    });
    (value, partials)
}

/// `fused_reduce_vjp`'s loop, over blocks of `B`.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn partial_blocks<T: Element, const N: usize, const L: usize, const K: usize, const B: usize>(
    range: Range<usize>,
    sources: &[Source<'_, T>; N],
    (literals, seed): (&[T; L], T),
    f: &impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]),
    (sums, mut partials): (&mut BlockSums<T>, [Out<'_, T>; K]),
) {
    let mut values = [T::zero(); B];
    let mut block = [[T::zero(); B]; K];
    for_blocks::<T, N, 0, B>(
        range,
        sources,
        &[],
        #[inline(always)]
        |n, x, _| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for (e, value) in values.iter_mut().enumerate() {
                        let (y, d) = f(column(x, e), literals, k, seed);
                        *value = y;
                        set_column(&mut block, e, d);
                    }
                },
            );
            sums.push(block_sum(&values[..n]));
            put_blocks(&mut partials, &block, n);
        },
    );
}

impl Reduction {
    /// The op this reduction is over some axes, for errors.
    fn axes_op(self) -> &'static str {
        match self {
            Reduction::Sum => "sum_axes",
            Reduction::Mean => "mean_axes",
        }
    }

    /// `t` reduced over `axes` by the op itself (`sum_axes`, `mean_axes`).
    #[track_caller]
    fn over_axes<T: Element>(self, t: &Tensor<T>, axes: &[isize], keepdims: bool) -> Tensor<T> {
        match self {
            Reduction::Sum => t.sum_axes(axes, keepdims),
            Reduction::Mean => t.mean_axes(axes, keepdims),
        }
    }
}

/// The length of the lanes a reduction over `axes` (checked: sorted, distinct, in range) of
/// `shape` sums first, when the region can be reduced in the same pass as its values: every
/// element when `axes` are all the axes, else the last axis when `axes` are the last ones. The
/// unfused reduction sums those lanes pairwise, then the lanes' sums over the other axes
/// ([`finish_lanes`]); `None` for other axes, for none, and for lanes of no elements (whose
/// sums the unfused reduction makes).
fn lane_length(shape: &[usize], axes: &[usize]) -> Option<usize> {
    let first = shape.len() - axes.len();
    let last = !axes.is_empty() && axes.iter().enumerate().all(|(i, &a)| a == first + i);
    let lane = match first {
        _ if !last => None,
        0 => Some(shape.iter().product()),
        _ => shape.last().copied(),
    };
    lane.filter(|&n| n > 0)
}

/// The reduction of a fused region's value over `axes` (`sum_axes`, `mean_axes`): `f` applied
/// to the elements of the inputs, broadcast, and reduced. When `axes` are the region's last
/// axes (a row-wise sum or mean, the common case), the reduction runs in the same pass as the
/// values and no tensor holds them; over other axes the values are made first.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails, or
/// an axis is out of range or repeated.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_reduce_axes<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    axes: &[isize],
    keepdims: bool,
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    #[cfg(debug_assertions)]
    let f: &ValueFn<'_, T, N, L> = &f;
    reduce_axes_region(ops, inputs, literals, (reduction, axes, keepdims), f)
}

/// [`fused_reduce_axes`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the
/// module's documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_axes_region<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    (reduction, axes, keepdims): (Reduction, &[isize], bool),
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let checked = checked_axes(reduction.axes_op(), axes, shape).or_panic();
    let Some(lane) = lane_length(shape, &checked) else {
        let values = map_region(ops, inputs, literals, f);
        return reduction.over_axes(&values, axes, keepdims);
    };
    let literals = literals.map(T::from_f64);
    let len: usize = shape.iter().product();
    let (f, literals) = (&f, &literals);
    let [sums] = lane_sums::<T, 1>(len, lane, |lanes| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                if lane <= B {
                    sum_steps::<T, N, 0, 1, B>(
                        0..len,
                        B / lane * lane,
                        (&sources, &[]),
                        #[inline(always)]
                        |x, _, k| [f(x, literals, k)],
                        |block, n| lanes.push_whole(block, n),
                    )
                } else {
                    sum_blocks::<T, N, 0, 1, B>(
                        0..len,
                        (&sources, &[]),
                        #[inline(always)]
                        |x, _, k| [f(x, literals, k)],
                        |block, n| lanes.push(block, n),
                    )
                }
            },
        ))
    });
    finish_lanes(sums, shape, (reduction, &checked, keepdims))
}

/// The reduction of a fused region's value over `axes` and its tangent, in one pass where
/// `axes` are the last ones ([`fused_reduce_axes`]): `f(x, t)` gives both element by element.
///
/// # Panics
/// When the inputs' shapes do not broadcast, a tangent's does not broadcast to the region's, or
/// an axis is out of range or repeated.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_reduce_axes_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    axes: &[isize],
    keepdims: bool,
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    #[cfg(debug_assertions)]
    let f: &TangentFn<'_, T, N, L, K> = &f;
    reduce_axes_jvp_region(
        ops,
        inputs,
        literals,
        (reduction, axes, keepdims),
        tangents,
        f,
    )
}

/// [`fused_reduce_axes_jvp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see
/// the module's documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_axes_jvp_region<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    (reduction, axes, keepdims): (Reduction, &[isize], bool),
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let checked = checked_axes(reduction.axes_op(), axes, &shape).or_panic();
    let Some(lane) = lane_length(&shape, &checked) else {
        let (values, tangent) = jvp_region(ops, inputs, literals, tangents, f);
        return (
            reduction.over_axes(&values, axes, keepdims),
            reduction.over_axes(&tangent, axes, keepdims),
        );
    };
    let tangent_sources = tangents.map(|t| source("fused", t, &shape).or_panic());
    let literals = literals.map(T::from_f64);
    let len: usize = shape.iter().product();
    let (f, literals, sources) = (&f, &literals, (&sources, &tangent_sources));
    let sums = lane_sums::<T, 2>(len, lane, |lanes| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                if lane <= B {
                    sum_steps::<T, N, K, 2, B>(
                        0..len,
                        B / lane * lane,
                        sources,
                        #[inline(always)]
                        |x, t, k| {
                            let (y, u) = f(x, literals, k, t);
                            [y, u]
                        },
                        |block, n| lanes.push_whole(block, n),
                    )
                } else {
                    sum_blocks::<T, N, K, 2, B>(
                        0..len,
                        sources,
                        #[inline(always)]
                        |x, t, k| {
                            let (y, u) = f(x, literals, k, t);
                            [y, u]
                        },
                        |block, n| lanes.push(block, n),
                    )
                }
            },
        ))
    });
    let [y, u] = sums.map(|s| finish_lanes(s, &shape, (reduction, &checked, keepdims)));
    (y, u)
}

/// The cotangents of a fused region's inputs from the cotangent `g` of its reduction over
/// `axes`: `g` spread over the reduced axes (divided by their count for a mean) is the
/// region's cotangent, and the rest is [`fused_vjp`]. The closure recomputes the region from
/// its inputs, so the forward pass ([`fused_reduce_axes`]) saves nothing but them.
///
/// # Panics
/// When the inputs' shapes do not broadcast, an axis is out of range or repeated, or `g` does
/// not have the reduction's shape.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_reduce_axes_vjp<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    axes: &[isize],
    keepdims: bool,
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
) -> [Tensor<T>; M] {
    #[cfg(debug_assertions)]
    let f: &CotangentFn<'_, T, N, L, K> = &f;
    let shapes = inputs.map(|i| match i {
        FusedInput::Value(v) => operand_shape(&v),
        FusedInput::Shape(s) => Some(s),
    });
    let shape = region_shape(&shapes, ops).or_panic();
    let op = reduction.axes_op();
    let checked = checked_axes(op, axes, &shape).or_panic();
    // The cotangent with the reduced axes kept, as `sum_axes_vjp` and `mean_axes_vjp` spread
    // it; the fused loop broadcasts it.
    // (A reshape: no copy of a row-major `g`.)
    expand_back(op, g.view(), &shape, &checked, keepdims);
    let kept = g.reshape(&reduced_shape(&shape, &checked, true));
    let spread = match reduction {
        Reduction::Sum => kept,
        Reduction::Mean => {
            let n = count::<T>(&shape, &checked);
            kept.map_elems(
                #[inline(always)]
                |&d| d / n,
            )
        }
    };
    vjp_region(ops, inputs, literals, targets, &spread, f)
}

/// `K` lists of the pairwise sums of the lanes of `lane` (at least one) consecutive elements of
/// a region of `len`, filled by `fill`.
fn lane_sums<T: Element, const K: usize>(
    len: usize,
    lane: usize,
    fill: impl FnOnce(&mut Lanes<T, K>),
) -> [Vec<T>; K] {
    let mut lanes = Lanes {
        lane,
        done: std::array::from_fn(|_| Vec::with_capacity(len / lane)),
        chunk: std::array::from_fn(|_| Vec::with_capacity(SUM_BLOCK.min(lane))),
        sums: std::array::from_fn(|_| Vec::new()),
        at: 0,
    };
    fill(&mut lanes);
    lanes.done
}

/// The lane sums of a row-wise reduction as the loop produces the values: each lane's values
/// gathered in chunks of [`SUM_BLOCK`] from the lane's start, each chunk summed by
/// [`block_sum`] and the chunks' sums combined by [`combine_block_sums`], the same additions as
/// the unfused pairwise sum of the lane ([`crate::summation`]).
struct Lanes<T, const K: usize> {
    lane: usize,
    /// The sums of the lanes done.
    done: [Vec<T>; K],
    /// The values of the current lane's current chunk.
    chunk: [Vec<T>; K],
    /// The sums of the current lane's chunks before it.
    sums: [Vec<T>; K],
    /// The position in the current lane.
    at: usize,
}

impl<T: Element, const K: usize> Lanes<T, K> {
    /// Adds the first `n` values of each block, whole lanes (of at most [`SUM_BLOCK`]) from a
    /// lane's start: each lane is one [`block_sum`], as the unfused sum of a lane of its length
    /// is. Lanes of fewer than eight are added in order from zero, which is what `block_sum`
    /// does with them, with the loop unrolled for the length.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn push_whole<const B: usize>(&mut self, blocks: &[[T; B]; K], n: usize) {
        debug_assert!(self.at == 0 && n.is_multiple_of(self.lane) && self.lane <= SUM_BLOCK);
        for (done, block) in self.done.iter_mut().zip(blocks) {
            let values = &block[..n];
            match self.lane {
                1 => short_lane_sums::<T, 1>(values, done),
                2 => short_lane_sums::<T, 2>(values, done),
                3 => short_lane_sums::<T, 3>(values, done),
                4 => short_lane_sums::<T, 4>(values, done),
                5 => short_lane_sums::<T, 5>(values, done),
                6 => short_lane_sums::<T, 6>(values, done),
                7 => short_lane_sums::<T, 7>(values, done),
                lane => done.extend(values.chunks_exact(lane).map(block_sum)),
            }
        }
    }

    /// Adds the first `n` values of each block, the next ones of the region.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn push<const B: usize>(&mut self, blocks: &[[T; B]; K], n: usize) {
        let mut start = 0;
        while start < n {
            let room = (SUM_BLOCK - self.chunk[0].len()).min(self.lane - self.at);
            let end = n.min(start + room);
            for (chunk, block) in self.chunk.iter_mut().zip(blocks) {
                chunk.extend_from_slice(&block[start..end]);
            }
            self.at += end - start;
            start = end;
            let lane_done = self.at == self.lane;
            if lane_done || self.chunk[0].len() == SUM_BLOCK {
                for (sums, chunk) in self.sums.iter_mut().zip(&mut self.chunk) {
                    sums.push(block_sum(chunk));
                    chunk.clear();
                }
            }
            if lane_done {
                for (done, sums) in self.done.iter_mut().zip(&mut self.sums) {
                    done.push(combine_block_sums(sums, self.lane));
                    sums.clear();
                }
                self.at = 0;
            }
        }
    }
}

/// The sums of the lanes of `L` (fewer than eight) that `values` is, appended to `done`: each
/// added in order from zero, as [`block_sum`] adds so few.
#[inline(always)]
fn short_lane_sums<T: Element, const L: usize>(values: &[T], done: &mut Vec<T>) {
    done.extend(values.chunks_exact(L).map(|lane| {
        let mut s = T::zero();
        for &v in lane {
            s += v;
        }
        s
    }));
}

/// The reduction of shape `reduced_shape(shape, axes, keepdims)` from the sums of the lanes
/// [`lane_length`] chose, as the unfused `sum_axes` and `mean_axes` finish: the lanes' sums
/// summed over the other axes, then divided by the count for a mean.
fn finish_lanes<T: Element>(
    sums: Vec<T>,
    shape: &[usize],
    (reduction, axes, keepdims): (Reduction, &[usize], bool),
) -> Tensor<T> {
    let whole = axes.len() == shape.len();
    let mut t = match whole {
        true => Tensor::scalar(sums.first().copied().unwrap_or_else(T::zero)),
        false => Tensor::from_vec(sums, &shape[..shape.len() - 1]),
    };
    if !whole && axes.len() > 1 {
        let rest: Vec<isize> = axes[..axes.len() - 1].iter().map(|&a| a as isize).collect();
        t = t.sum_axes(&rest, false);
    }
    if reduction == Reduction::Mean {
        let n = count::<T>(shape, axes);
        t = t.map_elems(
            #[inline(always)]
            |&s| s / n,
        );
    }
    t.reshape(&reduced_shape(shape, axes, keepdims))
}

/// A saved partial derivative of a reduced region times its result's cotangent `g` (a 0-d
/// tensor), a zero `g` giving zeros; the partial itself, shared, when `g` is one.
#[track_caller]
pub fn fused_scale<T: Element>(partial: &Tensor<T>, g: &Tensor<T>) -> Tensor<T> {
    let g = g.item();
    if g == T::one() {
        return partial.clone();
    }
    partial.map_elems(
        #[inline(always)]
        |&d| strong_mul(g, d),
    )
}

/// `1 / b`, as the rules of `/` compute it.
#[inline]
pub fn fused_recip<T: Element>(b: T) -> T {
    T::one() / b
}

/// A mask as an input of a fused region that selects by it (`where_cond`): one where it is
/// true, zero elsewhere, read back by [`fused_flag`].
#[track_caller]
pub fn fused_mask<T: Element>(mask: &Tensor<bool>) -> Tensor<T> {
    mask.map(|&m| if m { T::one() } else { T::zero() })
}

/// Whether an element of a mask made by [`fused_mask`] is set.
#[inline]
pub fn fused_flag<T: Element>(m: T) -> bool {
    m != T::zero()
}

/// Zero, of the type of `_like`.
#[inline]
pub fn fused_zero<T: Element>(_like: T) -> T {
    T::zero()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::rules;
    use crate::scalar;

    #[test]
    fn cycle_row_repeats_the_row_from_any_element() {
        for c in 1..40 {
            let row: Vec<u32> = (0..c).map(|v| 100 + v as u32).collect();
            for k in 0..c {
                for len in [0, 1, c - 1, c, c + 1, 2 * c + 3, BLOCK, 3 * BLOCK + 5] {
                    let mut dst = vec![0; len];
                    cycle_row(&row, k, &mut dst);
                    let expected: Vec<u32> = (0..len).map(|j| row[(k + j) % c]).collect();
                    assert_eq!(dst, expected, "row of {c} from {k}, {len} elements");
                }
            }
        }
    }

    fn t(v: &[f64], shape: &[usize]) -> Tensor<f64> {
        Tensor::from_vec(v.to_vec(), shape)
    }

    #[test]
    fn a_region_broadcasts_its_inputs_and_reduces_their_cotangents() {
        // y = exp(a * b) + c with a [2, 3], b [3], c a scalar; over more than one block.
        let a = Tensor::from_vec((0..200).map(|i| f64::from(i) / 100.0).collect(), &[40, 5]);
        let b = t(&[0.5, -1.0, 0.25, 2.0, 1.0], &[5]);
        let ops = "mul 0 1;exp 3 3;add 4 2";
        let inputs = [
            OperandRef::Tensor(&a),
            OperandRef::Tensor(&b),
            OperandRef::Scalar(3.0),
        ];
        let y = fused_map(ops, inputs, [], |[a, b, c], [], _| {
            scalar::exp::value(a * b) + c
        });
        assert_eq!(y.shape(), &[40, 5]);
        let av = a.to_vec();
        for (i, y) in y.to_vec().iter().enumerate() {
            assert_eq!(*y, (av[i] * b.to_vec()[i % 5]).exp() + 3.0);
        }
        // Cotangents of a and b for g = 1: d/da = b e^(ab), d/db = sum over rows of a e^(ab).
        let g = Tensor::full(&[40, 5], 1.0);
        let [da, db] = fused_vjp(
            ops,
            inputs.map(FusedInput::Value),
            [],
            [(0, 0), (1, 1)],
            &g,
            |[a, b, _], [], _, g| {
                let e = scalar::exp::value(a * b);
                [g * b * e, g * a * e]
            },
        );
        assert_eq!(da.shape(), &[40, 5]);
        assert_eq!(db.shape(), &[5]);
        for j in 0..5 {
            let bj = b.to_vec()[j];
            let want: f64 = (0..40)
                .map(|r| av[r * 5 + j] * (av[r * 5 + j] * bj).exp())
                .sum();
            assert!((db.to_vec()[j] - want).abs() <= 1e-12 * want.abs());
        }
        let (value, tangent) = fused_jvp(ops, inputs, [], [&b], |[a, b, c], [], _, [tb]| {
            let e = scalar::exp::value(a * b);
            (e + c, a * tb * e)
        });
        assert_eq!(value.to_vec(), y.to_vec());
        assert_eq!(tangent.shape(), &[40, 5]);
    }

    /// Whether `a` and `b` are the same numbers in the same shape.
    fn same(a: &Tensor<f64>, b: &Tensor<f64>) {
        assert_eq!(a.shape(), b.shape());
        let bits = |t: &Tensor<f64>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a), bits(b));
    }

    #[test]
    fn a_reduction_over_some_axes_is_the_values_reduced_bit_for_bit() {
        // y = exp(a * b) + c, a [4, 3, 300] (lanes of 300 cross blocks of 64 and chunks of
        // 128), b [300] broadcast, c a scalar; reduced over the last axes (in one pass, adding
        // as the unfused reduction adds) and over others (the values first).
        let a = Tensor::from_vec(
            (0..3600).map(|i| f64::from(i % 37) / 40.0 - 0.4).collect(),
            &[4, 3, 300],
        );
        let b = Tensor::from_vec(
            (0..300).map(|i| f64::from(i) / 150.0 - 1.0).collect(),
            &[300],
        );
        let ops = "mul 0 1;exp 3 3;add 4 2";
        let inputs = [
            OperandRef::Tensor(&a),
            OperandRef::Tensor(&b),
            OperandRef::Scalar(3.0),
        ];
        let value = |[a, b, c]: [f64; 3], _: &[f64; 0], _: &Kernels| scalar::exp::value(a * b) + c;
        let y = fused_map(ops, inputs, [], value);
        let ta = a.map_elems(|&v| v * 0.5 - 0.1);
        let jvp = |[a, b, c]: [f64; 3], _: &[f64; 0], _: &Kernels, [u]: [f64; 1]| {
            let e = scalar::exp::value(a * b);
            (e + c, u * b * e)
        };
        let (_, ty) = fused_jvp(ops, inputs, [], [&ta], jvp);
        let vjp = |[a, b, _]: [f64; 3], _: &[f64; 0], _: &Kernels, g: f64| {
            let e = scalar::exp::value(a * b);
            [g * b * e, g * a * e]
        };
        let cases: [(&[isize], bool); 7] = [
            (&[-1], false),
            (&[1, 2], true),
            (&[2, 1, 0], false),
            (&[-1, 0, 1], true),
            (&[0], false),
            (&[0, 2], true),
            (&[], false),
        ];
        for reduction in [Reduction::Sum, Reduction::Mean] {
            for (axes, keepdims) in cases {
                let reduce = |t: &Tensor<f64>| match reduction {
                    Reduction::Sum => t.sum_axes(axes, keepdims),
                    Reduction::Mean => t.mean_axes(axes, keepdims),
                };
                let r = fused_reduce_axes(ops, inputs, [], reduction, axes, keepdims, value);
                same(&r, &reduce(&y));
                let (r, tr) =
                    fused_reduce_axes_jvp(ops, inputs, [], reduction, axes, keepdims, [&ta], jvp);
                same(&r, &reduce(&y));
                same(&tr, &reduce(&ty));
                // The cotangents for a cotangent g of the reduction: the region's for g spread.
                let g = r.map_elems(|&v| v.sin());
                let spread = match reduction {
                    Reduction::Sum => rules::sum_axes_vjp(&g, y.shape(), axes, keepdims),
                    Reduction::Mean => rules::mean_axes_vjp(&g, y.shape(), axes, keepdims),
                };
                let targets = [(0, 0), (1, 1)];
                let want = fused_vjp(
                    ops,
                    inputs.map(FusedInput::Value),
                    [],
                    targets,
                    &spread,
                    vjp,
                );
                let got = fused_reduce_axes_vjp(
                    ops,
                    inputs.map(FusedInput::Value),
                    [],
                    reduction,
                    axes,
                    keepdims,
                    targets,
                    &g,
                    vjp,
                );
                for (got, want) in got.iter().zip(&want) {
                    same(got, want);
                }
            }
        }
    }

    #[test]
    fn a_reduction_over_some_axes_of_no_elements_is_the_unfused_one() {
        for shape in [[3, 0], [0, 5]] {
            let a = Tensor::<f64>::zeros(&shape);
            let inputs = [OperandRef::Tensor(&a)];
            for (reduction, axes) in [
                (Reduction::Sum, [-1]),
                (Reduction::Mean, [1]),
                (Reduction::Sum, [0]),
            ] {
                let r = fused_reduce_axes(
                    "exp 0 0",
                    inputs,
                    [],
                    reduction,
                    &axes,
                    false,
                    |[a], [], _| scalar::exp::value(a),
                );
                let values = a.map_elems(|&v| v.exp());
                let want = match reduction {
                    Reduction::Sum => values.sum_axes(&axes, false),
                    Reduction::Mean => values.mean_axes(&axes, false),
                };
                assert_eq!(r.shape(), want.shape(), "{shape:?}");
                let bits =
                    |t: &Tensor<f64>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&r), bits(&want), "{shape:?} {axes:?}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "sum_axes: axis 3 is out of range")]
    fn a_reduction_over_a_missing_axis_names_the_op() {
        let a = t(&[1.0; 6], &[2, 3]);
        let _ = fused_reduce_axes(
            "exp 0 0",
            [OperandRef::Tensor(&a)],
            [],
            Reduction::Sum,
            &[3],
            false,
            |[a], [], _| scalar::exp::value(a),
        );
    }

    #[test]
    #[should_panic(expected = "mean_axes: a tensor of shape [3] is not the reduction")]
    fn a_cotangent_not_of_the_reductions_shape_names_the_op_and_shapes() {
        let a = t(&[1.0; 6], &[2, 3]);
        let g = t(&[1.0; 3], &[3]);
        let _ = fused_reduce_axes_vjp(
            "exp 0 0",
            [FusedInput::Value(OperandRef::Tensor(&a))],
            [],
            Reduction::Mean,
            &[1],
            false,
            [(0, 0)],
            &g,
            |[a], [], _, g| [g * scalar::exp::value(a)],
        );
    }

    #[test]
    #[should_panic(expected = "mul: shapes [2, 3] and [4] do not broadcast")]
    fn a_shape_mismatch_names_the_op_that_fails() {
        let a = t(&[1.0; 6], &[2, 3]);
        let b = t(&[1.0; 4], &[4]);
        let ops = "exp 0 0;mul 2 1";
        let _ = fused_map(
            ops,
            [OperandRef::Tensor(&a), OperandRef::Tensor(&b)],
            [],
            |[a, b], [], _| a.exp() * b,
        );
    }

    #[test]
    fn block_sums_keep_one_sum_inline_and_more_in_order() {
        let mut one = BlockSums::for_len(SUM_BLOCK);
        assert!(matches!(one, BlockSums::Inline(None)));
        assert_eq!(one.as_slice(), &[] as &[f64]);
        one.push(1.5);
        assert!(matches!(one, BlockSums::Inline(Some(_))));
        assert_eq!(one.as_slice(), &[1.5]);
        // A second sum moves both to the heap, in order.
        one.push(-2.0);
        one.push(4.0);
        assert_eq!(one.as_slice(), &[1.5, -2.0, 4.0]);
        let mut many = BlockSums::for_len(3 * SUM_BLOCK);
        for v in [1.0, 2.0, 3.0] {
            many.push(v);
        }
        assert!(matches!(many, BlockSums::Heap(_)));
        assert_eq!(many.as_slice(), &[1.0, 2.0, 3.0]);
    }

    #[test]
    fn results_read_by_several_targets_share_one_tensor() {
        // Result 0 read by inputs 0 and 2, result 1 by input 1: `finish` sees each target.
        // More elements than a tensor holds inline: shared storage, which a pointer shows.
        let n = crate::tensor::INLINE + 1;
        let (zero, one): (Vec<f64>, Vec<f64>) = (0..n).map(|i| (i as f64, -(i as f64))).unzip();
        let outs = [zero.clone(), one.clone()].map(|o| Tensor::from_parts(o, &[n]));
        let mut seen = Vec::new();
        let [a, b, c] = distribute(outs, &[(0, 0), (1, 1), (2, 0)], |i, t| {
            seen.push(i);
            t
        });
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(
            (a.to_vec(), b.to_vec(), c.to_vec()),
            (zero.clone(), one, zero)
        );
        assert_eq!(a.view().as_ptr(), c.view().as_ptr());
        // Each result read once: each its own tensor, in the targets' order.
        let outs = [5.0, 6.0].map(Tensor::scalar);
        let [p, q] = distribute(outs, &[(1, 1), (0, 0)], |_, t| t);
        assert_eq!((p.item(), q.item(), p.shape()), (6.0, 5.0, &[] as &[usize]));
    }

    #[test]
    fn a_region_of_scalars_and_zero_d_tensors_is_zero_d() {
        let x = Tensor::scalar(2.0_f32);
        // A literal times a 0-d tensor.
        let y = fused_map("mul 0 _", [OperandRef::Tensor(&x)], [3.0], |[a], [b], _| {
            a * b
        });
        assert_eq!(y.shape(), &[] as &[usize]);
        assert_eq!(y.item(), 6.0);
    }

    #[test]
    fn inputs_of_one_shape_agree_with_broadcast_ones() {
        // a * b + c over 100 elements (a block of 64 and a partial one): once with every input
        // of one shape (no broadcasting worked out), once with `c` given as a row broadcast
        // along a leading axis of one.
        let a = Tensor::from_vec((0..100).map(|i| f64::from(i) * 0.1).collect(), &[1, 100]);
        let b = Tensor::from_vec(
            (0..100).map(|i| 1.0 - f64::from(i) * 0.01).collect(),
            &[1, 100],
        );
        let c = Tensor::from_vec((0..100).map(f64::from).collect(), &[1, 100]);
        let c_row = Tensor::from_vec(c.to_vec(), &[100]);
        let ops = "mul 0 1;add 3 2";
        let f = |[a, b, c]: [f64; 3], _: &[f64; 0], _: &Kernels| a * b + c;
        let direct = fused_map(ops, [&a, &b, &c].map(OperandRef::Tensor), [], f);
        let blocked = fused_map(ops, [&a, &b, &c_row].map(OperandRef::Tensor), [], f);
        assert_eq!(direct.to_vec(), blocked.to_vec());
        let want: Vec<f64> = (0..100)
            .map(|i| a.to_vec()[i] * b.to_vec()[i] + c.to_vec()[i])
            .collect();
        assert_eq!(direct.to_vec(), want);
        // The cotangents of a and c, c given by its shape alone (its partial is 1).
        let g = Tensor::from_vec((0..100).map(|i| f64::from(i) - 50.0).collect(), &[1, 100]);
        let inputs = [
            FusedInput::Value(OperandRef::Tensor(&a)),
            FusedInput::Value(OperandRef::Tensor(&b)),
            FusedInput::Shape(c.shape()),
        ];
        let [da, dc] = fused_vjp(
            ops,
            inputs,
            [],
            [(0, 0), (2, 1)],
            &g,
            |[_, b, _], _, _, g| [g * b, g],
        );
        for i in 0..100 {
            assert_eq!(da.to_vec()[i], g.to_vec()[i] * b.to_vec()[i]);
        }
        assert_eq!(dc.to_vec(), g.to_vec());
    }

    /// `f` run with a pool of `threads` threads (the `parallel` feature), or as it is.
    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        #[cfg(feature = "parallel")]
        {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool")
                .install(f)
        }
        #[cfg(not(feature = "parallel"))]
        {
            let _ = threads;
            f()
        }
    }

    #[test]
    fn a_large_region_gives_the_same_results_on_one_thread_and_split() {
        // y = sin(a) * b + 0.5 over 140,077 elements (above `MIN_PARALLEL_LEN`), b a row
        // broadcast over a: every entry point on one thread and on three (split with the
        // `parallel` feature), bit for bit, and against the values element by element.
        let (rows, cols) = (20_011, 7);
        let n = rows * cols;
        assert!(n > crate::parallel::MIN_PARALLEL_LEN);
        let a = Tensor::from_vec(
            (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect(),
            &[rows, cols],
        );
        let b = Tensor::from_vec(vec![1.5, -2.0, 0.25, 3.0, -1.0, 0.5, 2.0], &[cols]);
        let ta = Tensor::full(&[rows, cols], 0.5_f32);
        let g = Tensor::from_vec(
            (0..n).map(|i| (i % 13) as f32 - 6.0).collect(),
            &[rows, cols],
        );
        let ops = "sin 0 0;mul 2 1;add 3 _";
        let run = || {
            let inputs = [OperandRef::Tensor(&a), OperandRef::Tensor(&b)];
            let f =
                |[a, b]: [f32; 2], [h]: &[f32; 1], k: &Kernels| scalar::sin::value_in(a, k) * b + h;
            let df = |[a, b]: [f32; 2], _: &[f32; 1], k: &Kernels, g: f32| {
                [
                    g * scalar::cos::value_in(a, k) * b,
                    g * scalar::sin::value_in(a, k),
                ]
            };
            let tf = |[a, b]: [f32; 2], [h]: &[f32; 1], k: &Kernels, [t]: [f32; 1]| {
                (
                    scalar::sin::value_in(a, k) * b + h,
                    scalar::cos::value_in(a, k) * b * t,
                )
            };
            let values = fused_map(ops, inputs, [0.5], f);
            let sum = fused_reduce(ops, inputs, [0.5], Reduction::Sum, f);
            let (jvp_value, jvp_tangent) = fused_jvp(ops, inputs, [0.5], [&ta], tf);
            let (mean, mean_tangent) =
                fused_reduce_jvp(ops, inputs, [0.5], Reduction::Mean, [&ta], tf);
            let targets = [(0, 0), (1, 1)];
            let cotangents = fused_vjp(ops, inputs.map(FusedInput::Value), [0.5], targets, &g, df);
            let (reduced, partials) = fused_reduce_vjp(
                ops,
                inputs,
                [0.5],
                Reduction::Sum,
                targets,
                |x, l, k, seed| (f(x, l, k), df(x, l, k, seed)),
            );
            let bits = |t: &Tensor<f32>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            [
                &values,
                &sum,
                &jvp_value,
                &jvp_tangent,
                &mean,
                &mean_tangent,
                &cotangents[0],
                &cotangents[1],
                &reduced,
                &partials[0],
                &partials[1],
            ]
            .map(bits)
        };
        let one = on_threads(1, run);
        let split = on_threads(3, run);
        assert_eq!(one, split);
        // The values and the sum, element by element and by the runtime's `sum`.
        let (av, bv) = (a.to_vec(), b.to_vec());
        let want: Vec<f32> = (0..n)
            .map(|i| scalar::sin::value(av[i]) * bv[i % cols] + 0.5)
            .collect();
        let want_bits: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
        assert_eq!(one[0], want_bits);
        let total = Tensor::from_vec(want, &[rows, cols]).sum().item();
        assert_eq!(one[1], vec![total.to_bits()]);
        assert_eq!(one[8], vec![total.to_bits()]);
        assert_eq!(one[2], one[0]);
    }

    #[test]
    fn a_reduced_region_is_the_sum_of_its_values_bit_for_bit() {
        // y = sin(a) * b + 0.5, summed and averaged, against the region's values summed by
        // `Tensor::sum`; b a row broadcast over a; sizes around the blocks of the sums.
        for rows in [1, 3, 17, 1001] {
            let n = rows * 7;
            let a = Tensor::from_vec(
                (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect(),
                &[rows, 7],
            );
            let b = Tensor::from_vec(vec![1.5, -2.0, 0.25, 3.0, -1.0, 0.5, 2.0], &[7]);
            let ops = "sin 0 0;mul 2 1;add 3 _";
            let inputs = [OperandRef::Tensor(&a), OperandRef::Tensor(&b)];
            let f =
                |[a, b]: [f32; 2], [h]: &[f32; 1], k: &Kernels| scalar::sin::value_in(a, k) * b + h;
            let values = fused_map(ops, inputs, [0.5], f);
            let sum = fused_reduce(ops, inputs, [0.5], Reduction::Sum, f);
            let mean = fused_reduce(ops, inputs, [0.5], Reduction::Mean, f);
            assert_eq!(sum.shape(), &[] as &[usize]);
            assert_eq!(
                sum.item().to_bits(),
                values.sum().item().to_bits(),
                "{rows}"
            );
            assert_eq!(
                mean.item().to_bits(),
                values.mean().item().to_bits(),
                "{rows}"
            );

            // Forward mode: the tangent of the sum along a's tangent is the sum of cos(a) b ta.
            let ta = Tensor::full(&[rows, 7], 0.5_f32);
            let (y, u) = fused_reduce_jvp(
                ops,
                inputs,
                [0.5],
                Reduction::Sum,
                [&ta],
                |[a, b], [h], k, [ta]| {
                    let s = scalar::sin::value_in(a, k);
                    (
                        s * b + h,
                        scalar::sin::tangent_in(ta, scalar::Input(a), k) * b,
                    )
                },
            );
            assert_eq!(y.item().to_bits(), sum.item().to_bits());
            let want: f64 = (0..n)
                .map(|i| {
                    let (av, bv) = (a.to_vec()[i], b.to_vec()[i % 7]);
                    f64::from(av.cos() * bv * 0.5)
                })
                .sum();
            assert!((f64::from(u.item()) - want).abs() <= 1e-4 * want.abs().max(1.0));

            // Reverse mode: the value and the partials, b's summed over the rows; the mean's
            // are the sum's over n.
            for (reduction, scale) in [(Reduction::Sum, 1.0), (Reduction::Mean, n as f64)] {
                let (y, [da, db]) = fused_reduce_vjp(
                    ops,
                    inputs,
                    [0.5],
                    reduction,
                    [(0, 0), (1, 1)],
                    |[a, b], [h], k, g| {
                        let s = scalar::sin::value_in(a, k);
                        let d = strong_mul(g, b);
                        (
                            s * b + h,
                            [scalar::sin::tangent_in(d, scalar::Input(a), k), g * s],
                        )
                    },
                );
                let want = fused_reduce(ops, inputs, [0.5], reduction, f);
                assert_eq!(y.item().to_bits(), want.item().to_bits());
                assert_eq!(da.shape(), &[rows, 7]);
                assert_eq!(db.shape(), &[7]);
                for i in 0..n {
                    let (av, bv) = (f64::from(a.to_vec()[i]), f64::from(b.to_vec()[i % 7]));
                    let got = f64::from(da.to_vec()[i]) * scale;
                    assert!((got - av.cos() * bv).abs() <= 1e-5, "{i}");
                }
                for j in 0..7 {
                    let want: f64 = (0..rows)
                        .map(|r| f64::from(a.to_vec()[r * 7 + j]).sin())
                        .sum();
                    let got = f64::from(db.to_vec()[j]) * scale;
                    assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "{j}");
                }
            }
        }
    }

    #[test]
    fn a_partial_is_scaled_by_the_cotangent_with_a_strong_zero() {
        let p = t(&[1.0, f64::INFINITY, -2.0], &[3]);
        assert_eq!(fused_scale(&p, &Tensor::scalar(1.0)).to_vec(), p.to_vec());
        assert_eq!(
            fused_scale(&p, &Tensor::scalar(2.0)).to_vec(),
            [2.0, f64::INFINITY, -4.0]
        );
        assert_eq!(fused_scale(&p, &Tensor::scalar(0.0)).to_vec(), [0.0; 3]);
    }

    /// The row-major offset in a tensor of `shape` of element `index` (a multi-index) of the
    /// region it is broadcast to.
    fn broadcast_offset(shape: &[usize], region: &[usize], index: &[usize]) -> usize {
        let lead = region.len() - shape.len();
        let mut at = 0;
        for (axis, &len) in shape.iter().enumerate() {
            let i = if len == 1 { 0 } else { index[lead + axis] };
            at = at * len + i;
        }
        at
    }

    /// The multi-indices of `shape` in row-major order.
    fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut e| {
                let mut index = vec![0; shape.len()];
                for (i, &len) in index.iter_mut().zip(shape).rev() {
                    *i = e % len;
                    e /= len;
                }
                index
            })
            .collect()
    }

    /// A tensor of `shape` (row-major, or given as a transposed or reversed view of the same
    /// elements) whose element `i` is a value of `i`.
    fn laid_out<T: Element>(shape: &[usize], layout: usize, seed: usize) -> Tensor<T> {
        let n: usize = shape.iter().product();
        let values = (0..n)
            .map(|i| T::from_f64(((i * 7 + seed * 3) % 23) as f64 / 8.0 - 1.25))
            .collect::<Vec<_>>();
        let row_major = Tensor::from_vec(values.clone(), shape);
        match layout {
            // Row-major.
            0 => row_major,
            // A permuted view: the data of the transposed shape, permuted back.
            1 if shape.len() >= 2 => {
                let k = shape.len();
                let mut perm: Vec<usize> = (0..k).collect();
                perm.swap(k - 2, k - 1);
                let swapped: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
                let t = row_major.permute(&perm);
                let view = Tensor::from_vec(t.to_vec(), &swapped).permute(&perm);
                assert_eq!(view.shape(), shape);
                view
            }
            // A reversed view (negative strides) of the reversed elements.
            _ => {
                let axes: Vec<usize> = (0..shape.len()).collect();
                Tensor::from_vec(row_major.flip(&axes).to_vec(), shape).flip(&axes)
            }
        }
    }

    /// Operand shapes broadcast against each other, read in place (one row over and over,
    /// each element a few times, long rows, tiles laid out), copied (not consecutive
    /// broadcast axes), empty and 0-d.
    const BROADCASTS: [(&[usize], &[usize]); 12] = [
        (&[4, 1, 3], &[1, 5, 3]),
        (&[300, 1, 3], &[1, 300, 3]),
        (&[7, 1], &[7, 3]),
        (&[7, 1], &[1, 40]),
        (&[2, 1, 1, 20], &[2, 3, 4, 20]),
        (&[5, 1, 2], &[5, 70, 2]),
        (&[3, 1, 4, 1], &[1, 2, 4, 5]),
        (&[1, 6, 1], &[3, 6, 2]),
        (&[0, 1, 3], &[1, 5, 3]),
        (&[4, 1, 3], &[1, 0, 3]),
        (&[], &[2, 3]),
        (&[], &[]),
    ];

    fn broadcast_operands_read_as_by_index<T: Element>() {
        for (sa, sb) in BROADCASTS {
            for layout in 0..3 {
                let a = laid_out::<T>(sa, layout, 1);
                let b = laid_out::<T>(sb, 2 - layout, 2);
                let region = broadcast_shapes("test", sa, sb).unwrap();
                let ops = "sub 0 1;mul 2 _";
                let inputs = [OperandRef::Tensor(&a), OperandRef::Tensor(&b)];
                let y = fused_map(ops, inputs, [2.0], |[a, b], [two], _| (a - b) * *two);
                assert_eq!(y.shape(), &region[..]);
                let (av, bv) = (a.to_vec(), b.to_vec());
                for (index, got) in indices(&region).iter().zip(y.to_vec()) {
                    let want = (av[broadcast_offset(sa, &region, index)]
                        - bv[broadcast_offset(sb, &region, index)])
                        * T::from_f64(2.0);
                    assert_eq!(got, want, "{sa:?} - {sb:?}, layout {layout}, at {index:?}");
                }
            }
        }
    }

    #[test]
    fn broadcast_operands_are_read_element_by_element_as_by_index() {
        broadcast_operands_read_as_by_index::<f64>();
        broadcast_operands_read_as_by_index::<f32>();
    }

    /// `(a - b)^2` summed over the last axis, in one pass (lanes of 1 to 9, of 3 at many
    /// bodies) against sums added in order by hand (bit for bit for lanes under eight, which
    /// the pairwise sum adds in order) and the unfused reduction (bit for bit); its gradient
    /// against sums over the broadcast axes by hand.
    fn short_lanes_reduce_as_by_hand<T: Element>() {
        let mut cases: Vec<(Vec<usize>, Vec<usize>)> = (1..=9)
            .map(|lane| (vec![6, 1, lane], vec![1, 11, lane]))
            .collect();
        cases.push((vec![200, 1, 3], vec![1, 200, 3]));
        cases.push((vec![0, 1, 3], vec![1, 4, 3]));
        cases.push((vec![3], vec![3]));
        cases.push((vec![2, 1, 8], vec![1, 3, 8]));
        for (sa, sb) in cases {
            for layout in 0..3 {
                let a = laid_out::<T>(&sa, layout, 3);
                let b = laid_out::<T>(&sb, 2 - layout, 4);
                let region = broadcast_shapes("test", &sa, &sb).unwrap();
                let lane = *region.last().unwrap();
                let ops = "sub 0 1;square 2 2";
                let inputs = [OperandRef::Tensor(&a), OperandRef::Tensor(&b)];
                let value = |[a, b]: [T; 2], _: &[T; 0], _: &Kernels| (a - b) * (a - b);
                let y = fused_reduce_axes(ops, inputs, [], Reduction::Sum, &[-1], false, value);
                let out_shape = &region[..region.len() - 1];
                assert_eq!(y.shape(), out_shape);
                let unfused = fused_map(ops, inputs, [], value).sum_axes(&[-1], false);
                same_bits(&y, &unfused);
                let points = indices(&region);
                let (av, bv) = (a.to_vec(), b.to_vec());
                let diff = |index: &Vec<usize>| {
                    av[broadcast_offset(&sa, &region, index)]
                        - bv[broadcast_offset(&sb, &region, index)]
                };
                for (o, got) in y.to_vec().into_iter().enumerate() {
                    let lane_points = &points[o * lane..(o + 1) * lane];
                    let mut want = T::zero();
                    let mut want_f64 = 0.0;
                    for index in lane_points {
                        let d = diff(index);
                        want += d * d;
                        want_f64 += d.to_real() * d.to_real();
                    }
                    if lane < 8 {
                        assert_eq!(got.to_real().to_bits(), want.to_real().to_bits());
                    }
                    assert!((got.to_real() - want_f64).abs() <= 1e-5 * want_f64.max(1.0));
                }
                // The gradient for a cotangent g of the sums: 2 (a - b) g summed over the axes
                // each operand was broadcast along.
                let g = laid_out::<T>(out_shape, 0, 5);
                let [da, db] = fused_reduce_axes_vjp(
                    ops,
                    inputs.map(FusedInput::Value),
                    [],
                    Reduction::Sum,
                    &[-1],
                    false,
                    [(0, 0), (1, 1)],
                    &g,
                    |[a, b]: [T; 2], _: &[T; 0], _: &Kernels, g: T| {
                        let d = (a - b) * g * T::from_f64(2.0);
                        [d, T::zero() - d]
                    },
                );
                assert_eq!(da.shape(), &sa[..]);
                assert_eq!(db.shape(), &sb[..]);
                let (mut want_a, mut want_b) = (vec![0.0; a.len()], vec![0.0; b.len()]);
                let gv = g.to_vec();
                for (e, index) in points.iter().enumerate() {
                    let d = 2.0 * diff(index).to_real() * gv[e / lane].to_real();
                    want_a[broadcast_offset(&sa, &region, index)] += d;
                    want_b[broadcast_offset(&sb, &region, index)] -= d;
                }
                for (got, want) in [(&da, want_a), (&db, want_b)] {
                    for (g, w) in got.to_vec().iter().zip(&want) {
                        assert!((g.to_real() - w).abs() <= 1e-5 * w.abs().max(1.0));
                    }
                }
            }
        }
    }

    /// Whether `a` and `b` are the same numbers in the same shape, of any element type.
    fn same_bits<T: Element>(a: &Tensor<T>, b: &Tensor<T>) {
        assert_eq!(a.shape(), b.shape());
        let bits = |t: &Tensor<T>| {
            t.to_vec()
                .iter()
                .map(|v| v.to_real().to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(a), bits(b));
    }

    /// `(a * b + c)` with `a`, `b` and the scalar `c` broadcast against each other, its
    /// cotangents summed into each input's shape as the loop makes them ([`Sink`]) against sums
    /// by index in `f64`: rows shorter and longer than a block, stacks shorter and longer than
    /// the sink's fold, one input read twice, and a result read by inputs of two shapes (written
    /// out, then summed).
    fn cotangents_are_summed_as_made<T: Element>() {
        let cases: [(&[usize], &[usize]); 7] = [
            (&[40, 1, 3], &[1, 500, 3]),
            (&[3, 1], &[3, 9000]),
            (&[1, 2000], &[300, 2000]),
            (&[7, 1, 1, 5], &[1, 13, 11, 5]),
            (&[1], &[70_000]),
            (&[65], &[129, 1]),
            (&[2, 1, 200], &[2, 300, 200]),
        ];
        for (sa, sb) in cases {
            let (a, b) = (laid_out::<T>(sa, 0, 1), laid_out::<T>(sb, 0, 2));
            let region = broadcast_shapes("test", sa, sb).unwrap();
            let g = laid_out::<T>(&region, 0, 3);
            let ops = "mul 0 1;add 3 2";
            let inputs = [
                OperandRef::Tensor(&a),
                OperandRef::Tensor(&b),
                OperandRef::Scalar(T::from_f64(0.5)),
            ];
            // d/da = g b, d/db = g a, d/dc = g; a's twice (a result read by one shape).
            let [da, db, dc, da2] = fused_vjp(
                ops,
                inputs.map(FusedInput::Value),
                [],
                [(0, 0), (1, 1), (2, 2), (0, 0)],
                &g,
                |[a, b, _]: [T; 3], _: &[T; 0], _: &Kernels, g: T| [g * b, g * a, g],
            );
            let (av, bv, gv) = (a.to_vec(), b.to_vec(), g.to_vec());
            let mut want = [vec![0.0; a.len()], vec![0.0; b.len()], vec![0.0]];
            for (e, index) in indices(&region).iter().enumerate() {
                let (ia, ib) = (
                    broadcast_offset(sa, &region, index),
                    broadcast_offset(sb, &region, index),
                );
                let g = gv[e].to_real();
                want[0][ia] += g * bv[ib].to_real();
                want[1][ib] += g * av[ia].to_real();
                want[2][0] += g;
            }
            let tolerance = if T::from_f64(1.0 + 1e-10).to_real() == 1.0 {
                1e-4
            } else {
                1e-12
            };
            for (got, want, shape) in [
                (&da, &want[0], sa),
                (&db, &want[1], sb),
                (&da2, &want[0], sa),
            ]
            .into_iter()
            .chain([(&dc, &want[2], &[][..])])
            {
                assert_eq!(got.shape(), shape, "{sa:?} * {sb:?}");
                let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
                for (g, w) in got.to_vec().iter().zip(want) {
                    assert!(
                        (g.to_real() - w).abs() <= tolerance * scale,
                        "{sa:?} * {sb:?}: {} against {w}",
                        g.to_real()
                    );
                }
            }
        }
        // The operands of `a + b`, `[4, 1]` and `[1, 6]`, share one result: written out, then
        // summed to each shape.
        let (a, b) = (laid_out::<T>(&[40, 1], 0, 1), laid_out::<T>(&[1, 60], 0, 2));
        let g = laid_out::<T>(&[40, 60], 0, 3);
        let [da, db] = fused_vjp(
            "add 0 1",
            [
                FusedInput::Value(OperandRef::Tensor(&a)),
                FusedInput::Value(OperandRef::Tensor(&b)),
            ],
            [],
            [(0, 0), (1, 0)],
            &g,
            |_: [T; 2], _: &[T; 0], _: &Kernels, g: T| [g],
        );
        same_bits(&da, &g.sum_axes(&[1], true));
        same_bits(&db, &g.sum_axes(&[0], true));
    }

    #[test]
    fn cotangents_of_broadcast_inputs_are_summed_as_made() {
        cotangents_are_summed_as_made::<f64>();
        cotangents_are_summed_as_made::<f32>();
    }

    #[test]
    fn a_region_of_a_few_elements_reads_views_and_scalars_by_index() {
        // y = a * b - c with a a slice of a larger tensor (shared storage), b held inline, c a
        // scalar; its cotangents with b given by its shape alone where its value is not read.
        let big = Tensor::from_vec((0..40).map(f64::from).collect(), &[10, 4]);
        let a = big.shrink(&[(2, 3), (0, 4)]).squeeze(0);
        assert!(!a.is_inline());
        let b = Tensor::from_parts(vec![0.5, -1.0, 2.0, 0.25], &[4]);
        assert!(b.is_inline());
        let ops = "mul 0 1;sub 3 2";
        let inputs = [
            OperandRef::Tensor(&a),
            OperandRef::Tensor(&b),
            OperandRef::Scalar(3.0),
        ];
        let y = fused_map(ops, inputs, [], |[a, b, c], [], _| a * b - c);
        assert!(y.is_inline());
        assert_eq!(
            y.to_vec(),
            vec![8.0 * 0.5 - 3.0, -9.0 - 3.0, 20.0 - 3.0, 2.75 - 3.0]
        );
        let g = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
        let [da, dc] = fused_vjp(
            ops,
            [
                FusedInput::Value(OperandRef::Tensor(&a)),
                FusedInput::Shape(b.shape()),
                FusedInput::Value(OperandRef::Scalar(3.0)),
            ],
            [],
            [(0, 0), (2, 1)],
            &g,
            // d/da = g b, read here as zeros: b is given by its shape; d/dc = -g, summed.
            |[_, b, _], [], _, g| [g * b, -g],
        );
        assert_eq!(da.to_vec(), vec![0.0; 4]);
        assert_eq!(dc.shape(), &[] as &[usize]);
        assert_eq!(dc.item(), -10.0);
        // A tensor of another shape beside them takes the broadcasting path.
        let col = t(&[1.0, 2.0], &[2, 1]);
        let y = fused_map(
            "mul 0 1",
            [OperandRef::Tensor(&col), OperandRef::Tensor(&b)],
            [],
            |[x, y], [], _| x * y,
        );
        assert_eq!(y.shape(), &[2, 4]);
        assert_eq!(y.to_vec(), vec![0.5, -1.0, 2.0, 0.25, 1.0, -2.0, 4.0, 0.5]);
    }

    #[test]
    fn short_lanes_are_reduced_as_by_hand() {
        short_lanes_reduce_as_by_hand::<f64>();
        short_lanes_reduce_as_by_hand::<f32>();
    }

    /// `sum_to_shape` over consecutive axes (one pass over stacks of rows) and others, against
    /// sums by index.
    fn sums_to_shapes_as_by_index<T: Element>() {
        let cases: [(&[usize], &[usize]); 10] = [
            (&[6, 300, 3], &[6, 1, 3]),
            (&[6, 300, 3], &[300, 3]),
            (&[6, 300, 3], &[1, 1, 3]),
            (&[6, 5, 3], &[6, 5, 1]),
            (&[6, 5, 3], &[6, 1, 1]),
            (&[6, 5, 3], &[1, 5, 1]),
            (&[4, 1, 5], &[4, 1, 1]),
            (&[6, 0, 3], &[6, 1, 3]),
            (&[6, 5, 3], &[]),
            (&[], &[]),
        ];
        for (gs, shape) in cases {
            for layout in 0..3 {
                let g = laid_out::<T>(gs, layout, 6);
                let got = sum_to_shape(&g, shape);
                assert_eq!(got.shape(), shape);
                let ones = Tensor::<T>::zeros(shape);
                let mut want = vec![0.0; ones.len()];
                let gv = g.to_vec();
                for (e, index) in indices(gs).iter().enumerate() {
                    want[broadcast_offset(shape, gs, index)] += gv[e].to_real();
                }
                for (g, w) in got.to_vec().iter().zip(&want) {
                    assert!(
                        (g.to_real() - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "{gs:?} to {shape:?}, layout {layout}: {} against {w}",
                        g.to_real()
                    );
                }
            }
        }
    }

    #[test]
    fn sums_to_shapes_are_sums_by_index() {
        sums_to_shapes_as_by_index::<f64>();
        sums_to_shapes_as_by_index::<f32>();
    }
}
