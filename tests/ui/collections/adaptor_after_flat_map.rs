use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Groups {
    groups: Vec<Vec<Tensor<f64>>>,
}

#[differentiable]
fn f(p: &Groups) -> Tensor<f64> {
    p.groups
        .iter()
        .flat_map(|g| g.iter())
        .skip(1)
        .map(|w| w.sum())
        .sum::<Tensor<f64>>()
}

fn main() {}
