//! The loop every region runs: blocks of inputs filled, a closure run on their columns, its
//! outputs written or summed (`Out`, [`Sink`]), split across threads where that is safe.

use std::borrow::Cow;
use std::cell::Cell;
use std::ops::Range;

use super::*;
use crate::broadcast::{run_folding, same_shape};
use crate::element::operand::OperandRef;
use crate::element::Element;
use crate::error::OrPanic;
use crate::error::ShapeError;
use crate::summation::{block_sum, SUM_BLOCK};

/// Calls `body(n, xs, ys)` for each block of `B` of the elements of `range`, in order, `xs[k][..n]`
/// holding the block's `n` elements of source `xs_from[k]`, and `ys` those of `ys_from` (the
/// cotangent, or the tangents). The callers write each block's results to their outputs
/// ([`Out`]), so that no output is filled with zeros first.
///
/// The blocks are arrays of a constant size: a whole block of an input of the region's shape
/// in row-major order is its data in place, any other a local array filled from its source.
/// The callers evaluate a region over whole blocks (the elements past `n` of the last one are
/// left from the block before, or zero: their results are not written), so their loops have a
/// constant trip count, no bounds checks and no remainder, and LLVM vectorises them completely.
#[inline(always)]
pub(super) fn for_blocks<T: Element, const N: usize, const M: usize, const B: usize>(
    range: Range<usize>,
    xs_from: &[Source<'_, T>; N],
    ys_from: &[Source<'_, T>; M],
    body: impl FnMut(usize, &[&[T; B]; N], &[&[T; B]; M]),
) {
    for_steps(range, B, xs_from, ys_from, body);
}

/// [`for_blocks`] with `step` (at most `B`) elements a block: the rest of each block is left
/// as the block before had it. A reduction over short lanes steps by whole lanes.
#[inline(always)]
pub(super) fn for_steps<T: Element, const N: usize, const M: usize, const B: usize>(
    range: Range<usize>,
    step: usize,
    xs_from: &[Source<'_, T>; N],
    ys_from: &[Source<'_, T>; M],
    mut body: impl FnMut(usize, &[&[T; B]; N], &[&[T; B]; M]),
) {
    debug_assert!(step > 0 && step <= B);
    let (mut xs, mut ys) = (splats(xs_from), splats(ys_from));
    let mut start = range.start;
    while start < range.end {
        let n = step.min(range.end - start);
        fill_blocks(&mut xs, xs_from, start, n);
        fill_blocks(&mut ys, ys_from, start, n);
        body(
            n,
            &blocks_at(&xs, xs_from, start, n),
            &blocks_at(&ys, ys_from, start, n),
        );
        start += n;
    }
}

// The helpers of the loops below are generic over the element type and the sizes only, not
// over a region's closure, so that every region of the same arity shares one copy of each:
// a debug build of many differentiated functions compiles them once.

/// The blocks of `N` sources, a scalar's filled with it and the others' with zeros.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn splats<T: Element, const N: usize, const B: usize>(
    from: &[Source<'_, T>; N],
) -> [[T; B]; N] {
    let mut blocks = [[T::zero(); B]; N];
    for (b, s) in blocks.iter_mut().zip(from) {
        if let Source::Splat(v) = s {
            b.fill(*v);
        }
    }
    blocks
}

/// The whole block of `B` elements of `source` from `start` on, in place: where the source is
/// data of the region's shape and the block is whole.
#[inline(always)]
fn in_place<'a, T, const B: usize>(
    source: &Source<'a, T>,
    start: usize,
    n: usize,
) -> Option<&'a [T; B]> {
    match source {
        Source::Slice(s) if n == B => s[start..start + B].try_into().ok(),
        // A block inside a padded tensor's input.
        Source::Padded { data, before, .. } if n == B && start >= *before => data
            .get(start - before..start - before + B)?
            .try_into()
            .ok(),
        _ => None,
    }
}

/// Fills the first `n` elements of each block with its source's elements from `start` on
/// (a scalar's block is filled once, by [`splats`]; a block read in place, not at all).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn fill_blocks<T: Element, const N: usize, const B: usize>(
    blocks: &mut [[T; B]; N],
    from: &[Source<'_, T>; N],
    start: usize,
    n: usize,
) {
    for (b, s) in blocks.iter_mut().zip(from) {
        if !matches!(s, Source::Splat(_)) && in_place::<T, B>(s, start, n).is_none() {
            s.fill(start, &mut b[..n]);
        }
    }
}

/// Each source's block from `start` on: its data in place ([`in_place`]), or the local block
/// [`fill_blocks`] filled.
///
/// Filling and choosing are two steps on purpose: one function that fills the local block
/// and returns either reference (through `each_mut`) ran RK4's regions about 8% slower.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn blocks_at<'a, T: Element, const N: usize, const B: usize>(
    blocks: &'a [[T; B]; N],
    from: &[Source<'a, T>; N],
    start: usize,
    n: usize,
) -> [&'a [T; B]; N] {
    // Not `array::from_fn`, which the compiler leaves a call (`try_from_fn`) in every block's
    // iteration of the loops over many inputs: 6% of an RK4 step's gradient at n = 1000.
    let mut at = blocks.each_ref();
    for (a, source) in at.iter_mut().zip(from) {
        if let Some(b) = in_place(source, start, n) {
            *a = b;
        }
    }
    at
}

/// Element `e` of each of `N` blocks.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn column<T: Element, const N: usize, const B: usize>(
    blocks: &[&[T; B]; N],
    e: usize,
) -> [T; N] {
    let mut c = [T::zero(); N];
    for (c, b) in c.iter_mut().zip(blocks) {
        *c = b[e];
    }
    c
}

/// Sets element `e` of each of `K` blocks.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn set_column<T: Element, const K: usize, const B: usize>(
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
pub(super) fn put_blocks<T: Element, const K: usize, const B: usize>(
    outs: &mut [Out<'_, T>; K],
    blocks: &[[T; B]; K],
    n: usize,
) {
    for (o, b) in outs.iter_mut().zip(blocks) {
        o.put_first(b, n);
    }
}

/// Appends the sum of the first `n` elements of each block to its list of block sums.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn push_sums<T: Element, const K: usize, const B: usize>(
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
/// The `Sum` variants write each element plus that of an adjoint read beside it, and
/// `AddInPlace` adds into an adjoint's own buffer ([`AddTo`]); `AddAt` adds at offsets into
/// adjoints other outputs may add into too ([`AddAt`]), the second field the region's element
/// the next block starts at.
pub(super) enum Out<'a, T> {
    Append(&'a mut Vec<T>),
    AppendSum(&'a mut Vec<T>, &'a [T]),
    AddInPlace(&'a mut [T]),
    AddAt(&'a [AddAt<'a, T>], usize),
    #[cfg(feature = "parallel")]
    Write(&'a mut [T]),
    #[cfg(feature = "parallel")]
    WriteSum(&'a mut [T], &'a [T]),
    Sink(&'a mut Sink<T>),
}

impl<T: Element> Out<'_, T> {
    /// Writes the first `n` elements of a block: a whole block as a copy of a constant size,
    /// which the compiler writes as a few vector moves instead of a call of `memcpy`.
    #[inline(always)]
    pub(super) fn put_first<const B: usize>(&mut self, block: &[T; B], n: usize) {
        if n == B {
            self.put(block);
        } else {
            self.put(&block[..n]);
        }
    }

    /// Writes the next elements.
    #[inline(always)]
    pub(super) fn put(&mut self, block: &[T]) {
        match self {
            Out::Append(v) => v.extend_from_slice(block),
            Out::AppendSum(v, from) => {
                let (head, tail) = from.split_at(block.len());
                v.extend(head.iter().zip(block).map(|(&a, &b)| a + b));
                *from = tail;
            }
            Out::AddInPlace(s) => {
                let (head, tail) = std::mem::take(s).split_at_mut(block.len());
                head.iter_mut().zip(block).for_each(|(a, &b)| *a += b);
                *s = tail;
            }
            Out::AddAt(adds, at) => {
                for add in *adds {
                    add.add(*at, block);
                }
                *at += block.len();
            }
            Out::Sink(s) => s.add(block),
            #[cfg(feature = "parallel")]
            Out::Write(s) => {
                let (head, tail) = std::mem::take(s).split_at_mut(block.len());
                head.copy_from_slice(block);
                *s = tail;
            }
            #[cfg(feature = "parallel")]
            Out::WriteSum(s, from) => {
                let (head, tail) = std::mem::take(s).split_at_mut(block.len());
                let (add, rest) = from.split_at(block.len());
                for ((h, &a), &b) in head.iter_mut().zip(add).zip(block) {
                    *h = a + b;
                }
                *s = tail;
                *from = rest;
            }
        }
    }
}

/// Where a loop adds an output's elements in an adjoint's buffer that several outputs add into
/// (`fused_vjp_routed`): element `e` of the region to element `e + at` of the buffer, those
/// that land in `lo..hi` (the rest are dropped: they are the fill a window's `pad` added). The
/// buffer is a slice of cells, because two outputs of one loop may add into it.
pub(super) struct AddAt<'a, T> {
    pub(super) buffer: &'a [Cell<T>],
    pub(super) at: isize,
    pub(super) lo: usize,
    pub(super) hi: usize,
}

impl<T: Element> AddAt<'_, T> {
    /// Adds `block`, the region's elements from `start` on.
    #[inline(always)]
    fn add(&self, start: usize, block: &[T]) {
        // The buffer's element that block element 0 lands on, and the block's part in lo..hi.
        let first = start as isize + self.at;
        let from = (self.lo as isize - first).clamp(0, block.len() as isize) as usize;
        let to = (self.hi as isize - first).clamp(from as isize, block.len() as isize) as usize;
        if from == to {
            return;
        }
        let begin = (first + from as isize) as usize;
        let into = &self.buffer[begin..begin + (to - from)];
        for (a, &b) in into.iter().zip(&block[from..to]) {
            a.set(a.get() + b);
        }
    }
}

/// What a loop adds its values of one output to: nothing (the output is the values), or an
/// adjoint of the loop's length in row-major order, in its own buffer when that buffer is the
/// adjoint's alone (`InPlace`: the output is left empty) or read beside the values into a new
/// one (`Beside`: its storage is shared). Adding as the loop makes the values saves the pass
/// over three buffers that adding the finished output would take.
pub(super) enum AddTo<'a, T> {
    Nothing,
    InPlace(&'a mut [T]),
    Beside(&'a [T]),
}

/// Runs a loop over `len` elements that writes `K` outputs of `len` elements and `S` lists of
/// block sums: `run(range, outs, sums)` runs it over `range`. On one thread (see
/// [`crate::parallel`]) it is run once over everything, appending to outputs allocated
/// without zero-fill; split, each range's part runs on the pool, writing into its part of the
/// outputs, and the ranges' block sums are joined in order. Ranges start at multiples of
/// `align`, the loop's block.
pub(super) fn drive<T: Element, const K: usize, const S: usize>(
    len: usize,
    align: usize,
    run: impl Fn(Range<usize>, [Out<'_, T>; K], &mut [BlockSums<T>; S]) + Sync,
) -> ([Vec<T>; K], [BlockSums<T>; S]) {
    let adds = std::array::from_fn(|_| AddTo::Nothing);
    drive_into(len, align, [None; K], adds, run)
}

/// [`drive`], with the outputs that `sinks` gives a folding of summed into a [`Sink`] of it
/// instead of written out (those outputs are the sums, `a * c` elements each), and those
/// `adds` gives an adjoint added to it ([`AddTo`]). A loop with a sink runs on one thread, so
/// that its sums are the same bits on any number of threads (a sink's memory traffic is a
/// fraction of the outputs' it replaces).
pub(super) fn drive_into<T: Element, const K: usize, const S: usize>(
    len: usize,
    align: usize,
    sinks: [Option<Folding>; K],
    adds: [AddTo<'_, T>; K],
    run: impl Fn(Range<usize>, [Out<'_, T>; K], &mut [BlockSums<T>; S]) + Sync,
) -> ([Vec<T>; K], [BlockSums<T>; S]) {
    #[cfg(feature = "parallel")]
    if sinks.iter().all(Option::is_none) {
        if let Some(ranges) = crate::parallel::split(len, align) {
            return drive_split(len, ranges, adds, run);
        }
    }
    let _ = align;
    let mut outs: [Vec<T>; K] = std::array::from_fn(|k| match (&sinks[k], &adds[k]) {
        (Some(_), _) | (_, AddTo::InPlace(_)) => Vec::new(),
        _ => Vec::with_capacity(len),
    });
    let mut sink_of = sinks.map(|f| f.map(|f| Sink::new(f, 0)));
    let mut sums = sums_for(len);
    let mut adds = adds.into_iter();
    let appended = outs.each_mut().map(|out| match adds.next() {
        Some(AddTo::InPlace(s)) => Out::AddInPlace(s),
        Some(AddTo::Beside(from)) => Out::AppendSum(out, from),
        _ => Out::Append(out),
    });
    run(0..len, outs_of(appended, &mut sink_of), &mut sums);
    for (out, sink) in outs.iter_mut().zip(sink_of) {
        if let Some(sink) = sink {
            *out = sink.finish();
        }
    }
    (outs, sums)
}

/// `outs`, each replaced by its sink where it has one.
pub(super) fn outs_of<'a, T, const K: usize>(
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
pub(super) struct Folding {
    pub(super) a: usize,
    pub(super) r: usize,
    pub(super) c: usize,
}

impl Folding {
    /// The folding of the cotangent of an input of shape `t` into a region of `shape` (of
    /// `len` elements, at least one), when `t` is broadcast along one run of its axes.
    pub(super) fn of(t: &[usize], shape: &[usize], len: usize) -> Option<Folding> {
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
pub(super) struct Sink<T> {
    pub(super) acc: Vec<T>,
    pub(super) wide: Vec<T>,
    /// Elements of the region in a stack, `r * c`.
    pub(super) period: usize,
    pub(super) c: usize,
    /// The region's element the next add starts at.
    pub(super) at: usize,
    /// The stack `wide` holds elements of.
    pub(super) stack: usize,
    /// Elements added into `wide` since it was last folded.
    pub(super) pending: usize,
    /// How far into `wide` those elements reach: the rows a fold adds and clears.
    pub(super) touched: usize,
}

impl<T: Element> Sink<T> {
    /// A sink for the elements from `start` on.
    pub(super) fn new(Folding { a, r, c }: Folding, start: usize) -> Self {
        let width = c * BLOCK.div_ceil(c);
        Sink {
            acc: vec![T::zero(); a * c],
            wide: vec![T::zero(); width],
            period: r * c,
            c,
            at: start,
            stack: start / (r * c),
            pending: 0,
            touched: 0,
        }
    }

    /// Adds the region's next elements: a call a block, out of line, so that the loops that
    /// write their outputs out keep their code as it was.
    #[inline(never)]
    pub(super) fn add(&mut self, mut values: &[T]) {
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
                self.touched = self.touched.max(p + m);
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
    pub(super) fn fold(&mut self) {
        if self.pending == 0 {
            return;
        }
        let c = self.c;
        let sums = &mut self.acc[self.stack * c..(self.stack + 1) * c];
        // Only the rows written since the last fold: a region shorter than a block (a small
        // tensor's sum) folds its length, not the block's.
        let wide = &mut self.wide[..self.touched.div_ceil(c) * c];
        if let [sum] = sums {
            // One sum, kept in a register: the same additions in the same order.
            *sum = wide.iter().fold(*sum, |s, &v| s + v);
        } else {
            for row in wide.chunks_exact(c) {
                for (s, &v) in sums.iter_mut().zip(row) {
                    *s += v;
                }
            }
        }
        wide.fill(T::zero());
        self.pending = 0;
        self.touched = 0;
    }

    /// The sums.
    pub(super) fn finish(mut self) -> Vec<T> {
        self.fold();
        self.acc
    }
}

/// The sums of `len` elements' blocks: room for one a block.
pub(super) fn sums_for<T: Copy, const S: usize>(len: usize) -> [BlockSums<T>; S] {
    std::array::from_fn(|_| BlockSums::for_len(len))
}

/// The block sums of a loop, in order. A loop of one block (every region of at most
/// [`SUM_BLOCK`] elements) keeps its one sum inline, without an allocation.
pub(super) enum BlockSums<T> {
    /// No sum yet, or the first.
    Inline(Option<T>),
    /// The sums of a loop of more than one block.
    Heap(Vec<T>),
}

impl<T: Copy> BlockSums<T> {
    /// Room for the block sums of `len` elements.
    pub(super) fn for_len(len: usize) -> Self {
        if len <= SUM_BLOCK {
            BlockSums::Inline(None)
        } else {
            BlockSums::Heap(Vec::with_capacity(len / SUM_BLOCK + 1))
        }
    }

    /// Appends the next block's sum.
    #[inline(always)]
    pub(super) fn push(&mut self, sum: T) {
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
    pub(super) fn as_slice(&self) -> &[T] {
        match self {
            BlockSums::Inline(sum) => sum.as_slice(),
            BlockSums::Heap(sums) => sums,
        }
    }
}

/// [`drive`] split into `ranges` on the thread pool.
#[cfg(feature = "parallel")]
pub(super) fn drive_split<T: Element, const K: usize, const S: usize>(
    len: usize,
    ranges: Vec<Range<usize>>,
    adds: [AddTo<'_, T>; K],
    run: impl Fn(Range<usize>, [Out<'_, T>; K], &mut [BlockSums<T>; S]) + Sync,
) -> ([Vec<T>; K], [BlockSums<T>; S]) {
    let in_place: [bool; K] = std::array::from_fn(|k| matches!(adds[k], AddTo::InPlace(_)));
    let sum_beside: [bool; K] = std::array::from_fn(|k| matches!(adds[k], AddTo::Beside(_)));
    let mut outs: [Vec<T>; K] = std::array::from_fn(|k| match in_place[k] {
        true => Vec::new(),
        false => vec![T::zero(); len],
    });
    // Each range with its part of every output: the part of its own output, or of the
    // adjoint added into in place, and the part of an adjoint read beside it.
    let mut adds = adds.into_iter();
    let mut rests: [(&mut [T], &[T]); K] = outs.each_mut().map(|o| match adds.next() {
        Some(AddTo::InPlace(s)) => (s, &[][..]),
        Some(AddTo::Beside(from)) => (o.as_mut_slice(), from),
        _ => (o.as_mut_slice(), &[][..]),
    });
    let mut pieces = Vec::with_capacity(ranges.len());
    for range in ranges {
        let parts = rests.each_mut().map(|(rest, from)| {
            let (head, tail) = std::mem::take(rest).split_at_mut(range.len());
            *rest = tail;
            let (add, later) = from.split_at(range.len().min(from.len()));
            *from = later;
            (head, add)
        });
        pieces.push((range, parts));
    }
    let piece_sums = crate::parallel::map_items(pieces, |(range, parts)| {
        let mut sums = sums_for(range.len());
        let mut k = 0;
        let parts = parts.map(|(part, from)| {
            let out = if in_place[k] {
                Out::AddInPlace(part)
            } else if sum_beside[k] {
                Out::WriteSum(part, from)
            } else {
                Out::Write(part)
            };
            k += 1;
            out
        });
        run(range, parts, &mut sums);
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
pub(super) fn same_shape_sources<'a, T: Element, const N: usize>(
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
            Some(OperandRef::Tensor(t)) => *source = flat_source(t)?,
            Some(OperandRef::Scalar(v)) => *source = Source::Splat(*v),
            None => {}
        }
    }
    Some((shape?, sources))
}

/// The region's shape, each input's shape (`None` for a scalar) and each input's source. An
/// input given by its shape alone stands for zeros: the closures do not read it.
#[allow(clippy::type_complexity)]
pub(super) fn prepare<'a, T: Element, const N: usize>(
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
pub(super) fn value_sources<'a, T: Element, const N: usize>(
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
