//! `gather`, `scatter_add`.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};

fn idx(values: &[i64], shape: &[usize]) -> Tensor<i64> {
    Tensor::from_vec(values.to_vec(), shape)
}

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    // (data shape, axis, indices): repeated indices, indices shorter than the data on another
    // axis, a negative axis on 3-D data; a list from a list (one pass), with axis -1 too.
    let gathers: [(&[usize], isize, Tensor<i64>); 6] = [
        (&[5], 0, idx(&[4, 0, 4, 2, 1, 4, 3], &[7])),
        (&[3], -1, idx(&[2, 2], &[2])),
        (&[3, 4], 1, idx(&[0, 3, 3, 1, 2, 0], &[3, 2])),
        (&[3, 4], 0, idx(&[2, 0, 1, 2, 2, 2], &[2, 3])),
        (
            &[2, 3, 4],
            -1,
            idx(&[3, 0, 1, 1, 2, 3, 0, 0, 3, 2, 1, 0], &[2, 2, 3]),
        ),
        (&[2, 3, 4], 1, idx(&[0, 2, 1, 2, 0, 0, 1, 1], &[2, 1, 4])),
    ];
    for (i, (shape, axis, indices)) in gathers.into_iter().enumerate() {
        let (i1, i2, i3) = (indices.clone(), indices.clone(), indices);
        cases.push(Case::new(
            "gather",
            "along an axis",
            vec![uniform::<T>(shape, -2.0, 2.0, 4000 + i as u64)],
            move |x| x[0].gather(axis, &i1),
            move |_, t| gather_jvp(axis, &i2, &t[0]),
            move |x, g| vec![gather_vjp(g, x[0].shape(), axis, &i3)],
        ));
    }

    // (data shape, axis, indices): repeated targets, axis -1, indices shorter on another axis.
    let scatters: [(&[usize], isize, Tensor<i64>); 3] = [
        (&[3, 4], 0, idx(&[2, 0, 2, 2, 2, 0, 1, 2], &[2, 4])),
        (&[3, 4], -1, idx(&[1, 1, 3, 0, 0, 0], &[3, 2])),
        (&[2, 3, 4], 1, idx(&[0, 2, 2, 1, 1, 1, 0, 0], &[2, 1, 4])),
    ];
    for (i, (shape, axis, indices)) in scatters.into_iter().enumerate() {
        let upd_shape = indices.shape().to_vec();
        let (i1, i2, i3) = (indices.clone(), indices.clone(), indices);
        cases.push(Case::new(
            "scatter_add",
            "data and updates active",
            vec![
                uniform::<T>(shape, -2.0, 2.0, 4100 + i as u64),
                uniform::<T>(&upd_shape, -2.0, 2.0, 4110 + i as u64),
            ],
            move |x| x[0].scatter_add(axis, &i1, &x[1]),
            move |x, t| {
                let y = x[0].scatter_add(axis, &i2, &x[1]);
                scatter_add_jvp(&y, axis, &i2, Some(&t[0]), Some(&t[1]))
            },
            move |_, g| {
                vec![
                    scatter_add_vjp_input(g),
                    scatter_add_vjp_updates(g, axis, &i3),
                ]
            },
        ));
    }
    // Only the updates active (scatter into constant zeros), then only the data.
    let indices = idx(&[1, 1, 0, 1], &[4]);
    let (i1, i2, i3) = (indices.clone(), indices.clone(), indices);
    cases.push(Case::new(
        "scatter_add",
        "into constant zeros",
        vec![uniform::<T>(&[4], -2.0, 2.0, 4120)],
        move |x| Tensor::zeros(&[2]).scatter_add(0, &i1, &x[0]),
        move |x, t| {
            let y = Tensor::zeros(&[2]).scatter_add(0, &i2, &x[0]);
            scatter_add_jvp(&y, 0, &i2, None, Some(&t[0]))
        },
        move |_, g| vec![scatter_add_vjp_updates(g, 0, &i3)],
    ));
    let indices = idx(&[2, 2, 0], &[3]);
    let updates = uniform::<T>(&[3], -2.0, 2.0, 4121);
    let (i1, i2, u1, u2) = (indices.clone(), indices, updates.clone(), updates);
    cases.push(Case::new(
        "scatter_add",
        "constant updates",
        vec![uniform::<T>(&[3], -2.0, 2.0, 4122)],
        move |x| x[0].scatter_add(0, &i1, &u1),
        move |x, t| {
            let y = x[0].scatter_add(0, &i2, &u2);
            scatter_add_jvp(&y, 0, &i2, Some(&t[0]), None)
        },
        |_, g| vec![scatter_add_vjp_input(g)],
    ));
    cases
}

#[test]
fn gather_matches_torch_semantics() {
    // torch.gather(t, 1, [[0, 0], [1, 0]]) with t = [[1, 2], [3, 4]] is [[1, 1], [4, 3]].
    let t = tensor::<f64>(&[1., 2., 3., 4.], &[2, 2]);
    assert_close(
        &t.gather(1, &idx(&[0, 0, 1, 0], &[2, 2])),
        &[1., 1., 4., 3.],
        0.0,
    );
    // Along axis 0: out[i][j] = t[idx[i][j]][j].
    assert_close(
        &t.gather(0, &idx(&[1, 0, 0, 0], &[2, 2])),
        &[3., 2., 1., 2.],
        0.0,
    );
    // Indices shorter than the data on the other axis use its leading part.
    let x = Tensor::<f64>::arange(12).reshape(&[3, 4]);
    let g = x.gather(0, &idx(&[2, 1], &[1, 2]));
    assert_eq!(g.shape(), &[1, 2]);
    assert_close(&g, &[8., 5.], 0.0);
    // A transposed (non-row-major) source: x.t()[i][j] = x[j][i].
    let g = x.t().gather(1, &idx(&[2, 0, 1], &[3, 1]));
    assert_close(&g, &[8., 1., 6.], 0.0);
    // Integer data.
    let xi = Tensor::<i64>::from_vec(vec![10, 20, 30], &[3]);
    assert_eq!(
        xi.gather(0, &idx(&[2, 2, 0], &[3])).to_vec(),
        vec![30, 30, 10]
    );
}

#[test]
fn repeated_indices_accumulate() {
    // scatter_add into zeros: index 0 receives 1 + 3 + 4, index 1 receives 2.
    let z = Tensor::<f64>::zeros(&[3]);
    let y = z.scatter_add(
        0,
        &idx(&[0, 1, 0, 0], &[4]),
        &tensor(&[1., 2., 3., 4.], &[4]),
    );
    assert_close(&y, &[8., 2., 0.], 0.0);
    // gather's VJP: x[0][0] was read twice in row 0, x[1][1] three times in row 1.
    let g = Tensor::<f64>::ones(&[2, 3]);
    let gx = gather_vjp(&g, &[2, 3], 1, &idx(&[0, 0, 2, 1, 1, 1], &[2, 3]));
    assert_close(&gx, &[2., 0., 1., 0., 3., 0.], 0.0);
    // scatter_add keeps the data and adds along axis 1: y[i][idx[i][j]] += u[i][j].
    let x = tensor::<f64>(&[1., 1., 1., 1.], &[2, 2]);
    let y = x.scatter_add(
        1,
        &idx(&[1, 1, 0, 1], &[2, 2]),
        &tensor(&[5., 6., 7., 8.], &[2, 2]),
    );
    assert_close(&y, &[1., 12., 8., 9.], 0.0);
    assert_close(&x, &[1., 1., 1., 1.], 0.0);
}

#[test]
fn bad_indices_name_the_op_index_and_shape() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let msg = panic_message(|| x.gather(1, &idx(&[0, 3], &[2, 1])));
    assert!(
        msg.starts_with("gather:") && msg.contains("index 3") && msg.contains("[2, 3]"),
        "{msg}"
    );
    let err = x.try_gather(0, &idx(&[-1], &[1, 1])).unwrap_err();
    assert_eq!(err.op(), "gather");
    assert!(
        err.message().contains("-1") && err.message().contains("[2, 3]"),
        "{err}"
    );
    let err = x.try_gather(0, &idx(&[0, 0, 0, 0], &[1, 4])).unwrap_err();
    assert!(
        err.message().contains("[1, 4]") && err.message().contains("[2, 3]"),
        "{err}"
    );
    assert!(x.try_gather(2, &idx(&[0], &[1, 1])).is_err());
    assert!(x.try_gather(0, &idx(&[0], &[1])).is_err());
    // A list from a list: the same errors.
    let v = Tensor::<f64>::zeros(&[3]);
    let err = v.try_gather(0, &idx(&[0, 5], &[2])).unwrap_err();
    assert!(
        err.op() == "gather" && err.message().contains("index 5") && err.message().contains("[3]"),
        "{err}"
    );
    assert!(v.try_gather(1, &idx(&[0], &[1])).is_err());
    let msg =
        panic_message(|| gather_vjp(&Tensor::<f64>::ones(&[2]), &[3], 0, &idx(&[1, 3], &[2])));
    assert!(
        msg.starts_with("scatter_add:") && msg.contains("index 3"),
        "{msg}"
    );

    let msg = panic_message(|| x.scatter_add(0, &idx(&[2], &[1, 1]), &Tensor::zeros(&[1, 1])));
    assert!(
        msg.starts_with("scatter_add:") && msg.contains("index 2") && msg.contains("[2, 3]"),
        "{msg}"
    );
    let err = x
        .try_scatter_add(0, &idx(&[0, 1], &[1, 2]), &Tensor::zeros(&[2, 1]))
        .unwrap_err();
    assert_eq!(err.op(), "scatter_add");
    assert!(
        err.message().contains("[2, 1]") && err.message().contains("[1, 2]"),
        "{err}"
    );
}
