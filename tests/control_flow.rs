//! Branches and loops through `#[differentiable]`, in both modes, against finite differences
//! and hand-derived values.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

fn fd_check<F, J, V>(f: F, jvp: J, vjp: V, args: &[Tensor<f64>])
where
    F: Fn(&[Tensor<f64>]) -> Tensor<f64>,
    J: Fn(&[Tensor<f64>], &[Tensor<f64>]) -> Tensor<f64>,
    V: Fn(&[Tensor<f64>], &Tensor<f64>) -> Vec<Tensor<f64>>,
{
    check_grad(&grad_fn(f, jvp, vjp), args, 1e-6, 1e-6, 1e-8).unwrap();
}

#[differentiable]
fn branchy(x: &Tensor<f64>, #[nodiff] mode: usize) -> Tensor<f64> {
    let y = if mode == 0 {
        x.exp()
    } else if mode == 1 {
        x.sin() * 2.0
    } else {
        let t = x * x;
        t + 1.0
    };
    let z = match mode {
        0 => y.clone(),
        1 | 2 => y * x,
        _ => y.tanh(),
    };
    z.sum()
}

#[test]
fn both_sides_of_branches() {
    let x = Tensor::from_vec(vec![0.3, -0.7, 1.1], &[3]);
    for mode in 0..4 {
        fd_check(
            |a| branchy(&a[0], mode),
            |a, t| branchy_jvp(&a[0], mode, &t[0]).1,
            |a, g| vec![branchy_vjp(&a[0], mode, g).1],
            std::slice::from_ref(&x),
        );
    }
    // mode 1: z = 2 sin(x) x, dz/dx = 2 cos(x) x + 2 sin(x)
    let g = branchy_grad(&x, 1);
    for (gi, xi) in g.to_vec().iter().zip(x.to_vec()) {
        let expected = 2.0 * xi.cos() * xi + 2.0 * xi.sin();
        assert!((gi - expected).abs() < 1e-12);
    }
}

#[differentiable]
fn branch_on_value(x: &Tensor<f64>) -> Tensor<f64> {
    let mut y = x.clone();
    if x.sum().item() > 0.0 {
        y *= 3.0;
    }
    y.sum()
}

#[test]
fn a_condition_may_read_an_active_value() {
    let pos = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    let neg = Tensor::from_vec(vec![-1.0, -2.0], &[2]);
    assert_eq!(branch_on_value(&pos).item(), 9.0);
    assert_eq!(branch_on_value_grad(&pos).to_vec(), vec![3.0, 3.0]);
    assert_eq!(branch_on_value_grad(&neg).to_vec(), vec![1.0, 1.0]);
}

/// A vanilla RNN over 50 steps: loop-carried hidden state, input selected by the step index.
#[differentiable]
fn rnn(
    w: &Tensor<f64>,
    u: &Tensor<f64>,
    b: &Tensor<f64>,
    #[nodiff] xs: &Tensor<f64>,
) -> Tensor<f64> {
    let steps = xs.shape()[0];
    let batch = xs.shape()[1];
    let mut h = Tensor::zeros(&[batch, w.shape()[0]]);
    for t in 0..steps {
        let x_t = xs
            .shrink(&[(t, t + 1), (0, batch), (0, xs.shape()[2])])
            .squeeze(0);
        h = (h.matmul(&w.t()) + x_t.matmul(&u.t()) + b).tanh();
    }
    (&h * &h).sum()
}

#[test]
fn rnn_over_fifty_steps() {
    let w = Tensor::<f64>::rand_uniform(&[4, 4], -0.5, 0.5, 1);
    let u = Tensor::<f64>::rand_uniform(&[4, 3], -0.5, 0.5, 2);
    let b = Tensor::<f64>::rand_uniform(&[4], -0.1, 0.1, 3);
    let xs = Tensor::<f64>::rand_uniform(&[50, 2, 3], -1.0, 1.0, 4);
    fd_check(
        |a| rnn(&a[0], &a[1], &a[2], &xs),
        |a, t| rnn_jvp(&a[0], &a[1], &a[2], &xs, &t[0], &t[1], &t[2]).1,
        |a, g| {
            let (_, (gw, gu, gb)) = rnn_vjp(&a[0], &a[1], &a[2], &xs, g);
            vec![gw, gu, gb]
        },
        &[w, u, b],
    );
}

/// A recurrence over a differentiated sequence, each step reading a window of two rows of it:
/// every row's gradient gathers from two steps, added in place into the sequence's gradient
/// (`shrink`'s `vjp_into`) after the first.
#[differentiable]
fn windowed_recurrence<T: Element>(xs: &Tensor<T>, w: &Tensor<T>) -> Tensor<T> {
    let (steps, width) = (xs.shape()[0], xs.shape()[1]);
    let mut h = Tensor::zeros(&[width]);
    for t in 0..steps - 1 {
        let window = xs.shrink(&[(t, t + 2), (0, width)]);
        h = (h.matmul(w) + window.sum_axes(&[0], false)).tanh();
    }
    (&h * &h).sum()
}

#[test]
fn a_recurrence_over_windows_of_a_differentiated_sequence() {
    let xs = Tensor::<f64>::rand_uniform(&[12, 5], -1.0, 1.0, 21);
    let w = Tensor::<f64>::rand_uniform(&[5, 5], -0.5, 0.5, 22);
    check_variants!(
        windowed_recurrence, windowed_recurrence_value_and_grad, windowed_recurrence_grad,
        windowed_recurrence_vjp, windowed_recurrence_jvp, windowed_recurrence_pullback;
        [xs, w]; (&xs, &w)
    );
    // f32 follows f64 to f32's precision.
    let (gx, gw) = windowed_recurrence_grad(&xs, &w);
    let (gx32, gw32) = windowed_recurrence_grad(&xs.cast::<f32>(), &w.cast::<f32>());
    for (a, b) in [(gx32, gx), (gw32, gw)] {
        let (a, b) = (a.to_vec(), b.to_vec());
        assert_eq!(a.len(), b.len());
        for (a, b) in a.iter().zip(&b) {
            assert!((f64::from(*a) - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
}

/// Halves until the sum drops below a threshold: the trip count depends on the data.
#[differentiable]
fn halve_until_small(x: &Tensor<f64>) -> Tensor<f64> {
    let mut y = x.clone();
    let mut steps = 0;
    while y.sum().item() > 1.0 {
        y *= 0.5;
        steps += 1;
    }
    let _ = steps;
    y.sum()
}

#[test]
fn while_with_a_data_dependent_trip_count() {
    // sum = 10 needs 4 halvings (10 → 0.625): gradient 1/16 everywhere.
    let x = Tensor::from_vec(vec![4.0, 6.0], &[2]);
    assert_eq!(halve_until_small(&x).item(), 0.625);
    assert_eq!(halve_until_small_grad(&x).to_vec(), vec![0.0625, 0.0625]);
    let (_, t) = halve_until_small_jvp(&x, &Tensor::ones(&[2]));
    assert_eq!(t.item(), 0.125);
    let small = Tensor::from_vec(vec![0.2, 0.3], &[2]);
    assert_eq!(halve_until_small_grad(&small).to_vec(), vec![1.0, 1.0]);
}

#[differentiable]
fn skip_and_stop(x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    let mut acc = x * 0.0;
    for i in 0..n {
        if i % 2 == 1 {
            continue;
        }
        if i >= 6 {
            break;
        }
        acc += x.powf(i as f64);
    }
    acc.sum()
}

#[test]
fn break_and_continue() {
    // i = 0, 2, 4 contribute x^0 + x^2 + x^4: derivative 2x + 4x^3.
    let x = Tensor::from_vec(vec![0.5, 1.5], &[2]);
    let g = skip_and_stop_grad(&x, 10);
    for (gi, xi) in g.to_vec().iter().zip(x.to_vec()) {
        assert!((gi - (2.0 * xi + 4.0 * xi.powi(3))).abs() < 1e-12);
    }
    fd_check(
        |a| skip_and_stop(&a[0], 10),
        |a, t| skip_and_stop_jvp(&a[0], 10, &t[0]).1,
        |a, g| vec![skip_and_stop_vjp(&a[0], 10, g).1],
        &[x],
    );
}

#[differentiable]
fn nested(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let mut acc = x.clone();
    for i in 0..3 {
        for j in 0..i + 1 {
            acc = acc * y + (j as f64);
        }
        acc = acc.sin();
    }
    acc.sum()
}

#[test]
fn nested_loops() {
    let x = Tensor::from_vec(vec![0.2, -0.4], &[2]);
    let y = Tensor::from_vec(vec![0.9, 1.1], &[2]);
    fd_check(
        |a| nested(&a[0], &a[1]),
        |a, t| nested_jvp(&a[0], &a[1], &t[0], &t[1]).1,
        |a, g| {
            let (_, (gx, gy)) = nested_vjp(&a[0], &a[1], g);
            vec![gx, gy]
        },
        &[x, y],
    );
}

#[differentiable]
fn early_exit(x: &Tensor<f64>, #[nodiff] limit: f64) -> Tensor<f64> {
    let mut y = x.clone();
    for _ in 0..5 {
        if y.sum().item() > limit {
            return y * 10.0;
        }
        y *= 2.0;
    }
    y
}

#[test]
fn early_return() {
    let x = Tensor::from_vec(vec![1.0, 1.0], &[2]);
    // 2 → 4 → 8 > 5: returns 10 · 4x, gradient 40 per element.
    let ct = Tensor::ones(&[2]);
    let (v, g) = early_exit_vjp(&x, 5.0, &ct);
    assert_eq!(early_exit(&x, 5.0).to_vec(), vec![40.0, 40.0]);
    assert_eq!(v.to_vec(), vec![40.0, 40.0]);
    assert_eq!(g.to_vec(), vec![40.0, 40.0]);
    // Never above the limit: 2^5 x.
    let (v, g) = early_exit_vjp(&x, 1e9, &ct);
    assert_eq!(v.to_vec(), vec![32.0, 32.0]);
    assert_eq!(g.to_vec(), vec![32.0, 32.0]);
    let (_, t) = early_exit_jvp(&x, 5.0, &ct);
    assert_eq!(t.to_vec(), vec![40.0, 40.0]);
}

#[differentiable]
fn long_chain(x: &Tensor<f64>, #[nodiff] steps: usize) -> Tensor<f64> {
    let mut y = x.clone();
    for _ in 0..steps {
        y = y * 0.9999 + 0.0001;
    }
    y.sum()
}

#[test]
fn ten_thousand_steps_without_stack_overflow() {
    let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    let g = long_chain_grad(&x, 10_000);
    assert!(long_chain(&x, 10_000).item().is_finite());
    let expected = 0.9999f64.powi(10_000);
    for gi in g.to_vec() {
        assert!((gi - expected).abs() < 1e-12, "{gi} vs {expected}");
    }
}

/// A gated stack of layers held in a `Vec` field.
#[derive(Clone, Differentiable)]
struct Gated {
    layers: Vec<Tensor<f64>>,
    out: Tensor<f64>,
}

impl Gated {
    /// Three early exits in a loop over a `Vec` field, the values of one stretch between exits
    /// (`pre`, `scaled`) read in a later one.
    #[differentiable]
    fn forward(
        &self,
        x: &Tensor<f64>,
        #[nodiff] skip: usize,
        #[nodiff] stop: usize,
    ) -> Tensor<f64> {
        let mut h = x * 1.0;
        for (i, w) in self.layers.iter().enumerate() {
            let pre = h.matmul(w);
            if i == skip {
                continue;
            }
            let act = pre.tanh();
            if i == stop {
                h = &act + &h;
                break;
            }
            let scaled = &act * 0.5;
            if i == 7 {
                return scaled.sum();
            }
            h = &scaled + &pre.sin();
        }
        h.matmul(&self.out).sum()
    }
}

#[differentiable]
fn gated_loss(
    model: &Gated,
    x: &Tensor<f64>,
    #[nodiff] skip: usize,
    #[nodiff] stop: usize,
) -> Tensor<f64> {
    model.forward(x, skip, stop) * 0.5
}

#[test]
fn early_exits_in_a_method_loop_over_a_vec_field() {
    let model = Gated {
        layers: (0..9)
            .map(|i| Tensor::rand_normal(&[3, 3], 0.0, 0.4, 10 + i))
            .collect(),
        out: Tensor::rand_normal(&[3, 1], 0.0, 1.0, 3),
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 4);
    // Every exit taken: none, `continue` alone, `continue` then `break`, `return` at layer 7.
    for (skip, stop) in [(100, 100), (1, 100), (0, 2), (3, 100)] {
        check_variants!(
            gated_loss, gated_loss_value_and_grad, gated_loss_grad, gated_loss_vjp,
            gated_loss_jvp, gated_loss_pullback;
            [model, x];
            (&model, &x, skip, stop)
        );
    }
}

/// An activation chosen per layer: a `#[nodiff]` field that is an enum.
#[derive(Clone, Copy, Debug)]
enum Activation {
    Tanh,
    Relu,
    /// A leaky ReLU with its slope.
    Leaky(f64),
    None,
}

#[derive(Clone, Differentiable)]
struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
    #[nodiff]
    act: Activation,
}

#[derive(Clone, Differentiable)]
struct Stack {
    layers: Vec<Dense>,
}

impl Stack {
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let z = h.matmul(&layer.w) + &layer.b;
            h = match layer.act {
                Activation::Tanh => z.tanh(),
                Activation::Relu => z.relu(),
                Activation::Leaky(slope) => where_cond(&z.gt(0.0), &z, &(&z * slope)),
                Activation::None => z,
            };
        }
        h
    }
}

#[differentiable]
fn stack_loss(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let first = match model.layers[0].act {
        Activation::None => 1.0,
        _ => 2.0,
    };
    (model.forward(x) * first).square().mean()
}

#[test]
fn a_match_on_a_nodiff_enum_field_picks_each_layers_activation() {
    let acts = [
        Activation::Tanh,
        Activation::Leaky(0.1),
        Activation::Relu,
        Activation::None,
    ];
    let dims = [3, 4, 4, 3, 2];
    let model = Stack {
        layers: (0..4)
            .map(|i| Dense {
                w: Tensor::rand_normal(&[dims[i], dims[i + 1]], 0.0, 0.7, 40 + i as u64),
                b: Tensor::rand_normal(&[dims[i + 1]], 0.0, 0.3, 50 + i as u64),
                act: acts[i],
            })
            .collect(),
    };
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 7);
    check_variants!(
        stack_loss, stack_loss_value_and_grad, stack_loss_grad, stack_loss_vjp,
        stack_loss_jvp, stack_loss_pullback;
        [model];
        (&model, &x)
    );
    // The value by hand, layer by layer.
    let mut h = x.clone();
    for layer in &model.layers {
        let z = h.matmul(&layer.w) + &layer.b;
        h = match layer.act {
            Activation::Tanh => z.tanh(),
            Activation::Relu => z.relu(),
            Activation::Leaky(s) => z.maximum(&(&z * s)),
            Activation::None => z,
        };
    }
    let want = (h * 2.0).square().mean().item();
    assert!((stack_loss(&model, &x).item() - want).abs() < 1e-12);
}

/// A tensor declared first and given in each arm (`let h;`), in a loop over layers (as users
/// write it, though clippy prefers `let z = match ..`).
#[allow(clippy::needless_late_init)]
#[differentiable]
fn late_bound(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for layer in &model.layers {
        let z;
        match layer.act {
            Activation::Tanh => z = h.matmul(&layer.w).tanh(),
            _ => z = h.matmul(&layer.w) + &layer.b,
        }
        h = z;
    }
    h.square().sum()
}

#[test]
fn a_tensor_assigned_after_its_let_in_each_arm() {
    let acts = [Activation::Tanh, Activation::Relu, Activation::Tanh];
    let dims = [3, 4, 4, 2];
    let model = Stack {
        layers: (0..3)
            .map(|i| Dense {
                w: Tensor::rand_normal(&[dims[i], dims[i + 1]], 0.0, 0.7, 60 + i as u64),
                b: Tensor::rand_normal(&[dims[i + 1]], 0.0, 0.3, 70 + i as u64),
                act: acts[i],
            })
            .collect(),
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 8);
    check_variants!(
        late_bound, late_bound_value_and_grad, late_bound_grad, late_bound_vjp,
        late_bound_jvp, late_bound_pullback;
        [model];
        (&model, &x)
    );
}

/// Block statements that update a differentiated variable declared before them: one followed by
/// `;`, one without, and one shadowing a name inside (the inner `y` ends with its block).
#[differentiable]
fn block_statements(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    let mut total = (x * w).sum();
    let y = x * 2.0;
    {
        let y = w * 3.0;
        let updated = &total + (&y * x).sum();
        total = updated;
    };
    {
        total += (&y * w).sum();
    }
    total * &y.sum()
}

#[test]
fn block_statements_update_what_they_assign() {
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 81);
    let w = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 82);
    check_variants!(
        block_statements, block_statements_value_and_grad, block_statements_grad,
        block_statements_vjp, block_statements_jvp, block_statements_pullback;
        [x, w];
        (&x, &w)
    );
    // By hand: total = Σxw + 3Σwx + 2Σxw = 6Σxw, times s = 2Σx: ∂/∂w = 12 x Σx.
    let (_, (_, gw)) = block_statements_value_and_grad(&x, &w);
    let sx: f64 = x.to_vec().iter().sum();
    for (g, xi) in gw.to_vec().iter().zip(x.to_vec()) {
        assert!((g - 12.0 * xi * sx).abs() <= 1e-12 * (12.0 * xi * sx).abs().max(1.0));
    }
}

/// A body that ends in a `loop` left by `return` once a value crosses a threshold (a fixed
/// point iteration, a search): the loop is run as a statement and its `return` ends the function.
#[differentiable]
fn grow_until(w: &Tensor<f64>) -> Tensor<f64> {
    let mut x = w.clone();
    loop {
        x = x.sin() * 2.0 + w * 0.1;
        let total = x.sum().item();
        if total.abs() > 1.0 {
            return (&x * &x).sum();
        }
    }
}

/// The same on numbers: three steps of `x ← 1.5 x + 0.1`, then `x²`.
#[differentiable]
fn three_steps(w: f64) -> f64 {
    let mut x = w;
    let mut k = 0;
    loop {
        x = x * 1.5 + 0.1;
        k += 1;
        if k == 3 {
            return x * x;
        }
    }
}

#[test]
fn a_body_ending_in_a_loop_left_by_return() {
    let w = Tensor::from_vec(vec![0.3, 0.2], &[2]);
    check_variants!(
        grow_until,
        grow_until_value_and_grad,
        grow_until_grad,
        grow_until_vjp,
        grow_until_jvp,
        grow_until_pullback;
        [w];
        (&w)
    );
    // By hand: x₃ = 1.5³ w + 0.1 (1.5² + 1.5 + 1), d(x₃²)/dw = 2 x₃ 1.5³.
    let x3 = 3.375 * 0.5 + 0.1 * (2.25 + 1.5 + 1.0);
    let (value, grad) = three_steps_value_and_grad(0.5);
    assert!((value - x3 * x3).abs() < 1e-12);
    assert!((grad - 2.0 * x3 * 3.375).abs() < 1e-12);
}
