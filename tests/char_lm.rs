//! The `char_lm` example's transformer (`examples/char_lm/model.rs`, the same file) at small
//! sizes in `f64`: its gradient against central finite differences on elements of every
//! parameter, and its forward mode against its reverse mode by the dot-product test
//! ⟨J v, w⟩ = ⟨v, Jᵀ w⟩, for the logits and for the loss.

#[path = "../examples/char_lm/model.rs"]
mod model;

use model::{CharLm, Config};
use rune_ad::nn::Init;
use rune_ad::prelude::*;

const CONFIG: Config = Config {
    vocab: 7,
    context: 6,
    width: 8,
    heads: 2,
    layers: 2,
};

/// A model whose every parameter is drawn at random (the norms' scales and the zero biases
/// too, so that no gradient is special), windows of 5 ids and their next ids.
fn setup() -> (CharLm<f64>, Tensor<i64>, Tensor<i64>) {
    let mut init = Init::new(3);
    let mut model = CharLm::new(CONFIG, &mut init);
    randomise(&mut model, &mut init, 0.5);
    let ids = Tensor::from_vec(vec![0, 3, 6, 6, 1, 2, 5, 4, 0, 3], &[2, 5]);
    let targets = Tensor::from_vec(vec![3, 6, 6, 1, 2, 5, 4, 0, 3, 1], &[2, 5, 1]);
    (model, ids, targets)
}

/// Draws every leaf of `model` from a normal distribution of standard deviation `std`.
fn randomise(model: &mut CharLm<f64>, init: &mut Init, std: f64) {
    for leaf in model.leaves_mut() {
        *leaf = init.normal(leaf.shape(), 0.0, std);
    }
}

fn dot(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    a.to_vec().iter().zip(b.to_vec()).map(|(x, y)| x * y).sum()
}

fn dot_models(a: &CharLm<f64>, b: &CharLm<f64>) -> f64 {
    a.leaves()
        .iter()
        .zip(b.leaves())
        .map(|(x, y)| dot(x, y))
        .sum()
}

#[test]
fn the_model_has_the_parameters_of_its_layers() {
    let (model, ids, _) = setup();
    let Config {
        vocab: v,
        context: c,
        width: w,
        layers,
        ..
    } = CONFIG;
    // Per block: two norms, the attention's projections and the MLP w → 4w → w.
    let block =
        2 * 2 * w + (3 * w * w + 3 * w) + (w * w + w) + (4 * w * w + 4 * w) + (4 * w * w + w);
    assert_eq!(
        model.parameters(),
        v * w + c * w + layers * block + 2 * w + (w * v + v)
    );
    assert_eq!(model.logits(&ids).shape(), &[2, 5, v]);
}

#[test]
fn the_gradient_matches_central_differences_on_every_parameter() {
    let (model, ids, targets) = setup();
    let grad = model.loss_grad(&ids, &targets);
    let paths = model.leaf_paths("");
    let eps = 1e-5;
    for (k, path) in paths.iter().enumerate() {
        let n = model.leaves()[k].len();
        // The first, a middle and the last element of each parameter.
        for at in [0, n / 2, n - 1] {
            let shifted = |by: f64| {
                let mut m = model.clone();
                let leaf = &mut m.leaves_mut()[k];
                let mut values = leaf.to_vec();
                values[at] += by;
                **leaf = Tensor::from_vec(values, leaf.shape());
                m.loss(&ids, &targets).item()
            };
            let numeric = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
            let analytic = grad.leaves()[k].to_vec()[at];
            assert!(
                (numeric - analytic).abs() <= 1e-7 + 1e-6 * analytic.abs(),
                "{path}[{at}]: finite differences {numeric}, gradient {analytic}"
            );
        }
    }
}

#[test]
fn forward_and_reverse_mode_agree_by_the_dot_product_test() {
    let (model, ids, targets) = setup();
    let mut init = Init::new(4);
    let mut v = model.clone();
    randomise(&mut v, &mut init, 1.0);

    // The logits [2, 5, vocab]: ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ for a random cotangent w.
    let (value, jv) = model.logits_jvp(&ids, &v);
    let w = init.normal(value.shape(), 0.0, 1.0);
    let (again, jt_w) = model.logits_vjp(&ids, &w);
    assert_eq!(value.to_vec(), again.to_vec());
    let (left, right) = (dot(&jv, &w), dot_models(&v, &jt_w));
    assert!(
        (left - right).abs() <= 1e-10 * left.abs().max(1.0),
        "logits: ⟨J v, w⟩ = {left}, ⟨v, Jᵀ w⟩ = {right}"
    );

    // The loss: its tangent along v is the gradient's inner product with v.
    let (loss, tangent) = model.loss_jvp(&ids, &targets, &v);
    let (loss_again, grad) = model.loss_value_and_grad(&ids, &targets);
    assert_eq!(loss.item(), loss_again.item());
    let along = dot_models(&v, &grad);
    assert!(
        (tangent.item() - along).abs() <= 1e-10 * along.abs().max(1.0),
        "loss: tangent {}, ⟨v, ∇⟩ = {along}",
        tangent.item()
    );
}
