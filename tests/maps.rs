//! Parameters held in maps by name: a `BTreeMap` or `HashMap` of tensors or of structures as a
//! differentiated parameter (read by key with `params["w"]`, `&params[&name]` or
//! `params.get(key).unwrap()`, and looped over), and as a field of a structure; gradients are maps
//! with the same keys, checked against finite differences and by hand, in every variant; the
//! safetensors names come from the keys, and an optimizer steps a model holding a map.

use std::collections::{BTreeMap, HashMap};

use rune_ad::prelude::*;

mod support;
use support::check_variants;

fn t(data: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(data.to_vec(), shape)
}

/// A two-layer network with its weights by name.
fn named_params() -> BTreeMap<String, Tensor<f64>> {
    BTreeMap::from([
        ("w1".to_owned(), Tensor::rand_uniform(&[3, 4], -0.5, 0.5, 1)),
        ("b1".to_owned(), Tensor::rand_uniform(&[4], -0.1, 0.1, 2)),
        ("w2".to_owned(), Tensor::rand_uniform(&[4, 2], -0.5, 0.5, 3)),
        ("b2".to_owned(), Tensor::rand_uniform(&[2], -0.1, 0.1, 4)),
    ])
}

#[differentiable]
fn mlp_loss(params: &BTreeMap<String, Tensor<f64>>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let w1 = &params["w1"];
    let b1 = params.get("b1").unwrap();
    let h = (x.matmul(w1) + b1).tanh();
    let second = String::from("w2");
    let out = h.matmul(&params[&second]) + params.get("b2").expect("a bias");
    (&out * &out).mean()
}

#[test]
fn a_btree_map_of_tensors_in_every_variant() {
    let params = named_params();
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 5);
    check_variants!(
        mlp_loss,
        mlp_loss_value_and_grad,
        mlp_loss_grad,
        mlp_loss_vjp,
        mlp_loss_jvp,
        mlp_loss_pullback;
        [params];
        (&params, &x)
    );
    let grad = mlp_loss_grad(&params, &x);
    assert_eq!(
        grad.keys().collect::<Vec<_>>(),
        params.keys().collect::<Vec<_>>()
    );
}

/// `sum(w * x) + b²` read by key: the gradient is `x` for `w` and `2b` for `b`, by hand.
#[differentiable]
fn linear_in_w(params: &HashMap<String, Tensor<f64>>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let w = &params["w"];
    let b = params.get("b").unwrap();
    (w * x).sum() + (b * b).sum()
}

#[test]
fn a_hash_map_gradient_by_hand() {
    let params = HashMap::from([
        ("w".to_owned(), t(&[1.0, -2.0, 3.0], &[3])),
        ("b".to_owned(), t(&[0.5], &[1])),
        ("unused".to_owned(), t(&[7.0, 8.0], &[2])),
    ]);
    let x = t(&[4.0, 5.0, 6.0], &[3]);
    let (value, grad) = linear_in_w_value_and_grad(&params, &x);
    assert_eq!(value.item(), 4.0 - 10.0 + 18.0 + 0.25);
    assert_eq!(grad["w"].to_vec(), [4.0, 5.0, 6.0]);
    assert_eq!(grad["b"].to_vec(), [1.0]);
    // A part the function never reads has a zero gradient of its shape.
    assert_eq!(grad["unused"].to_vec(), [0.0, 0.0]);
    assert_eq!(grad.len(), 3);
}
