//! A small sequence classifier written the way a PyTorch user writes it, with PyTorch's names:
//! `embedding`, `layer_norm` (with its weight and bias), `masked_fill` over padding,
//! `transpose`, `reshape` with a `-1`, and `index_select` to pick each sample's log-probability
//! of its label. Every generated variant is checked against central finite differences of the
//! function itself.

use rune_ad::prelude::*;
use rune_ad::GradFn;

const BATCH: usize = 2;
const LEN: usize = 3;
const VOCAB: usize = 5;
const DIM: usize = 4;
const CLASSES: usize = 3;

/// The PyTorch original:
///
/// ```python
/// h = F.embedding(ids, emb)                                   # [B, L, D]
/// h = F.layer_norm(h, (D,), ln_w, ln_b, eps=1e-5)
/// h = h.masked_fill(pad.unsqueeze(-1), 0.0)                   # padding positions to 0
/// h = h.transpose(1, 2).reshape(B, -1)                        # [B, D * L]
/// logp = (h @ w + b).log_softmax(-1)                          # [B, C]
/// loss = -logp.reshape(-1).index_select(0, picks).mean()      # picks[i] = i * C + label[i]
/// ```
#[differentiable]
#[allow(clippy::too_many_arguments)]
fn classifier_loss<T: Element>(
    emb: &Tensor<T>,
    ln_w: &Tensor<T>,
    ln_b: &Tensor<T>,
    w: &Tensor<T>,
    b: &Tensor<T>,
    #[nodiff] ids: &Tensor<i64>,
    #[nodiff] pad: &Tensor<bool>,
    #[nodiff] picks: &[i64],
) -> Tensor<T> {
    let h = embedding(ids, emb);
    let h = h.layer_norm(&[DIM], 1e-5) * ln_w + ln_b;
    let h = h.masked_fill(pad, 0.0);
    let h = h.transpose(1, 2).reshape(&[BATCH as isize, -1]);
    let logp = (h.matmul(w) + b).log_softmax(-1);
    -logp.reshape(&[-1]).index_select(0, picks).mean()
}

struct Data {
    ids: Tensor<i64>,
    pad: Tensor<bool>,
    picks: Vec<i64>,
}

/// Token 3 twice in the first sample, the second sample's last position padding, labels 2 and 0.
fn data() -> Data {
    Data {
        ids: Tensor::from_vec(vec![3, 1, 3, 0, 4, 2], &[BATCH, LEN]),
        pad: Tensor::from_vec(
            vec![false, false, false, false, false, true],
            &[BATCH, LEN, 1],
        ),
        picks: vec![2, CLASSES as i64],
    }
}

fn params<T: Element>() -> Vec<Tensor<T>> {
    let shapes: [&[usize]; 5] = [
        &[VOCAB, DIM],
        &[DIM],
        &[DIM],
        &[DIM * LEN, CLASSES],
        &[CLASSES],
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| Tensor::rand_normal(s, T::zero(), T::from_f64(0.7), 40 + i as u64))
        .collect()
}

/// The five parameters' gradients, as the generated functions return them.
type Grads<T> = (Tensor<T>, Tensor<T>, Tensor<T>, Tensor<T>, Tensor<T>);

fn as_list<T: Element>(g: Grads<T>) -> Vec<Tensor<T>> {
    vec![g.0, g.1, g.2, g.3, g.4]
}

fn loss_fn<T: Element>(d: &Data) -> impl GradFn<T> + '_ {
    grad_fn(
        move |p: &[Tensor<T>]| {
            classifier_loss(&p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks)
        },
        move |p: &[Tensor<T>], t: &[Tensor<T>]| {
            classifier_loss_jvp(
                &p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks, &t[0], &t[1], &t[2],
                &t[3], &t[4],
            )
            .1
        },
        move |p: &[Tensor<T>], g: &Tensor<T>| {
            as_list(
                classifier_loss_vjp(
                    &p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks, g,
                )
                .1,
            )
        },
    )
}

#[test]
fn jvp_and_vjp_match_finite_differences_f64_and_f32() {
    let d = data();
    let p64 = params::<f64>();
    check_grad(&loss_fn::<f64>(&d), &p64, 1e-6, 1e-6, 1e-7).unwrap();
    let p32 = params::<f32>();
    check_grad(
        &loss_fn::<f32>(&d),
        &p32,
        f32::FD_EPS,
        f32::GRAD_TOL,
        f32::GRAD_TOL,
    )
    .unwrap();
}

/// Central differences of the loss in every element of every parameter, against `f_grad`.
#[test]
fn every_gradient_element_matches_finite_differences() {
    let d = data();
    let p = params::<f64>();
    let loss = |p: &[Tensor<f64>]| {
        classifier_loss(&p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks).item()
    };
    let grads = as_list(classifier_loss_grad(
        &p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks,
    ));
    let h = 1e-5;
    for (k, g) in grads.iter().enumerate() {
        assert_eq!(g.shape(), p[k].shape());
        let g = g.to_vec();
        for i in 0..g.len() {
            let moved = |by: f64| {
                let mut q = p.clone();
                let mut v = q[k].to_vec();
                v[i] += by;
                q[k] = Tensor::from_vec(v, p[k].shape());
                loss(&q)
            };
            let fd = (moved(h) - moved(-h)) / (2.0 * h);
            assert!(
                (g[i] - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "parameter {k}, element {i}: f_grad {} vs finite differences {fd}",
                g[i]
            );
        }
    }
    // Row 3 of the table is read twice and rows 0, 1, 2, 4 once each (row 2 only at the
    // padding position, which masked_fill zeroes): its gradient is exactly zero.
    let table = grads[0].to_vec();
    assert!(
        table[2 * DIM..3 * DIM].iter().all(|&v| v == 0.0),
        "{table:?}"
    );
    assert!(
        table[3 * DIM..4 * DIM].iter().any(|&v| v != 0.0),
        "{table:?}"
    );
}

/// `f_grad`, `f_value_and_grad` and `f_pullback` give `f_vjp`'s gradient at a cotangent of one.
#[test]
fn every_reverse_entry_point_agrees() {
    let d = data();
    let p = params::<f64>();
    let (value, by_vjp) = classifier_loss_vjp(
        &p[0],
        &p[1],
        &p[2],
        &p[3],
        &p[4],
        &d.ids,
        &d.pad,
        &d.picks,
        &Tensor::scalar(1.0),
    );
    let by_vjp = as_list(by_vjp);
    let grad = as_list(classifier_loss_grad(
        &p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks,
    ));
    let (v2, by_value_and_grad) =
        classifier_loss_value_and_grad(&p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks);
    let (v3, pullback) =
        classifier_loss_pullback(&p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks);
    let by_pullback = as_list(pullback(&Tensor::scalar(1.0)));
    let plain = classifier_loss(&p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks);
    assert_eq!(value, plain);
    assert_eq!(v2, plain);
    assert_eq!(v3, plain);
    for (k, g) in by_vjp.iter().enumerate() {
        assert_eq!(g, &grad[k]);
        assert_eq!(g, &as_list(by_value_and_grad.clone())[k]);
        assert_eq!(g, &by_pullback[k]);
    }
}

/// `f_hvp` against central differences of `f_grad` along the directions, and the symmetry of
/// the Hessian.
#[test]
fn hvp_matches_finite_differences_of_the_gradient() {
    let d = data();
    let p = params::<f64>();
    let grad = |p: &[Tensor<f64>]| {
        as_list(classifier_loss_grad(
            &p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks,
        ))
    };
    let hvp = |p: &[Tensor<f64>], v: &[Tensor<f64>]| {
        as_list(
            classifier_loss_hvp(
                &p[0], &p[1], &p[2], &p[3], &p[4], &d.ids, &d.pad, &d.picks, &v[0], &v[1], &v[2],
                &v[3], &v[4],
            )
            .1,
        )
    };
    check_hvp(grad, hvp, &p, 1e-5, 1e-5, 1e-6).unwrap();
}
