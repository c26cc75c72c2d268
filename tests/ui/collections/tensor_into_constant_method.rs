use std::collections::HashMap;

use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let mut cache = HashMap::new();
    cache.insert("h", x.exp());
    cache["h"].sum()
}

fn main() {}
