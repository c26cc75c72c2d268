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
//!   [`fused_vjp_into`] adds each cotangent to its input's adjoint instead, as the loop makes
//!   it where the adjoint is row-major and of the region's shape (in place when its buffer is
//!   its own): the generated backward pass of every region without a reduction, which saves
//!   the pass over three buffers that adding a finished cotangent takes. A region of at most
//!   16 elements computes its one block of cotangents on the stack and adds each to its
//!   adjoint from there (`deliver_small`): on a loop over short vectors this bookkeeping, not
//!   the arithmetic, is the cost. [`fused_vjp_routed`] is the same where some inputs are
//!   windows of another tensor, `x.shrink(..).pad(..)` (a stencil's shifted neighbours): their
//!   cotangents go into `x`'s adjoint at their offsets, in the loop where each window cuts
//!   and pads the first axis alone, so that a stencil's backward pass is one loop.
//! - [`fused_jvp`]: the value and its tangent in one pass. The generated code hands it the
//!   closure of the value and the cotangents, which [`fused_tangent_of`] turns into the tangent
//!   (the partial derivatives weighted by the inputs' tangents), and [`fused_vjp`] that same
//!   closure through [`fused_cotangents_of`]: a region's derivative code is written once.
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
//! of the region's shape is read from its data (a padded tensor not written out, from its
//! input, with the fill around it), one broadcast along leading axes only (a bias)
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
//!
//! The files: `sources.rs` reads the inputs a block at a time, `drive.rs` runs the loop and
//! writes or sums its outputs, `map.rs` holds the regions without a reduction, `window.rs` the
//! backward pass of those that read windows, and `reduce.rs` those that end in one; this file the shared constants, the small helpers the generated code
//! calls, and the tests.

use crate::element::{strong_mul, Element};
use crate::tensor::Tensor;
use crate::vmath::Kernels;

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

#[macro_use]
mod drive;
mod map;
mod reduce;
mod sources;
mod window;

use drive::*;
pub use map::*;
pub use reduce::*;
use sources::*;
pub use window::*;

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

/// A region's value and tangent from its partial derivatives: `f(x, literals, kernels, 1)`
/// gives the element's value and its inputs' cotangents for a cotangent of one, which are the
/// element's partial derivatives (an element of the result reads one element of each input),
/// and the tangent is their sum weighted by the inputs' tangents `u`, as `slots` pairs them
/// (`TangentSlots`). A zero tangent contributes zero, even through an infinite partial.
///
/// So forward mode runs the closure that reverse mode runs, and rustc checks a region's
/// derivative code once. The cost per element is about a forward tangent's: one sweep over the
/// region's ops for the partials instead of one for the tangent.
#[inline(always)]
pub fn fused_tangent_of<T, const N: usize, const L: usize, const S: usize, const K: usize, P>(
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; S]) + Sync,
    slots: P,
) -> impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync
where
    T: Element,
    P: TangentSlots<T, S, K>,
{
    let _ = slots;
    #[inline(always)]
    move |x, literals, kernels, u| {
        let (y, d) = f(x, literals, kernels, T::one());
        (y, P::weighted(&d, &u).unwrap_or_else(T::zero))
    }
}

/// Tangent `J` (of a region's inputs with tangents, in order) weights partial derivative `I` (a
/// slot of the region's cotangents, which inputs of one cotangent share): a leaf of
/// `TangentSlots`.
#[derive(Clone, Copy, Debug)]
pub struct Slot<const J: usize, const I: usize>;

/// Which partial derivative weights which tangent, as a type: a [`Slot`], a pair of these (a
/// balanced tree, so that a region of many inputs nests only as deep as their logarithm), or
/// `()` for none. Each index is a constant of the type, so that once the region's closure is
/// inlined into its loop the partials are read from registers: indices held in the closure
/// were read from memory, each read bounds-checked, and the loop did not vectorise (forward
/// mode took five times as long).
pub trait TangentSlots<T, const S: usize, const K: usize>: Copy + Sync {
    /// The sum of `u[J] · d[I]` over the slots, `None` for none.
    fn weighted(d: &[T; S], u: &[T; K]) -> Option<T>;
}

impl<T, const S: usize, const K: usize> TangentSlots<T, S, K> for () {
    #[inline(always)]
    fn weighted(_: &[T; S], _: &[T; K]) -> Option<T> {
        None
    }
}

impl<T: Element, const S: usize, const K: usize, const J: usize, const I: usize>
    TangentSlots<T, S, K> for Slot<J, I>
{
    #[inline(always)]
    fn weighted(d: &[T; S], u: &[T; K]) -> Option<T> {
        Some(strong_mul(u[J], d[I]))
    }
}

impl<T: Element, const S: usize, const K: usize, A, B> TangentSlots<T, S, K> for (A, B)
where
    A: TangentSlots<T, S, K>,
    B: TangentSlots<T, S, K>,
{
    #[inline(always)]
    fn weighted(d: &[T; S], u: &[T; K]) -> Option<T> {
        match (A::weighted(d, u), B::weighted(d, u)) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        }
    }
}

/// A region's input cotangents from the closure that gives its value with them (see
/// [`fused_tangent_of`]): the backward pass does not read the value, and once the closure is
/// inlined the optimiser drops what only the value reads.
#[inline(always)]
pub fn fused_cotangents_of<T: Element, const N: usize, const L: usize, const S: usize>(
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; S]) + Sync,
) -> impl Fn([T; N], &[T; L], &Kernels, T) -> [T; S] + Sync {
    #[inline(always)]
    move |x, literals, kernels, g| f(x, literals, kernels, g).1
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
    use crate::broadcast::{broadcast_shapes, sum_to_shape};
    use crate::element::operand::OperandRef;
    use crate::ops::reduce::rules;
    use crate::scalar;
    use crate::summation::SUM_BLOCK;
    use crate::vmath::Kernels;

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
    fn a_reduction_of_copies_of_one_example_reduces_the_example_once() {
        // y = exp(a * b) + c over five copies of a [3, 40] example (`vmap`'s shared value) and
        // a [40] b; the tangent differs from copy to copy. Reduced past the leading axis, the
        // value is the example's reduction repeated and the tangent every copy's; reduced over
        // the leading axis, every copy is computed. Against the copies written out.
        let example = Tensor::<f64>::rand_uniform(&[3, 40], -1.0, 1.0, 21);
        let a = example.broadcast_to(&[5, 3, 40]);
        assert!(a.repeated_parts().is_some());
        let written = Tensor::from_vec(a.to_vec(), a.shape());
        let b = Tensor::<f64>::rand_uniform(&[40], -1.0, 1.0, 22);
        let ta = Tensor::<f64>::rand_uniform(&[5, 3, 40], -1.0, 1.0, 23);
        let ops = "mul 0 1;exp 3 3;add 4 2";
        let value = |[a, b, c]: [f64; 3], _: &[f64; 0], _: &Kernels| scalar::exp::value(a * b) + c;
        let jvp = |[a, b, c]: [f64; 3], _: &[f64; 0], _: &Kernels, [u]: [f64; 1]| {
            let e = scalar::exp::value(a * b);
            (e + c, u * b * e)
        };
        let cases: [(&[isize], bool, bool); 4] = [
            (&[-1], false, true),
            (&[1, 2], true, true),
            (&[1], false, true),
            (&[0, 2], false, false),
        ];
        for reduction in [Reduction::Sum, Reduction::Mean] {
            for (axes, keepdims, repeated) in cases {
                let reduced = |a: &Tensor<f64>| {
                    let inputs = [
                        OperandRef::Tensor(a),
                        OperandRef::Tensor(&b),
                        OperandRef::Scalar(0.5),
                    ];
                    let r = fused_reduce_axes(ops, inputs, [], reduction, axes, keepdims, value);
                    let (rj, tr) = fused_reduce_axes_jvp(
                        ops,
                        inputs,
                        [],
                        reduction,
                        axes,
                        keepdims,
                        [&ta],
                        jvp,
                    );
                    (r, rj, tr)
                };
                let (r, rj, tr) = reduced(&a);
                let (want, _, want_tangent) = reduced(&written);
                let case = format!("{reduction:?} {axes:?}");
                assert_eq!(r.repeated_parts().is_some(), repeated, "{case}");
                assert_eq!(rj.repeated_parts().is_some(), repeated, "{case}");
                assert!(tr.repeated_parts().is_none(), "{case}");
                same(&r, &want);
                same(&rj, &want);
                same(&tr, &want_tangent);
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
        let [a, b, c] = distribute(outs, &[(0, 0), (1, 1), (2, 0)], |m, i, t| {
            assert_eq!(m, i);
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
        let [p, q] = distribute(outs, &[(1, 1), (0, 0)], |_, _, t| t);
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

    #[test]
    fn a_tangent_is_the_partials_weighted_by_the_tangents() {
        // y = a * b + sin(c) with partials [b, a, cos c]; the tangents of a and c only, a's
        // partial in slot 0 and c's in slot 2.
        let f = |[a, b, c]: [f64; 3], _: &[f64; 0], k: &Kernels, g: f64| {
            let y = a * b + scalar::sin::value_in(c, k);
            (y, [g * b, g * a, g * c.cos()])
        };
        let tangent = fused_tangent_of(f, (Slot::<0, 0>, Slot::<1, 2>));
        let (a, b, c) = (1.5, -2.0, 0.25);
        let (y, t) = tangent([a, b, c], &[], &Kernels::exact(), [0.5, -3.0]);
        assert_eq!(y, a * b + c.sin());
        assert_eq!(t, 0.5 * b + -3.0 * c.cos());
        // A zero tangent through an infinite partial contributes zero, and a lone term keeps
        // a negative zero's sign.
        let g = |[x]: [f64; 1], _: &[f64; 0], _: &Kernels, g: f64| (x, [g * f64::INFINITY]);
        let (_, t) = fused_tangent_of(g, Slot::<0, 0>)([1.0], &[], &Kernels::exact(), [0.0]);
        assert_eq!(t, 0.0);
        let h = |[x]: [f64; 1], _: &[f64; 0], _: &Kernels, g: f64| (x, [g * -0.0]);
        let (_, t) = fused_tangent_of(h, Slot::<0, 0>)([1.0], &[], &Kernels::exact(), [1.0]);
        assert!(t == 0.0 && t.is_sign_negative());
        // The cotangents alone, for a cotangent of two.
        let cotangents = fused_cotangents_of(f);
        let d = cotangents([a, b, c], &[], &Kernels::exact(), 2.0);
        assert_eq!(d, [2.0 * b, 2.0 * a, 2.0 * c.cos()]);
    }
}
