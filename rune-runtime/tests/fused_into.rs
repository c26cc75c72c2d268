//! `fused_vjp_into`, the backward pass of a fused region that adds each cotangent to its
//! input's adjoint as the loop makes it, against the cotangents of `fused_vjp` added by
//! `accumulate`, element for element: adjoints whose buffer is their own (added in place), shared with
//! another tensor (which must keep its values), absent, in another layout, of a broadcast input
//! or a scalar (added after the loop), and a result two inputs share (the operands of `+`).

use rune_runtime::__private::vmath::Kernels;
use rune_runtime::__private::{accumulate, fused_vjp, fused_vjp_into, FusedInput};
use rune_runtime::{Dual, Element, OperandRef, Tensor};

/// `y = a * b + c` for `a` and `b` of the region's shape and `c` broadcast or a scalar: the
/// cotangents of `a`, `b` and `c` are results 0, 1 and 2.
const OPS: &str = "mul 0 1;add 3 2";

fn cotangents<T: Element>([a, b, _]: [T; 3], _: &[T; 0], _: &Kernels, g: T) -> [T; 3] {
    [g * b, g * a, g]
}

fn ramp<T: Element>(n: usize, scale: f64, shape: &[usize]) -> Tensor<T> {
    let v = (0..n)
        .map(|i| T::from_f64(((i * 37) % 101) as f64 * scale - 0.5))
        .collect();
    Tensor::from_vec(v, shape)
}

fn bits<T: Element>(t: &Tensor<T>) -> Vec<T> {
    t.to_vec()
}

/// Runs both ways from the same adjoints (`make` builds a fresh set each time) and compares.
fn both_ways<T: Element>(
    a: &Tensor<T>,
    b: &Tensor<T>,
    c: OperandRef<'_, T>,
    g: &Tensor<T>,
    targets: [(usize, usize); 3],
    make: impl Fn() -> [Option<Tensor<T>>; 3],
) -> [Option<Tensor<T>>; 3] {
    let inputs = || {
        [
            FusedInput::Value(OperandRef::Tensor(a)),
            FusedInput::Value(OperandRef::Tensor(b)),
            FusedInput::Value(c),
        ]
    };
    let mut want = make();
    let made = fused_vjp(OPS, inputs(), [], targets, g, cotangents);
    for (adjoint, t) in want.iter_mut().zip(made) {
        accumulate(adjoint, t);
    }
    let [mut x, mut y, mut z] = make();
    fused_vjp_into(
        OPS,
        inputs(),
        [],
        targets,
        g,
        cotangents,
        [&mut x, &mut y, &mut z],
    );
    for (got, want) in [&x, &y, &z].into_iter().zip(&want) {
        let (got, want) = (got.as_ref().expect("an adjoint"), want.as_ref().unwrap());
        assert_eq!(got.shape(), want.shape());
        assert!(
            bits(got) == bits(want),
            "fused_vjp_into differs from accumulate"
        );
    }
    [x, y, z]
}

fn adjoints_of_every_kind<T: Element>(n: usize) {
    let shape = [n / 4, 4];
    let (a, b) = (ramp::<T>(n, 0.01, &shape), ramp::<T>(n, 0.02, &shape));
    let c = ramp::<T>(4, 0.3, &[4]);
    let g = ramp::<T>(n, 0.05, &shape);
    // a's adjoint its own buffer, b's shared with `kept`, c's (broadcast) present.
    let kept = ramp::<T>(n, 0.07, &shape);
    let kept_before = bits(&kept);
    let [x, _, _] = both_ways(
        &a,
        &b,
        OperandRef::Tensor(&c),
        &g,
        [(0, 0), (1, 1), (2, 2)],
        || {
            [
                Some(ramp(n, 0.03, &shape)),
                Some(kept.clone()),
                Some(ramp(4, 0.1, &[4])),
            ]
        },
    );
    assert!(
        bits(&kept) == kept_before,
        "a shared adjoint was written to"
    );
    assert!(x.unwrap().is_standard_layout());
    // An adjoint of its own is added to where it lies (one held in the tensor itself, of at
    // most 4 elements, moves with it).
    let mut own = Some(ramp::<T>(n, 0.03, &shape));
    let at = own.as_ref().and_then(Tensor::as_slice).map(<[T]>::as_ptr);
    let inputs = [&a, &b].map(|t| FusedInput::Value(OperandRef::Tensor(t)));
    let c_input = FusedInput::Value(OperandRef::Tensor(&c));
    let [ia, ib] = inputs;
    fused_vjp_into(
        OPS,
        [ia, ib, c_input],
        [],
        [(0, 0), (1, 1), (2, 2)],
        &g,
        cotangents,
        [&mut own, &mut None, &mut None],
    );
    let after = own.as_ref().and_then(Tensor::as_slice).map(<[T]>::as_ptr);
    if n > 4 {
        assert_eq!(at, after, "added in place: {n} elements");
    }
    // No adjoints yet, an adjoint in another layout (a transpose), and a scalar input.
    let transposed = ramp::<T>(n, 0.04, &[4, n / 4]).t();
    both_ways(
        &a,
        &b,
        OperandRef::Scalar(T::from_f64(0.25)),
        &g,
        [(0, 0), (1, 1), (2, 2)],
        || {
            [
                None,
                Some(transposed.clone()),
                Some(Tensor::scalar(T::one())),
            ]
        },
    );
    // a and b read the same result (the operands of `+` would), c none.
    both_ways(
        &a,
        &b,
        OperandRef::Tensor(&c),
        &g,
        [(0, 0), (1, 0), (2, 2)],
        || {
            [
                Some(ramp(n, 0.03, &shape)),
                Some(ramp(n, 0.06, &shape)),
                None,
            ]
        },
    );
}

#[test]
fn adding_into_adjoints_is_accumulating_their_cotangents() {
    // 4000 elements: several blocks; 400 000: split across threads with `parallel`.
    for n in [4000, 400_000] {
        adjoints_of_every_kind::<f64>(n);
        adjoints_of_every_kind::<f32>(n);
    }
    adjoints_of_every_kind::<Dual<f64>>(4000);
}

#[test]
fn small_regions_add_the_same() {
    // One block of 12, and 4 elements held inline (made first, then added).
    adjoints_of_every_kind::<f64>(12);
    adjoints_of_every_kind::<f64>(4);
}

/// The cotangents by hand: `g b`, `g a`, and `g` summed to `c`'s shape (`None` a scalar).
fn by_hand<T: Element>(
    a: &Tensor<T>,
    b: &Tensor<T>,
    c: Option<&[usize]>,
    g: &Tensor<T>,
) -> [Vec<T>; 3] {
    let (a, b, g) = (a.to_vec(), b.to_vec(), g.to_vec());
    let ga = g.iter().zip(&b).map(|(&g, &b)| g * b).collect();
    let gb = g.iter().zip(&a).map(|(&g, &a)| g * a).collect();
    let rows = g.len() / 4;
    let gc = match c {
        None => vec![g.iter().fold(T::zero(), |s, &g| s + g)],
        // `[4]`: a row, summed over the rows.
        Some([4]) => (0..4)
            .map(|j| (0..rows).fold(T::zero(), |s, i| s + g[i * 4 + j]))
            .collect(),
        // `[rows, 1]`: a column, summed along each row.
        Some(_) => (0..rows)
            .map(|i| (0..4).fold(T::zero(), |s, j| s + g[i * 4 + j]))
            .collect(),
    };
    [ga, gb, gc]
}

fn small_cotangents<T: Element>(n: usize) {
    let shape = [n / 4, 4];
    let (a, b) = (ramp::<T>(n, 0.01, &shape), ramp::<T>(n, 0.02, &shape));
    // Multiples of 1/4: their sums are exact in any order.
    let g = ramp::<T>(n, 0.25, &shape);
    let row = ramp::<T>(4, 0.3, &[4]);
    let column = ramp::<T>(n / 4, 0.3, &[n / 4, 1]);
    let cs = [
        (OperandRef::Tensor(&row), Some(&[4][..])),
        (OperandRef::Tensor(&column), Some(&[n / 4, 1][..])),
        (OperandRef::Scalar(T::from_f64(0.25)), None),
    ];
    for (c, c_shape) in cs {
        let inputs = [
            FusedInput::Value(OperandRef::Tensor(&a)),
            FusedInput::Value(OperandRef::Tensor(&b)),
            FusedInput::Value(c),
        ];
        let made = fused_vjp(OPS, inputs, [], [(0, 0), (1, 1), (2, 2)], &g, cotangents);
        let want = by_hand(&a, &b, c_shape, &g);
        for (k, (t, w)) in made.iter().zip(&want).enumerate() {
            assert_eq!(
                t.shape(),
                if k < 2 {
                    &shape[..]
                } else {
                    c_shape.unwrap_or(&[])
                }
            );
            assert!(t.to_vec() == *w, "n = {n}, result {k}: {:?}", c_shape);
        }
        // Into adjoints: a's its own (added where it lies), b's shared, c's absent.
        let own = ramp::<T>(n, 0.03, &shape);
        let kept = ramp::<T>(n, 0.07, &shape);
        let (own_before, kept_before) = (own.to_vec(), kept.to_vec());
        let (mut x, mut y, mut z) = (Some(own), Some(kept.clone()), None);
        let at = x.as_ref().and_then(Tensor::as_slice).map(<[T]>::as_ptr);
        fused_vjp_into(
            OPS,
            inputs,
            [],
            [(0, 0), (1, 1), (2, 2)],
            &g,
            cotangents,
            [&mut x, &mut y, &mut z],
        );
        let plus = |before: &[T], w: &[T]| -> Vec<T> {
            before.iter().zip(w).map(|(&p, &q)| p + q).collect()
        };
        assert!(x.as_ref().unwrap().to_vec() == plus(&own_before, &want[0]));
        assert!(y.as_ref().unwrap().to_vec() == plus(&kept_before, &want[1]));
        assert!(z.as_ref().unwrap().to_vec() == want[2]);
        assert!(
            kept.to_vec() == kept_before,
            "a shared adjoint was written to"
        );
        let after = x.as_ref().and_then(Tensor::as_slice).map(<[T]>::as_ptr);
        assert_eq!(at, after, "added in place: {n} elements");
    }
}

#[test]
fn small_regions_compute_their_cotangents() {
    // Within one block of 16 (8, 12, 16) and just past it (20: the general loop).
    for n in [8, 12, 16, 20] {
        small_cotangents::<f64>(n);
        small_cotangents::<f32>(n);
        small_cotangents::<Dual<f64>>(n);
    }
}
