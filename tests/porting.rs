//! Every rune-ad snippet of `docs/porting.md`, the guide for users coming from PyTorch and JAX,
//! compiled here and checked against values derived by hand or central finite differences, so
//! that the guide cannot drift from what the macro does. Sections follow the guide's.

use std::collections::BTreeMap;

use rune_ad::optim::{clip_grad_norm, Adam, Schedule, Sgd};
use rune_ad::prelude::*;

// ---- helpers ---------------------------------------------------------------------------------

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

/// Asserts the values of `got` are `want`, within `tol` relative to `1 + |want|`.
#[track_caller]
fn assert_close(got: &Tensor<f64>, want: &[f64], tol: f64) {
    let g = got.to_vec();
    assert_eq!(g.len(), want.len(), "got {g:?}, want {want:?}");
    for (a, b) in g.iter().zip(want) {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "got {g:?}, want {want:?}"
        );
    }
}

/// Central differences of the scalar `f` along every element of every leaf of `params`,
/// against `grad`, a value of the same structure.
#[track_caller]
fn check_leaves<D: Differentiable<Elem = f64>>(f: impl Fn(&D) -> f64, params: &D, grad: &D) {
    let eps = 1e-6;
    let mut p = params.clone();
    let paths = p.leaf_paths("");
    for (leaf, path) in paths.iter().enumerate() {
        let base = p.leaves()[leaf].to_vec();
        let shape = p.leaves()[leaf].shape().to_vec();
        let g = grad.leaves()[leaf].to_vec();
        assert_eq!(g.len(), base.len(), "{path}: gradient of the wrong size");
        for i in 0..base.len() {
            let mut at = |delta: f64| {
                let mut v = base.clone();
                v[i] += delta;
                *p.leaves_mut()[leaf] = Tensor::from_vec(v, &shape);
                f(&p)
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!(
                (g[i] - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "{path}[{i}]: gradient {}, finite difference {fd}",
                g[i]
            );
        }
        *p.leaves_mut()[leaf] = Tensor::from_vec(base, &shape);
    }
}

/// `check_grad` on a function of one tensor: its JVP against central differences, its VJP
/// against its JVP.
#[track_caller]
fn check_one(
    f: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    jvp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
    vjp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
    x: &Tensor<f64>,
) {
    let checked = grad_fn(
        |a: &[Tensor<f64>]| f(&a[0]),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| jvp(&a[0], &t[0]),
        |a: &[Tensor<f64>], g: &Tensor<f64>| vec![vjp(&a[0], g)],
    );
    if let Err(e) = check_grad(&checked, std::slice::from_ref(x), 1e-6, 1e-6, 1e-8) {
        panic!("{e}");
    }
}

/// ⟨a, b⟩ over all leaves.
fn dot<D: Differentiable<Elem = f64>>(a: &D, b: &D) -> f64 {
    a.leaves()
        .iter()
        .zip(b.leaves())
        .map(|(x, y)| (*x * y).sum().item())
        .sum()
}

// ---- defining parameters ---------------------------------------------------------------------

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>, // [inputs, outputs]: used as `x.matmul(&w)`
    b: Tensor<f64>, // [outputs]
}

#[derive(Clone, Differentiable)]
struct Mlp {
    hidden: Vec<Linear>,
    out: Linear,
}

fn linear(inputs: usize, outputs: usize, seed: u64) -> Linear {
    let std = (1.0 / inputs as f64).sqrt();
    Linear {
        w: Tensor::rand_normal(&[inputs, outputs], 0.0, std, seed),
        b: Tensor::zeros(&[outputs]),
    }
}

fn mlp() -> Mlp {
    Mlp {
        hidden: vec![linear(3, 8, 1), linear(8, 8, 2)],
        out: linear(8, 1, 3),
    }
}

#[test]
fn parameters_are_a_struct() {
    let model = mlp();
    assert_eq!(
        model.leaf_paths(""),
        [
            "hidden[0].w",
            "hidden[0].b",
            "hidden[1].w",
            "hidden[1].b",
            "out.w",
            "out.b"
        ]
    );
    let count: usize = model.leaves().iter().map(|t| t.len()).sum();
    assert_eq!(count, 3 * 8 + 8 + 8 * 8 + 8 + 8 + 1);
    // Leafwise arithmetic, as jax.tree_util.tree_map would do it.
    let zeros = model.zeros_like();
    assert!(zeros
        .leaves()
        .iter()
        .all(|t| t.to_vec().iter().all(|&v| v == 0.0)));
    let twice = model.add(&model);
    let halved = twice.scale(0.5);
    let mut moved = model.clone();
    moved.axpy(-1.0, &model);
    for ((m, h), z) in model
        .leaves()
        .iter()
        .zip(halved.leaves())
        .zip(moved.leaves())
    {
        assert_eq!(m.to_vec(), h.to_vec());
        assert!(z.to_vec().iter().all(|&v| v == 0.0));
    }
}

// ---- a loss and its gradient -----------------------------------------------------------------

#[differentiable]
fn predict(model: &Mlp, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for layer in &model.hidden {
        h = (h.matmul(&layer.w) + &layer.b).tanh();
    }
    h.matmul(&model.out.w) + &model.out.b
}

#[differentiable]
fn mse(model: &Mlp, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let d = predict(model, x) - y;
    (&d * &d).mean()
}

fn regression_data() -> (Tensor<f64>, Tensor<f64>) {
    let x = Tensor::rand_uniform(&[16, 3], -1.0, 1.0, 10);
    let y = (x.matmul(&t64(&[1.0, -2.0, 0.5], &[3, 1])) * 2.0).sin();
    (x, y)
}

#[test]
fn loss_value_and_grad() {
    let model = mlp();
    let (x, y) = regression_data();
    let (loss, grad) = mse_value_and_grad(&model, &x, &y); // grad: Mlp
    assert_eq!(loss.item(), mse(&model, &x, &y).item());
    check_leaves(|m| mse(m, &x, &y).item(), &model, &grad);
    let expected = grad;
    let grad = mse_grad(&model, &x, &y); // the gradient alone
    assert_eq!(grad.out.w.to_vec(), expected.out.w.to_vec());
    // By hand: d loss / d out.b = 2 mean(prediction - y).
    let d = predict(&model, &x) - &y;
    assert_close(&grad.out.b, &[2.0 * d.mean().item()], 1e-12);
}

#[test]
#[should_panic(expected = "a gradient needs a value with exactly one element")]
fn a_gradient_needs_a_one_element_value() {
    let (x, _) = regression_data();
    let _ = predict_grad(&mlp(), &x);
}

#[differentiable]
fn linear_mse(
    w: &Tensor<f64>,
    b: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let d = x.matmul(w) + b - y;
    (&d * &d).mean()
}

#[test]
fn several_differentiated_parameters_give_a_tuple() {
    let (x, y) = regression_data();
    let w = t64(&[0.1, 0.2, 0.3], &[3, 1]);
    let b = t64(&[0.5], &[1]);
    let (gw, gb) = linear_mse_grad(&w, &b, &x, &y);
    // By hand: d = x w + b - y, gw = 2 xᵀ d / N, gb = 2 Σ d / N.
    let d = x.matmul(&w) + &b - &y;
    let n = x.shape()[0] as f64;
    assert_close(&gw, &(x.t().matmul(&d) * (2.0 / n)).to_vec(), 1e-12);
    assert_close(&gb, &[2.0 * d.sum().item() / n], 1e-12);
}

// ---- auxiliary outputs -----------------------------------------------------------------------

#[differentiable(has_aux)]
fn cross_entropy(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] labels: &Tensor<i64>,
) -> (Tensor<f64>, Tensor<f64>) {
    let logits = x.matmul(w); // [N, classes]
    let picked = logits.log_softmax(-1).gather(1, &labels.expand_dims(1)); // [N, 1]
    let accuracy = logits.argmax(-1).eq(labels).cast::<f64>().mean();
    (-picked.mean(), accuracy)
}

#[test]
fn has_aux_returns_the_aux_beside_the_gradient() {
    let x = t64(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]);
    let w = t64(&[2.0, 0.0, -1.0, 0.0, 1.0, 0.5], &[2, 3]);
    let labels = Tensor::from_vec(vec![0_i64, 1, 2], &[3]);
    let (grad, accuracy) = cross_entropy_grad(&w, &x, &labels);
    // Logits rows [2, 0, -1], [0, 1, 0.5], [2, 1, -0.5]: argmax 0, 1, 0 against labels 0, 1, 2.
    assert_close(&accuracy, &[2.0 / 3.0], 1e-15);
    let expected = grad;
    let ((loss, accuracy), grad) = cross_entropy_value_and_grad(&w, &x, &labels);
    assert_eq!(grad.to_vec(), expected.to_vec());
    assert_close(&accuracy, &[2.0 / 3.0], 1e-15);
    // f_vjp and f_pullback give (value, aux) where the others give the value.
    let ((value, aux), by_vjp) = cross_entropy_vjp(&w, &x, &labels, &Tensor::scalar(1.0));
    assert_eq!((value.item(), aux.item()), (loss.item(), accuracy.item()));
    assert_eq!(by_vjp.to_vec(), grad.to_vec());
    let ((value, _), pullback) = cross_entropy_pullback(&w, &x, &labels);
    assert_eq!(value.item(), loss.item());
    assert_eq!(pullback(&Tensor::scalar(1.0)).to_vec(), grad.to_vec());
    // By hand: loss = -mean log p[label], gradient xᵀ (softmax - onehot) / N.
    let logits = x.matmul(&w);
    let p = logits.softmax(-1);
    let onehot = t64(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], &[3, 3]);
    let want_loss = -(p.ln() * &onehot).sum().item() / 3.0;
    assert_close(&loss, &[want_loss], 1e-12);
    assert_close(&grad, &(x.t().matmul(&(p - onehot)) / 3.0).to_vec(), 1e-12);
}

// ---- constants -------------------------------------------------------------------------------

#[derive(Clone, Differentiable)]
struct Probe {
    w: Tensor<f64>,
}

/// Constants that travel with a model: a plain struct, passed as a `#[nodiff]` argument.
struct Buffers {
    mean: Tensor<f64>,
    std: Tensor<f64>,
}

#[differentiable]
fn score(params: &Probe, #[nodiff] buffers: &Buffers, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    ((x - &buffers.mean) / &buffers.std).matmul(&params.w).sum()
}

#[test]
fn buffers_are_a_nodiff_argument() {
    let params = Probe {
        w: t64(&[1.0, -1.0], &[2, 1]),
    };
    let buffers = Buffers {
        mean: t64(&[1.0, 2.0], &[2]),
        std: t64(&[2.0, 4.0], &[2]),
    };
    let x = t64(&[3.0, 6.0, 5.0, 2.0], &[2, 2]);
    let (value, grad) = score_value_and_grad(&params, &buffers, &x);
    // By hand: (x - mean) / std = [[1, 1], [2, 0]]; the gradient of w is its column sums.
    assert_close(&value, &[1.0 - 1.0 + 2.0], 1e-15);
    assert_close(&grad.w, &[3.0, 1.0], 1e-15);
    let (_, t) = score_jvp(&params, &buffers, &x, &params.zeros_like());
    assert_eq!(t.item(), 0.0);
}

#[derive(Clone, Differentiable)]
struct Named {
    w: Tensor<f64>,
    #[nodiff]
    name: String,
}

#[differentiable]
fn named_energy(model: &Named) -> Tensor<f64> {
    model.w.square().sum()
}

#[test]
fn nodiff_fields_are_carried_not_differentiated() {
    let model = Named {
        w: t64(&[1.0, -2.0], &[2]),
        name: "probe".to_owned(),
    };
    assert_eq!(model.leaf_paths(""), ["w"]);
    let grad = named_energy_grad(&model);
    assert_eq!(grad.w.to_vec(), vec![2.0, -4.0]);
    assert_eq!(grad.name, "probe"); // constants are copied into the gradient
}

#[differentiable]
fn dict_loss(params: &BTreeMap<String, Tensor<f64>>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let h = (x.matmul(&params["w"]) + params.get("b").unwrap()).tanh();
    let mut penalty = h.sum() * 0.0;
    for (name, p) in params {
        if name.starts_with('w') {
            penalty += p.square().sum();
        }
    }
    h.square().mean() + penalty * 0.01
}

#[test]
fn maps_of_parameters() {
    let params = BTreeMap::from([
        ("w".to_owned(), Tensor::rand_normal(&[3, 2], 0.0, 0.5, 1)),
        ("b".to_owned(), t64(&[0.1, -0.2], &[2])),
        ("unused".to_owned(), t64(&[1.0], &[1])),
    ]);
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 2);
    let (value, grad) = dict_loss_value_and_grad(&params, &x);
    let plain = |p: &BTreeMap<String, Tensor<f64>>| {
        let h = (x.matmul(&p["w"]) + &p["b"]).tanh();
        (h.square().mean() + p["w"].square().sum() * 0.01).item()
    };
    assert_close(&value, &[plain(&params)], 1e-15);
    check_leaves(plain, &params, &grad);
    assert_eq!(grad["unused"].to_vec(), [0.0]);
    assert_eq!(
        params.leaf_paths("model"),
        ["model.b", "model.unused", "model.w"]
    );
}

#[differentiable]
fn normalised(x: &Tensor<f64>) -> Tensor<f64> {
    let norm = stop_gradient(&x.square().sum().sqrt());
    (x / &norm).sum()
}

/// A hard threshold whose gradient is the identity (a straight-through estimator).
#[differentiable]
fn binarize(x: &Tensor<f64>) -> Tensor<f64> {
    let hard = where_cond(&x.gt(0.0), &1.0, &0.0);
    x + stop_gradient(&(hard - x))
}

#[differentiable]
fn scaled(x: &Tensor<f64>, #[nodiff] scale: &Tensor<f64>) -> Tensor<f64> {
    x * scale
}

#[differentiable]
fn self_scaled(x: &Tensor<f64>) -> Tensor<f64> {
    scaled(x, &stop_gradient(x)).sum() // Σ x·c with c = x held constant
}

#[test]
fn stop_gradient_holds_a_value_constant() {
    let x = t64(&[3.0, 4.0], &[2]);
    let (value, grad) = normalised_value_and_grad(&x);
    assert_close(&value, &[7.0 / 5.0], 1e-15);
    assert_close(&grad, &[0.2, 0.2], 1e-15);
    let (_, t) = normalised_jvp(&x, &t64(&[1.0, 0.0], &[2]));
    assert_close(&t, &[0.2], 1e-15);

    let x = t64(&[0.5, -0.5, 2.0], &[3]);
    assert_eq!(binarize(&x).to_vec(), vec![1.0, 0.0, 1.0]);
    let (_, g) = binarize_vjp(&x, &t64(&[1.0, 2.0, 3.0], &[3]));
    assert_eq!(g.to_vec(), vec![1.0, 2.0, 3.0]);

    let x = t64(&[1.0, 2.0], &[2]);
    let (value, grad) = self_scaled_value_and_grad(&x);
    assert_eq!(value.item(), 5.0);
    assert_eq!(grad.to_vec(), vec![1.0, 2.0]);
}

/// Fine-tuning: the backbone is frozen, only the head is trained.
#[differentiable]
fn fine_tuned(head: &Linear, #[nodiff] backbone: &Mlp, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let features = predict(backbone, x); // no gradient flows into the backbone
    (features.matmul(&head.w) + &head.b).square().mean()
}

#[test]
fn a_frozen_backbone_is_a_nodiff_structure() {
    let backbone = mlp();
    let head = linear(1, 2, 80);
    let (x, _) = regression_data();
    let grad = fine_tuned_grad(&head, &backbone, &x); // a `Linear`
    check_leaves(
        |h: &Linear| fine_tuned(h, &backbone, &x).item(),
        &head,
        &grad,
    );
    let (_, t) = fine_tuned_jvp(&head, &backbone, &x, &head.zeros_like());
    assert_eq!(t.item(), 0.0);
}

// ---- forward mode ----------------------------------------------------------------------------

#[test]
fn forward_mode_gives_directional_derivatives() {
    let (x, y) = regression_data();
    let w = t64(&[0.1, 0.2, 0.3], &[3, 1]);
    let b = t64(&[0.5], &[1]);
    let dw = t64(&[1.0, 0.0, -1.0], &[3, 1]);
    let db = t64(&[2.0], &[1]);
    let (value, tangent) = linear_mse_jvp(&w, &b, &x, &y, &dw, &db);
    assert_eq!(value.item(), linear_mse(&w, &b, &x, &y).item());
    let (gw, gb) = linear_mse_grad(&w, &b, &x, &y);
    let want = (&gw * &dw).sum().item() + (&gb * &db).sum().item();
    assert!((tangent.item() - want).abs() < 1e-12);

    // A structure's tangent is a value of the structure: along the gradient, |g|².
    let model = mlp();
    let grad = mse_grad(&model, &x, &y);
    let (_, along_grad) = mse_jvp(&model, &x, &y, &grad);
    assert!((along_grad.item() - dot(&grad, &grad)).abs() < 1e-12);
}

// ---- VJPs and pullbacks ----------------------------------------------------------------------

#[differentiable]
fn features(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    x.matmul(w).tanh()
}

#[test]
fn vjp_and_pullback() {
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 20);
    let w = Tensor::rand_normal(&[3, 2], 0.0, 0.5, 21);
    let cotangent = Tensor::rand_normal(&[4, 2], 0.0, 1.0, 22);
    let (y, gw) = features_vjp(&w, &x, &cotangent);
    // By hand: gw = xᵀ (cotangent ⊙ (1 - y²)).
    let want = x.t().matmul(&(&cotangent * &(1.0 - &y * &y)));
    assert_close(&gw, &want.to_vec(), 1e-12);

    let expected = y;
    let (y, pullback) = features_pullback(&w, &x); // the forward pass runs once
    assert_eq!(y.to_vec(), expected.to_vec());
    let g1 = pullback(&cotangent);
    let g2 = pullback(&(&cotangent * 2.0));
    assert_eq!(g1.to_vec(), gw.to_vec());
    assert_close(&g2, &(&gw * 2.0).to_vec(), 1e-15);
}

#[differentiable]
fn moments(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    (x.mean(), x.square().mean())
}

#[test]
fn tuple_outputs_take_tuple_cotangents() {
    let x = t64(&[1.0, 2.0, 3.0], &[3]);
    let ((m1, m2), g) = moments_vjp(&x, (&Tensor::scalar(1.0), &Tensor::scalar(3.0)));
    assert_close(&m1, &[2.0], 1e-15);
    assert_close(&m2, &[14.0 / 3.0], 1e-15);
    // By hand: 1/N + 3 · 2x/N.
    assert_close(&g, &[7.0 / 3.0, 13.0 / 3.0, 19.0 / 3.0], 1e-15);
    let (_, (t1, t2)) = moments_jvp(&x, &Tensor::ones(&[3]));
    assert_close(&t1, &[1.0], 1e-15);
    assert_close(&t2, &[4.0], 1e-15);
}

// ---- Hessian-vector products -----------------------------------------------------------------

/// The Rosenbrock function, on `f64` tensors; `hvp` asks for `rosenbrock_hvp`.
#[differentiable(hvp)]
fn rosenbrock(x: &Tensor<f64>) -> Tensor<f64> {
    let n = x.len();
    let head = x.shrink(&[(0, n - 1)]); // x[:-1]
    let tail = x.shrink(&[(1, n)]); // x[1:]
    let valley = tail - head.square();
    (valley.square() * 100.0 + (1.0 - head).square()).sum()
}

/// Generic over the element type: `quartic_hvp` comes without asking.
#[differentiable]
fn quartic<T: Element>(x: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    (x.square().square() * a).sum() * T::from_f64(0.25)
}

#[test]
fn hessian_vector_products() {
    // f(x, y) = 100 (y - x²)² + (1 - x)² at (1.5, 0.5): by hand,
    // ∇f = (-400 x (y - x²) - 2 (1 - x), 200 (y - x²)) = (1051, -350),
    // H = [[1200 x² - 400 y + 2, -400 x], [-400 x, 200]] = [[2502, -600], [-600, 200]].
    let x = t64(&[1.5, 0.5], &[2]);
    let v = t64(&[1.0, 0.0], &[2]);
    let (grad, hv) = rosenbrock_hvp(&x, &v);
    assert_close(&grad, &[1051.0, -350.0], 1e-12);
    assert_close(&hv, &[2502.0, -600.0], 1e-12);
    let (_, hv) = rosenbrock_hvp(&x, &t64(&[0.0, 1.0], &[2]));
    assert_close(&hv, &[-600.0, 200.0], 1e-12);

    // f = Σ a x⁴ / 4: ∇f = a x³, H = diag(3 a x²).
    let x = t64(&[1.0, -2.0], &[2]);
    let a = t64(&[2.0, 0.5], &[2]);
    let v = t64(&[1.0, 1.0], &[2]);
    let (grad, hv) = quartic_hvp(&x, &a, &v);
    assert_close(&grad, &[2.0, -4.0], 1e-15);
    assert_close(&hv, &[6.0, 6.0], 1e-15);
}

// ---- Jacobians and Hessians ------------------------------------------------------------------

#[differentiable]
fn probabilities(z: &Tensor<f64>) -> Tensor<f64> {
    z.softmax(0)
}

#[test]
fn jacobians_and_hessians() {
    let z = t64(&[0.5, -1.0, 2.0], &[3]);
    let j_fwd = jacfwd(|z, v| probabilities_jvp(z, v).1, &z); // one JVP per input
    let j_rev = jacrev(|z, w| probabilities_vjp(z, w).1, &z, &[3]); // one VJP per output
    let j = jacobian(
        |z, v| probabilities_jvp(z, v).1,
        |z, w| probabilities_vjp(z, w).1,
        &z,
    );
    // By hand: J = diag(p) - p pᵀ.
    let p = z.softmax(0).to_vec();
    let want: Vec<f64> = (0..9)
        .map(|k| {
            let (i, j) = (k / 3, k % 3);
            if i == j {
                p[i] - p[i] * p[j]
            } else {
                -p[i] * p[j]
            }
        })
        .collect();
    for jac in [j_fwd, j_rev, j] {
        assert_eq!(jac.shape(), &[3, 3]);
        assert_close(&jac, &want, 1e-15);
    }

    // Other arguments are closed over.
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 23);
    let w = Tensor::rand_normal(&[3, 2], 0.0, 0.5, 24);
    let j = jacfwd(|w, v| features_jvp(w, &x, v).1, &w);
    assert_eq!(j.shape(), &[4, 2, 3, 2]);
    let e = t64(&[0.0, 1.0, 0.0, 0.0, 0.0, 0.0], &[3, 2]); // w[0][1]
    let column = features_jvp(&w, &x, &e).1.to_vec();
    let j = j.to_vec();
    for (k, c) in column.iter().enumerate() {
        assert_eq!(j[k * 6 + 1], *c);
    }

    let x = t64(&[1.5, 0.5], &[2]);
    let h = hessian(|x, v| rosenbrock_hvp(x, v).1, &x);
    assert_eq!(h.shape(), &[2, 2]);
    assert_close(&h, &[2502.0, -600.0, -600.0, 200.0], 1e-12);
}

// ---- custom rules ----------------------------------------------------------------------------

/// `x / ‖x‖`, and 0 at `x = 0`.
fn unit_or_zero(x: &Tensor<f64>) -> Tensor<f64> {
    let n = x.square().sum().sqrt();
    x / &where_cond(&n.gt(0.0), &n, &1.0)
}

fn norm_gradient_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    unit_or_zero(x) * cotangent
}

fn norm_tangent_rule(x: &Tensor<f64>, tangent: &Tensor<f64>) -> Tensor<f64> {
    (unit_or_zero(x) * tangent).sum()
}

/// `‖x‖`, whose gradient `x / ‖x‖` is taken as 0 at `x = 0`.
#[differentiable(custom_vjp = norm_gradient_rule, custom_jvp = norm_tangent_rule)]
fn norm(x: &Tensor<f64>) -> Tensor<f64> {
    x.square().sum().sqrt()
}

#[differentiable]
fn norm_derived(x: &Tensor<f64>) -> Tensor<f64> {
    x.square().sum().sqrt()
}

#[differentiable]
fn distance(a: &Tensor<f64>, b: &Tensor<f64>) -> Tensor<f64> {
    norm(&(a - b)) * 2.0
}

#[test]
fn custom_rules_replace_the_derived_derivatives() {
    let zero = t64(&[0.0, 0.0], &[2]);
    assert!(norm_derived_grad(&zero).to_vec().iter().all(|v| v.is_nan()));
    assert_eq!(norm_grad(&zero).to_vec(), vec![0.0, 0.0]);
    let (_, t) = norm_jvp(&zero, &t64(&[1.0, 1.0], &[2]));
    assert_eq!(t.item(), 0.0);
    // Elsewhere the rules agree with the derived derivatives.
    let x = t64(&[3.0, -4.0], &[2]);
    assert_close(&norm_grad(&x), &[0.6, -0.8], 1e-15);
    assert_close(&norm_derived_grad(&x), &norm_grad(&x).to_vec(), 1e-15);
    // Callers go through the rules.
    let (ga, gb) = distance_grad(&zero, &zero);
    assert_eq!((ga.to_vec(), gb.to_vec()), (vec![0.0, 0.0], vec![0.0, 0.0]));
    let (ga, gb) = distance_grad(&x, &zero);
    assert_close(&ga, &[1.2, -1.6], 1e-15);
    assert_close(&gb, &[-1.2, 1.6], 1e-15);
}

/// Rules for a function of two differentiated tensors and a constant: every parameter, then
/// the cotangent or one tangent per differentiated parameter.
fn product_gradient_rule(
    x: &Tensor<f64>,
    y: &Tensor<f64>,
    k: f64,
    cotangent: &Tensor<f64>,
) -> (Tensor<f64>, Tensor<f64>) {
    (cotangent * y * k, cotangent * x * k)
}

fn product_tangent_rule(
    x: &Tensor<f64>,
    y: &Tensor<f64>,
    k: f64,
    x_tangent: &Tensor<f64>,
    y_tangent: &Tensor<f64>,
) -> Tensor<f64> {
    (x_tangent * y + x * y_tangent) * k
}

#[differentiable(custom_vjp = product_gradient_rule, custom_jvp = product_tangent_rule)]
fn product(x: &Tensor<f64>, y: &Tensor<f64>, #[nodiff] k: f64) -> Tensor<f64> {
    x * y * k
}

#[test]
fn custom_rules_with_several_parameters() {
    let x = t64(&[1.0, 2.0], &[2]);
    let y = t64(&[3.0, -1.0], &[2]);
    let (value, (gx, gy)) = product_vjp(&x, &y, 2.0, &Tensor::ones(&[2]));
    assert_eq!(value.to_vec(), vec![6.0, -4.0]);
    assert_eq!(
        (gx.to_vec(), gy.to_vec()),
        (vec![6.0, -2.0], vec![2.0, 4.0])
    );
    let (_, t) = product_jvp(&x, &y, 2.0, &Tensor::ones(&[2]), &Tensor::zeros(&[2]));
    assert_eq!(t.to_vec(), vec![6.0, -2.0]);
}

fn norm_tangent_only(x: &Tensor<f64>, tangent: &Tensor<f64>) -> Tensor<f64> {
    (unit_or_zero(x) * tangent).sum()
}

#[differentiable(custom_jvp = norm_tangent_only)]
fn norm_forward_rule(x: &Tensor<f64>) -> Tensor<f64> {
    x.square().sum().sqrt()
}

#[test]
fn a_custom_jvp_alone_leaves_reverse_mode_derived() {
    let zero = t64(&[0.0, 0.0], &[2]);
    let (_, t) = norm_forward_rule_jvp(&zero, &t64(&[1.0, 1.0], &[2]));
    assert_eq!(t.item(), 0.0);
    assert!(norm_forward_rule_grad(&zero)
        .to_vec()
        .iter()
        .all(|v| v.is_nan()));
}

/// A new primitive: the value from any Rust code on `stop_gradient(x)`, the derivative from
/// the rules.
#[differentiable(custom_vjp = atan_gradient_rule, custom_jvp = atan_tangent_rule)]
fn atan(x: &Tensor<f64>) -> Tensor<f64> {
    stop_gradient(x).map(|v| v.atan())
}

fn atan_gradient_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    cotangent / (x.square() + 1.0)
}

fn atan_tangent_rule(x: &Tensor<f64>, tangent: &Tensor<f64>) -> Tensor<f64> {
    tangent / (x.square() + 1.0)
}

#[differentiable]
fn angle_loss(x: &Tensor<f64>) -> Tensor<f64> {
    (atan(&(x * 2.0)) * x).sum()
}

#[test]
fn a_new_primitive_from_plain_rust_and_two_rules() {
    let x = t64(&[0.5, -1.0, 2.0], &[3]);
    assert_close(
        &atan(&x),
        &[0.5f64.atan(), -1.0f64.atan(), 2.0f64.atan()],
        1e-15,
    );
    // By hand: d/dx x atan(2x) = atan(2x) + 2x / (1 + 4x²).
    let want: Vec<f64> = x
        .to_vec()
        .iter()
        .map(|v| (2.0 * v).atan() + 2.0 * v / (1.0 + 4.0 * v * v))
        .collect();
    assert_close(&angle_loss_grad(&x), &want, 1e-14);
    check_one(
        angle_loss,
        |x, t| angle_loss_jvp(x, t).1,
        |x, g| angle_loss_vjp(x, g).1,
        &x,
    );
}

// ---- checkpointing ---------------------------------------------------------------------------

#[differentiable(checkpoint)]
fn residual_block(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    x + x.matmul(w).tanh()
}

#[differentiable]
fn deep(x: &Tensor<f64>, ws: &Vec<Tensor<f64>>) -> Tensor<f64> {
    let mut h = x.clone();
    for w in ws {
        h = residual_block(&h, w);
    }
    h.square().sum()
}

#[differentiable]
fn residual_block_kept(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    x + x.matmul(w).tanh()
}

#[differentiable]
fn deep_kept(x: &Tensor<f64>, ws: &Vec<Tensor<f64>>) -> Tensor<f64> {
    let mut h = x.clone();
    for w in ws {
        h = residual_block_kept(&h, w);
    }
    h.square().sum()
}

#[test]
fn a_checkpoint_changes_memory_not_gradients() {
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 30);
    let ws: Vec<Tensor<f64>> = (0..4)
        .map(|i| Tensor::rand_normal(&[3, 3], 0.0, 0.5, 31 + i))
        .collect();
    let (gx, gws) = deep_grad(&x, &ws);
    let (kx, kws) = deep_kept_grad(&x, &ws);
    assert_eq!(gx.to_vec(), kx.to_vec());
    for (a, b) in gws.iter().zip(&kws) {
        assert_eq!(a.to_vec(), b.to_vec());
    }
    check_leaves(|ws: &Vec<Tensor<f64>>| deep(&x, ws).item(), &ws, &gws);
}

// ---- control flow ----------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Activation {
    Tanh,
    Relu,
    Leaky(f64),
}

#[differentiable]
fn activate(x: &Tensor<f64>, #[nodiff] act: Activation) -> Tensor<f64> {
    match act {
        Activation::Tanh => x.tanh(),
        Activation::Relu => x.relu(),
        Activation::Leaky(slope) => x.maximum(&(x * slope)),
    }
}

#[test]
fn match_on_a_constant() {
    let x = t64(&[-2.0, 0.5], &[2]);
    let ones = Tensor::ones(&[2]);
    let t = 0.5f64.tanh();
    let cases = [
        (
            Activation::Tanh,
            vec![1.0 - 2f64.tanh().powi(2), 1.0 - t * t],
        ),
        (Activation::Relu, vec![0.0, 1.0]),
        (Activation::Leaky(0.1), vec![0.1, 1.0]),
    ];
    for (act, want) in cases {
        let (_, g) = activate_vjp(&x, act, &ones);
        assert_close(&g, &want, 1e-15);
    }
}

/// Rescales `x` to norm `limit` when it is longer (clip by norm).
#[differentiable]
fn clip_by_norm(x: &Tensor<f64>, #[nodiff] max_norm: Option<f64>) -> Tensor<f64> {
    let norm = x.square().sum().sqrt();
    if let Some(limit) = max_norm {
        if norm.item() > limit {
            return x * limit / norm;
        }
    }
    x.clone()
}

#[test]
fn if_let_a_branch_on_a_value_and_early_return() {
    let x = t64(&[3.0, 4.0], &[2]);
    assert_close(&clip_by_norm(&x, Some(1.0)), &[0.6, 0.8], 1e-15);
    // By hand: the Jacobian of limit · x / ‖x‖ is (limit / ‖x‖) (I - u uᵀ), u = x / ‖x‖.
    let (_, g) = clip_by_norm_vjp(&x, Some(1.0), &t64(&[1.0, 0.0], &[2]));
    assert_close(&g, &[0.2 * (1.0 - 0.36), 0.2 * -0.48], 1e-15);
    let (_, g) = clip_by_norm_vjp(&x, Some(10.0), &t64(&[1.0, 0.0], &[2]));
    assert_eq!(g.to_vec(), vec![1.0, 0.0]);
    let (_, g) = clip_by_norm_vjp(&x, None, &t64(&[1.0, 0.0], &[2]));
    assert_eq!(g.to_vec(), vec![1.0, 0.0]);
    check_one(
        |x| clip_by_norm(x, Some(1.0)),
        |x, t| clip_by_norm_jvp(x, Some(1.0), t).1,
        |x, g| clip_by_norm_vjp(x, Some(1.0), g).1,
        &x,
    );
}

/// Iterates `h ← cos(h) / 2 + x` until it stops moving: the solution of `h = cos(h) / 2 + x`.
#[differentiable]
fn fixed_point(x: &Tensor<f64>, #[nodiff] max_iter: usize) -> Tensor<f64> {
    let mut h = x * 0.0;
    let mut iter = 0;
    loop {
        let next = h.cos() * 0.5 + x;
        let moved = (&next - &h).abs().max().item();
        h = next;
        iter += 1;
        if moved < 1e-14 || iter == max_iter {
            break;
        }
    }
    h
}

#[test]
fn a_loop_whose_trip_count_depends_on_the_data() {
    let x = t64(&[0.3, 1.0, -0.5], &[3]);
    let (h, g) = fixed_point_vjp(&x, 500, &Tensor::ones(&[3]));
    // By hand (implicit function theorem): dh/dx = 1 / (1 + sin(h) / 2), elementwise.
    for ((h, g), x) in h.to_vec().iter().zip(g.to_vec()).zip(x.to_vec()) {
        assert!((h - (0.5 * h.cos() + x)).abs() < 1e-13);
        assert!((g - 1.0 / (1.0 + 0.5 * h.sin())).abs() < 1e-12);
    }
    let (_, t) = fixed_point_jvp(&x, 500, &Tensor::ones(&[3]));
    assert_close(&t, &g.to_vec(), 1e-15);
}

// ---- loops over layers -----------------------------------------------------------------------

#[derive(Clone, Differentiable)]
struct Deep {
    layers: Vec<Linear>,
}

#[differentiable]
fn deep_predict(model: &Deep, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let last = model.layers.len() - 1;
    let mut h = x.clone();
    for (i, layer) in model.layers.iter().enumerate() {
        h = h.matmul(&layer.w) + &layer.b;
        if i < last {
            h = h.relu();
        }
    }
    h
}

#[differentiable]
fn predict_fold(model: &Mlp, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let h = model
        .hidden
        .iter()
        .fold(x.clone(), |h, layer| (h.matmul(&layer.w) + &layer.b).tanh());
    h.matmul(&model.out.w) + &model.out.b
}

#[differentiable]
fn first_layer_energy(model: &Deep) -> Tensor<f64> {
    let first = &model.layers[0];
    first.w.square().sum() + model.layers[1].b.sum()
}

fn deep_model() -> Deep {
    Deep {
        layers: vec![linear(3, 5, 40), linear(5, 5, 41), linear(5, 2, 42)],
    }
}

#[test]
fn loops_over_layers() {
    let model = deep_model();
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 43);
    let ct = Tensor::rand_normal(&[4, 2], 0.0, 1.0, 44);
    let (y, grad) = deep_predict_vjp(&model, &x, &ct);
    assert_eq!(y.shape(), &[4, 2]);
    check_leaves(
        |m: &Deep| (deep_predict(m, &x) * &ct).sum().item(),
        &model,
        &grad,
    );

    // `fold` and `for` give the same values and gradients.
    let model = mlp();
    let (x, _) = regression_data();
    let ct = Tensor::ones(&[16, 1]);
    let (v1, g1) = predict_fold_vjp(&model, &x, &ct);
    let (v2, g2) = predict_vjp(&model, &x, &ct);
    assert_eq!(v1.to_vec(), v2.to_vec());
    for (a, b) in g1.leaves().iter().zip(g2.leaves()) {
        assert_eq!(a.to_vec(), b.to_vec());
    }

    let model = deep_model();
    let g = first_layer_energy_grad(&model);
    assert_close(&g.layers[0].w, &(&model.layers[0].w * 2.0).to_vec(), 1e-15);
    assert_eq!(g.layers[1].b.to_vec(), vec![1.0; 5]);
    assert_eq!(g.layers[2].w.to_vec(), vec![0.0; 10]);
}

// ---- collecting per-step outputs -------------------------------------------------------------

#[derive(Clone, Differentiable)]
struct Rnn {
    w: Tensor<f64>, // [hidden, hidden]
    u: Tensor<f64>, // [features, hidden]
    b: Tensor<f64>, // [hidden]
}

/// The hidden state after every step, `[steps, batch, hidden]`, for `xs: [steps, batch, features]`.
#[differentiable]
fn rnn_states(cell: &Rnn, #[nodiff] xs: &Tensor<f64>) -> Tensor<f64> {
    let (steps, batch, features) = (xs.shape()[0], xs.shape()[1], xs.shape()[2]);
    let mut h = Tensor::zeros(&[batch, cell.w.shape()[0]]);
    let mut outs = Vec::new();
    for t in 0..steps {
        let x_t = xs
            .shrink(&[(t, t + 1), (0, batch), (0, features)])
            .squeeze(0); // xs[t]
        h = (h.matmul(&cell.w) + x_t.matmul(&cell.u) + &cell.b).tanh();
        outs.push(h.clone());
    }
    stack(&outs, 0)
}

/// The last state of the same recurrence, taken from the `Vec` by index.
#[differentiable]
fn rnn_last(cell: &Rnn, #[nodiff] xs: &Tensor<f64>) -> Tensor<f64> {
    let (steps, batch, features) = (xs.shape()[0], xs.shape()[1], xs.shape()[2]);
    let mut h = Tensor::zeros(&[batch, cell.w.shape()[0]]);
    let mut outs = Vec::new();
    for t in 0..steps {
        let x_t = xs
            .shrink(&[(t, t + 1), (0, batch), (0, features)])
            .squeeze(0);
        h = (h.matmul(&cell.w) + x_t.matmul(&cell.u) + &cell.b).tanh();
        outs.push(h.clone());
    }
    outs[outs.len() - 1].sum()
}

#[test]
fn per_step_outputs_are_stacked() {
    let cell = Rnn {
        w: Tensor::rand_normal(&[4, 4], 0.0, 0.4, 50),
        u: Tensor::rand_normal(&[3, 4], 0.0, 0.4, 51),
        b: Tensor::rand_normal(&[4], 0.0, 0.1, 52),
    };
    let xs = Tensor::rand_normal(&[6, 2, 3], 0.0, 1.0, 53);
    let ct = Tensor::rand_normal(&[6, 2, 4], 0.0, 1.0, 54);
    let (states, grad) = rnn_states_vjp(&cell, &xs, &ct);
    assert_eq!(states.shape(), &[6, 2, 4]);
    assert_eq!(states.to_vec(), rnn_states(&cell, &xs).to_vec());
    check_leaves(
        |c: &Rnn| (rnn_states(c, &xs) * &ct).sum().item(),
        &cell,
        &grad,
    );
    let grad = rnn_last_grad(&cell, &xs);
    check_leaves(|c: &Rnn| rnn_last(c, &xs).item(), &cell, &grad);
}

// ---- iterator chains -------------------------------------------------------------------------

#[differentiable]
fn regularised(
    model: &Deep,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
    #[nodiff] decay: f64,
) -> Tensor<f64> {
    let d = deep_predict(model, x) - y;
    let l2: Tensor<f64> = model.layers.iter().map(|l| l.w.square().sum()).sum();
    (&d * &d).mean() + l2 * decay
}

#[derive(Clone, Differentiable)]
struct Gated {
    layers: Vec<Linear>,
    gates: Vec<Tensor<f64>>,
}

#[differentiable]
fn gated(model: &Gated, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for (layer, gate) in model.layers.iter().zip(model.gates.iter()) {
        h = (h.matmul(&layer.w) + &layer.b).tanh() * gate;
    }
    let mut decayed = h.sum();
    for (k, gate) in model.gates.iter().rev().enumerate() {
        decayed += gate.sum() * (0.5f64).powi(k as i32);
    }
    let biases: Vec<Tensor<f64>> = model.layers.iter().map(|l| l.b.sum()).collect();
    decayed + stack(&biases, 0).square().sum()
}

#[test]
fn iterator_chains() {
    let model = deep_model();
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 60);
    let y = Tensor::rand_normal(&[4, 2], 0.0, 1.0, 61);
    let grad = regularised_grad(&model, &x, &y, 0.01);
    check_leaves(
        |m: &Deep| regularised(m, &x, &y, 0.01).item(),
        &model,
        &grad,
    );

    let model = Gated {
        layers: vec![linear(3, 3, 62), linear(3, 3, 63)],
        gates: vec![
            Tensor::rand_normal(&[3], 1.0, 0.2, 64),
            Tensor::rand_normal(&[3], 1.0, 0.2, 65),
        ],
    };
    let (value, grad) = gated_value_and_grad(&model, &x);
    assert_eq!(value.item(), gated(&model, &x).item());
    check_leaves(|m: &Gated| gated(m, &x).item(), &model, &grad);
}

#[derive(Clone, Differentiable)]
struct Coder {
    encoder: Vec<Linear>,
    decoder: Vec<Linear>,
}

#[differentiable]
fn coded(model: &Coder, #[nodiff] x: &Tensor<f64>, #[nodiff] on: &[bool]) -> Tensor<f64> {
    let mut h = x.clone();
    // The layers of both halves that `on` switches on.
    let layers = model.encoder.iter().chain(&model.decoder);
    for (layer, _) in layers.zip(on).filter(|(_, used)| **used) {
        h = (h.matmul(&layer.w) + &layer.b).tanh();
    }
    // Neighbouring encoder layers kept close, and the last layer's bias.
    let smooth: Tensor<f64> = model
        .encoder
        .windows(2)
        .map(|pair| (&pair[1].w - &pair[0].w).square().sum())
        .sum();
    let head = model.decoder.last().unwrap();
    h.square().mean() + smooth * 0.1 + head.b.sum()
}

#[test]
fn chosen_joined_and_cut_sequences() {
    let model = Coder {
        encoder: (0..3).map(|i| linear(3, 3, 70 + i)).collect(),
        decoder: (0..2).map(|i| linear(3, 3, 80 + i)).collect(),
    };
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 90);
    let on = [true, false, true, true, false];
    let (value, grad) = coded_value_and_grad(&model, &x, &on);
    // By hand: layers 0, 2 (encoder) and 0 (decoder), then the penalties.
    let mut h = x.clone();
    for layer in [&model.encoder[0], &model.encoder[2], &model.decoder[0]] {
        h = (h.matmul(&layer.w) + &layer.b).tanh();
    }
    let e = &model.encoder;
    let smooth = (&e[1].w - &e[0].w).square().sum() + (&e[2].w - &e[1].w).square().sum();
    let want = h.square().mean() + smooth * 0.1 + model.decoder[1].b.sum();
    assert!((value.item() - want.item()).abs() < 1e-12);
    check_leaves(|m: &Coder| coded(m, &x, &on).item(), &model, &grad);
}

// ---- closures --------------------------------------------------------------------------------

#[differentiable]
fn two_tower(w: &Tensor<f64>, #[nodiff] a: &Tensor<f64>, #[nodiff] b: &Tensor<f64>) -> Tensor<f64> {
    let embed = |x: &Tensor<f64>| x.matmul(w).tanh(); // captures w; inlined at each call
    (embed(a) * embed(b)).sum()
}

#[test]
fn closures_are_inlined() {
    let w = Tensor::rand_normal(&[3, 2], 0.0, 0.5, 70);
    let a = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 71);
    let b = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 72);
    check_one(
        |w| two_tower(w, &a, &b),
        |w, t| two_tower_jvp(w, &a, &b, t).1,
        |w, g| two_tower_vjp(w, &a, &b, g).1,
        &w,
    );
}

// ---- masks and comparisons -------------------------------------------------------------------

#[differentiable]
fn masked_mse(
    pred: &Tensor<f64>,
    #[nodiff] target: &Tensor<f64>,
    #[nodiff] valid: &Tensor<bool>,
) -> Tensor<f64> {
    let m = valid.cast::<f64>(); // mask.float()
    let d = (pred - target) * &m;
    (&d * &d).sum() / m.sum()
}

#[differentiable]
fn leaky_relu(x: &Tensor<f64>) -> Tensor<f64> {
    where_cond(&x.gt(0.0), x, &(x * 0.01))
}

#[differentiable]
fn safe_log(x: &Tensor<f64>) -> Tensor<f64> {
    where_cond(&x.gt(0.0), &x.ln(), &0.0).sum()
}

#[differentiable]
fn inside_or_squared(x: &Tensor<f64>) -> Tensor<f64> {
    let inside = x.gt(-1.0).and(&x.lt(1.0));
    let outside = !&inside;
    (x * inside.cast::<f64>() + x.square() * outside.cast::<f64>()).sum()
}

/// The sum of the first `lengths[r]` elements of each row `r` (`lengths: [rows, 1]`).
#[differentiable]
fn prefix_sums(x: &Tensor<f64>, #[nodiff] lengths: &Tensor<i64>) -> Tensor<f64> {
    let positions = Tensor::<i64>::arange(x.shape()[1]); // [T]
    let valid = positions.lt(lengths); // [rows, T]
    (x * valid.cast::<f64>()).sum()
}

#[differentiable]
fn dropout(x: &Tensor<f64>, #[nodiff] keep: &Tensor<bool>, #[nodiff] p: f64) -> Tensor<f64> {
    x * keep.cast::<f64>() / (1.0 - p)
}

#[differentiable]
fn outside_band(x: &Tensor<f64>) -> Tensor<f64> {
    let out = x.lt(-1.0).or(&x.gt(1.0));
    (x * out.cast::<f64>()).sum()
}

#[test]
fn dropout_with_a_mask_drawn_outside() {
    let x = t64(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let p = 0.5;
    let seed = 7;
    let keep = Tensor::<f64>::rand_uniform(x.shape(), 0.0, 1.0, seed).ge(p);
    let m: Vec<f64> = keep.cast::<f64>().to_vec();
    let (_, g) = dropout_vjp(&x, &keep, p, &Tensor::ones(&[4]));
    let want: Vec<f64> = m.iter().map(|k| k * 2.0).collect();
    assert_eq!(g.to_vec(), want);
    assert_eq!(
        outside_band_grad(&t64(&[-2.0, 0.5, 3.0], &[3])).to_vec(),
        vec![1.0, 0.0, 1.0]
    );
}

#[test]
fn masks_and_comparisons() {
    let pred = t64(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let target = t64(&[0.0, 0.0, 1.0, 1.0], &[4]);
    let valid = Tensor::from_vec(vec![true, false, true, false], &[4]);
    let (value, grad) = masked_mse_value_and_grad(&pred, &target, &valid);
    // By hand: (1 + 4) / 2, gradient 2 d m / 2.
    assert_close(&value, &[2.5], 1e-15);
    assert_close(&grad, &[1.0, 0.0, 2.0, 0.0], 1e-15);

    let x = t64(&[-2.0, 3.0], &[2]);
    let (y, g) = leaky_relu_vjp(&x, &Tensor::ones(&[2]));
    assert_close(&y, &[-0.02, 3.0], 1e-15);
    assert_close(&g, &[0.01, 1.0], 1e-15);

    // The unselected side contributes exactly zero: no NaN from ln's derivative at 0.
    assert_eq!(
        safe_log_grad(&t64(&[0.0, 2.0], &[2])).to_vec(),
        vec![0.0, 0.5]
    );

    let x = t64(&[0.5, 2.0, -3.0], &[3]);
    assert_eq!(inside_or_squared_grad(&x).to_vec(), vec![1.0, 4.0, -6.0]);

    let x = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[2, 4]);
    let lengths = Tensor::from_vec(vec![1_i64, 3], &[2, 1]);
    assert_eq!(prefix_sums(&x, &lengths).item(), 1.0 + 5.0 + 6.0 + 7.0);
    assert_eq!(
        prefix_sums_grad(&x, &lengths).to_vec(),
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    );
}

// ---- maximum, minimum, clamp -----------------------------------------------------------------

/// The Huber loss with δ = 1.
#[differentiable]
fn huber(pred: &Tensor<f64>, #[nodiff] target: &Tensor<f64>) -> Tensor<f64> {
    let err = (pred - target).abs();
    let quadratic = err.minimum(1.0);
    let linear = &err - &quadratic;
    (quadratic.square() * 0.5 + linear).mean()
}

#[differentiable]
fn clamped(x: &Tensor<f64>) -> Tensor<f64> {
    x.clamp(-1.0, 1.0).sum()
}

#[differentiable]
fn rectified(x: &Tensor<f64>) -> Tensor<f64> {
    x.maximum(0.0).sum() + x.relu().sum()
}

#[test]
fn maximum_minimum_and_clamp() {
    let pred = t64(&[0.5, 3.0, -2.0, 0.25], &[4]);
    let target = t64(&[0.0, 0.0, 0.0, 1.0], &[4]);
    // Errors 0.5, 3, -2, -0.75: gradients e or sign(e), over N = 4.
    let (value, grad) = huber_value_and_grad(&pred, &target);
    assert_close(&value, &[(0.125 + 2.5 + 1.5 + 0.28125) / 4.0], 1e-15);
    assert_close(&grad, &[0.125, 0.25, -0.25, -0.1875], 1e-15);

    let x = t64(&[-2.0, -1.0, 0.5, 1.0, 3.0], &[5]);
    assert_eq!(clamped_grad(&x).to_vec(), vec![0.0, 1.0, 1.0, 1.0, 0.0]);
    // maximum splits a tie evenly; relu's derivative at 0 is 0.
    let x = t64(&[-1.0, 0.0, 2.0], &[3]);
    assert_eq!(rectified_grad(&x).to_vec(), vec![0.0, 0.5, 2.0]);
}

// ---- arange ----------------------------------------------------------------------------------

#[differentiable]
fn position_weighted(x: &Tensor<f64>) -> Tensor<f64> {
    let n = x.shape()[0];
    let ramp = Tensor::<f64>::arange(n) + 1.0; // [1, 2, ..., n]
    let halves = Tensor::arange_step(0.5, 0.5 * (n as f64 + 1.0), 0.5); // [0.5, 1, ..., n/2]
    (x * ramp * halves).sum()
}

#[test]
fn ranges_are_constants() {
    let x = t64(&[1.0, 1.0, 1.0], &[3]);
    assert_eq!(position_weighted_grad(&x).to_vec(), vec![0.5, 2.0, 4.5]);
}

// ---- printing and asserting ------------------------------------------------------------------

#[differentiable]
fn logged(x: &Tensor<f64>, #[nodiff] step: usize) -> Tensor<f64> {
    let y = x.tanh();
    assert_eq!(y.shape(), x.shape());
    assert!(y.abs().max().item() <= 1.0, "tanh out of range: {y:?}");
    if step.is_multiple_of(100) {
        println!("step {step}: mean activation {}", y.mean().item());
    }
    let energy = dbg!(y.square());
    energy.sum()
}

#[test]
fn printing_and_asserting_read_values() {
    let x = t64(&[0.5, -1.0], &[2]);
    let (value, grad) = logged_value_and_grad(&x, 100);
    assert_eq!(value.item(), logged(&x, 100).item());
    let want: Vec<f64> = x
        .to_vec()
        .iter()
        .map(|v| 2.0 * v.tanh() * (1.0 - v.tanh().powi(2)))
        .collect();
    assert_close(&grad, &want, 1e-15);
}

// ---- optimizers ------------------------------------------------------------------------------

fn train(model: &mut Mlp, x: &Tensor<f64>, y: &Tensor<f64>, steps: usize) -> f64 {
    let mut opt = Adam::new(1e-2); // .betas(0.9, 0.999).eps(1e-8) are the defaults
    let mut last = f64::INFINITY;
    for step in 0..steps {
        if step == steps / 2 {
            opt.lr = 5e-3; // a step schedule
        }
        let (loss, grad) = mse_value_and_grad(model, x, y);
        opt.step(model, &grad);
        last = loss.item();
    }
    last
}

#[test]
fn adam_trains_the_mlp() {
    let mut model = mlp();
    let (x, y) = regression_data();
    let before = mse(&model, &x, &y).item();
    let last = train(&mut model, &x, &y, 300);
    assert!(last < before / 10.0, "{before} → {last}");
    assert!(mse(&model, &x, &y).item() <= last * 1.01);
}

#[test]
fn sgd_with_momentum_and_clipping() {
    let mut model = mlp();
    let (x, y) = regression_data();
    let before = mse(&model, &x, &y).item();
    let mut opt = Sgd::new(0.05)
        .momentum(0.9)
        .schedule(Schedule::cosine(0.05, 0.005, 300));
    for _ in 0..300 {
        let mut grad = mse_grad(&model, &x, &y);
        clip_grad_norm(&mut grad, 1.0);
        // The clipped gradient's norm is at most one.
        let clipped: f64 = grad.leaves().iter().map(|g| g.square().sum().item()).sum();
        assert!(clipped.sqrt() <= 1.0 + 1e-12);
        opt.step(&mut model, &grad);
    }
    assert!(mse(&model, &x, &y).item() < before / 10.0);
    // The last step's rate is the schedule's at step 299.
    assert_eq!(opt.lr, Schedule::cosine(0.05, 0.005, 300).lr(299));
}

// ---- checking gradients ----------------------------------------------------------------------

#[test]
fn check_grad_against_finite_differences() {
    let x = t64(&[3.0, 4.0, -1.0], &[3]);
    let f = grad_fn(
        |a: &[Tensor<f64>]| clip_by_norm(&a[0], Some(2.0)),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| clip_by_norm_jvp(&a[0], Some(2.0), &t[0]).1,
        |a: &[Tensor<f64>], g: &Tensor<f64>| vec![clip_by_norm_vjp(&a[0], Some(2.0), g).1],
    );
    check_grad(&f, &[x], 1e-6, 1e-6, 1e-9).unwrap();
}

// ---- the guide itself ------------------------------------------------------------------------

/// Every line of every Rust snippet in the guide appears in this file, so a snippet cannot be
/// edited without the code that checks it.
#[test]
fn every_rust_line_of_the_guide_is_tested_here() {
    let guide = include_str!("../docs/porting.md");
    let tests: std::collections::HashSet<&str> =
        include_str!("porting.rs").lines().map(str::trim).collect();
    let mut in_rust = false;
    let mut snippets = 0;
    let mut missing = Vec::new();
    for (number, line) in guide.lines().enumerate() {
        let fence = line.trim_start();
        if fence.starts_with("```") {
            in_rust = !in_rust && fence == "```rust";
            snippets += usize::from(in_rust);
            continue;
        }
        let code = line.trim();
        if in_rust && !code.is_empty() && !tests.contains(code) {
            missing.push(format!("docs/porting.md:{}: {code}", number + 1));
        }
    }
    assert!(snippets > 40, "found only {snippets} Rust snippets");
    assert!(
        missing.is_empty(),
        "not in tests/porting.rs:\n{}",
        missing.join("\n")
    );
}

// ---- what to write instead -------------------------------------------------------------------

/// A trainable optional bias: a `Vec` of zero or one tensors.
#[differentiable]
fn maybe_biased(x: &Tensor<f64>, w: &Tensor<f64>, bias: &Vec<Tensor<f64>>) -> Tensor<f64> {
    let mut h = x.matmul(w);
    for b in bias {
        h += b;
    }
    h.square().sum()
}

/// A constant optional argument: `#[nodiff]`, read with `if let`.
#[differentiable]
fn maybe_shifted(x: &Tensor<f64>, #[nodiff] shift: Option<&Tensor<f64>>) -> Tensor<f64> {
    let mut h = x.clone();
    if let Some(s) = shift {
        h += s;
    }
    h.square().sum()
}

#[test]
fn optional_tensors() {
    let x = t64(&[1.0, 2.0], &[1, 2]);
    let w = t64(&[1.0, 0.0, 0.0, 1.0], &[2, 2]);
    let (_, _, gb) = maybe_biased_grad(&x, &w, &vec![t64(&[0.5, -1.0], &[2])]);
    assert_eq!(gb[0].to_vec(), vec![3.0, 2.0]);
    let (gx, _, gb) = maybe_biased_grad(&x, &w, &vec![]);
    assert!(gb.is_empty());
    assert_eq!(gx.to_vec(), vec![2.0, 4.0]);
    let s = t64(&[1.0, 1.0], &[1, 2]);
    assert_eq!(maybe_shifted_grad(&x, Some(&s)).to_vec(), vec![4.0, 6.0]);
    assert_eq!(maybe_shifted_grad(&x, None).to_vec(), vec![2.0, 4.0]);
}

// ---- known gaps ------------------------------------------------------------------------------

#[derive(Clone, Differentiable)]
struct WithBuffer {
    w: Tensor<f64>,
    #[nodiff]
    mean: Tensor<f64>,
}

/// Reads a `#[nodiff]` field in the body: the guide says this is not supported yet.
#[differentiable]
fn centred(model: &WithBuffer, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    (x - &model.mean).matmul(&model.w).sum()
}

#[test]
fn a_nodiff_field_read_in_the_body_is_a_constant() {
    let model = WithBuffer {
        w: t64(&[1.0, -1.0], &[2, 1]),
        mean: t64(&[1.0, 2.0], &[2]),
    };
    let x = t64(&[3.0, 6.0, 5.0, 2.0], &[2, 2]);
    let grad = centred_grad(&model, &x);
    assert_eq!(grad.w.to_vec(), vec![6.0, 4.0]);
    assert_eq!(grad.mean.to_vec(), model.mean.to_vec());
    let (_, t) = centred_jvp(&model, &x, &model.zeros_like());
    assert_eq!(t.item(), 0.0);
}

#[differentiable]
fn rosenbrock2(a: f64, b: f64) -> f64 {
    (1.0 - a) * (1.0 - a) + (b - a * a) * (b - a * a) * 100.0
}

#[test]
fn functions_of_numbers() {
    // df/da = -2 (1 - a) - 400 a (b - a²), df/db = 200 (b - a²).
    let (a, b) = (0.5, 1.5);
    let (ga, gb) = rosenbrock2_grad(a, b);
    assert!((ga - (-2.0 * (1.0 - a) - 400.0 * a * (b - a * a))).abs() < 1e-12);
    assert!((gb - 200.0 * (b - a * a)).abs() < 1e-12);
}

#[differentiable(hvp)]
fn ring(x: &[f64; 3], #[nodiff] k: f64) -> f64 {
    let mut e = 0.0;
    for i in 0..3 {
        let d = x[i] - x[(i + 1) % 3];
        e += k * d * d + x[i].cos();
    }
    e
}

#[test]
fn second_derivatives_of_numbers() {
    let (x, v) = ([0.1, 0.5, -0.3], [1.0, 0.0, 0.0]);
    let (grad, hv) = ring_hvp(&x, 2.0, &v);
    assert_eq!(grad, ring_grad(&x, 2.0));
    let h = hessian_of_numbers(|x, v| ring_hvp(x, 2.0, v).1, &x);
    // By hand: H = 2k (2 on the diagonal, -1 off it) - diag(cos x).
    for i in 0..3 {
        for j in 0..3 {
            let springs = if i == j { 8.0 } else { -4.0 };
            let want = springs - if i == j { x[i].cos() } else { 0.0 };
            assert!((h.to_vec()[i * 3 + j] - want).abs() < 1e-12, "H[{i}][{j}]");
        }
        assert!((hv[i] - h.to_vec()[i * 3]).abs() < 1e-12);
    }
}

#[differentiable]
fn poly_loss(c: &[f64], #[nodiff] xs: &[f64], #[nodiff] ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for i in 0..xs.len() {
        let mut p = 0.0;
        for k in (0..c.len()).rev() {
            p = p * xs[i] + c[k];
        }
        loss += (p - ys[i]) * (p - ys[i]);
    }
    loss
}

#[test]
fn a_slice_of_coefficients() {
    // p(x) = 1 + 2x at x = 1, 2 against 0, 0: residuals 3, 5; dL/dc = (2·3 + 2·5, 2·3 + 4·5).
    let g = poly_loss_grad(&[1.0, 2.0], &[1.0, 2.0], &[0.0, 0.0]);
    assert_eq!(g, vec![16.0, 26.0]);
}

#[differentiable]
fn heun_prey(state: [f64; 2], a: f64, b: f64) -> f64 {
    let mut s = [state[0], state[1]];
    for _ in 0..20 {
        let k1 = [a * s[0] - s[0] * s[1], s[0] * s[1] - b * s[1]];
        let mut guess = [0.0; 2];
        for j in 0..2 {
            guess[j] = s[j] + 0.05 * k1[j];
        }
        let k2 = [
            a * guess[0] - guess[0] * guess[1],
            guess[0] * guess[1] - b * guess[1],
        ];
        for j in 0..2 {
            s[j] += 0.025 * (k1[j] + k2[j]);
        }
    }
    s[0]
}

#[differentiable]
fn lorenz(s: [f64; 3], rho: f64) -> [f64; 3] {
    [
        10.0 * (s[1] - s[0]),
        s[0] * (rho - s[2]) - s[1],
        s[0] * s[1] - 8.0 / 3.0 * s[2],
    ]
}

#[differentiable]
fn lorenz_z(s0: [f64; 3], rho: f64) -> f64 {
    let [mut x, mut y, mut z] = [s0[0], s0[1], s0[2]];
    for _ in 0..100 {
        let [dx, dy, dz] = lorenz([x, y, z], rho);
        x += 0.005 * dx;
        y += 0.005 * dy;
        z += 0.005 * dz;
    }
    z
}

#[test]
fn helpers_returning_arrays() {
    // d lorenz / d rho = [0, s0, 0]: the jvp along rho alone.
    let (_, t) = lorenz_jvp([1.0, 2.0, 3.0], 28.0, &[0.0; 3], &1.0);
    assert_eq!(t, [0.0, 1.0, 0.0]);
    let (s0, rho) = ([1.0, 1.0, 1.0], 28.0);
    let (_, g_rho) = lorenz_z_grad(s0, rho);
    let h = 1e-6;
    let want = (lorenz_z(s0, rho + h) - lorenz_z(s0, rho - h)) / (2.0 * h);
    assert!(
        (g_rho - want).abs() < 1e-5 * want.abs().max(1.0),
        "{g_rho} vs {want}"
    );
}

#[test]
fn local_arrays_written_by_index() {
    let (state, a, b) = ([1.2, 0.8], 1.1, 0.9);
    let (gs, ga, gb) = heun_prey_grad(state, a, b);
    let h = 1e-6;
    let central = |f: &dyn Fn(f64) -> f64| (f(h) - f(-h)) / (2.0 * h);
    let want = [
        central(&|e| heun_prey([state[0] + e, state[1]], a, b)),
        central(&|e| heun_prey([state[0], state[1] + e], a, b)),
        central(&|e| heun_prey(state, a + e, b)),
        central(&|e| heun_prey(state, a, b + e)),
    ];
    for (got, want) in [gs[0], gs[1], ga, gb].into_iter().zip(want) {
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
}

#[derive(Clone, Differentiable)]
struct Affine {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
impl Affine {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w) + &self.b
    }

    fn loss(&self, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
        self.forward(x).tanh().sum()
    }
}

trait Layer {
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

#[differentiable]
impl Layer for Affine {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        (x.matmul(&self.w) + &self.b).tanh()
    }
}

#[differentiable]
fn layer_mse<M: Layer + Differentiable>(
    model: &M,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let d = model.forward(x) - y;
    (&d * &d).mean()
}

#[test]
fn layers_through_a_trait() {
    let model = Affine {
        w: t64(&[0.5, -0.25], &[2, 1]),
        b: t64(&[0.1], &[1]),
    };
    let (x, y) = (t64(&[1.0, 2.0], &[1, 2]), t64(&[0.5], &[1, 1]));
    // o = tanh(0.1); d = o - 0.5: ∂/∂b = 2 d (1 - o²), ∂/∂w = x ∂/∂b.
    let (value, g) = layer_mse_value_and_grad(&model, &x, &y);
    let o = 0.1f64.tanh();
    let db = 2.0 * (o - 0.5) * (1.0 - o * o);
    assert!((value.item() - (o - 0.5).powi(2)).abs() < 1e-12);
    assert!((g.b.item() - db).abs() < 1e-12);
    assert!((g.w.to_vec()[0] - db).abs() < 1e-12 && (g.w.to_vec()[1] - 2.0 * db).abs() < 1e-12);
    // `Affine` also has an inherent `forward` (without `tanh`): the trait's entry points run
    // the trait's method, not the inherent one of the same name.
    assert_ne!(Layer::forward(&model, &x).item(), model.forward(&x).item());
    let (out, (layer_grad, _)) = Layer::forward_vjp(&model, &x, &t64(&[1.0], &[1, 1]));
    assert_eq!(out.item(), o);
    assert!((layer_grad.b.item() - (1.0 - o * o)).abs() < 1e-12);
}

#[differentiable(hvp)]
fn critic(w: &Tensor<f64>, x: &Tensor<f64>) -> Tensor<f64> {
    x.matmul(w).tanh().sum()
}

#[differentiable]
fn wgan_critic_loss(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let (_, gx) = critic_grad(w, x);
    let norm = gx.square().sum().sqrt();
    critic(w, x) + (norm - 1.0).square() * 10.0
}

#[test]
fn gradients_inside_a_loss() {
    // One example, one weight: critic = tanh(w x), ∂/∂x = w (1 - t²) with t = tanh(w x).
    // loss = t + 10 (|w| (1 - t²) - 1)², differentiated in w by hand below.
    let (w0, x0) = (0.7f64, 1.3f64);
    let (w, x) = (t64(&[w0], &[1, 1]), t64(&[x0], &[1, 1]));
    let t = (w0 * x0).tanh();
    let s = 1.0 - t * t;
    let dt = x0 * s;
    let m = w0.abs() * s - 1.0;
    let dm = w0.signum() * s + w0.abs() * (-2.0 * t * dt);
    let by_hand = dt + 20.0 * m * dm;
    let g = wgan_critic_loss_grad(&w, &x);
    assert!(
        (g.item() - by_hand).abs() < 1e-12,
        "{} against {by_hand}",
        g.item()
    );
}

#[derive(Clone, Differentiable)]
pub struct Critic<T: Element> {
    w: Tensor<T>,
    v: Tensor<T>,
}

#[differentiable]
impl<T: Element> Critic<T> {
    fn score(&self, x: &Tensor<T>) -> Tensor<T> {
        x.matmul(&self.w).tanh().matmul(&self.v).sum()
    }

    fn penalty(&self, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
        let (_, gx) = self.score_grad(x);
        (gx.square().sum().sqrt() - T::from_f64(1.0)).square()
    }
}

#[test]
fn gradients_inside_a_loss_of_a_model() {
    // One example, one unit: score = v tanh(w x), gx = v w s with s = 1 - t², t = tanh(w x);
    // penalty = (|gx| - 1)², so ∂/∂v = 2 m sign(gx) w s and ∂/∂w = 2 m sign(gx) v (s - 2 w x t s)
    // with m = |gx| - 1.
    let (w0, v0, x0) = (0.7f64, -1.9f64, 0.4f64);
    let critic = Critic {
        w: t64(&[w0], &[1, 1]),
        v: t64(&[v0], &[1, 1]),
    };
    let t = (w0 * x0).tanh();
    let s = 1.0 - t * t;
    let gx = v0 * w0 * s;
    let m = gx.abs() - 1.0;
    let dv = 2.0 * m * gx.signum() * w0 * s;
    let dw = 2.0 * m * gx.signum() * v0 * (s - 2.0 * w0 * x0 * t * s);
    let g = critic.penalty_grad(&t64(&[x0], &[1, 1]));
    assert!(
        (g.v.item() - dv).abs() < 1e-12,
        "{} against {dv}",
        g.v.item()
    );
    assert!(
        (g.w.item() - dw).abs() < 1e-12,
        "{} against {dw}",
        g.w.item()
    );
}

#[derive(Clone, Differentiable)]
pub struct Regressor<T: Element> {
    w: Tensor<T>,
    b: Tensor<T>,
}

#[differentiable]
fn task_loss<T: Element>(
    m: &Regressor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    (x.matmul(&m.w) + &m.b - y).square().mean()
}

#[differentiable]
fn maml_loss<T: Element>(
    m: &Regressor<T>,
    #[nodiff] xs: &Tensor<T>,
    #[nodiff] ys: &Tensor<T>,
    #[nodiff] xq: &Tensor<T>,
    #[nodiff] yq: &Tensor<T>,
) -> Tensor<T> {
    let alpha = T::from_f64(0.1);
    let g = task_loss_grad(m, xs, ys);
    let w = &m.w - &(&g.w * alpha);
    let b = &m.b - &(&g.b * alpha);
    (xq.matmul(&w) + b - yq).square().mean()
}

#[test]
fn a_maml_step_on_a_model() {
    // One example each, scalars: support loss (w xs + b − ys)², so the adapted parameters are
    // w' = w − 2α r xs, b' = b − 2α r with r = w xs + b − ys; the query loss is q² with
    // q = w' xq + b' − yq, and its gradient through the step is
    // ∂/∂w = 2q (xq (1 − 2α xs²) − 2α xs), ∂/∂b = 2q (1 − 2α − 2α xs xq).
    let (w0, b0, xs, ys, xq, yq, alpha) = (0.8f64, -0.3f64, 1.5, 0.2, -0.7, 0.9, 0.1);
    let m = Regressor {
        w: t64(&[w0], &[1, 1]),
        b: t64(&[b0], &[1]),
    };
    let r = w0 * xs + b0 - ys;
    let (w1, b1) = (w0 - 2.0 * alpha * r * xs, b0 - 2.0 * alpha * r);
    let q = w1 * xq + b1 - yq;
    let dw = 2.0 * q * (xq * (1.0 - 2.0 * alpha * xs * xs) - 2.0 * alpha * xs);
    let db = 2.0 * q * (1.0 - 2.0 * alpha - 2.0 * alpha * xs * xq);
    let one = |v: f64| t64(&[v], &[1, 1]);
    let g = maml_loss_grad(&m, &one(xs), &one(ys), &one(xq), &one(yq));
    assert!(
        (g.w.item() - dw).abs() < 1e-12,
        "{} against {dw}",
        g.w.item()
    );
    assert!(
        (g.b.item() - db).abs() < 1e-12,
        "{} against {db}",
        g.b.item()
    );
}

#[differentiable(vmap)]
fn example_loss(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let d = x.matmul(w).tanh() - y;
    (&d * &d).sum()
}

#[test]
fn batching_vmap() {
    // Per example: t = tanh(x · w), loss = (t - y)², gradient 2 (t - y) (1 - t²) x.
    let w = t64(&[0.3, -0.8], &[2]);
    let xs = t64(&[1.0, 2.0, -0.5, 0.25, 0.0, 3.0], &[3, 2]);
    let ys = t64(&[0.1, -0.4, 0.9], &[3]);
    let losses = example_loss_vmap(&w, Batch(&xs), Batch(&ys));
    let grads = example_loss_grad_vmap(&w, Batch(&xs), Batch(&ys));
    assert_eq!(grads.shape(), &[3, 2]);
    let (x, y, l, g) = (xs.to_vec(), ys.to_vec(), losses.to_vec(), grads.to_vec());
    for i in 0..3 {
        let t = (x[2 * i] * 0.3 - x[2 * i + 1] * 0.8).tanh();
        assert!((l[i] - (t - y[i]).powi(2)).abs() < 1e-14);
        for j in 0..2 {
            let by_hand = 2.0 * (t - y[i]) * (1.0 - t * t) * x[2 * i + j];
            assert!((g[2 * i + j] - by_hand).abs() < 1e-14, "{i} {j}");
        }
    }
}

/// A heterogeneous stack of boxed layers (`nn.Sequential`), under its own trait.
mod sequential {
    use super::*;

    #[differentiable(dyn)]
    pub trait Module {
        fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
    }

    #[derive(Clone, Differentiable)]
    pub struct Sequential {
        layers: Vec<Box<dyn Module>>,
    }

    #[differentiable]
    fn stack_mse(
        model: &Sequential,
        #[nodiff] x: &Tensor<f64>,
        #[nodiff] y: &Tensor<f64>,
    ) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &model.layers {
            h = layer.forward(&h);
        }
        let d = h - y;
        (&d * &d).mean()
    }

    #[differentiable]
    impl Module for Affine {
        fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
            x.matmul(&self.w) + &self.b
        }
    }

    #[derive(Clone, Differentiable)]
    pub struct Scale {
        s: Tensor<f64>,
    }

    #[differentiable]
    impl Module for Scale {
        fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
            x * &self.s
        }
    }

    #[test]
    fn a_stack_of_boxed_layers() {
        let model = Sequential {
            layers: vec![
                Box::new(Affine {
                    w: t64(&[0.5, -0.25], &[2, 1]),
                    b: t64(&[0.1], &[1]),
                }),
                Box::new(Scale {
                    s: t64(&[3.0], &[1]),
                }),
            ],
        };
        let (x, y) = (t64(&[1.0, 2.0], &[1, 2]), t64(&[0.5], &[1, 1]));
        // z = 0.5 - 0.5 + 0.1 = 0.1, out = 3 z = 0.3, d = -0.2: ∂/∂s = 2 d z, ∂/∂b = 2 d s,
        // ∂/∂w = x ∂/∂b.
        let (value, g) = stack_mse_value_and_grad(&model, &x, &y);
        assert!((value.item() - 0.04).abs() < 1e-12);
        let scale = g.layers[1].downcast_ref::<Scale>().expect("a Scale");
        assert!((scale.s.item() - 2.0 * -0.2 * 0.1).abs() < 1e-12);
        let affine = g.layers[0].downcast_ref::<Affine>().expect("an Affine");
        let db = 2.0 * -0.2 * 3.0;
        assert!((affine.b.item() - db).abs() < 1e-12);
        assert!((affine.w.to_vec()[1] - 2.0 * db).abs() < 1e-12);
        assert_eq!(g.leaf_paths("model")[2], "model.layers[1].s");
    }
}

#[test]
fn modules_as_methods() {
    let model = Affine {
        w: t64(&[0.5, -0.25], &[2, 1]),
        b: t64(&[0.1], &[1]),
    };
    let x = t64(&[1.0, 2.0], &[1, 2]);
    // z = 0.5 - 0.5 + 0.1 = 0.1: d tanh(z) = 1 - tanh²(z); dw = x (1 - tanh²), db = 1 - tanh².
    let (value, g) = model.loss_value_and_grad(&x);
    let d = 1.0 - 0.1f64.tanh().powi(2);
    assert!((value.item() - 0.1f64.tanh()).abs() < 1e-12);
    assert!((g.w.to_vec()[0] - d).abs() < 1e-12 && (g.w.to_vec()[1] - 2.0 * d).abs() < 1e-12);
    assert!((g.b.item() - d).abs() < 1e-12);
}
