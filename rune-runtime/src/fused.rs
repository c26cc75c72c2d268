//! Fused elementwise regions: several elementwise ops evaluated in one pass over the elements,
//! with no tensor for the values between them.
//!
//! `#[differentiable]` groups a tree of elementwise ops (`+ - * /`, unary minus and the unary
//! functions of [`crate::scalar`]) whose intermediate values nothing else reads, and writes the
//! region's scalar expression as a closure over the elements of its inputs. These functions run
//! such a closure over the inputs broadcast to the region's shape:
//!
//! - [`fused_map`]: the value.
//! - [`fused_vjp`]: the cotangent of each differentiated input, from the output's cotangent; the
//!   closure recomputes the region's intermediates from the inputs, so the forward pass saves
//!   none of them. A cotangent is summed over the axes its input was broadcast along.
//! - [`fused_jvp`]: the value and its tangent in one pass.
//!
//! The inputs are tensors or scalars ([`OperandRef`]). The region's shape is the broadcast of
//! its tensor inputs' shapes, which is the shape of its result: every op of the tree broadcasts
//! the shapes of the inputs below it. When every input has that shape in row-major order, the
//! closure runs in one direct loop over their data. Otherwise the elements are processed in
//! blocks of [`BLOCK`]: an input of the region's shape is read from its data, one broadcast
//! along leading axes only (a bias) is read over and over in place, and any other is copied
//! once, broadcast, with a strided assign.

use crate::broadcast::{broadcast_shapes, broadcast_view, same_shape, sum_to_shape};
use crate::element::operand::{OperandOf, OperandRef};
use crate::element::Element;
use crate::error::{OrPanic, ShapeError};
use crate::tensor::Tensor;

/// The number of elements a fused loop processes at a time.
pub const BLOCK: usize = 64;

/// The ops of a fused region, for the error of an input shape that does not broadcast: one
/// `name a b` each, separated by `;`, where `a` and `b` are the values the op reads (the same
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
    /// A copy of a tensor broadcast to the region's shape.
    Owned(Vec<T>),
}

impl<T: Copy> Source<'_, T> {
    fn fill(&self, start: usize, dst: &mut [T]) {
        match self {
            Source::Splat(v) => dst.fill(*v),
            Source::Slice(s) => dst.copy_from_slice(&s[start..start + dst.len()]),
            Source::Owned(s) => dst.copy_from_slice(&s[start..start + dst.len()]),
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
        // A literal (`_`) is a scalar.
        let mut operand = || {
            parts
                .next()
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| shapes.get(i).cloned().flatten())
        };
        let (a, b) = (&operand(), &operand());
        let shape = match (a, b) {
            (Some(a), Some(b)) => match broadcast_shapes(op_name(name), a, b) {
                Ok(s) => Some(s),
                Err(e) => return e,
            },
            (Some(s), None) | (None, Some(s)) => Some(s.clone()),
            (None, None) => None,
        };
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
    if let Some(s) = t.as_shared().as_slice() {
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

/// Calls `body(start, n, blocks)` for each block of `len` elements, `blocks[k][..n]` holding
/// the elements `start..start + n` of source `k`.
fn for_blocks<T: Element>(
    len: usize,
    sources: &[Source<'_, T>],
    mut body: impl FnMut(usize, usize, &[[T; BLOCK]]),
) {
    let mut blocks = vec![[T::zero(); BLOCK]; sources.len()];
    for (b, s) in blocks.iter_mut().zip(sources) {
        if let Source::Splat(v) = s {
            b.fill(*v);
        }
    }
    let mut start = 0;
    while start < len {
        let n = BLOCK.min(len - start);
        for (b, s) in blocks.iter_mut().zip(sources) {
            if !matches!(s, Source::Splat(_)) {
                s.fill(start, &mut b[..n]);
            }
        }
        body(start, n, &blocks);
        start += n;
    }
}

/// When every present input is a tensor of one shape in row-major order (at least one
/// present), that shape and each input's data (`None` for an absent one).
#[allow(clippy::type_complexity)]
fn same_shape_slices<'a, T, const N: usize>(
    inputs: &[Option<OperandRef<'a, T>>; N],
) -> Option<(&'a [usize], [Option<&'a [T]>; N])> {
    let mut shape: Option<&'a [usize]> = None;
    let mut slices = [None; N];
    for (slot, input) in slices.iter_mut().zip(inputs) {
        match input {
            None => {}
            Some(OperandRef::Scalar(_)) => return None,
            Some(OperandRef::Tensor(t)) => {
                match shape {
                    None => shape = Some(t.shape()),
                    Some(s) if same_shape(s, t.shape()) => {}
                    Some(_) => return None,
                }
                *slot = Some(t.as_shared().as_slice()?);
            }
        }
    }
    Some((shape?, slices))
}

/// The region's shape, each input's shape (`None` for a scalar) and each input's source. An
/// input given by its shape alone stands for zeros: the closures do not read it.
#[allow(clippy::type_complexity)]
fn prepare<'a, T: Element>(
    inputs: &[FusedInput<'a, T>],
    ops: FusedOps,
) -> Result<(Vec<usize>, Vec<Option<&'a [usize]>>, Vec<Source<'a, T>>), ShapeError> {
    let shapes: Vec<Option<&[usize]>> = inputs
        .iter()
        .map(|i| match i {
            FusedInput::Value(v) => operand_shape(v),
            FusedInput::Shape(s) => Some(*s),
        })
        .collect();
    let shape = region_shape(&shapes, ops)?;
    let sources = inputs
        .iter()
        .map(|i| match i {
            FusedInput::Value(v) => operand_source(v, &shape),
            FusedInput::Shape(_) => Ok(Source::Splat(T::zero())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((shape, shapes, sources))
}

/// The value of a fused region: `f` applied to the elements of the inputs, broadcast.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
pub fn fused_map<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L]) -> T,
) -> Tensor<T> {
    let literals = literals.map(T::from_f64);
    if let Some((shape, slices)) = same_shape_slices(&inputs.map(Some)) {
        // Every input of one shape, in row-major order: no block buffers.
        let slices = slices.map(|s| s.expect("every input is present"));
        let len = shape.iter().product();
        let out = (0..len)
            .map(|e| f(std::array::from_fn(|k| slices[k][e]), &literals))
            .collect();
        return Tensor::from_vec(out, shape);
    }
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let len = shape.iter().product();
    let mut out = vec![T::zero(); len];
    for_blocks(len, &sources, |start, n, b| {
        for (e, o) in out[start..start + n].iter_mut().enumerate() {
            *o = f(std::array::from_fn(|k| b[k][e]), &literals);
        }
    });
    Tensor::from_vec(out, &shape)
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
    f: impl Fn([T; N], &[T; L], T) -> [T; K],
) -> [Tensor<T>; M] {
    let literals = literals.map(T::from_f64);
    let values = inputs.map(|i| match i {
        FusedInput::Value(v) => Some(v),
        FusedInput::Shape(_) => None,
    });
    if let (Some((shape, slices)), Some(gs)) =
        (same_shape_slices(&values), g.as_shared().as_slice())
    {
        let shaped = |s: &[usize]| same_shape(s, shape);
        let all_shaped = inputs.iter().all(|i| match i {
            FusedInput::Value(_) => true,
            FusedInput::Shape(s) => shaped(s),
        });
        if all_shaped && shaped(g.shape()) {
            // Every input and the cotangent of one shape, in row-major order. The closure does
            // not read an input given by its shape: it gets the cotangent's elements there.
            let slices: [&[T]; N] = std::array::from_fn(|k| slices[k].unwrap_or(gs));
            let mut outs: [Vec<T>; K] = std::array::from_fn(|_| Vec::with_capacity(gs.len()));
            for (e, &ge) in gs.iter().enumerate() {
                let d = f(std::array::from_fn(|k| slices[k][e]), &literals, ge);
                for (o, d) in outs.iter_mut().zip(d) {
                    o.push(d);
                }
            }
            let full = outs.map(|o| Tensor::from_vec(o, shape));
            return targets.map(|(_, k)| full[k].clone());
        }
    }
    let (shape, shapes, mut sources) = prepare(&inputs, ops).or_panic();
    sources.push(source("fused", g, &shape).or_panic());
    let len = shape.iter().product();
    let mut outs: [Vec<T>; K] = std::array::from_fn(|_| vec![T::zero(); len]);
    for_blocks(len, &sources, |start, n, b| {
        for e in 0..n {
            let d = f(std::array::from_fn(|k| b[k][e]), &literals, b[N][e]);
            for (o, d) in outs.iter_mut().zip(d) {
                o[start + e] = d;
            }
        }
    });
    let full: Vec<Tensor<T>> = outs
        .into_iter()
        .map(|o| Tensor::from_vec(o, &shape))
        .collect();
    targets.map(|(i, k)| sum_to_shape(&full[k], shapes[i].unwrap_or(&[])))
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
    f: impl Fn([T; N], &[T; L], [T; K]) -> (T, T),
) -> (Tensor<T>, Tensor<T>) {
    let literals = literals.map(T::from_f64);
    let (shape, _, mut sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    for t in tangents {
        sources.push(source("fused", t, &shape).or_panic());
    }
    let len = shape.iter().product();
    let mut value = vec![T::zero(); len];
    let mut tangent = vec![T::zero(); len];
    for_blocks(len, &sources, |start, n, b| {
        for e in 0..n {
            let (y, t) = f(
                std::array::from_fn(|k| b[k][e]),
                &literals,
                std::array::from_fn(|k| b[N + k][e]),
            );
            value[start + e] = y;
            tangent[start + e] = t;
        }
    });
    (
        Tensor::from_vec(value, &shape),
        Tensor::from_vec(tangent, &shape),
    )
}

/// `1 / b`, as the rules of `/` compute it.
#[inline]
pub fn fused_recip<T: Element>(b: T) -> T {
    T::one() / b
}

/// Zero, of the type of `_like`.
#[inline]
pub fn fused_zero<T: Element>(_like: T) -> T {
    T::zero()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar;

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
        let y = fused_map(ops, inputs, [], |[a, b, c], []| {
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
            |[a, b, _], [], g| {
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
        let (value, tangent) = fused_jvp(ops, inputs, [], [&b], |[a, b, c], [], [tb]| {
            let e = scalar::exp::value(a * b);
            (e + c, a * tb * e)
        });
        assert_eq!(value.to_vec(), y.to_vec());
        assert_eq!(tangent.shape(), &[40, 5]);
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
            |[a, b], []| a.exp() * b,
        );
    }

    #[test]
    fn a_region_of_scalars_and_zero_d_tensors_is_zero_d() {
        let x = Tensor::scalar(2.0_f32);
        // A literal times a 0-d tensor.
        let y = fused_map("mul 0 _", [OperandRef::Tensor(&x)], [3.0], |[a], [b]| a * b);
        assert_eq!(y.shape(), &[] as &[usize]);
        assert_eq!(y.item(), 6.0);
    }

    #[test]
    fn inputs_of_one_shape_take_the_direct_loop_and_agree_with_the_blocked_one() {
        // a * b + c over 100 elements: once with every input of one shape (the direct loop),
        // once with `c` given as a row broadcast along a leading axis of one (the blocks).
        let a = Tensor::from_vec((0..100).map(|i| f64::from(i) * 0.1).collect(), &[1, 100]);
        let b = Tensor::from_vec(
            (0..100).map(|i| 1.0 - f64::from(i) * 0.01).collect(),
            &[1, 100],
        );
        let c = Tensor::from_vec((0..100).map(f64::from).collect(), &[1, 100]);
        let c_row = Tensor::from_vec(c.to_vec(), &[100]);
        let ops = "mul 0 1;add 3 2";
        let f = |[a, b, c]: [f64; 3], _: &[f64; 0]| a * b + c;
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
        let [da, dc] = fused_vjp(ops, inputs, [], [(0, 0), (2, 1)], &g, |[_, b, _], _, g| {
            [g * b, g]
        });
        for i in 0..100 {
            assert_eq!(da.to_vec()[i], g.to_vec()[i] * b.to_vec()[i]);
        }
        assert_eq!(dc.to_vec(), g.to_vec());
    }
}
