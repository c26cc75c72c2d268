//! `concat`, `stack`, `where_cond`.

use rune_runtime::__private::rules::*;
use rune_runtime::{concat, div, stack, where_cond, Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};

fn refs<T: Element>(x: &[Tensor<T>]) -> Vec<&Tensor<T>> {
    x.iter().collect()
}

fn somes<T: Element>(t: &[Tensor<T>]) -> Vec<Option<&Tensor<T>>> {
    t.iter().map(Some).collect()
}

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();

    let concats: [(&[&[usize]], isize); 4] = [
        (&[&[2, 3], &[2, 1], &[2, 2]], 1),
        (&[&[2, 3], &[2, 1], &[2, 2]], -1),
        (&[&[1, 3], &[2, 3]], 0),
        (&[&[2, 2, 3], &[2, 1, 3]], -2),
    ];
    for (i, (shapes, axis)) in concats.into_iter().enumerate() {
        let args: Vec<Tensor<T>> = shapes
            .iter()
            .enumerate()
            .map(|(j, s)| uniform::<T>(s, -2.0, 2.0, 3000 + 10 * i as u64 + j as u64))
            .collect();
        cases.push(Case::new(
            "concat",
            "all inputs active",
            args,
            move |x| concat(&refs(x), axis),
            move |x, t| concat_jvp(&refs(x), axis, &somes(t)),
            move |x, g| {
                let sizes = concat_sizes(&refs(x), axis);
                (0..x.len())
                    .map(|j| concat_vjp(g, j, &sizes, axis))
                    .collect()
            },
        ));
    }
    // The middle input is a constant: its tangent is `None` and it gets no cotangent.
    let c = uniform::<T>(&[2, 2], -2.0, 2.0, 3050);
    let c2 = c.clone();
    cases.push(Case::new(
        "concat",
        "a constant input in the middle",
        vec![
            uniform::<T>(&[2, 3], -2.0, 2.0, 3051),
            uniform::<T>(&[2, 1], -2.0, 2.0, 3052),
        ],
        move |x| concat(&[&x[0], &c, &x[1]], 1),
        move |x, t| concat_jvp(&[&x[0], &c2, &x[1]], 1, &[Some(&t[0]), None, Some(&t[1])]),
        |x, g| {
            let sizes = [x[0].shape()[1], 2, x[1].shape()[1]];
            vec![concat_vjp(g, 0, &sizes, 1), concat_vjp(g, 2, &sizes, 1)]
        },
    ));

    for (i, axis) in [0isize, 1, 2, -1, -3].into_iter().enumerate() {
        let args: Vec<Tensor<T>> = (0..3)
            .map(|j| uniform::<T>(&[2, 3], -2.0, 2.0, 3100 + 10 * i as u64 + j))
            .collect();
        cases.push(Case::new(
            "stack",
            "three [2,3] tensors",
            args,
            move |x| stack(&refs(x), axis),
            move |x, t| stack_jvp(&refs(x), axis, &somes(t)),
            move |x, g| (0..x.len()).map(|j| stack_vjp(g, j, axis)).collect(),
        ));
    }
    let c = uniform::<T>(&[3], -2.0, 2.0, 3150);
    let c2 = c.clone();
    cases.push(Case::new(
        "stack",
        "a constant first input",
        vec![uniform::<T>(&[3], -2.0, 2.0, 3151)],
        move |x| stack(&[&c, &x[0]], -1),
        move |x, t| stack_jvp(&[&c2, &x[0]], -1, &[None, Some(&t[0])]),
        |_, g| vec![stack_vjp(g, 1, -1)],
    ));

    // (mask, a, b) shapes: equal, all three broadcasting, 0-d `b`.
    let wheres: [(&[usize], &[usize], &[usize]); 3] = [
        (&[2, 3], &[2, 3], &[2, 3]),
        (&[2, 1], &[3], &[2, 3]),
        (&[2, 3], &[1], &[]),
    ];
    for (i, (sm, sa, sb)) in wheres.into_iter().enumerate() {
        let mask = uniform::<f64>(sm, -1.0, 1.0, 3200 + i as u64).map(|&v| v > 0.0);
        let (m1, m2, m3) = (mask.clone(), mask.clone(), mask);
        cases.push(Case::new(
            "where_cond",
            "broadcasting mask and operands",
            vec![
                uniform::<T>(sa, -2.0, 2.0, 3210 + i as u64),
                uniform::<T>(sb, -2.0, 2.0, 3220 + i as u64),
            ],
            move |x| where_cond(&m1, &x[0], &x[1]),
            move |x, t| {
                let y = where_cond(&m2, &x[0], &x[1]);
                where_cond_jvp(&m2, &y, Some(&t[0]), Some(&t[1]))
            },
            move |x, g| {
                vec![
                    where_cond_vjp_lhs(g, &m3, x[0].shape()),
                    where_cond_vjp_rhs(g, &m3, x[1].shape()),
                ]
            },
        ));
    }
    // A scalar `b`, and a constant `a` tensor smaller than the output.
    let mask = Tensor::from_vec(vec![true, false, false, true, true, false], &[2, 3]);
    let (m1, m2, m3) = (mask.clone(), mask.clone(), mask);
    let s = T::from_f64(0.25);
    cases.push(Case::new(
        "where_cond",
        "scalar b",
        vec![uniform::<T>(&[3], -2.0, 2.0, 3230)],
        move |x| where_cond(&m1, &x[0], &s),
        move |x, t| where_cond_jvp(&m2, &where_cond(&m2, &x[0], &s), Some(&t[0]), None),
        move |x, g| vec![where_cond_vjp_lhs(g, &m3, x[0].shape())],
    ));
    let mask = Tensor::from_vec(vec![true, false, true], &[3]);
    let (m1, m2, m3) = (mask.clone(), mask.clone(), mask);
    let a = uniform::<T>(&[3], -2.0, 2.0, 3231);
    let (a1, a2) = (a.clone(), a);
    cases.push(Case::new(
        "where_cond",
        "constant a",
        vec![uniform::<T>(&[2, 3], -2.0, 2.0, 3232)],
        move |x| where_cond(&m1, &a1, &x[0]),
        move |x, t| where_cond_jvp(&m2, &where_cond(&m2, &a2, &x[0]), None, Some(&t[0])),
        move |x, g| vec![where_cond_vjp_rhs(g, &m3, x[0].shape())],
    ));
    cases
}

#[test]
fn concat_and_stack_values() {
    let a = tensor::<f64>(&[1., 2., 3., 4.], &[2, 2]);
    let b = tensor::<f64>(&[5., 6.], &[2, 1]);
    assert_close(&concat(&[&a, &b], 1), &[1., 2., 5., 3., 4., 6.], 0.0);
    assert_close(&concat(&[&a, &b.t()], 0), &[1., 2., 3., 4., 5., 6.], 0.0);
    assert_eq!(concat_sizes(&[&a, &b], -1), vec![2, 1]);
    let g = tensor::<f64>(&[1., 2., 5., 3., 4., 6.], &[2, 3]);
    assert_close(&concat_vjp(&g, 1, &[2, 1], 1), &[5., 6.], 0.0);
    assert_close(&concat_vjp(&g, 0, &[2, 1], -1), &[1., 2., 3., 4.], 0.0);

    let c = tensor::<f64>(&[7., 8.], &[2]);
    let d = tensor::<f64>(&[9., 10.], &[2]);
    assert_close(&stack(&[&c, &d], 0), &[7., 8., 9., 10.], 0.0);
    let s = stack(&[&c, &d], -1);
    assert_eq!(s.shape(), &[2, 2]);
    assert_close(&s, &[7., 9., 8., 10.], 0.0);
    assert_close(&stack_vjp(&s, 1, -1), &[9., 10.], 0.0);
    // A `None` tangent is zeros in its place.
    let t = stack_jvp(&[&c, &d], 1, &[None, Some(&d)]);
    assert_close(&t, &[0., 9., 0., 10.], 0.0);
    let t = concat_jvp(&[&a, &b], 1, &[None, Some(&b)]);
    assert_close(&t, &[0., 0., 5., 0., 0., 6.], 0.0);
}

/// Row-major tensors joined along a middle axis, large enough to be copied run by run: each
/// element where the formula puts it.
#[test]
fn concat_of_large_tensors_along_a_middle_axis() {
    let value =
        |t: usize, i: usize, j: usize, k: usize| (t * 1_000_000 + i * 10_000 + j * 100 + k) as f64;
    let part = |t: usize, rows: usize| {
        let data: Vec<f64> = (0..3 * rows * 70)
            .map(|e| value(t, e / (rows * 70), e / 70 % rows, e % 70))
            .collect();
        Tensor::from_vec(data, &[3, rows, 70])
    };
    let (a, b) = (part(0, 5), part(1, 9));
    let joined = concat(&[&a, &b], 1);
    assert_eq!(joined.shape(), &[3, 14, 70]);
    let expected: Vec<f64> = (0..3 * 14 * 70)
        .map(|e| {
            let (i, j, k) = (e / (14 * 70), e / 70 % 14, e % 70);
            if j < 5 {
                value(0, i, j, k)
            } else {
                value(1, i, j - 5, k)
            }
        })
        .collect();
    assert_close(&joined, &expected, 0.0);
}

#[test]
fn where_cond_selects_and_broadcasts() {
    let mask = Tensor::from_vec(vec![true, false, true], &[3]);
    let b = tensor::<f64>(&[4., 5., 6.], &[3]);
    assert_close(&where_cond(&mask, &1.0, &b), &[1., 5., 1.], 0.0);
    // mask [2, 1] against a [3]: row 0 takes a, row 1 takes b.
    let mask = Tensor::from_vec(vec![true, false], &[2, 1]);
    let a = tensor::<f64>(&[1., 2., 3.], &[3]);
    let y = where_cond(&mask, &a, &0.0);
    assert_eq!(y.shape(), &[2, 3]);
    assert_close(&y, &[1., 2., 3., 0., 0., 0.], 0.0);
    // The cotangent of `a` sums the selected rows only.
    let g = tensor::<f64>(&[1., 2., 3., 10., 20., 30.], &[2, 3]);
    assert_close(&where_cond_vjp_lhs(&g, &mask, &[3]), &[1., 2., 3.], 0.0);
    assert_close(&where_cond_vjp_rhs(&g, &mask, &[]), &[60.0], 0.0);
}

/// `where(x != 0, 1 / x, 0)` at `x = 0`: the unselected branch's derivative `-1/x^2` is
/// infinite there, yet the gradient is exactly 0, not NaN as in JAX or PyTorch.
#[test]
fn unselected_branch_contributes_exact_zero_not_nan() {
    let x = tensor::<f64>(&[0.0, 2.0], &[2]);
    let mask = x.map(|&v| v != 0.0);
    let inv = div(&1.0, &x); // [inf, 0.5]
    let g = Tensor::<f64>::ones(&[2]);
    let g_inv = where_cond_vjp_lhs(&g, &mask, &[2]);
    assert_eq!(g_inv.to_vec(), vec![0.0, 1.0]);
    let gx = div_vjp_rhs(&g_inv, &x, &inv);
    assert_eq!(gx.to_vec(), vec![0.0, -0.25]);
    // Forward mode: the unselected tangent is dropped, not multiplied by zero.
    let y = where_cond(&mask, &inv, &0.0);
    let t = where_cond_jvp(
        &mask,
        &y,
        Some(&tensor::<f64>(&[f64::NAN, 1.0], &[2])),
        None,
    );
    assert_eq!(t.to_vec(), vec![0.0, 1.0]);
}

#[test]
fn bad_input_names_the_op_and_shapes() {
    let a = Tensor::<f64>::zeros(&[2, 3]);
    let b = Tensor::<f64>::zeros(&[3, 2]);
    let msg = panic_message(|| concat(&[&a, &b], 0));
    assert!(
        msg.starts_with("concat:") && msg.contains("[2, 3]") && msg.contains("[3, 2]"),
        "{msg}"
    );
    let msg = panic_message(|| concat(&[&a, &a], 2));
    assert!(
        msg.starts_with("concat:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    assert!(rune_runtime::try_concat::<f64>(&[] as &[&Tensor<f64>], 0).is_err());
    let msg = panic_message(|| stack(&[&a, &b], 0));
    assert!(msg.starts_with("stack:") && msg.contains("[3, 2]"), "{msg}");
    let msg = panic_message(|| stack(&[&a, &a], 3));
    assert!(msg.starts_with("stack:") && msg.contains("[2, 3]"), "{msg}");
    assert!(rune_runtime::try_stack(&[&a, &a], -3).is_ok());
    let mask = Tensor::from_vec(vec![true, false], &[2]);
    let err = rune_runtime::try_where_cond(&mask, &a, &0.0).unwrap_err();
    assert_eq!(err.op(), "where_cond");
    assert!(
        err.message().contains("[2]") && err.message().contains("[2, 3]"),
        "{err}"
    );
}
