//! Models written the way Rust users write them: `#[differentiable]` methods taking `&self`
//! (alone or through an attribute on the whole `impl` block), calls between them on fields,
//! `Vec` elements and whole structures (with one result and with two), associated functions,
//! helpers imported from other modules, and recursion. Every gradient is checked against
//! central finite differences in both modes, and every generated variant returns exactly the
//! value of the plain function.

use rune_ad::prelude::*;

mod activations {
    //! Helpers in a module of their own, reached by `use` and by path.

    use rune_ad::prelude::*;

    /// The tanh approximation of GELU.
    #[differentiable]
    pub fn gelu(x: &Tensor<f64>) -> Tensor<f64> {
        let inner = (x + &(x * x * x * 0.044715)) * std::f64::consts::FRAC_2_PI.sqrt();
        x * 0.5 * (inner.tanh() + 1.0)
    }

    pub mod squash {
        use rune_ad::prelude::*;

        /// `x / (1 + |x|)`, generic over the element type.
        #[differentiable]
        pub(crate) fn softsign<T: Element>(x: &Tensor<T>) -> Tensor<T> {
            x / &(x.abs() + T::one())
        }

        /// Reaches its sibling module through `super`.
        #[differentiable]
        pub(crate) fn gelu_then_softsign(x: &Tensor<f64>) -> Tensor<f64> {
            softsign(&super::gelu(x))
        }
    }
}

use activations::gelu;
use activations::squash::softsign;

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

impl Linear {
    /// A method with the attribute of its own.
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w) + &self.b
    }
}

#[derive(Clone, Differentiable)]
struct Mlp {
    layers: Vec<Linear>,
    head: Linear,
    #[nodiff]
    name: String,
}

/// The attribute on the block applies to every function in it, with or without `self`.
#[differentiable]
impl Mlp {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = gelu(&layer.forward(&h));
        }
        softsign(&self.head.forward(&h))
    }

    fn loss(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let d = self.forward(x) - y;
        Self::mean_square(&d)
    }

    fn mean_square(d: &Tensor<f64>) -> Tensor<f64> {
        (d * d).mean()
    }

    /// A method calling a free function with the whole structure.
    fn regularised(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        self.loss(x, y) + weight_decay(self) * 0.01
    }
}

/// A free function taking the model, calling back into its methods and associated functions.
#[differentiable]
fn weight_decay(model: &Mlp) -> Tensor<f64> {
    let mut total = Mlp::mean_square(&model.head.w);
    for layer in &model.layers {
        total += Mlp::mean_square(&layer.w);
    }
    total
}

#[differentiable]
fn total_loss(model: &Mlp, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    model.loss(x, y) + weight_decay(model) * 0.01
}

fn linear(fan_in: usize, fan_out: usize, seed: u64) -> Linear {
    Linear {
        w: Tensor::rand_uniform(&[fan_in, fan_out], -0.6, 0.6, seed),
        b: Tensor::rand_uniform(&[fan_out], -0.2, 0.2, seed + 1),
    }
}

fn mlp() -> Mlp {
    Mlp {
        layers: vec![linear(3, 5, 1), linear(5, 4, 3)],
        head: linear(4, 2, 5),
        name: "mlp".to_owned(),
    }
}

fn data() -> (Tensor<f64>, Tensor<f64>) {
    (
        Tensor::rand_uniform(&[6, 3], -1.0, 1.0, 7),
        Tensor::rand_uniform(&[6, 2], -0.5, 0.5, 8),
    )
}

/// The relative error of two vectors, `‖a − b‖ / max(‖a‖, ‖b‖)`.
fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    norm(&diff) / norm(a).max(norm(b))
}

fn flat<M: Differentiable<Elem = f64>>(m: &M) -> Vec<f64> {
    m.leaves().iter().flat_map(|l| l.to_vec()).collect()
}

/// Central differences of `f` along every element of every leaf of `m`.
fn fd_grad<M: Differentiable<Elem = f64>>(m: &M, f: impl Fn(&M) -> f64) -> Vec<f64> {
    let eps = 1e-6;
    let mut out = Vec::new();
    let n_leaves = m.leaves().len();
    for leaf in 0..n_leaves {
        for j in 0..m.leaves()[leaf].len() {
            let shifted = |d: f64| {
                let mut p = m.clone();
                let target = &mut p.leaves_mut()[leaf];
                let mut v = target.to_vec();
                v[j] += d;
                let shape = target.shape().to_vec();
                **target = Tensor::from_vec(v, &shape);
                f(&p)
            };
            out.push((shifted(eps) - shifted(-eps)) / (2.0 * eps));
        }
    }
    out
}

/// The central difference of `f` at `m` along `direction`.
fn fd_directional<M: Differentiable<Elem = f64>>(
    m: &M,
    direction: &M,
    f: impl Fn(&M) -> f64,
) -> f64 {
    let eps = 1e-6;
    let mut plus = m.clone();
    plus.axpy(eps, direction);
    let mut minus = m.clone();
    minus.axpy(-eps, direction);
    (f(&plus) - f(&minus)) / (2.0 * eps)
}

/// A direction as long as `m`, of random values.
fn direction<M: Differentiable<Elem = f64>>(m: &M, seed: u64) -> M {
    let mut d = m.clone();
    for (i, leaf) in d.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_uniform(leaf.shape(), -1.0, 1.0, seed + i as u64);
    }
    d
}

#[test]
fn a_method_on_self_in_both_modes() {
    let model = mlp();
    let (x, y) = data();
    let value = model.loss(&x, &y);
    let (v, grad) = model.loss_value_and_grad(&x, &y);
    assert_eq!(v.item(), value.item());
    assert_eq!(grad.name, "mlp");
    assert_eq!(
        grad.leaf_paths(""),
        [
            "layers[0].w",
            "layers[0].b",
            "layers[1].w",
            "layers[1].b",
            "head.w",
            "head.b"
        ]
    );
    let want = fd_grad(&model, |m| m.loss(&x, &y).item());
    assert!(relative_error(&flat(&grad), &want) <= 1e-6);
    assert_eq!(flat(&model.loss_grad(&x, &y)), flat(&grad));

    let t = direction(&model, 20);
    let (v, along) = model.loss_jvp(&x, &y, &t);
    assert_eq!(v.item(), value.item());
    let want = fd_directional(&model, &t, |m| m.loss(&x, &y).item());
    assert!(relative_error(&[along.item()], &[want]) <= 1e-6);
}

#[test]
fn a_tensor_valued_method_and_its_parameters() {
    let model = mlp();
    let (x, _) = data();
    let value = model.forward(&x);
    let cotangent = Tensor::rand_uniform(value.shape(), -1.0, 1.0, 30);
    let (v, (grad_model, grad_x)) = model.forward_vjp(&x, &cotangent);
    assert_eq!(v.to_vec(), value.to_vec());
    let objective = |m: &Mlp, x: &Tensor<f64>| (m.forward(x) * &cotangent).sum().item();
    assert!(relative_error(&flat(&grad_model), &fd_grad(&model, |m| objective(m, &x))) <= 1e-6);
    assert!(relative_error(&flat(&grad_x), &fd_grad(&x, |x| objective(&model, x))) <= 1e-6);

    let (tm, tx) = (direction(&model, 40), direction(&x, 50));
    let (v, along) = model.forward_jvp(&x, &tm, &tx);
    assert_eq!(v.to_vec(), value.to_vec());
    let eps = 1e-6;
    let shifted = |s: f64| {
        let mut m = model.clone();
        m.axpy(s, &tm);
        m.forward(&(&x + &(&tx * s)))
    };
    let want: Vec<f64> = (shifted(eps) - shifted(-eps))
        .to_vec()
        .iter()
        .map(|d| d / (2.0 * eps))
        .collect();
    assert!(relative_error(&along.to_vec(), &want) <= 1e-6);

    let (v, pullback) = model.forward_pullback(&x);
    assert_eq!(v.to_vec(), value.to_vec());
    assert_eq!(flat(&pullback(&cotangent).0), flat(&grad_model));
}

#[test]
fn free_functions_and_methods_calling_each_other() {
    let model = mlp();
    let (x, y) = data();
    let value = total_loss(&model, &x, &y);
    assert_eq!(value.item(), model.regularised(&x, &y).item());
    let want = fd_grad(&model, |m| total_loss(m, &x, &y).item());
    for (v, grad) in [
        total_loss_value_and_grad(&model, &x, &y),
        model.regularised_value_and_grad(&x, &y),
    ] {
        assert_eq!(v.item(), value.item());
        assert!(relative_error(&flat(&grad), &want) <= 1e-6);
    }
    let t = direction(&model, 60);
    let want = fd_directional(&model, &t, |m| total_loss(m, &x, &y).item());
    for (v, along) in [
        total_loss_jvp(&model, &x, &y, &t),
        model.regularised_jvp(&x, &y, &t),
    ] {
        assert_eq!(v.item(), value.item());
        assert!(relative_error(&[along.item()], &[want]) <= 1e-6);
    }
    let (v, grad) = weight_decay_vjp(&model, &Tensor::scalar(1.0));
    assert_eq!(v.item(), weight_decay(&model).item());
    assert!(relative_error(&flat(&grad), &fd_grad(&model, |m| weight_decay(m).item())) <= 1e-6);
}

#[test]
fn helpers_from_other_modules() {
    let x = Tensor::<f64>::rand_uniform(&[4], -2.0, 2.0, 70);
    let (v, g) = activations::squash::gelu_then_softsign_vjp(&x, &Tensor::ones(&[4]));
    assert_eq!(
        v.to_vec(),
        activations::squash::gelu_then_softsign(&x).to_vec()
    );
    let want = fd_grad(&x, |x| {
        activations::squash::gelu_then_softsign(x).sum().item()
    });
    assert!(relative_error(&g.to_vec(), &want) <= 1e-6);
    let (_, along) = activations::squash::gelu_then_softsign_jvp(&x, &Tensor::ones(&[4]));
    assert!(relative_error(&along.to_vec(), &want) <= 1e-6);
}

/// Differentiable functions defined inside a function body call each other as anywhere else.
#[test]
fn functions_defined_in_a_function_body() {
    #[differentiable]
    fn inner(x: &Tensor<f64>) -> Tensor<f64> {
        x.sin() * 2.0
    }

    #[differentiable]
    fn outer(x: &Tensor<f64>) -> Tensor<f64> {
        gelu(&inner(x)).sum()
    }

    let x = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 80);
    let (v, g) = outer_value_and_grad(&x);
    assert_eq!(v.item(), outer(&x).item());
    let want = fd_grad(&x, |x| outer(x).item());
    assert!(relative_error(&g.to_vec(), &want) <= 1e-6);
    let t = direction(&x, 81);
    let (_, along) = outer_jvp(&x, &t);
    let want = fd_directional(&x, &t, |x| outer(x).item());
    assert!(relative_error(&[along.item()], &[want]) <= 1e-6);
}

/// `x ↦ tanh(f(0.9 x, n − 1)) + 0.1 x`, `n` levels deep.
#[differentiable]
fn nested(x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    if n == 0 {
        x.sin()
    } else {
        nested(&(x * 0.9), n - 1).tanh() + x * 0.1
    }
}

#[derive(Clone, Differentiable)]
struct Cell {
    w: Tensor<f64>,
}

impl Cell {
    /// The cell applied `n` times, by recursion on a method.
    #[differentiable]
    fn unroll(&self, h: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
        if n == 0 {
            h.clone()
        } else {
            self.unroll(&h.matmul(&self.w).tanh(), n - 1)
        }
    }
}

#[test]
fn recursion_to_a_depth_given_at_run_time() {
    let x = Tensor::<f64>::rand_uniform(&[5], -1.0, 1.0, 90);
    for n in [0, 1, 4] {
        let value = nested(&x, n);
        let cotangent = Tensor::rand_uniform(&[5], -1.0, 1.0, 91);
        let (v, g) = nested_vjp(&x, n, &cotangent);
        assert_eq!(v.to_vec(), value.to_vec());
        let want = fd_grad(&x, |x| (nested(x, n) * &cotangent).sum().item());
        assert!(relative_error(&g.to_vec(), &want) <= 1e-6);
        let t = direction(&x, 92);
        let (v, along) = nested_jvp(&x, n, &t);
        assert_eq!(v.to_vec(), value.to_vec());
        let want = fd_directional(&x, &t, |x| (nested(x, n) * &cotangent).sum().item());
        assert!(relative_error(&[(&along * &cotangent).sum().item()], &[want]) <= 1e-6);
    }

    let cell = Cell {
        w: Tensor::rand_uniform(&[3, 3], -0.8, 0.8, 93),
    };
    let h = Tensor::<f64>::rand_uniform(&[2, 3], -1.0, 1.0, 94);
    let value = cell.unroll(&h, 3);
    let cotangent = Tensor::rand_uniform(&[2, 3], -1.0, 1.0, 95);
    let (v, (g_cell, g_h)) = cell.unroll_vjp(&h, 3, &cotangent);
    assert_eq!(v.to_vec(), value.to_vec());
    let objective = |c: &Cell, h: &Tensor<f64>| (c.unroll(h, 3) * &cotangent).sum().item();
    assert!(relative_error(&flat(&g_cell), &fd_grad(&cell, |c| objective(c, &h))) <= 1e-6);
    assert!(relative_error(&g_h.to_vec(), &fd_grad(&h, |h| objective(&cell, h))) <= 1e-6);
    let t = direction(&cell, 96);
    let (v, along) = cell.unroll_jvp(&h, 3, &t, &Tensor::zeros(&[2, 3]));
    assert_eq!(v.to_vec(), value.to_vec());
    let want = fd_directional(&cell, &t, |c| objective(c, &h));
    assert!(relative_error(&[(&along * &cotangent).sum().item()], &[want]) <= 1e-6);
}

#[derive(Clone, Differentiable)]
struct Scale<T: Element> {
    s: Tensor<T>,
}

#[differentiable]
impl<T: Element> Scale<T> {
    fn apply(&self, x: &Tensor<T>) -> Tensor<T> {
        x * &self.s
    }

    /// Two results, taken apart with `let (a, b) = ..` by callers.
    fn split(&self, x: &Tensor<T>) -> (Tensor<T>, Tensor<T>) {
        (self.apply(x), x.exp())
    }
}

/// A method of a generic `impl`, called on a constant (`#[nodiff]`) receiver.
#[differentiable]
fn scaled_parts(x: &Tensor<f64>, #[nodiff] scale: &Scale<f64>) -> Tensor<f64> {
    let (a, b) = scale.split(x);
    (a * b).sum()
}

#[test]
fn a_generic_impl_and_a_constant_receiver() {
    let scale = Scale {
        s: Tensor::from_vec(vec![2.0, -1.0, 0.5], &[3]),
    };
    let x = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 100);
    let value = scaled_parts(&x, &scale);
    let (v, g) = scaled_parts_value_and_grad(&x, &scale);
    assert_eq!(v.item(), value.item());
    let want = fd_grad(&x, |x| scaled_parts(x, &scale).item());
    assert!(relative_error(&g.to_vec(), &want) <= 1e-6);
    let t = direction(&x, 101);
    let (v, along) = scaled_parts_jvp(&x, &scale, &t);
    assert_eq!(v.item(), value.item());
    let want = fd_directional(&x, &t, |x| scaled_parts(x, &scale).item());
    assert!(relative_error(&[along.item()], &[want]) <= 1e-6);

    // The method's own entry points, generic over the element type: d/ds (x s) = x.
    let (v, (g_scale, _)) = scale.apply_vjp(&x, &Tensor::ones(&[3]));
    assert_eq!(v.to_vec(), scale.apply(&x).to_vec());
    assert_eq!(g_scale.s.to_vec(), x.to_vec());
}

#[derive(Clone, Differentiable)]
struct Gate {
    w: Tensor<f64>,
    u: Tensor<f64>,
}

#[differentiable]
impl Gate {
    /// A step's candidate and gate: two results, which callers take apart.
    fn parts(&self, h: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
        (
            h.matmul(&self.w).tanh(),
            (h.matmul(&self.u) * 0.5).sigmoid(),
        )
    }
}

#[derive(Clone, Differentiable)]
struct GatedStack {
    gates: Vec<Gate>,
    head: Linear,
}

#[differentiable]
impl GatedStack {
    /// Gated residual steps over a `Vec` of gates, each a method call with two results between
    /// elementwise code, then another structure's method: the plain function runs the fused
    /// regions between the calls.
    fn score(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for gate in &self.gates {
            let (c, z) = gate.parts(&h);
            h = &h + (c - &h) * &z;
        }
        ((self.head.forward(&h).exp() - 1.0) * 0.5).sum()
    }
}

#[test]
fn method_calls_with_two_results_in_a_loop_over_a_vec_field() {
    let gate = |seed| Gate {
        w: Tensor::rand_uniform(&[3, 3], -0.8, 0.8, seed),
        u: Tensor::rand_uniform(&[3, 3], -0.8, 0.8, seed + 1),
    };
    let model = GatedStack {
        gates: vec![gate(60), gate(62), gate(64)],
        head: linear(3, 2, 66),
    };
    let (x, _) = data();
    let value = model.score(&x);
    let (v, (grad_model, grad_x)) = model.score_value_and_grad(&x);
    assert_eq!(v.item(), value.item());
    let want = fd_grad(&model, |m| m.score(&x).item());
    assert!(relative_error(&flat(&grad_model), &want) <= 1e-6);
    let want = fd_grad(&x, |x| model.score(x).item());
    assert!(relative_error(&flat(&grad_x), &want) <= 1e-6);

    let (tm, tx) = (direction(&model, 70), direction(&x, 80));
    let (v, along) = model.score_jvp(&x, &tm, &tx);
    assert_eq!(v.item(), value.item());
    let eps = 1e-6;
    let shifted = |s: f64| {
        let mut m = model.clone();
        m.axpy(s, &tm);
        m.score(&(&x + &(&tx * s))).item()
    };
    let want = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
    assert!(relative_error(&[along.item()], &[want]) <= 1e-6);
}
