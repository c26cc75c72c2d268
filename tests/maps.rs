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

#[differentiable]
fn sum_of_squares(params: &BTreeMap<String, Tensor<f64>>) -> Tensor<f64> {
    let mut total = params["w1"].sum() * 0.0;
    for (name, p) in params {
        let weight = if name.starts_with('w') { 1.0 } else { 2.0 };
        total += (p * p).sum() * weight;
    }
    total
}

#[differentiable]
fn sum_of_values(params: &HashMap<String, Tensor<f64>>) -> Tensor<f64> {
    params.values().map(|p| p.sum()).sum()
}

#[differentiable]
fn keys_then_parts(params: &BTreeMap<String, Tensor<f64>>) -> Tensor<f64> {
    let mut total = params["w1"].sum() * 0.0;
    for k in params.keys() {
        if params.contains_key("b1") && k != "w2" {
            total += params[k].sum();
        }
    }
    total
}

#[test]
fn loops_over_a_map() {
    let params = named_params();
    let grad = sum_of_squares_grad(&params);
    for (name, p) in &params {
        let weight = if name.starts_with('w') { 2.0 } else { 4.0 };
        assert_eq!(grad[name].to_vec(), (p * weight).to_vec(), "{name}");
    }
    check_variants!(
        sum_of_squares,
        sum_of_squares_value_and_grad,
        sum_of_squares_grad,
        sum_of_squares_vjp,
        sum_of_squares_jvp,
        sum_of_squares_pullback;
        [params];
        (&params)
    );
    let hashed: HashMap<String, Tensor<f64>> = params.clone().into_iter().collect();
    let grad = sum_of_values_grad(&hashed);
    for (name, p) in &hashed {
        assert_eq!(grad[name].to_vec(), vec![1.0; p.len()], "{name}");
    }
    let grad = keys_then_parts_grad(&params);
    for (name, p) in &params {
        let want = if name == "w2" { 0.0 } else { 1.0 };
        assert_eq!(grad[name].to_vec(), vec![want; p.len()], "{name}");
    }
}

#[derive(Clone, Debug, Differentiable)]
struct Linear {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

impl Linear {
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w) + &self.b
    }
}

#[differentiable]
fn linear(layer: &Linear, x: &Tensor<f64>) -> Tensor<f64> {
    (x.matmul(&layer.w) + &layer.b).tanh()
}

/// A model whose layers are named, beside a tensor of its own.
#[derive(Clone, Debug, Differentiable)]
struct Named {
    layers: BTreeMap<String, Linear>,
    scale: Tensor<f64>,
    #[nodiff]
    note: String,
}

fn named_model() -> Named {
    let layer = |n_in: usize, n_out: usize, seed: u64| Linear {
        w: Tensor::rand_uniform(&[n_in, n_out], -0.5, 0.5, seed),
        b: Tensor::rand_uniform(&[n_out], -0.1, 0.1, seed + 1),
    };
    Named {
        layers: BTreeMap::from([
            ("in".to_owned(), layer(3, 4, 10)),
            ("out".to_owned(), layer(4, 2, 20)),
        ]),
        scale: t(&[1.5], &[1]),
        note: "two layers".to_owned(),
    }
}

#[differentiable]
fn named_loss(model: &Named, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let first = String::from("in");
    let h = linear(&model.layers[&first], x);
    let h = linear(model.layers.get("out").unwrap(), &h);
    let mut out = h * &model.scale;
    for layer in model.layers.values() {
        out += layer.b.sum() * 0.5;
    }
    (&out * &out).mean()
}

#[differentiable]
fn layers_by_method(layers: &BTreeMap<String, Linear>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let h = layers["in"].forward(x).tanh();
    let out = layers.get("out").unwrap().forward(&h);
    (&out * &out).mean()
}

#[differentiable]
fn layers_by_loop(layers: &HashMap<String, Linear>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut total = (x * 0.0).sum();
    for layer in layers.values() {
        total += linear(layer, &x.shrink(&[(0, 5), (0, layer.w.shape()[0])])).sum();
    }
    total
}

#[test]
fn a_struct_with_a_map_field() {
    let model = named_model();
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 5);
    check_variants!(
        named_loss,
        named_loss_value_and_grad,
        named_loss_grad,
        named_loss_vjp,
        named_loss_jvp,
        named_loss_pullback;
        [model];
        (&model, &x)
    );
    let grad = named_loss_grad(&model, &x);
    assert_eq!(
        grad.leaf_paths(""),
        [
            "layers.in.w",
            "layers.in.b",
            "layers.out.w",
            "layers.out.b",
            "scale"
        ]
    );
    assert_eq!(grad.note, "two layers");
}

/// The layers run in an order given by name: a map field read by a key held in a variable
/// (`&str` from a list of names, a `String`'s `as_str()`), and a `Vec` field by a position held in
/// one, which the macro tells apart by the field's type.
#[differentiable]
fn ordered_loss(model: &Named, #[nodiff] order: &[&str], #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for name in order {
        h = linear(&model.layers[*name], &h);
    }
    let last = order[order.len() - 1].to_owned();
    let bias = model.layers[last.as_str()].b.sum();
    (&h * &model.scale).square().mean() + bias
}

#[derive(Clone, Debug, Differentiable)]
struct Stack {
    layers: Vec<Linear>,
}

#[differentiable]
fn every_other(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    let mut at = 0;
    while at < model.layers.len() {
        h = linear(&model.layers[at], &h);
        at += 2;
    }
    h.square().sum()
}

#[test]
fn a_map_field_read_by_a_variable_key() {
    let model = named_model();
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 6);
    let order = ["in", "out"];
    check_variants!(
        ordered_loss,
        ordered_loss_value_and_grad,
        ordered_loss_grad,
        ordered_loss_vjp,
        ordered_loss_jvp,
        ordered_loss_pullback;
        [model];
        (&model, &order, &x)
    );
    // The same loss with the keys written out reads the same parts: the same gradient.
    let grad = ordered_loss_grad(&model, &order, &x);
    let by_literals = |m: &Named| {
        let h = linear(&m.layers["out"], &linear(&m.layers["in"], &x));
        ((&h * &m.scale).square().mean() + m.layers["out"].b.sum()).item()
    };
    let eps = 1e-6;
    let mut moved = model.clone();
    let b = moved.layers.get_mut("out").unwrap();
    b.b = &b.b + &Tensor::from_vec(vec![eps, 0.0], &[2]);
    let difference = (by_literals(&moved) - by_literals(&model)) / eps;
    let got = grad.layers["out"].b.to_vec()[0];
    assert!(
        (got - difference).abs() < 1e-5,
        "{got} against {difference}"
    );

    let layer = |seed: u64| Linear {
        w: Tensor::rand_uniform(&[3, 3], -0.5, 0.5, seed),
        b: Tensor::rand_uniform(&[3], -0.1, 0.1, seed + 1),
    };
    let stack = Stack {
        layers: vec![layer(30), layer(32), layer(34)],
    };
    check_variants!(
        every_other,
        every_other_value_and_grad,
        every_other_grad,
        every_other_vjp,
        every_other_jvp,
        every_other_pullback;
        [stack];
        (&stack, &x)
    );
    // The layer skipped gets no gradient.
    let grad = every_other_grad(&stack, &x);
    assert!(grad.layers[1].w.to_vec().iter().all(|&g| g == 0.0));
    assert!(grad.layers[2].w.to_vec().iter().any(|&g| g != 0.0));
}

#[test]
fn a_map_of_structures() {
    let layers = named_model().layers;
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 6);
    check_variants!(
        layers_by_method,
        layers_by_method_value_and_grad,
        layers_by_method_grad,
        layers_by_method_vjp,
        layers_by_method_jvp,
        layers_by_method_pullback;
        [layers];
        (&layers, &x)
    );
    let x = Tensor::<f64>::rand_uniform(&[5, 4], -1.0, 1.0, 7);
    let hashed: HashMap<String, Linear> = layers.into_iter().collect();
    check_variants!(
        layers_by_loop,
        layers_by_loop_value_and_grad,
        layers_by_loop_grad,
        layers_by_loop_vjp,
        layers_by_loop_jvp,
        layers_by_loop_pullback;
        [hashed];
        (&hashed, &x)
    );
}

#[test]
fn safetensors_names_come_from_the_keys() {
    let model = named_model();
    assert_eq!(
        rune_ad::io::tensor_names(&model),
        [
            "layers.in.w",
            "layers.in.b",
            "layers.out.w",
            "layers.out.b",
            "scale"
        ]
    );
    let bytes = rune_ad::io::safetensors_bytes(&model).unwrap();
    let mut loaded = model.zeros_like();
    rune_ad::io::load_safetensors_bytes(&mut loaded, &bytes).unwrap();
    for (a, b) in loaded.leaves().into_iter().zip(model.leaves()) {
        assert_eq!(a.to_vec(), b.to_vec());
    }
    // A model whose map has another key does not match the file's names.
    let mut renamed = model.clone();
    let first = renamed.layers.remove("in").unwrap();
    renamed.layers.insert("first".to_owned(), first);
    let error = rune_ad::io::load_safetensors_bytes(&mut renamed, &bytes).unwrap_err();
    assert!(error.to_string().contains("layers.first.w"), "{error}");
    // A map of tensors alone is named by its keys.
    let params = named_params();
    assert_eq!(rune_ad::io::tensor_names(&params), ["b1", "b2", "w1", "w2"]);
}

#[test]
fn an_optimizer_steps_a_model_holding_a_map() {
    let mut model = named_model();
    let before = model.clone();
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 5);
    let grad = named_loss_grad(&model, &x);
    rune_ad::optim::Sgd::new(0.1).step(&mut model, &grad);
    for name in ["in", "out"] {
        let (now, was, g) = (
            &model.layers[name],
            &before.layers[name],
            &grad.layers[name],
        );
        let want: Vec<f64> = was
            .w
            .to_vec()
            .iter()
            .zip(g.w.to_vec())
            .map(|(p, g)| p - 0.1 * g)
            .collect();
        assert_eq!(now.w.to_vec(), want, "{name}");
    }
    // Adam keeps a state per leaf, walked in the keys' order beside the parameters: its first
    // step moves each leaf by the learning rate against the sign of its gradient.
    let mut params = HashMap::from([
        ("w".to_owned(), t(&[1.0, 1.0], &[2])),
        ("b".to_owned(), t(&[1.0], &[1])),
    ]);
    let grad = linear_in_w_grad(&params, &t(&[2.0, -3.0], &[2]));
    rune_ad::optim::Adam::new(0.01).step(&mut params, &grad);
    let close =
        |a: &Tensor<f64>, b: &[f64]| a.to_vec().iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-9);
    assert!(close(&params["w"], &[0.99, 1.01]), "{:?}", params["w"]);
    assert!(close(&params["b"], &[0.99]), "{:?}", params["b"]);
}

#[test]
fn a_gradient_map_serialises() {
    let params = named_params();
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 5);
    let grad = mlp_loss_grad(&params, &x);
    let json = serde_json::to_string(&grad).unwrap();
    let back: BTreeMap<String, Tensor<f64>> = rune_ad::io::from_json(&json).unwrap();
    for (name, g) in &grad {
        assert_eq!(back[name].to_vec(), g.to_vec(), "{name}");
    }
}
