//! `pow`, `maximum`, `minimum`, `fmax`, `fmin`: rules against finite differences on
//! broadcasting shape pairs, and hand-derived values at ties, at NaN and at a zero base.

use rune_runtime::__private::rules::*;
use rune_runtime::{Dual, Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// Equal shapes, broadcasting on either side, differing ranks, and a 0-d operand.
const SHAPES: &[(&[usize], &[usize])] = &[
    (&[2, 3], &[2, 3]),
    (&[2, 3], &[3]),
    (&[1, 3], &[2, 1]),
    (&[4, 1, 3], &[2, 3]),
    (&[], &[2, 2]),
    (&[3, 2], &[]),
];

/// Values on the grid `offset + k/2` in `[-2, 2)`: `a` on quarter offsets and `b` on the half
/// grid never come closer than 1/4, so the finite differences of `maximum` stay off the ties.
fn grid<T: Element>(shape: &[usize], offset: f64, seed: u64) -> Tensor<T> {
    let u: Tensor<f64> = uniform(shape, -2.0, 2.0, seed);
    u.map(|&v| T::from_f64((v * 2.0).floor() / 2.0 + offset))
}

type Forward<T> = fn(&Tensor<T>, &Tensor<T>) -> Tensor<T>;
type Jvp<T> = fn(&Tensor<T>, &Tensor<T>, Option<&Tensor<T>>, Option<&Tensor<T>>) -> Tensor<T>;
type Vjp<T> = fn(&Tensor<T>, &Tensor<T>, &Tensor<T>) -> Tensor<T>;
/// An op with its JVP and the VJPs for both inputs.
type Selection<T> = (Forward<T>, Jvp<T>, Vjp<T>, Vjp<T>);

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (i, &(sa, sb)) in SHAPES.iter().enumerate() {
        // Positive bases keep `ln(a)` and non-integer powers real.
        let a = uniform::<T>(sa, 0.5, 2.0, 500 + i as u64);
        let b = uniform::<T>(sb, -2.0, 2.0, 520 + i as u64);
        cases.push(Case::new(
            "pow",
            "tensor.pow(tensor)",
            vec![a, b],
            |x| x[0].pow(&x[1]),
            |x, t| {
                let y = x[0].pow(&x[1]);
                pow_jvp(&x[0], &x[1], &y, Some(&t[0]), Some(&t[1]))
            },
            |x, g| {
                let y = x[0].pow(&x[1]);
                vec![
                    pow_vjp_lhs(g, &x[0], &x[1]),
                    pow_vjp_rhs(g, &x[0], &y, x[1].shape()),
                ]
            },
        ));

        let args = vec![
            grid::<T>(sa, 0.25, 540 + i as u64),
            grid::<T>(sb, 0.0, 560 + i as u64),
        ];
        let maximum: Selection<T> = (
            |a, b| a.maximum(b),
            maximum_jvp,
            maximum_vjp_lhs,
            maximum_vjp_rhs,
        );
        let minimum: Selection<T> = (
            |a, b| a.minimum(b),
            minimum_jvp,
            minimum_vjp_lhs,
            minimum_vjp_rhs,
        );
        let fmax: Selection<T> = (|a, b| a.fmax(b), fmax_jvp, fmax_vjp_lhs, fmax_vjp_rhs);
        let fmin: Selection<T> = (|a, b| a.fmin(b), fmin_jvp, fmin_vjp_lhs, fmin_vjp_rhs);
        for (name, (f, jvp, vjp_lhs, vjp_rhs)) in [
            ("maximum", maximum),
            ("minimum", minimum),
            ("fmax", fmax),
            ("fmin", fmin),
        ] {
            cases.push(Case::new(
                name,
                "broadcasting, no ties",
                args.clone(),
                move |x| f(&x[0], &x[1]),
                move |x, t| jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
                move |x, g| vec![vjp_lhs(g, &x[0], &x[1]), vjp_rhs(g, &x[0], &x[1])],
            ));
        }
    }

    // One input constant: the other's tangent alone, broadcast to the output's shape.
    let base = uniform::<T>(&[3], 0.5, 2.0, 580);
    let exponent = uniform::<T>(&[2, 3], -2.0, 2.0, 581);
    let e = exponent.clone();
    cases.push(Case::new(
        "pow",
        "constant exponent of larger shape",
        vec![base.clone()],
        move |x| x[0].pow(&e),
        {
            let e = exponent.clone();
            move |x, t| pow_jvp(&x[0], &e, &x[0].pow(&e), Some(&t[0]), None)
        },
        {
            let e = exponent.clone();
            move |x, g| vec![pow_vjp_lhs(g, &x[0], &e)]
        },
    ));
    let b0 = base.clone();
    cases.push(Case::new(
        "pow",
        "constant base of smaller shape",
        vec![exponent],
        move |x| b0.pow(&x[0]),
        {
            let b0 = base.clone();
            move |x, t| pow_jvp(&b0, &x[0], &b0.pow(&x[0]), None, Some(&t[0]))
        },
        move |x, g| vec![pow_vjp_rhs(g, &base, &base.pow(&x[0]), x[0].shape())],
    ));
    let other = grid::<T>(&[2, 3], 0.0, 582);
    // A scalar on the right (`x.maximum(0.5)`): a constant, off the grid of `x`.
    for (i, shape) in [&[2, 3][..], &[], &[4, 1, 2]].into_iter().enumerate() {
        let x = grid::<T>(shape, 0.25, 590 + i as u64);
        let c = T::from_f64(0.5);
        cases.push(Case::new(
            "maximum",
            "scalar rhs",
            vec![x.clone()],
            move |x| x[0].maximum(c),
            move |x, t| maximum_jvp(&x[0], &c, Some(&t[0]), None),
            move |x, g| vec![maximum_vjp_lhs(g, &x[0], &c)],
        ));
        cases.push(Case::new(
            "minimum",
            "scalar rhs",
            vec![x],
            move |x| x[0].minimum(c),
            move |x, t| minimum_jvp(&x[0], &c, Some(&t[0]), None),
            move |x, g| vec![minimum_vjp_lhs(g, &x[0], &c)],
        ));
    }
    cases.push(Case::new(
        "maximum",
        "constant rhs of larger shape",
        vec![grid::<T>(&[3], 0.25, 583)],
        {
            let o = other.clone();
            move |x| x[0].maximum(&o)
        },
        {
            let o = other.clone();
            move |x, t| maximum_jvp(&x[0], &o, Some(&t[0]), None)
        },
        move |x, g| vec![maximum_vjp_lhs(g, &x[0], &other)],
    ));
    cases
}

/// Where `a == b`, each side gets half the gradient (as JAX); elsewhere the larger side all.
#[test]
fn maximum_and_minimum_split_ties_evenly() {
    let a = tensor::<f64>(&[1.0, 2.0, 3.0], &[3]);
    let b = tensor::<f64>(&[1.0, 0.0, 5.0], &[3]);
    let g = Tensor::<f64>::ones(&[3]);
    let da = Tensor::<f64>::ones(&[3]);
    let db = tensor::<f64>(&[10.0, 10.0, 10.0], &[3]);

    assert_close(&a.maximum(&b), &[1.0, 2.0, 5.0], 0.0);
    assert_close(&maximum_vjp_lhs(&g, &a, &b), &[0.5, 1.0, 0.0], 0.0);
    assert_close(&maximum_vjp_rhs(&g, &a, &b), &[0.5, 0.0, 1.0], 0.0);
    assert_close(
        &maximum_jvp(&a, &b, Some(&da), Some(&db)),
        &[5.5, 1.0, 10.0],
        0.0,
    );

    assert_close(&a.minimum(&b), &[1.0, 0.0, 3.0], 0.0);
    assert_close(&minimum_vjp_lhs(&g, &a, &b), &[0.5, 0.0, 1.0], 0.0);
    assert_close(&minimum_vjp_rhs(&g, &a, &b), &[0.5, 1.0, 0.0], 0.0);
    assert_close(
        &minimum_jvp(&a, &b, Some(&da), Some(&db)),
        &[5.5, 10.0, 1.0],
        0.0,
    );
    assert_close(
        &minimum_jvp(&a, &b, None, Some(&db)),
        &[5.0, 10.0, 0.0],
        0.0,
    );
}

/// A scalar on the right: the larger (smaller) side's gradient, half of it at a tie, nothing
/// at NaN; the same as the scalar as a 0-d tensor, in f32 and f64.
#[test]
fn selection_against_a_scalar() {
    fn check<T: Element>() {
        let x = tensor::<T>(&[-1.0, 0.0, 2.0, f64::NAN], &[2, 2]);
        let zero = T::zero();
        let g = tensor::<T>(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let y = x.maximum(zero).to_vec();
        assert_close(
            &Tensor::from_vec(y[..3].to_vec(), &[3]),
            &[0.0, 0.0, 2.0],
            0.0,
        );
        assert!(y[3].is_nan());
        assert_close(&maximum_vjp_lhs(&g, &x, &zero), &[0.0, 1.0, 3.0, 0.0], 0.0);
        assert_close(
            &maximum_jvp(&x, &zero, Some(&g), None),
            &[0.0, 1.0, 3.0, 0.0],
            0.0,
        );
        let y = x.minimum(zero).to_vec();
        assert_close(
            &Tensor::from_vec(y[..3].to_vec(), &[3]),
            &[-1.0, 0.0, 0.0],
            0.0,
        );
        assert!(y[3].is_nan());
        assert_close(&minimum_vjp_lhs(&g, &x, &zero), &[1.0, 1.0, 0.0, 0.0], 0.0);
        assert_close(
            &minimum_jvp(&x, &zero, Some(&g), None),
            &[1.0, 1.0, 0.0, 0.0],
            0.0,
        );
        // The scalar as a 0-d tensor gives the same value and rules.
        let z = Tensor::scalar(zero);
        let finite = tensor::<T>(&[-1.0, 0.0, 2.0, 0.5], &[2, 2]);
        assert_eq!(finite.maximum(zero), finite.maximum(&z));
        assert_eq!(finite.minimum(zero), finite.minimum(&z));
        assert_eq!(
            maximum_vjp_lhs(&g, &finite, &zero),
            maximum_vjp_lhs(&g, &finite, &z)
        );
        assert_eq!(
            minimum_jvp(&finite, &zero, Some(&g), None),
            minimum_jvp(&finite, &z, Some(&g), None)
        );
        // Neither operand differentiated: zeros of the output's shape.
        assert_eq!(
            maximum_jvp(&finite, &zero, None, None),
            Tensor::zeros(&[2, 2])
        );
    }
    check::<f32>();
    check::<f64>();
}

/// On dual numbers a plain float is the constant with a zero tangent, in the forward op and
/// the rules.
#[test]
fn selection_against_a_plain_float_on_dual_numbers() {
    let x = Tensor::from_vec(
        vec![
            Dual::new(-1.0, 5.0),
            Dual::new(0.0, 6.0),
            Dual::new(2.0, 7.0),
        ],
        &[3],
    );
    let y = x.maximum(-0.5).to_vec();
    let parts: Vec<(f64, f64)> = y.iter().map(|d| (d.re, d.du)).collect();
    assert_eq!(parts, vec![(-0.5, 0.0), (0.0, 6.0), (2.0, 7.0)]);
    let g = Tensor::from_vec(vec![Dual::constant(1.0); 3], &[3]);
    let gx = maximum_vjp_lhs(&g, &x, &0.0).to_vec();
    let re: Vec<f64> = gx.iter().map(|d| d.re).collect();
    assert_eq!(re, vec![0.0, 0.5, 1.0]);
    let t = minimum_jvp(&x, &1.0, Some(&g), None).to_vec();
    let re: Vec<f64> = t.iter().map(|d| d.re).collect();
    assert_eq!(re, vec![1.0, 1.0, 0.0]);
}

/// A broadcast operand that ties with several elements collects half of each one's gradient.
#[test]
fn tie_split_sums_over_broadcast_axes() {
    let a = tensor::<f64>(&[2.0, 2.0, 1.0], &[3]);
    let b = tensor::<f64>(&[2.0], &[1]);
    let g = tensor::<f64>(&[1.0, 3.0, 5.0], &[3]);
    // max = [2, 2, 2]: b gets 1/2 + 3/2 + 5 = 7, a gets [1/2, 3/2, 0].
    assert_close(&a.maximum(&b), &[2.0, 2.0, 2.0], 0.0);
    assert_close(&maximum_vjp_rhs(&g, &a, &b), &[7.0], 0.0);
    assert_close(&maximum_vjp_lhs(&g, &a, &b), &[0.5, 1.5, 0.0], 0.0);
}

/// NaN wins the forward pass (as NumPy's maximum) and sends no gradient to either side.
/// `fmax` and `fmin` agree with `maximum` and `minimum` at ties (half to each side), and where
/// one side is NaN give its value and its whole gradient to the other side, as `f64::max`.
#[test]
fn fmax_and_fmin_ignore_nan() {
    let a = tensor::<f64>(&[1.0, f64::NAN, 3.0, -1.0, f64::NAN], &[5]);
    let b = tensor::<f64>(&[1.0, 2.0, f64::NAN, 0.5, f64::NAN], &[5]);
    let g = Tensor::<f64>::ones(&[5]);
    let (da, db) = (Tensor::<f64>::ones(&[5]), tensor::<f64>(&[10.0; 5], &[5]));
    let max = a.fmax(&b).to_vec();
    assert_eq!(&max[..4], &[1.0, 2.0, 3.0, 0.5]);
    assert!(max[4].is_nan());
    assert_close(&fmax_vjp_lhs(&g, &a, &b), &[0.5, 0.0, 1.0, 0.0, 0.0], 0.0);
    assert_close(&fmax_vjp_rhs(&g, &a, &b), &[0.5, 1.0, 0.0, 1.0, 0.0], 0.0);
    assert_close(
        &fmax_jvp(&a, &b, Some(&da), Some(&db)),
        &[5.5, 10.0, 1.0, 10.0, 0.0],
        0.0,
    );
    let min = a.fmin(&b).to_vec();
    assert_eq!(&min[..4], &[1.0, 2.0, 3.0, -1.0]);
    assert!(min[4].is_nan());
    assert_close(&fmin_vjp_lhs(&g, &a, &b), &[0.5, 0.0, 1.0, 1.0, 0.0], 0.0);
    assert_close(&fmin_vjp_rhs(&g, &a, &b), &[0.5, 1.0, 0.0, 0.0, 0.0], 0.0);
    // The same for each element as `f64::max` and `f64::min`, in f32 too.
    for (x, y) in [(1.0f32, f32::NAN), (f32::NAN, -2.0), (0.5, 0.25)] {
        let (tx, ty) = (
            tensor::<f32>(&[x.into()], &[1]),
            tensor::<f32>(&[y.into()], &[1]),
        );
        assert_eq!(tx.fmax(&ty).to_vec(), vec![x.max(y)]);
        assert_eq!(tx.fmin(&ty).to_vec(), vec![x.min(y)]);
    }
}

#[test]
fn maximum_propagates_nan() {
    let a = tensor::<f64>(&[f64::NAN, 1.0], &[2]);
    let b = tensor::<f64>(&[0.0, f64::NAN], &[2]);
    assert!(a.maximum(&b).to_vec().iter().all(|v| v.is_nan()));
    assert!(a.minimum(&b).to_vec().iter().all(|v| v.is_nan()));
    let g = Tensor::<f64>::ones(&[2]);
    assert_close(&maximum_vjp_lhs(&g, &a, &b), &[0.0, 0.0], 0.0);
    assert_close(&maximum_vjp_rhs(&g, &a, &b), &[0.0, 0.0], 0.0);
}

/// At a zero base: d/da = b·0^(b-1) (0 for b = 2, 1 for b = 1, inf for b = 1/2, 0 for the
/// constant b = 0) and d/db = ln(1)·y = 0, never NaN. Away from 0: d(2^3)/da = 12 and
/// d(2^3)/db = 8 ln 2; for a negative base and an integer exponent, d((-2)^3)/da = 12.
#[test]
fn pow_derivatives_at_zero_base() {
    let a = tensor::<f64>(&[0.0, 0.0, 0.0, 0.0, 2.0, -2.0], &[6]);
    let b = tensor::<f64>(&[2.0, 0.5, 0.0, 1.0, 3.0, 3.0], &[6]);
    let y = a.pow(&b);
    assert_close(&y, &[0.0, 0.0, 1.0, 0.0, 8.0, -8.0], 0.0);
    let g = Tensor::<f64>::ones(&[6]);
    let ga = pow_vjp_lhs(&g, &a, &b).to_vec();
    assert_eq!(&ga[..4], &[0.0, f64::INFINITY, 0.0, 1.0]);
    assert!(
        (ga[4] - 12.0).abs() < 1e-12 && (ga[5] - 12.0).abs() < 1e-12,
        "{ga:?}"
    );
    let gb = pow_vjp_rhs(&g, &a, &y, &[6]).to_vec();
    assert_eq!(&gb[..4], &[0.0, 0.0, 0.0, 0.0]);
    assert!(
        (gb[4] - 8.0 * std::f64::consts::LN_2).abs() < 1e-12,
        "{gb:?}"
    );
    // The JVP agrees, and a zero tangent stays zero against the infinite derivative.
    let da = tensor::<f64>(&[1.0, 0.0, 1.0, 1.0, 0.0, 0.0], &[6]);
    let t = pow_jvp(&a, &b, &y, Some(&da), Some(&g)).to_vec();
    assert_eq!(&t[..4], &[0.0, 0.0, 0.0, 1.0]);
    assert!((t[4] - 8.0 * std::f64::consts::LN_2).abs() < 1e-12, "{t:?}");
}

#[test]
fn constant_inputs_give_zero_tangents_of_the_output_shape() {
    let a = Tensor::<f64>::ones(&[2, 1]);
    let b = Tensor::<f64>::ones(&[3]);
    let y = a.pow(&b);
    assert_eq!(pow_jvp(&a, &b, &y, None, None).shape(), &[2, 3]);
    let t = maximum_jvp(&a, &b, None, None);
    assert_eq!(t.shape(), &[2, 3]);
    assert_close(&t, &[0.0; 6], 0.0);
}

#[test]
fn shape_mismatch_names_op_and_shapes() {
    let a = Tensor::<f64>::ones(&[2, 3]);
    let b = Tensor::<f64>::ones(&[4]);
    for (op, err) in [
        ("pow", a.try_pow(&b).unwrap_err()),
        ("maximum", a.try_maximum(&b).unwrap_err()),
        ("minimum", a.try_minimum(&b).unwrap_err()),
    ] {
        assert_eq!(err.op(), op);
        let msg = err.to_string();
        assert!(msg.contains("[2, 3]") && msg.contains("[4]"), "{msg}");
    }
    let panic = std::panic::catch_unwind(|| a.maximum(&b)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("maximum:") && msg.contains("[2, 3]") && msg.contains("[4]"),
        "{msg}"
    );
    let panic = std::panic::catch_unwind(|| minimum_jvp(&a, &b, None, None)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("minimum_jvp:") && msg.contains("[4]"),
        "{msg}"
    );
}

/// Broadcasting rules pair elements by logical position when an input is stored transposed.
#[test]
fn rules_pair_elements_of_transposed_inputs() {
    // Logical a = [[1, 3, 5], [2, 4, 6]], stored column-major; b = [3] broadcast over rows.
    let stored = ndarray::Array2::from_shape_vec((3, 2), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap()
        .reversed_axes()
        .into_dyn();
    let a = Tensor::<f64>::from_array(stored);
    let b = tensor::<f64>(&[3.5], &[1]);
    let g = tensor::<f64>(&[1.0, 10.0, 100.0, 1e3, 1e4, 1e5], &[2, 3]);
    assert_close(&a.maximum(&b), &[3.5, 3.5, 5.0, 3.5, 4.0, 6.0], 0.0);
    assert_close(
        &maximum_vjp_lhs(&g, &a, &b),
        &[0.0, 0.0, 100.0, 0.0, 1e4, 1e5],
        0.0,
    );
    assert_close(&maximum_vjp_rhs(&g, &a, &b), &[1011.0], 0.0);
}
