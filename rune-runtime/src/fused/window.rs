//! The backward pass of a fused region some of whose inputs are windows of another tensor:
//! `x.shrink(..).pad(..)` along the first axis (a shift `y[..n-1]` padded by one in front, a
//! stencil's neighbours), read in place by the forward pass (`tensor/padded.rs`).
//!
//! Through the ops, such an input's cotangent is written out by the region's loop, cut by
//! `pad`'s VJP and added into `x`'s adjoint by `shrink`'s: a buffer and two passes for each
//! window, where a stencil reads several windows of one tensor (an RK4 step written over the
//! shifts of its state reads four). [`fused_vjp_routed`] adds each window's cotangent into
//! `x`'s adjoint at its offset as the loop makes it, so that the step's backward pass is one
//! loop that adds into the adjoints of the tensors the windows cut.

use std::cell::Cell;

use arrayvec::ArrayVec;

use super::*;
use crate::broadcast::same_shape;
use crate::element::operand::OperandRef;
use crate::element::Element;
use crate::ops::slice::rules::{pad_vjp, shrink_vjp_into};
use crate::slots::accumulate;
use crate::tensor::{Tensor, INLINE};
use crate::vmath::{vectorised, Kernels};

/// Where [`fused_vjp_routed`] adds a target's cotangent.
#[derive(Clone, Copy, Debug)]
pub enum Route<'a> {
    /// Into adjoint `slot`, as [`fused_vjp_into`] adds it.
    Slot(usize),
    /// The input is `x.shrink(shrink).pad(pad, _)` for an `x` of `shape`: into `x`'s adjoint,
    /// `slot`, as the VJPs of `pad` and then `shrink` would add it.
    Window {
        /// The adjoint of `x`.
        slot: usize,
        /// The shape of `x`.
        shape: &'a [usize],
        /// The ranges `shrink` cut `x` to.
        shrink: &'a [(usize, usize)],
        /// The runs `pad` added before and after each axis.
        pad: &'a [(usize, usize)],
    },
}

/// A target's cotangent added into adjoint `slot` ([`Route::Slot`]).
#[inline]
pub fn fused_route(slot: usize) -> Route<'static> {
    Route::Slot(slot)
}

/// A target's cotangent added into adjoint `slot`, that of the `x` of `shape` the input is
/// the window `x.shrink(shrink).pad(pad, _)` of ([`Route::Window`]).
#[inline]
pub fn fused_window<'a>(
    slot: usize,
    shape: &'a [usize],
    shrink: &'a [(usize, usize)],
    pad: &'a [(usize, usize)],
) -> Route<'a> {
    Route::Window {
        slot,
        shape,
        shrink,
        pad,
    }
}

/// [`fused_vjp_into`] where target `m`'s cotangent goes where `routes[m]` says: into one of
/// `adjoints` (which several targets may share), or, for a window of another tensor, into that
/// tensor's adjoint at the window's offset. When every input is of the region's shape and each
/// window cuts and pads the first axis alone, the loop adds every cotangent where it goes as it
/// makes it, into the adjoints' own buffers (an absent adjoint starts as zeros, a shared one is
/// copied first), and skips the elements where the cotangent `g` is a padded zero; otherwise the cotangents are made as [`fused_vjp`] makes them and added
/// through the VJPs of `pad` and `shrink`. Either way the adjoints end as the ops would leave
/// them, up to the order of additions.
///
/// # Panics
/// As [`fused_vjp`], and when an adjoint's shape differs from the tensor's it is the adjoint of.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_vjp_routed<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
    const S: usize,
>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
    routes: [Route<'_>; M],
    adjoints: [&mut Option<Tensor<T>>; S],
) {
    #[cfg(debug_assertions)]
    let f: &CotangentFn<'_, T, N, L, K> = &f;
    match plan(&inputs, g, &targets, &routes, &adjoints) {
        Some(plan) => add_routed(plan, &targets, literals, f, adjoints),
        None => {
            let none = std::array::from_fn(|_| None);
            let made = vjp_region(ops, inputs, literals, targets, g, f, none).map(made);
            add_through_ops(made, &routes, adjoints);
        }
    }
}

/// The cotangents `made` added where `routes` says, through the VJPs of `pad` and `shrink`
/// for a window. Out of line: the general path of a region that mostly takes the fast one.
#[inline(never)]
fn add_through_ops<T: Element, const M: usize, const S: usize>(
    made: [Tensor<T>; M],
    routes: &[Route<'_>; M],
    adjoints: [&mut Option<Tensor<T>>; S],
) {
    for (cotangent, route) in made.into_iter().zip(routes) {
        match *route {
            Route::Slot(slot) => accumulate(adjoints[slot], cotangent),
            Route::Window {
                slot,
                shape,
                shrink,
                pad,
            } => shrink_vjp_into(adjoints[slot], &pad_vjp(&cotangent, pad), shape, shrink),
        }
    }
}

/// What the fast path of [`fused_vjp_routed`] runs on: the region's sources, each target's
/// place in its adjoint, and each adjoint's shape.
struct Plan<'a, T, const N: usize, const M: usize, const S: usize> {
    len: usize,
    sources: [Source<'a, T>; N],
    g: Source<'a, T>,
    /// Each target's adjoint, the offset of a region element's element in it, and the part
    /// `lo..hi` of it the target reaches.
    places: [(usize, isize, usize, usize); M],
    /// Each adjoint's shape (`None` for one no target reaches).
    shapes: [Option<&'a [usize]>; S],
}

/// The fast path's plan, when it applies (see [`fused_vjp_routed`]).
fn plan<'a, T: Element, const N: usize, const M: usize, const S: usize>(
    inputs: &[FusedInput<'a, T>; N],
    g: &'a Tensor<T>,
    targets: &[(usize, usize); M],
    routes: &[Route<'a>; M],
    adjoints: &[&mut Option<Tensor<T>>; S],
) -> Option<Plan<'a, T, N, M, S>> {
    let (shape, sources, g_source) = direct_vjp_sources(inputs, g)?;
    let len: usize = shape.iter().product();
    if len <= INLINE {
        return None;
    }
    let mut shapes: [Option<&'a [usize]>; S] = [None; S];
    let mut places = [(0, 0, 0, 0); M];
    for ((&(i, _), route), place) in targets.iter().zip(routes).zip(&mut places) {
        // A scalar's cotangent is a sum (every other input has the region's shape, above).
        if matches!(inputs[i], FusedInput::Value(OperandRef::Scalar(_))) {
            return None;
        }
        let (slot, of, (at, lo, hi)) = match *route {
            Route::Slot(slot) => (slot, shape, (0, 0, len)),
            Route::Window {
                slot,
                shape: of,
                shrink,
                pad,
            } => (slot, of, window_place(of, shrink, pad, shape)?),
        };
        match shapes[slot] {
            Some(s) if !same_shape(s, of) => return None,
            _ => shapes[slot] = Some(of),
        }
        *place = (slot, at, lo, hi);
    }
    let fits = shapes
        .iter()
        .zip(adjoints)
        .all(|(s, a)| match (s, a.as_ref()) {
            (Some(s), Some(a)) => same_shape(a.shape(), s),
            _ => true,
        });
    fits.then_some(Plan {
        len,
        sources,
        g: g_source,
        places,
        shapes,
    })
}

/// Where the window `x.shrink(shrink).pad(pad, _)` of an `x` of shape `of`, read by a region
/// of `shape`, lies in `x`: the offset of a region element's `x` element and the part of `x`
/// it reaches, when the window cuts and pads the first axis alone.
fn window_place(
    of: &[usize],
    shrink: &[(usize, usize)],
    pad: &[(usize, usize)],
    shape: &[usize],
) -> Option<(isize, usize, usize)> {
    let rank = of.len();
    if rank == 0 || shrink.len() != rank || pad.len() != rank || shape.len() != rank {
        return None;
    }
    let rest_whole = (1..rank).all(|a| shrink[a] == (0, of[a]) && pad[a] == (0, 0));
    let ((start, end), (before, after)) = (shrink[0], pad[0]);
    if !rest_whole || start > end || end > of[0] || before + (end - start) + after != shape[0] {
        return None;
    }
    let row: usize = of[1..].iter().product();
    let at = (start as isize - before as isize) * row as isize;
    Some((at, start * row, end * row))
}

/// The fast path: the adjoints taken out of their slots ([`hold`]), one loop adding each
/// result into the adjoints at its targets' places, and the adjoints put back.
#[inline(always)]
fn add_routed<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
    const S: usize,
>(
    plan: Plan<'_, T, N, M, S>,
    targets: &[(usize, usize); M],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
    mut adjoints: [&mut Option<Tensor<T>>; S],
) {
    let Plan {
        len,
        sources,
        g,
        places,
        shapes,
    } = plan;
    let mut held = hold(&mut adjoints, &shapes);
    {
        let buffers = held.each_mut().map(|a| {
            a.as_mut()
                .and_then(Tensor::unique_slice_mut)
                .map(|s| Cell::from_mut(s).as_slice_of_cells())
        });
        let mut adds: [ArrayVec<AddAt<'_, T>, M>; K] = std::array::from_fn(|_| ArrayVec::new());
        for (&(_, k), &(slot, at, lo, hi)) in targets.iter().zip(&places) {
            adds[k].push(AddAt {
                buffer: buffers[slot].expect("an adjoint held for each target"),
                at,
                lo,
                hi,
            });
        }
        let literals = literals.map(T::from_f64);
        let range = nonzero(&g, len);
        let outs = adds.each_ref().map(|a| Out::AddAt(a, range.start));
        let sources = (&sources, &[g]);
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || vjp_blocks::<T, N, L, K, B>(range, outs, sources, &literals, &f),
        ));
    }
    for (adjoint, held) in adjoints.iter_mut().zip(held) {
        if held.is_some() {
            **adjoint = held;
        }
    }
}

/// The elements of a region's cotangent `g` (of `len` elements) outside which it is zero: the
/// input of a padded cotangent not written out with a zero fill (the cotangent of a `shrink`,
/// such as one component of a vector's), else all of them. Every cotangent the region gives
/// is a strong-zero product of `g` (`strong_mul`), so the elements where `g` is zero add
/// nothing to any adjoint, and the loop skips them.
fn nonzero<T: Element>(g: &Source<'_, T>, len: usize) -> std::ops::Range<usize> {
    match g {
        Source::Padded { data, before, fill } if fill.is_exact_zero() => {
            (*before).min(len)..(before + data.len()).min(len)
        }
        _ => 0..len,
    }
}

/// The adjoints the targets reach (`shapes[j]` given), taken out of their slots, each a buffer
/// of its own in row-major order: zeros where absent, a copy where shared or in another form.
#[inline(never)]
fn hold<T: Element, const S: usize>(
    adjoints: &mut [&mut Option<Tensor<T>>; S],
    shapes: &[Option<&[usize]>; S],
) -> [Option<Tensor<T>>; S] {
    std::array::from_fn(|j| {
        let shape = shapes[j]?;
        Some(match adjoints[j].take() {
            None => Tensor::zeros(shape),
            Some(mut a) => match a.unique_slice_mut() {
                Some(_) => a,
                None => Tensor::from_vec(a.to_vec(), shape),
            },
        })
    })
}
