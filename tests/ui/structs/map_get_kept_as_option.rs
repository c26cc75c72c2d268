use std::collections::BTreeMap;

use rune_ad::prelude::*;

// A map parameter's part is read by key; an `Option` of it kept in the body is not understood.
#[differentiable]
fn loss(params: &BTreeMap<String, Tensor<f64>>) -> Tensor<f64> {
    let w = params.get("w");
    w.unwrap().sum()
}

fn main() {}
