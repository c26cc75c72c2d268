//! `pad` along the first axis of a large row-major tensor leaves its elements unwritten until
//! something needs them; fused regions read it in place, `shrink` of its inside is its input,
//! and `+=` adds its runs where they lie. Every reader must see the tensor the padding makes,
//! written out by hand here: through the tensor's own accessors, `shrink`, the assigning
//! operators (the padded tensor on either side), a fused region's value, its backward pass
//! (the padded tensor as an input, as the cotangent and as an adjoint), and `shrink`'s VJP
//! added into an adjoint. Sizes around the fused loops' blocks and below the size at which
//! `pad` writes at once, in `f32`, `f64` and dual numbers.

use rune_runtime::__private::rules::{pad_vjp, shrink_vjp, shrink_vjp_into};
use rune_runtime::__private::vmath::Kernels;
use rune_runtime::__private::{accumulate, fused_map, fused_vjp, fused_vjp_into, FusedInput};
use rune_runtime::{Dual, Element, OperandRef, Tensor};

fn ramp<T: Element>(n: usize, scale: f64, shape: &[usize]) -> Tensor<T> {
    let v = (0..n)
        .map(|i| T::from_f64(((i * 37) % 101) as f64 * scale - 0.5))
        .collect();
    Tensor::from_vec(v, shape)
}

/// `x` (row-major, `rows` rows) padded by hand: `before` and `after` rows of `fill`.
fn padded_by_hand<T: Element>(x: &Tensor<T>, before: usize, after: usize, fill: T) -> Tensor<T> {
    let row: usize = x.shape()[1..].iter().product();
    let mut v = vec![fill; before * row];
    v.extend(x.to_vec());
    v.extend(std::iter::repeat_n(fill, after * row));
    let mut shape = x.shape().to_vec();
    shape[0] += before + after;
    Tensor::from_vec(v, &shape)
}

fn same<T: Element>(got: &Tensor<T>, want: &Tensor<T>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    assert!(got.to_vec() == want.to_vec(), "{what}: elements differ");
}

/// The ranges of the first axis, every other axis whole.
fn rows(shape: &[usize], start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut r: Vec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
    r[0] = (start, end);
    r
}

/// `p * x + p` and its cotangents `[g (x + 1), g p]`.
const OPS: &str = "mul 0 1;add 2 0";

fn value<T: Element>([p, x]: [T; 2], _: &[T; 0], _: &Kernels) -> T {
    p * x + p
}

fn cotangents<T: Element>([p, x]: [T; 2], _: &[T; 0], _: &Kernels, g: T) -> [T; 2] {
    [g * (x + T::one()), g * p]
}

fn readers_see_the_padding<T: Element>(shape: &[usize], before: usize, after: usize, fill: T) {
    let n: usize = shape.iter().product();
    let x = ramp::<T>(n, 0.01, shape);
    let mut ranges = vec![(0, 0); shape.len()];
    ranges[0] = (before, after);
    let want = padded_by_hand(&x, before, after, fill);
    let what = format!("{shape:?} padded by ({before}, {after})");
    let p = x.pad(&ranges, fill);
    let big = want.shape().to_vec();
    let len = want.len();

    // The tensor's own accessors, on a clone each (a clone shares the written-out copy).
    same(&p.clone(), &want, &what);
    assert!(p.clone().view() == want.view(), "{what}: view");
    assert!(p.clone().into_vec() == want.to_vec(), "{what}: into_vec");
    assert!(p.clone().as_slice() == want.as_slice(), "{what}: as_slice");
    assert_eq!(p.clone().sum().item(), want.sum().item(), "{what}: sum");

    // `shrink`: the inside is the input; any other cut, the padding's elements.
    same(&p.shrink(&rows(&big, before, before + shape[0])), &x, &what);
    for (s, e) in [(0, 1), (0, big[0]), (big[0] / 3, big[0] - 1)] {
        let cut = rows(&big, s, e);
        same(&p.shrink(&cut), &want.shrink(&cut), &what);
    }

    // `+=` and `-=` with the padded tensor on the right: into a tensor of its own, into one
    // another tensor shares (which keeps its values), and on the left.
    let y = ramp::<T>(len, 0.02, &big);
    let mut own = y.clone().to_vec();
    own.iter_mut().zip(want.to_vec()).for_each(|(a, b)| *a += b);
    let mut a = Tensor::from_vec(y.to_vec(), &big);
    a += &x.pad(&ranges, fill);
    assert!(a.to_vec() == own, "{what}: += into its own tensor");
    let mut shared = y.clone();
    shared += &x.pad(&ranges, fill);
    assert!(shared.to_vec() == own, "{what}: += into a shared tensor");
    same(
        &y,
        &ramp::<T>(len, 0.02, &big),
        &format!("{what}: shared kept"),
    );
    let mut left = x.pad(&ranges, fill);
    left -= &y;
    let diff: Vec<T> = want
        .to_vec()
        .iter()
        .zip(y.to_vec())
        .map(|(&a, b)| a - b)
        .collect();
    assert!(left.to_vec() == diff, "{what}: -= into the padded tensor");

    // A fused region reading it, against the same region reading the written-out copy.
    let region = |p: &Tensor<T>| {
        fused_map(
            OPS,
            [OperandRef::Tensor(p), OperandRef::Tensor(&y)],
            [],
            value,
        )
    };
    same(&region(&x.pad(&ranges, fill)), &region(&want), &what);

    // Its backward pass: the padded tensor as an input, as the cotangent, and as the adjoint
    // the cotangents are added to.
    let g = ramp::<T>(len, 0.03, &big);
    let vjp = |p: &Tensor<T>, g: &Tensor<T>| {
        let inputs = [p, &y].map(|t| FusedInput::Value(OperandRef::Tensor(t)));
        fused_vjp(OPS, inputs, [], [(0, 0), (1, 1)], g, cotangents)
    };
    for (got, want) in vjp(&x.pad(&ranges, fill), &g)
        .iter()
        .zip(vjp(&want, &g).iter())
    {
        same(got, want, &format!("{what}: input's cotangent"));
    }
    let lazy_g = x.pad(&ranges, T::zero());
    let g_by_hand = padded_by_hand(&x, before, after, T::zero());
    for (got, want) in vjp(&y, &lazy_g).iter().zip(vjp(&y, &g_by_hand).iter()) {
        same(got, want, &format!("{what}: from a padded cotangent"));
    }
    let into = |adjoint: Option<Tensor<T>>| {
        let inputs = [&y, &g].map(|t| FusedInput::Value(OperandRef::Tensor(t)));
        let (mut a, mut b) = (adjoint, None);
        fused_vjp_into(
            OPS,
            inputs,
            [],
            [(0, 0), (1, 1)],
            &g,
            cotangents,
            [&mut a, &mut b],
        );
        a.expect("an adjoint")
    };
    same(
        &into(Some(x.pad(&ranges, fill))),
        &into(Some(want.clone())),
        &format!("{what}: added into a padded adjoint"),
    );

    // `accumulate` of a padded contribution, first and second.
    let mut adjoint = None;
    accumulate(&mut adjoint, x.pad(&ranges, fill));
    accumulate(&mut adjoint, x.pad(&ranges, fill));
    let twice: Vec<T> = want.to_vec().iter().map(|&v| v + v).collect();
    assert!(
        adjoint.unwrap().to_vec() == twice,
        "{what}: accumulated twice"
    );
}

/// `shrink`'s VJP (a pad with zeros) and `pad`'s (a shrink), composed as the backward pass of
/// a shift `x.shrink(..).pad(..)` composes them, into an adjoint and not.
fn shift_backward<T: Element>(n: usize) {
    let shape = [n];
    let g = ramp::<T>(n, 0.05, &shape);
    // `y = x[..n-1]` padded by one in front: the cotangent of `x[..n-1]` is `g[1..]`, and
    // `x`'s is that followed by a zero.
    let inner = pad_vjp(&g, &[(1, 0)]);
    let mut want = g.to_vec()[1..].to_vec();
    want.push(T::zero());
    assert!(shrink_vjp(&inner, &shape, &[(0, n - 1)]).to_vec() == want);
    let mut adjoint = Some(ramp::<T>(n, 0.07, &shape));
    let before = adjoint.as_ref().unwrap().to_vec();
    shrink_vjp_into(&mut adjoint, &inner, &shape, &[(0, n - 1)]);
    let sum: Vec<T> = before.iter().zip(&want).map(|(&a, &b)| a + b).collect();
    assert!(adjoint.unwrap().to_vec() == sum, "shift's VJP added, {n}");
    let mut first = None;
    shrink_vjp_into(&mut first, &inner, &shape, &[(0, n - 1)]);
    assert!(first.unwrap().to_vec() == want, "shift's VJP first, {n}");
}

fn every_case<T: Element>() {
    for shape in [
        &[10][..],
        &[255],
        &[256],
        &[1000],
        &[4099],
        &[70_001],
        &[300, 3],
        &[64, 65],
    ] {
        for (before, after) in [(1, 0), (0, 1), (3, 2), (0, 0), (70, 129)] {
            for fill in [T::zero(), T::from_f64(1.5)] {
                readers_see_the_padding::<T>(shape, before, after, fill);
            }
        }
    }
    for n in [5, 300, 5000] {
        shift_backward::<T>(n);
    }
}

#[test]
fn f64_padding() {
    every_case::<f64>();
}

#[test]
fn f32_padding() {
    every_case::<f32>();
}

#[test]
fn dual_padding() {
    every_case::<Dual<f64>>();
}
