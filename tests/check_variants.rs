//! The `check_variants!` helper of `tests/support`: it passes on correct functions of every
//! parameter kind, and each of its checks catches a variant that is wrong in the way it looks
//! for (a wrong rule, a value that differs in the last bit, a JVP off by 1e-6 relative).

mod support;

use rune_ad::prelude::*;
use support::{check_variants, check_vector_variants};

#[derive(Clone, Differentiable)]
struct Model {
    ws: Vec<Tensor<f64>>,
    b: Tensor<f64>,
}

#[differentiable]
fn two_params(x: &Tensor<f64>, y: Tensor<f64>, #[nodiff] c: f64) -> Tensor<f64> {
    let h = (x.matmul(&y) * c).tanh();
    (&h * &h).sum() + x.exp().mean()
}

#[differentiable]
fn with_model(model: &Model, x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    let mut h = x.clone();
    for w in &model.ws {
        h = (h.matmul(w) + &model.b).sin();
    }
    (h * (n as f64)).sum()
}

#[differentiable]
fn elementwise(x: &Tensor<f64>) -> Tensor<f64> {
    x.sigmoid() * x.square()
}

mod in_a_module {
    use super::*;

    #[differentiable]
    pub fn f(x: &Tensor<f64>, #[nodiff] scale: f64) -> Tensor<f64> {
        (x * scale).softmax(-1).square().sum()
    }
}

fn model() -> Model {
    Model {
        ws: vec![
            Tensor::rand_normal(&[3, 3], 0.0, 0.5, 11),
            Tensor::rand_normal(&[3, 3], 0.0, 0.5, 12),
        ],
        b: Tensor::rand_normal(&[3], 0.0, 0.5, 13),
    }
}

#[test]
fn passes_on_tensor_parameters_by_reference_and_by_value() {
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 1);
    let y = Tensor::rand_normal(&[3, 2], 0.0, 1.0, 2);
    let c = 0.7;
    check_variants!(
        two_params, two_params_value_and_grad, two_params_grad, two_params_vjp, two_params_jvp,
        two_params_pullback;
        [x, y]; (&x, y.clone(), c)
    );
}

#[test]
fn passes_on_a_structure_parameter() {
    let model = model();
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 3);
    check_variants!(
        with_model, with_model_value_and_grad, with_model_grad, with_model_vjp, with_model_jvp,
        with_model_pullback;
        [model, x]; (&model, &x, 3)
    );
}

#[test]
fn passes_on_a_function_named_by_its_module() {
    let x = Tensor::rand_normal(&[2, 4], 0.0, 1.0, 4);
    check_variants!(mod in_a_module; [x]; (&x, 1.5));
}

#[test]
fn passes_on_a_value_of_any_shape() {
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 5);
    check_vector_variants!(
        elementwise, elementwise_vjp, elementwise_jvp, elementwise_pullback; [x]; (&x)
    );
}

// ---- wrong rules are caught --------------------------------------------------------------------
//
// A custom reverse rule comes with a forward rule (both modes must agree); here the forward rule
// is right and the reverse rule wrong, or the other way round.

/// The right forward rule of `Σ sin x`.
fn sin_sum_tangent(x: &Tensor<f64>, x_tangent: &Tensor<f64>) -> Tensor<f64> {
    (x.cos() * x_tangent).sum()
}

/// The right forward rule of elementwise `sin x`.
fn sin_tangent(x: &Tensor<f64>, x_tangent: &Tensor<f64>) -> Tensor<f64> {
    x.cos() * x_tangent
}

/// The derivative of `Σ sin x` is `cos x`; this rule says `-cos x`.
fn wrong_vjp_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    -(x.cos() * cotangent)
}

#[differentiable(custom_vjp = wrong_vjp_rule, custom_jvp = sin_sum_tangent)]
fn wrong_vjp(x: &Tensor<f64>) -> Tensor<f64> {
    x.sin().sum()
}

#[test]
#[should_panic(
    expected = "the gradient of f_value_and_grad disagrees with central finite differences of f"
)]
fn a_wrong_reverse_rule_is_caught() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 6);
    check_variants!(
        wrong_vjp, wrong_vjp_value_and_grad, wrong_vjp_grad, wrong_vjp_vjp, wrong_vjp_jvp,
        wrong_vjp_pullback;
        [x]; (&x)
    );
}

/// Off by a relative 1e-5 only: still far above the tolerance of 1e-6.
fn slightly_wrong_vjp_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    x.cos() * cotangent * (1.0 + 1e-5)
}

#[differentiable(custom_vjp = slightly_wrong_vjp_rule, custom_jvp = sin_sum_tangent)]
fn slightly_wrong_vjp(x: &Tensor<f64>) -> Tensor<f64> {
    x.sin().sum()
}

#[test]
#[should_panic(
    expected = "the gradient of f_value_and_grad disagrees with central finite differences of f"
)]
fn a_slightly_wrong_reverse_rule_is_caught() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 7);
    check_variants!(
        slightly_wrong_vjp, slightly_wrong_vjp_value_and_grad, slightly_wrong_vjp_grad,
        slightly_wrong_vjp_vjp, slightly_wrong_vjp_jvp, slightly_wrong_vjp_pullback;
        [x]; (&x)
    );
}

/// Forward mode of `Σ sin x` with the tangent of `Σ sin 2x`.
fn wrong_jvp_rule(x: &Tensor<f64>, x_tangent: &Tensor<f64>) -> Tensor<f64> {
    ((x * 2.0).cos() * x_tangent * 2.0).sum()
}

#[differentiable(custom_jvp = wrong_jvp_rule)]
fn wrong_jvp(x: &Tensor<f64>) -> Tensor<f64> {
    x.sin().sum()
}

#[test]
#[should_panic(
    expected = "the tangent of f_jvp along random tangents disagrees with central \
                           finite differences of f along them"
)]
fn a_wrong_forward_rule_is_caught() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 8);
    check_variants!(
        wrong_jvp, wrong_jvp_value_and_grad, wrong_jvp_grad, wrong_jvp_vjp, wrong_jvp_jvp,
        wrong_jvp_pullback;
        [x]; (&x)
    );
}

/// Elementwise `sin`, pulled back as if it were `cos`.
fn wrong_elementwise_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    -(x.sin() * cotangent)
}

#[differentiable(custom_vjp = wrong_elementwise_rule, custom_jvp = sin_tangent)]
fn wrong_elementwise(x: &Tensor<f64>) -> Tensor<f64> {
    x.sin()
}

#[test]
#[should_panic(
    expected = "f_vjp with a random cotangent w disagrees with central finite \
                           differences of <w, f>"
)]
fn a_wrong_reverse_rule_of_a_vector_function_is_caught() {
    let x = Tensor::rand_normal(&[2, 2], 0.0, 1.0, 9);
    check_vector_variants!(
        wrong_elementwise, wrong_elementwise_vjp, wrong_elementwise_jvp,
        wrong_elementwise_pullback;
        [x]; (&x)
    );
}

// ---- variants that disagree with each other are caught -----------------------------------------
//
// Stand-ins for generated variants, passed to the macro by name in their place.

#[differentiable]
fn plain(x: &Tensor<f64>) -> Tensor<f64> {
    x.exp().sum()
}

/// The last bit of the value changed.
fn value_off_by_one_bit(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    let (v, g) = plain_value_and_grad(x);
    let bits = v.item().to_bits() + 1;
    (Tensor::from_vec(vec![f64::from_bits(bits)], v.shape()), g)
}

#[test]
#[should_panic(expected = "the value of f_value_and_grad differs from f's at element 0")]
fn a_value_off_by_one_bit_is_caught() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 10);
    check_variants!(
        plain, value_off_by_one_bit, plain_grad, plain_vjp, plain_jvp, plain_pullback;
        [x]; (&x)
    );
}

/// The gradient, one element off by one bit.
fn grad_off_by_one_bit(x: &Tensor<f64>) -> Tensor<f64> {
    let mut g = plain_grad(x).to_vec();
    g[1] = f64::from_bits(g[1].to_bits() + 1);
    Tensor::from_vec(g, x.shape())
}

#[test]
#[should_panic(
    expected = "f_grad disagrees with the gradient of f_value_and_grad at 1 of 3 \
                           element(s); worst at x, flat element 1"
)]
fn a_gradient_off_by_one_bit_is_caught() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 11);
    check_variants!(
        plain, plain_value_and_grad, grad_off_by_one_bit, plain_vjp, plain_jvp, plain_pullback;
        [x]; (&x)
    );
}

/// A tangent off by a relative 1e-6: within the finite-difference tolerance (the tangent is
/// about 0.01), caught by the dot-product test.
fn jvp_off_by_1e6(x: &Tensor<f64>, t: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    let (v, jt) = plain_jvp(x, t);
    (v, jt * (1.0 + 1e-6))
}

#[test]
#[should_panic(expected = "dot-product test failed")]
fn a_tangent_slightly_off_fails_the_dot_product_test() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 12);
    check_variants!(
        plain, plain_value_and_grad, plain_grad, plain_vjp, jvp_off_by_1e6, plain_pullback;
        [x]; (&x)
    );
}

/// A pullback right the first time and doubled from then on.
#[allow(clippy::type_complexity)]
fn pullback_wrong_on_second_call(
    x: &Tensor<f64>,
) -> (Tensor<f64>, impl Fn(&Tensor<f64>) -> Tensor<f64>) {
    let (v, pb) = plain_pullback(x);
    let calls = std::cell::Cell::new(0);
    (v, move |ct: &Tensor<f64>| {
        calls.set(calls.get() + 1);
        if calls.get() > 1 {
            pb(ct) * 2.0
        } else {
            pb(ct)
        }
    })
}

#[test]
#[should_panic(
    expected = "the pullback of f_pullback at w (its second call) disagrees with \
                           f_vjp at w"
)]
fn a_pullback_that_changes_between_calls_is_caught() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 13);
    check_variants!(
        plain, plain_value_and_grad, plain_grad, plain_vjp, plain_jvp,
        pullback_wrong_on_second_call;
        [x]; (&x)
    );
}

#[test]
// The wrong `f_grad` is found at the standard layout and again at each of the three others.
#[should_panic(expected = "`with_model`: 4 check(s) failed")]
fn the_message_names_the_function_and_counts_the_failures() {
    let model = model();
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 14);
    // `f_grad` taken from another argument: its gradient differs from f_value_and_grad's.
    let other = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 15);
    let grad_elsewhere = |m: &Model, _: &Tensor<f64>, n: usize| with_model_grad(m, &other, n);
    check_variants!(
        with_model, with_model_value_and_grad, grad_elsewhere, with_model_vjp, with_model_jvp,
        with_model_pullback;
        [model, x]; (&model, &x, 2)
    );
}

#[test]
#[should_panic(expected = "the value of f_vjp (Flipped leaves) differs from f's")]
fn a_value_that_depends_on_the_layout_is_caught() {
    // An `f_vjp` whose value is off by one ulp when its input is not laid out row-major, as a
    // fused loop adding in another order than the function's would be.
    let by_layout = |x: &Tensor<f64>, w: &Tensor<f64>| {
        let (value, grad) = elementwise_vjp(x, w);
        if x.is_standard_layout() {
            (value, grad)
        } else {
            (value.map(|v| f64::from_bits(v.to_bits() + 1)), grad)
        }
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 16);
    check_vector_variants!(
        elementwise, by_layout, elementwise_jvp, elementwise_pullback;
        [x]; (&x)
    );
}
