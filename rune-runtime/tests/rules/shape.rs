//! `reshape`, `permute`, `t`, `broadcast_to`, `expand_dims`, `squeeze`.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    let x234 = uniform::<T>(&[2, 3, 4], -2.0, 2.0, 1000);
    let x23 = uniform::<T>(&[2, 3], -2.0, 2.0, 1001);

    cases.push(Case::new(
        "reshape",
        "[2,3,4] -> [6,4]",
        vec![x234.clone()],
        |x| x[0].reshape(&[6, 4]),
        |_, t| reshape_jvp(&[6, 4], &t[0]),
        |x, g| vec![reshape_vjp(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "reshape",
        "[1] -> 0-d",
        vec![uniform::<T>(&[1], -2.0, 2.0, 1002)],
        |x| x[0].reshape(&[0usize; 0]),
        |_, t| reshape_jvp(&[0usize; 0], &t[0]),
        |x, g| vec![reshape_vjp(g, x[0].shape())],
    ));
    // A transposed (non-row-major) tensor reshaped, and its cotangent reshaped back and
    // transposed: both directions go through a non-standard layout.
    cases.push(Case::new(
        "reshape",
        "of a transposed tensor",
        vec![x23.clone()],
        |x| x[0].t().reshape(&[6]),
        |_, t| reshape_jvp(&[6], &t_jvp(&t[0])),
        |_, g| vec![t_vjp(&reshape_vjp(g, &[3, 2]))],
    ));

    for perm in [[2usize, 0, 1], [1, 2, 0], [0, 2, 1]] {
        cases.push(Case::new(
            "permute",
            "3-D",
            vec![x234.clone()],
            move |x| x[0].permute(&perm),
            move |_, t| permute_jvp(&perm, &t[0]),
            move |_, g| vec![permute_vjp(g, &perm)],
        ));
    }

    cases.push(Case::new(
        "t",
        "matrix",
        vec![x23.clone()],
        |x| x[0].t(),
        |_, t| t_jvp(&t[0]),
        |_, g| vec![t_vjp(g)],
    ));
    cases.push(Case::new(
        "t",
        "batch of matrices",
        vec![x234.clone()],
        |x| x[0].t(),
        |_, t| t_jvp(&t[0]),
        |_, g| vec![t_vjp(g)],
    ));

    let broadcasts: [(&[usize], &'static [usize]); 4] = [
        (&[3], &[2, 3]),
        (&[2, 1], &[4, 2, 3]),
        (&[], &[2, 2]),
        (&[2, 3], &[2, 3]),
    ];
    for (i, (from, to)) in broadcasts.into_iter().enumerate() {
        cases.push(Case::new(
            "broadcast_to",
            "NumPy broadcasting",
            vec![uniform::<T>(from, -2.0, 2.0, 1010 + i as u64)],
            move |x| x[0].broadcast_to(to),
            move |_, t| broadcast_to_jvp(to, &t[0]),
            |x, g| vec![broadcast_to_vjp(g, x[0].shape())],
        ));
    }

    for axis in [0isize, 1, 2, -1, -3] {
        cases.push(Case::new(
            "expand_dims",
            "[2,3], every position",
            vec![x23.clone()],
            move |x| x[0].expand_dims(axis),
            move |_, t| expand_dims_jvp(axis, &t[0]),
            move |_, g| vec![expand_dims_vjp(g, axis)],
        ));
    }

    let x213 = uniform::<T>(&[2, 1, 3], -2.0, 2.0, 1020);
    for axis in [1isize, -2] {
        cases.push(Case::new(
            "squeeze",
            "[2,1,3]",
            vec![x213.clone()],
            move |x| x[0].squeeze(axis),
            move |_, t| squeeze_jvp(axis, &t[0]),
            |x, g| vec![squeeze_vjp(g, x[0].shape())],
        ));
    }
    cases.push(Case::new(
        "squeeze",
        "[3,1] last axis",
        vec![uniform::<T>(&[3, 1], -2.0, 2.0, 1021)],
        |x| x[0].squeeze(-1),
        |_, t| squeeze_jvp(-1, &t[0]),
        |x, g| vec![squeeze_vjp(g, x[0].shape())],
    ));
    cases
}

/// Reshapes of views: splitting the last axis of a column slice and merging the outer axes of
/// a slice keep the view's strides; merging axes apart in memory (a permuted tensor's) copies.
/// Each gives the elements of the view's row-major copy.
#[test]
fn reshapes_of_views_keep_the_row_major_order() {
    let x = uniform::<f64>(&[2, 3, 12], -1.0, 1.0, 1010);
    let slice = x.shrink(&[(0, 2), (0, 3), (4, 8)]);
    let copy = Tensor::from_vec(slice.to_vec(), slice.shape());
    for shape in [&[2, 3, 2, 2][..], &[6, 4], &[24], &[2, 12], &[3, 2, 4]] {
        let r = slice.reshape(shape);
        assert_eq!(r.shape(), shape);
        assert_eq!(r.to_vec(), copy.reshape(shape).to_vec(), "{shape:?}");
    }
    let heads = slice.reshape(&[2, 3, 2, 2]).permute(&[0, 2, 1, 3]);
    let merged = heads.reshape(&[2, 2, 6]);
    assert!(merged.is_standard_layout());
    assert_eq!(
        merged.to_vec(),
        Tensor::from_vec(heads.to_vec(), heads.shape())
            .reshape(&[2, 2, 6])
            .to_vec()
    );
}

#[test]
fn reshape_follows_logical_row_major_order_after_permute() {
    // [[0, 1, 2], [3, 4, 5]] transposed is [[0, 3], [1, 4], [2, 5]].
    let x = Tensor::<f64>::arange(6).reshape(&[2, 3]);
    assert_close(&x.t().reshape(&[6]), &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0], 0.0);
    assert_eq!(x.t().reshape(&[3, 2]).shape(), &[3, 2]);
    // A 3-D permutation: y[i, j, k] = x[j, k, i] for x of shape [2, 1, 3].
    let x = Tensor::<f64>::arange(6).reshape(&[2, 1, 3]);
    let y = x.permute(&[2, 0, 1]);
    assert_eq!(y.shape(), &[3, 2, 1]);
    assert_close(&y.reshape(&[6]), &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0], 0.0);
}

#[test]
fn permute_vjp_applies_the_inverse_permutation() {
    // perm [1, 2, 0] sends shape [2, 3, 4] to [3, 4, 2]; the inverse is [2, 0, 1].
    let x = Tensor::<f64>::arange(24).reshape(&[2, 3, 4]);
    let y = x.permute(&[1, 2, 0]);
    assert_eq!(y.shape(), &[3, 4, 2]);
    // y[i, j, k] = x[k, i, j]: y[1, 2, 1] = x[1, 1, 2] = 12 + 4 + 2.
    assert_close(&y.shrink(&[(1, 2), (2, 3), (1, 2)]), &[18.0], 0.0);
    let back = permute_vjp(&y, &[1, 2, 0]);
    assert_eq!(back.shape(), &[2, 3, 4]);
    assert_eq!(back.to_vec(), x.to_vec());
}

#[test]
fn broadcast_expand_and_squeeze_values() {
    let x = tensor::<f64>(&[1.0, 2.0], &[2, 1]);
    assert_close(
        &x.broadcast_to(&[2, 2, 3]),
        &[1., 1., 1., 2., 2., 2., 1., 1., 1., 2., 2., 2.],
        0.0,
    );
    // The adjoint sums over the stretched and the added axes.
    let g = Tensor::<f64>::arange(12).reshape(&[2, 2, 3]);
    // element (i) of x gets the sum of g[:, i, :]: 0+1+2+6+7+8 and 3+4+5+9+10+11.
    assert_close(&broadcast_to_vjp(&g, &[2, 1]), &[24.0, 42.0], 0.0);

    let v = tensor::<f64>(&[1.0, 2.0, 3.0], &[3]);
    assert_eq!(v.expand_dims(0).shape(), &[1, 3]);
    assert_eq!(v.expand_dims(1).shape(), &[3, 1]);
    assert_eq!(v.expand_dims(-1).shape(), &[3, 1]);
    assert_eq!(v.expand_dims(-2).shape(), &[1, 3]);
    assert_eq!(v.expand_dims(1).squeeze(-1).to_vec(), v.to_vec());
    assert_eq!(Tensor::<f64>::scalar(2.0).expand_dims(0).shape(), &[1]);
}

#[test]
fn shape_ops_work_on_index_and_mask_tensors() {
    let idx = Tensor::<i64>::from_vec(vec![0, 1, 2, 3, 4, 5], &[2, 3]);
    assert_eq!(idx.t().reshape(&[6]).to_vec(), vec![0, 3, 1, 4, 2, 5]);
    let mask = Tensor::from_vec(vec![true, false], &[2]);
    assert_eq!(
        mask.broadcast_to(&[2, 2]).to_vec(),
        vec![true, false, true, false]
    );
}

#[test]
fn bad_shapes_name_the_op_and_shapes() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let err = x.try_reshape(&[4]).unwrap_err();
    assert_eq!(err.op(), "reshape");
    let msg = err.to_string();
    assert!(msg.contains("[2, 3]") && msg.contains("[4]"), "{msg}");
    let msg = panic_message(|| x.reshape(&[7]));
    assert!(
        msg.starts_with("reshape:") && msg.contains("[2, 3]") && msg.contains("[7]"),
        "{msg}"
    );

    let msg = panic_message(|| x.permute(&[0, 0]));
    assert!(
        msg.starts_with("permute:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    assert_eq!(x.try_permute(&[1]).unwrap_err().op(), "permute");

    let msg = panic_message(|| Tensor::<f64>::zeros(&[3]).t());
    assert!(msg.starts_with("t:") && msg.contains("[3]"), "{msg}");

    let msg = panic_message(|| x.broadcast_to(&[3, 3]));
    assert!(
        msg.starts_with("broadcast_to:") && msg.contains("[2, 3]") && msg.contains("[3, 3]"),
        "{msg}"
    );

    let msg = panic_message(|| x.expand_dims(3));
    assert!(
        msg.starts_with("expand_dims:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    assert!(x.try_expand_dims(-4).is_err());
    assert!(x.try_expand_dims(2).is_ok() && x.try_expand_dims(-3).is_ok());

    let msg = panic_message(|| x.squeeze(0));
    assert!(
        msg.starts_with("squeeze:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    assert_eq!(x.try_squeeze(2).unwrap_err().op(), "squeeze");
}
