//! Iterator adaptors that choose elements by what they are (`filter`, `take_while`,
//! `skip_while`, `find`, `min_by`, `max_by`), join sequences (`chain`), cut them (`windows`,
//! `chunks`), flatten them (`flat_map`, `flatten`), and read one element (`last`, `nth`,
//! `next`, `first` with `.unwrap()`), in small models and programs written as users write them.
//! Every variant is checked against finite differences and the dot-product test
//! (`check_variants!`), the values against the same loops written by hand with indices, and the
//! functions of numbers against derivatives worked out by hand.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

#[derive(Clone, Differentiable)]
struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

impl Dense {
    #[differentiable]
    fn apply(&self, h: &Tensor<f64>) -> Tensor<f64> {
        (h.matmul(&self.w) + &self.b).tanh()
    }
}

#[derive(Clone, Differentiable)]
struct Stack {
    encoder: Vec<Dense>,
    decoder: Vec<Dense>,
}

/// A stack run through the layers `keep` switches on (encoder then decoder), with penalties
/// that pick layers by a constant cost, by their position and by their values.
#[differentiable]
fn stack_loss(
    model: &Stack,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] keep: &[bool],
    #[nodiff] costs: &[f64],
) -> Tensor<f64> {
    let mut h = x.clone();
    for (layer, _) in model
        .encoder
        .iter()
        .chain(model.decoder.iter())
        .zip(keep)
        .filter(|(_, on)| **on)
    {
        h = layer.apply(&h);
    }
    // Smoothness between neighbouring encoder layers, and pairs of decoder biases.
    let smooth: Tensor<f64> = model
        .encoder
        .windows(2)
        .map(|pair| (&pair[1].w - &pair[0].w).square().sum())
        .sum();
    let mut pairs = Tensor::scalar(0.0);
    for chunk in model.decoder.chunks(2) {
        pairs += chunk[0].b.sum() * chunk[chunk.len() - 1].b.sum();
    }
    // The cheapest encoder layer, the ones before the first costly one, and the ones after.
    let (cheapest, _) = model
        .encoder
        .iter()
        .zip(costs)
        .min_by(|a, b| a.1.partial_cmp(b.1).unwrap())
        .unwrap();
    let cheap_prefix: Tensor<f64> = model
        .encoder
        .iter()
        .zip(costs)
        .take_while(|(_, c)| **c < 2.0)
        .map(|(l, _)| l.b.square().sum())
        .sum();
    let costly_rest: Tensor<f64> = model
        .encoder
        .iter()
        .zip(costs)
        .skip_while(|(_, c)| **c < 2.0)
        .map(|(l, _)| l.w.abs().sum())
        .sum();
    // The last decoder layer, the second encoder layer from the end, and the first decoder
    // layer whose bias sums to more than zero.
    let head = model.decoder.last().unwrap();
    let second_last = model
        .encoder
        .iter()
        .rev()
        .nth(1)
        .expect("two encoder layers");
    let positive = model
        .decoder
        .iter()
        .find(|l| l.b.sum().item() > 0.0)
        .unwrap();
    h.square().mean()
        + smooth * 0.1
        + pairs * 0.01
        + cheapest.w.square().sum() * 0.05
        + cheap_prefix * 0.2
        + costly_rest * 0.03
        + head.b.sum() * 0.5
        + second_last.w.sum() * 0.07
        + positive.b.square().sum()
}

fn dense(rows: usize, cols: usize, seed: u64) -> Dense {
    Dense {
        w: Tensor::rand_normal(&[rows, cols], 0.0, 0.5, seed),
        b: Tensor::rand_normal(&[cols], 0.0, 0.4, seed + 100),
    }
}

#[test]
fn a_stack_chosen_by_flags_costs_positions_and_values() {
    let model = Stack {
        encoder: (0..4).map(|i| dense(3, 3, 10 + i)).collect(),
        decoder: (0..3).map(|i| dense(3, 3, 20 + i)).collect(),
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 3);
    let keep = [true, false, true, true, false, true, true];
    let costs = [1.5, 0.5, 3.0, 0.25];
    check_variants!(
        stack_loss, stack_loss_value_and_grad, stack_loss_grad, stack_loss_vjp,
        stack_loss_jvp, stack_loss_pullback;
        [model];
        (&model, &x, &keep, &costs)
    );

    // The same by hand, with indices.
    let all: Vec<&Dense> = model.encoder.iter().chain(&model.decoder).collect();
    let mut h = x.clone();
    for i in 0..7 {
        if keep[i] {
            h = all[i].apply(&h);
        }
    }
    let e = &model.encoder;
    let d = &model.decoder;
    let mut smooth = 0.0;
    for i in 0..3 {
        smooth += (&e[i + 1].w - &e[i].w).square().sum().item();
    }
    let pairs = d[0].b.sum().item() * d[1].b.sum().item() + d[2].b.sum().item().powi(2);
    // Costs 1.5, 0.5, 3.0, 0.25: the cheapest is layer 3, the prefix below 2.0 layers 0 and 1.
    let cheapest = e[3].w.square().sum().item();
    let cheap_prefix = e[0].b.square().sum().item() + e[1].b.square().sum().item();
    let costly_rest = e[2].w.abs().sum().item() + e[3].w.abs().sum().item();
    let first_positive = (0..3).find(|&i| d[i].b.sum().item() > 0.0).unwrap();
    let want = h.square().mean().item()
        + smooth * 0.1
        + pairs * 0.01
        + cheapest * 0.05
        + cheap_prefix * 0.2
        + costly_rest * 0.03
        + d[2].b.sum().item() * 0.5
        + e[2].w.sum().item() * 0.07
        + d[first_positive].b.square().sum().item();
    let got = stack_loss(&model, &x, &keep, &costs).item();
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

#[derive(Clone, Differentiable)]
struct Groups {
    groups: Vec<Vec<Tensor<f64>>>,
    scales: Vec<Tensor<f64>>,
}

/// Parameters held in groups, walked flat: a weight decay over all of them, a loop that stops
/// at the first large one, each scaled by its group's scale, and a product (`map(..).flatten()`
/// as some write `flat_map`).
#[allow(clippy::map_flatten)]
#[differentiable]
fn grouped_loss(p: &Groups, #[nodiff] x: &Tensor<f64>, #[nodiff] limit: f64) -> Tensor<f64> {
    let decay: Tensor<f64> = p
        .groups
        .iter()
        .flat_map(|g| g.iter())
        .map(|w| w.square().sum())
        .sum();
    let mut fit = Tensor::scalar(0.0);
    for (k, w) in p.groups.iter().flatten().enumerate() {
        if w.sum().item() > limit {
            break;
        }
        if k % 2 == 1 {
            continue;
        }
        fit += (w * x).sum().sin();
    }
    let scaled: Vec<Tensor<f64>> = p
        .groups
        .iter()
        .zip(&p.scales)
        .flat_map(|(g, s)| g.iter().map(move |w| w * s))
        .collect();
    let weighted = p
        .groups
        .iter()
        .map(|g| g.iter())
        .flatten()
        .fold(Tensor::scalar(1.0), |acc, w| acc * w.mean().cos());
    decay * 0.1 + fit + scaled[0].sum() + scaled[scaled.len() - 1].sum() * 2.0 + weighted
}

#[test]
fn groups_of_parameters_walked_flat() {
    let t = |seed: u64| Tensor::rand_normal(&[3], 0.0, 0.5, seed);
    let p = Groups {
        groups: vec![vec![t(1), t(2), t(3)], vec![], vec![t(4), t(5)]],
        scales: vec![t(6), t(7), t(8)],
    };
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 9);
    let flat: Vec<&Tensor<f64>> = p.groups.iter().flatten().collect();
    // A limit that stops the loop partway (at the first sum above it), and one that does not.
    let sums: Vec<f64> = flat.iter().map(|w| w.sum().item()).collect();
    let stop = sums.iter().cloned().fold(f64::NEG_INFINITY, f64::max) - 1e-3;
    for limit in [stop, 1e9] {
        check_variants!(
            grouped_loss, grouped_loss_value_and_grad, grouped_loss_grad, grouped_loss_vjp,
            grouped_loss_jvp, grouped_loss_pullback;
            [p];
            (&p, &x, limit)
        );
        let decay: f64 = flat.iter().map(|w| w.square().sum().item()).sum();
        let mut fit = 0.0;
        for k in 0..flat.len() {
            if sums[k] > limit {
                break;
            }
            if k % 2 == 0 {
                fit += (flat[k] * &x).sum().item().sin();
            }
        }
        let first = (flat[0] * &p.scales[0]).sum().item();
        let last = (flat[4] * &p.scales[2]).sum().item() * 2.0;
        let weighted: f64 = flat.iter().map(|w| w.mean().item().cos()).product();
        let want = decay * 0.1 + fit + first + last + weighted;
        let got = grouped_loss(&p, &x, limit).item();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
}

/// A recurrence whose states are kept: the last one read out, and the states whose mean is
/// above zero penalised.
#[differentiable]
fn readout(w: &Tensor<f64>, #[nodiff] x0: &Tensor<f64>) -> Tensor<f64> {
    let mut states = Vec::new();
    let mut h = x0.clone();
    for _ in 0..6 {
        h = h.matmul(w).tanh();
        states.push(h.clone());
    }
    let last = states.last().unwrap();
    let first = states.first().unwrap();
    let positive: Tensor<f64> = states
        .iter()
        .filter(|s| s.mean().item() > 0.0)
        .map(|s| s.square().sum())
        .sum();
    let loudest = states
        .iter()
        .max_by_key(|s| (s.abs().sum().item() * 1e6) as i64)
        .unwrap();
    last.sum() + first.sum() * 0.5 + positive * 0.25 + loudest.sum() * 0.125
}

#[test]
fn the_last_state_and_states_chosen_by_value() {
    let w = Tensor::rand_normal(&[3, 3], 0.0, 0.8, 11);
    let x0 = Tensor::rand_normal(&[1, 3], 0.0, 1.0, 12);
    check_variants!(
        readout, readout_value_and_grad, readout_grad, readout_vjp, readout_jvp,
        readout_pullback;
        [w];
        (&w, &x0)
    );
    let mut states = Vec::new();
    let mut h = x0.clone();
    for _ in 0..6 {
        h = h.matmul(&w).tanh();
        states.push(h.clone());
    }
    let mut positive = 0.0;
    let mut loudest = 0;
    for i in 0..6 {
        if states[i].mean().item() > 0.0 {
            positive += states[i].square().sum().item();
        }
        if states[i].abs().sum().item() >= states[loudest].abs().sum().item() {
            loudest = i;
        }
    }
    let want = states[5].sum().item()
        + states[0].sum().item() * 0.5
        + positive * 0.25
        + states[loudest].sum().item() * 0.125;
    assert!((readout(&w, &x0).item() - want).abs() < 1e-12);
}

/// The squared length of a path through the points `x`, with a bonus for the positive ones,
/// products of pairs, the largest point and the last one.
#[differentiable]
fn path(x: [f64; 5]) -> f64 {
    let length: f64 = x.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
    let positive: f64 = x.iter().filter(|v| **v > 0.0).map(|v| v * v).sum();
    let pairs: f64 = x.chunks(2).map(|c| c[0] * c[c.len() - 1]).sum();
    let top = x.iter().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
    let last = x.last().unwrap();
    length + positive + pairs + top * 3.0 + last * 5.0
}

#[test]
fn a_path_through_numbers_by_windows_chunks_and_choices() {
    let x = [1.0, -2.0, 3.0, 0.5, 4.0];
    // length: (-3)² + 5² + (-2.5)² + 3.5² = 52.5; positive: 1 + 9 + 0.25 + 16 = 26.25;
    // pairs: 1·(-2) + 3·0.5 + 4·4 = 15.5; top 4 and last 4.
    let want = 52.5 + 26.25 + 15.5 + 12.0 + 20.0;
    let (v, g) = path_value_and_grad(x);
    assert!((v - want).abs() < 1e-12, "{v}");
    assert_eq!(path(x), v);
    // By hand: d length/dx_i = 2(x_i - x_{i-1}) - 2(x_{i+1} - x_i); positive: 2x_i where
    // x_i > 0; pairs: the other of the pair (x_4 with itself: 2x_4); top (x_4): 3; last: 5.
    let mut want_g = [0.0; 5];
    for i in 0..5 {
        if i > 0 {
            want_g[i] += 2.0 * (x[i] - x[i - 1]);
        }
        if i < 4 {
            want_g[i] -= 2.0 * (x[i + 1] - x[i]);
        }
        if x[i] > 0.0 {
            want_g[i] += 2.0 * x[i];
        }
    }
    want_g[0] += x[1];
    want_g[1] += x[0];
    want_g[2] += x[3];
    want_g[3] += x[2];
    want_g[4] += 2.0 * x[4] + 3.0 + 5.0;
    for i in 0..5 {
        assert!((g[i] - want_g[i]).abs() < 1e-12, "{g:?} vs {want_g:?}");
    }
    let u = [0.5, -1.0, 0.25, 2.0, -0.75];
    let (_, t) = path_jvp(x, &u);
    let inner: f64 = (0..5).map(|i| want_g[i] * u[i]).sum();
    assert!((t - inner).abs() < 1e-12, "{t} vs {inner}");
}

/// Triples of neighbours of a slice, numbered, and the first positive element.
#[differentiable]
fn triples(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, w) in x.windows(3).enumerate() {
        s += w[0] * w[2] * (i as f64 + 1.0);
    }
    let first = x.iter().find(|v| **v > 0.0).unwrap();
    s + first * first
}

#[test]
fn windows_of_a_slice_and_the_first_positive_element() {
    let x = vec![-1.0, 2.0, 3.0, 0.5, 4.0];
    // s = x0 x2 + 2 x1 x3 + 3 x2 x4 = -3 + 2 + 36; the first positive is x1 = 2.
    assert!((triples(&x) - (35.0 + 4.0)).abs() < 1e-12);
    let g = triples_grad(&x);
    let want = [
        x[2],
        2.0 * x[3] + 2.0 * x[1],
        x[0] + 3.0 * x[4],
        2.0 * x[1],
        3.0 * x[2],
    ];
    for i in 0..5 {
        assert!((g[i] - want[i]).abs() < 1e-12, "{g:?} vs {want:?}");
    }
}

/// Iterators bound with `let` before they are walked, one built on another.
#[differentiable]
fn named_iterators(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let layers = model.encoder.iter().chain(model.decoder.iter());
    let numbered = layers.enumerate();
    let mut h = x.clone();
    for (i, layer) in numbered {
        if i % 3 != 1 {
            h = layer.apply(&h);
        }
    }
    let biases = model.decoder.iter().map(|l| l.b.sum());
    let total: Tensor<f64> = biases.sum();
    let weights = model.encoder.iter().rev();
    let kept: Vec<Tensor<f64>> = weights.map(|l| l.w.mean()).collect();
    let last = model.encoder.iter().skip(1);
    let tail = last.last().unwrap();
    h.square().mean() + total + stack(&kept, 0).sum() * kept[0].clone() + tail.w.sum()
}

#[test]
fn iterators_bound_with_let() {
    let model = Stack {
        encoder: (0..3).map(|i| dense(3, 3, 40 + i)).collect(),
        decoder: (0..2).map(|i| dense(3, 3, 50 + i)).collect(),
    };
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 4);
    check_variants!(
        named_iterators, named_iterators_value_and_grad, named_iterators_grad,
        named_iterators_vjp, named_iterators_jvp, named_iterators_pullback;
        [model];
        (&model, &x)
    );
    let all: Vec<&Dense> = model.encoder.iter().chain(&model.decoder).collect();
    let mut h = x.clone();
    for i in [0, 2, 3] {
        h = all[i].apply(&h);
    }
    let e = &model.encoder;
    let total = model.decoder[0].b.sum().item() + model.decoder[1].b.sum().item();
    let means: f64 = e.iter().map(|l| l.w.mean().item()).sum();
    let want =
        h.square().mean().item() + total + means * e[2].w.mean().item() + e[2].w.sum().item();
    let got = named_iterators(&model, &x).item();
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}
