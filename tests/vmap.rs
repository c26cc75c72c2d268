//! `#[differentiable(vmap)]`: each batched entry point against the same function called once
//! per example, and against finite differences.

use rune_ad::prelude::*;

/// Example `i` of a batched tensor.
fn example<T: Element>(t: &Tensor<T>, i: usize) -> Tensor<T> {
    t.index_select(0, &[i]).squeeze(0)
}

fn assert_close<T: Element + Into<f64>>(
    got: &Tensor<T>,
    expected: &Tensor<T>,
    tol: f64,
    what: &str,
) {
    assert_eq!(got.shape(), expected.shape(), "{what}: shapes");
    for (k, (g, e)) in got.to_vec().into_iter().zip(expected.to_vec()).enumerate() {
        let (g, e): (f64, f64) = (g.into(), e.into());
        assert!(
            (g - e).abs() <= tol * (1.0 + e.abs()),
            "{what}[{k}]: {g} vs {e}"
        );
    }
}

/// One example's squared error of a two-layer network: `x` is one input vector.
#[differentiable(vmap)]
fn mlp_loss(
    w1: &Tensor<f64>,
    b1: &Tensor<f64>,
    w2: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let h = (x.matmul(w1) + b1).tanh();
    let o = h.matmul(w2);
    let d = &o - y;
    (&d * &d).sum()
}

struct Mlp {
    w1: Tensor<f64>,
    b1: Tensor<f64>,
    w2: Tensor<f64>,
    xs: Tensor<f64>,
    ys: Tensor<f64>,
}

fn mlp() -> Mlp {
    Mlp {
        w1: Tensor::rand_uniform(&[4, 5], -0.5, 0.5, 1),
        b1: Tensor::rand_uniform(&[5], -0.1, 0.1, 2),
        w2: Tensor::rand_uniform(&[5, 3], -0.5, 0.5, 3),
        xs: Tensor::rand_uniform(&[6, 4], 0.0, 1.0, 4),
        ys: Tensor::rand_uniform(&[6, 3], 0.0, 1.0, 5),
    }
}

#[test]
fn vmap_of_a_loss_is_the_loss_of_each_example() {
    let m = mlp();
    let batched = mlp_loss_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    assert_eq!(batched.shape(), &[6]);
    for i in 0..6 {
        let one = mlp_loss(&m.w1, &m.b1, &m.w2, &example(&m.xs, i), &example(&m.ys, i));
        assert_close(&example(&batched, i), &one, 1e-12, "value");
    }
}

#[test]
fn per_example_gradients_are_the_gradients_of_each_example() {
    let m = mlp();
    let (values, (g1, gb, g2)) =
        mlp_loss_value_and_grad_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    let (h1, hb, h2) = mlp_loss_grad_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    assert_eq!(g1.shape(), &[6, 4, 5]);
    assert_eq!(gb.shape(), &[6, 5]);
    assert_eq!(g2.shape(), &[6, 5, 3]);
    for i in 0..6 {
        let (x, y) = (example(&m.xs, i), example(&m.ys, i));
        let (v, (e1, eb, e2)) = mlp_loss_value_and_grad(&m.w1, &m.b1, &m.w2, &x, &y);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&g1, i), &e1, 1e-12, "w1");
        assert_close(&example(&gb, i), &eb, 1e-12, "b1");
        assert_close(&example(&g2, i), &e2, 1e-12, "w2");
        assert_close(&example(&h1, i), &e1, 1e-12, "w1 (grad)");
        assert_close(&example(&hb, i), &eb, 1e-12, "b1 (grad)");
        assert_close(&example(&h2, i), &e2, 1e-12, "w2 (grad)");
        // And against central differences, one weight.
        let eps = 1e-6;
        let shifted = |d: f64| {
            let mut w = m.w1.to_vec();
            w[7] += d;
            let w = Tensor::from_vec(w, &[4, 5]);
            mlp_loss(&w, &m.b1, &m.w2, &x, &y).item()
        };
        let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
        assert!((example(&g1, i).to_vec()[7] - fd).abs() < 1e-7);
    }
    // The mean of the per-example gradients is the gradient of the mean loss.
    let summed = g1.sum_axes(&[0], false);
    let mut total = Tensor::zeros(&[4, 5]);
    for i in 0..6 {
        let (x, y) = (example(&m.xs, i), example(&m.ys, i));
        total = &total + &mlp_loss_grad(&m.w1, &m.b1, &m.w2, &x, &y).0;
    }
    assert_close(&summed, &total, 1e-12, "sum of per-example gradients");
}

/// A batch of weights against one input: in_axes on a differentiated argument.
#[test]
fn batched_weights_and_a_shared_input() {
    let m = mlp();
    let w1s = Tensor::rand_uniform(&[3, 4, 5], -0.5, 0.5, 9);
    let x = example(&m.xs, 0);
    let y = example(&m.ys, 0);
    let (values, (g1, gb, _)) = mlp_loss_value_and_grad_vmap(Batch(&w1s), &m.b1, &m.w2, &x, &y);
    for i in 0..3 {
        let (v, (e1, eb, _)) = mlp_loss_value_and_grad(&example(&w1s, i), &m.b1, &m.w2, &x, &y);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&g1, i), &e1, 1e-12, "w1");
        assert_close(&example(&gb, i), &eb, 1e-12, "b1");
    }
}

/// A small ODE integrated with a loop, then normalised: the state turns batched in the first
/// step when only the rates are batched.
#[differentiable(vmap)]
fn rollout(y0: &Tensor<f32>, k: &Tensor<f32>, #[nodiff] steps: usize) -> Tensor<f32> {
    let mut y = y0.clone();
    for _ in 0..steps {
        let dy = -(&y * k) + y.sin();
        y = &y + &(dy * 0.1);
    }
    let p = y.softmax(-1);
    let big = p.gt(0.3);
    let q = where_cond(&big, &p, &(&p * 2.0));
    q.reshape(&[-1]).sum_axes(&[0], false) + y.mean() + p.max_axes(&[0], false)
}

#[test]
fn loops_reductions_and_selects_batch_in_f32() {
    let y0 = Tensor::from_vec(vec![0.5f32, -0.2, 0.9], &[3]);
    let ks = Tensor::<f32>::rand_uniform(&[5, 3], 0.1, 2.0, 7);
    let values = rollout_vmap(&y0, Batch(&ks), 4);
    let grads = rollout_grad_vmap(&y0, Batch(&ks), 4);
    assert_eq!(grads.0.shape(), &[5, 3]);
    for i in 0..5 {
        let k = example(&ks, i);
        assert_close(&example(&values, i), &rollout(&y0, &k, 4), 1e-6, "value");
        let (gy, gk) = rollout_grad(&y0, &k, 4);
        assert_close(&example(&grads.0, i), &gy, 1e-5, "y0");
        assert_close(&example(&grads.1, i), &gk, 1e-5, "k");
    }
}

/// A function of a vector: its Jacobian from one batched VJP (rows) and one batched JVP
/// (columns), with the identity as the batch of cotangents and tangents.
#[differentiable(vmap)]
fn field(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>) -> Tensor<f64> {
    a.matmul(x).tanh() * x
}

#[test]
fn jacobians_from_batched_vjp_and_jvp() {
    let n = 4;
    let a = Tensor::rand_uniform(&[n, n], -1.0, 1.0, 11);
    let x = Tensor::rand_uniform(&[n], -1.0, 1.0, 12);
    let eye = Tensor::<f64>::eye(n);
    let (values, rows) = field_vjp_vmap(&x, &a, Batch(&eye));
    let (_, columns) = field_jvp_vmap(&x, &a, Batch(&eye));
    assert_eq!(values.shape(), &[n, n]);
    let loop_jac = jacrev(|x, ct| field_vjp(x, &a, ct).1, &x, &[n]);
    assert_close(&rows, &loop_jac, 1e-12, "jacrev");
    assert_close(&columns.t(), &loop_jac, 1e-12, "jacfwd");
    let by_rows = jacrev_vmap(|x, ws| field_vjp_vmap(x, &a, Batch(ws)).1, &x, &[n]);
    let by_columns = jacfwd_vmap(|x, vs| field_jvp_vmap(x, &a, Batch(vs)).1, &x);
    assert_close(&by_rows, &loop_jac, 1e-12, "jacrev_vmap");
    assert_close(&by_columns, &loop_jac, 1e-12, "jacfwd_vmap");
    // Finite differences of column 2.
    let eps = 1e-6;
    let mut up = x.to_vec();
    let mut down = x.to_vec();
    up[2] += eps;
    down[2] -= eps;
    let fd = (field(&Tensor::from_vec(up, &[n]), &a) - field(&Tensor::from_vec(down, &[n]), &a))
        / (2.0 * eps);
    assert_close(&example(&columns, 2), &fd, 1e-7, "finite differences");
}
