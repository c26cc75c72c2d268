//! The derive names everything by absolute path: the caller's own `Vec`, `String`, `Tensor`,
//! `Clone` and `prefix` do not reach the generated impl.
#![allow(dead_code, non_upper_case_globals)]

use rune_ad::prelude::Differentiable;

struct Vec;
struct String;
struct Tensor;
struct Element;
trait Clone {}
const prefix: u8 = 0;

#[derive(::core::clone::Clone, Differentiable)]
struct Layer<T: rune_ad::Element> {
    w: rune_ad::Tensor<T>,
    rest: std::vec::Vec<rune_ad::Tensor<T>>,
    #[nodiff]
    name: std::string::String,
}

#[derive(::core::clone::Clone, Differentiable)]
struct Model(Layer<f64>, [Layer<f64>; 2]);

fn main() {
    let layer = Layer {
        w: rune_ad::Tensor::<f64>::ones(&[2]),
        rest: vec![rune_ad::Tensor::zeros(&[1])],
        name: "l".to_owned(),
    };
    let model = Model(layer.clone(), [layer.clone(), layer]);
    assert_eq!(model.leaf_paths("")[2], "1[0].w");
    let _ = model.zeros_like().scale(2.0);
}
