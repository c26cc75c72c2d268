//! `f_hvp` of a function taking a model structure generic over its element type: the derive
//! seeds the structure with a direction on dual numbers and splits the gradient back, so the
//! Hessian of a loss in the model's parameters, times a direction of the same structure, comes
//! in one call (Newton–CG on a model). Checked against central differences of `f_grad`, for
//! symmetry, with nested structures and constant fields, and in `f32`.

use rune_ad::prelude::*;

/// One dense layer.
#[derive(Clone, Differentiable)]
pub struct Dense<T: Element> {
    w: Tensor<T>,
    b: Tensor<T>,
}

/// Two layers, an output scale held constant and a name.
#[derive(Clone, Differentiable)]
pub struct Mlp<T: Element> {
    hidden: Dense<T>,
    out: Tensor<T>,
    #[nodiff]
    scale: Tensor<T>,
    #[nodiff]
    name: String,
}

impl<T: Element> Dense<T> {
    #[differentiable]
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        (x.matmul(&self.w) + &self.b).tanh()
    }
}

#[differentiable]
fn loss<T: Element>(model: &Mlp<T>, #[nodiff] x: &Tensor<T>, #[nodiff] y: &Tensor<T>) -> Tensor<T> {
    let h = model.hidden.forward(x);
    let d = h.matmul(&model.out) * &model.scale - y;
    (&d * &d).mean()
}

/// The same loss with a tensor beside the model: both get directions.
#[differentiable]
fn shifted_loss<T: Element>(
    model: &Mlp<T>,
    shift: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
) -> Tensor<T> {
    let h = model.hidden.forward(&(x + shift));
    h.matmul(&model.out).sin().sum()
}

fn model(seed: u64) -> Mlp<f64> {
    Mlp {
        hidden: Dense {
            w: Tensor::rand_normal(&[3, 4], 0.0, 0.6, seed),
            b: Tensor::rand_normal(&[4], 0.0, 0.3, seed + 1),
        },
        out: Tensor::rand_normal(&[4, 2], 0.0, 0.6, seed + 2),
        scale: Tensor::from_vec(vec![1.5, 0.5], &[2]),
        name: "mlp".to_owned(),
    }
}

/// A random direction of the model's shape.
fn direction(like: &Mlp<f64>, seed: u64) -> Mlp<f64> {
    let mut v = like.zeros_like();
    for (i, leaf) in v.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, seed + i as u64);
    }
    v
}

fn flat(m: &Mlp<f64>) -> Vec<f64> {
    m.leaves().iter().flat_map(|l| l.to_vec()).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_models_hessian_times_a_direction() {
    let m = model(1);
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 7);
    let y = Tensor::rand_normal(&[5, 2], 0.0, 1.0, 8);
    let (u, v) = (direction(&m, 20), direction(&m, 30));
    let (g, hv) = loss_hvp(&m, &x, &y, &v);
    let (_, hu) = loss_hvp(&m, &x, &y, &u);
    // The gradient part is the gradient, to rounding.
    for (a, b) in flat(&g).iter().zip(flat(&loss_grad(&m, &x, &y))) {
        assert!((a - b).abs() < 1e-14, "{a} against {b}");
    }
    // H v against central differences of the gradient along v.
    let eps = 1e-5;
    let step = |s: f64| {
        let mut moved = m.clone();
        moved.axpy(s, &v);
        flat(&loss_grad(&moved, &x, &y))
    };
    let (plus, minus) = (step(eps), step(-eps));
    for (i, h) in flat(&hv).iter().enumerate() {
        let fd = (plus[i] - minus[i]) / (2.0 * eps);
        assert!(
            (h - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "leaf element {i}: {h} against {fd}"
        );
    }
    // Symmetry: ⟨u, H v⟩ = ⟨v, H u⟩.
    let (uhv, vhu) = (dot(&flat(&u), &flat(&hv)), dot(&flat(&v), &flat(&hu)));
    assert!(
        (uhv - vhu).abs() < 1e-10 * uhv.abs().max(1.0),
        "{uhv} against {vhu}"
    );
    // Constant fields come back as the model's.
    assert_eq!(hv.name, "mlp");
    assert_eq!(hv.scale.to_vec(), [1.5, 0.5]);
}

#[test]
fn a_model_and_a_tensor_together_and_in_f32() {
    let m = model(3);
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 9);
    let shift = Tensor::rand_normal(&[3], 0.0, 0.5, 10);
    let (v, dv) = (direction(&m, 40), Tensor::rand_normal(&[3], 0.0, 1.0, 11));
    let ((_, _), (hv, hs)) = shifted_loss_hvp(&m, &shift, &x, &v, &dv);
    let eps = 1e-5;
    let step = |s: f64| {
        let mut moved = m.clone();
        moved.axpy(s, &v);
        let (gm, gs) = shifted_loss_grad(&moved, &(&shift + &(&dv * s)), &x);
        let mut all = flat(&gm);
        all.extend(gs.to_vec());
        all
    };
    let (plus, minus) = (step(eps), step(-eps));
    let mut got = flat(&hv);
    got.extend(hs.to_vec());
    for (i, h) in got.iter().enumerate() {
        let fd = (plus[i] - minus[i]) / (2.0 * eps);
        assert!(
            (h - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "element {i}: {h} against {fd}"
        );
    }
    // The same function on f32 agrees with the f64 products to f32 precision.
    let cast = |m: &Mlp<f64>| Mlp {
        hidden: Dense {
            w: m.hidden.w.cast::<f32>(),
            b: m.hidden.b.cast::<f32>(),
        },
        out: m.out.cast::<f32>(),
        scale: m.scale.cast::<f32>(),
        name: m.name.clone(),
    };
    let ((_, _), (hv32, _)) = shifted_loss_hvp(
        &cast(&m),
        &shift.cast::<f32>(),
        &x.cast::<f32>(),
        &cast(&v),
        &dv.cast::<f32>(),
    );
    let got32: Vec<f64> = hv32
        .leaves()
        .iter()
        .flat_map(|l| l.to_vec())
        .map(f64::from)
        .collect();
    for (a, b) in got32.iter().zip(flat(&hv)) {
        assert!((a - b).abs() < 1e-4 * b.abs().max(1.0), "{a} against {b}");
    }
}

/// Layers in a `Vec`, the way deeper models hold them.
#[derive(Clone, Differentiable)]
pub struct Deep<T: Element> {
    layers: Vec<Dense<T>>,
    head: Tensor<T>,
}

#[differentiable]
fn deep_loss<T: Element>(model: &Deep<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    let mut h = x.clone();
    for layer in &model.layers {
        h = layer.forward(&h);
    }
    h.matmul(&model.head).square().mean()
}

#[test]
fn a_vec_of_layers_has_its_hessian_times_a_direction() {
    let layer = |seed: u64| Dense {
        w: Tensor::rand_normal(&[3, 3], 0.0, 0.6, seed),
        b: Tensor::rand_normal(&[3], 0.0, 0.3, seed + 1),
    };
    let m = Deep {
        layers: vec![layer(50), layer(52), layer(54)],
        head: Tensor::rand_normal(&[3, 1], 0.0, 0.6, 56),
    };
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 57);
    let mut v = m.zeros_like();
    for (i, leaf) in v.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, 60 + i as u64);
    }
    let (_, hv) = deep_loss_hvp(&m, &x, &v);
    let eps = 1e-5;
    let step = |s: f64| {
        let mut moved = m.clone();
        moved.axpy(s, &v);
        let g = deep_loss_grad(&moved, &x);
        g.leaves()
            .iter()
            .flat_map(|l| l.to_vec())
            .collect::<Vec<f64>>()
    };
    let (plus, minus) = (step(eps), step(-eps));
    let got: Vec<f64> = hv.leaves().iter().flat_map(|l| l.to_vec()).collect();
    assert_eq!(got.len(), plus.len());
    for (i, h) in got.iter().enumerate() {
        let fd = (plus[i] - minus[i]) / (2.0 * eps);
        assert!(
            (h - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "element {i}: {h} against {fd}"
        );
    }
}

/// A structure whose `Option` field `f_hvp` cannot seed: its functions still compile and
/// differentiate (their `f_hvp` carries what it needs as bounds, so only a call of it fails).
#[derive(Clone, Differentiable)]
pub struct MaybeBiased<T: Element> {
    w: Tensor<T>,
    b: Option<Tensor<T>>,
}

#[differentiable]
fn maybe_biased<T: Element>(m: &MaybeBiased<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    x.matmul(&m.w).square().sum()
}

#[test]
fn a_structure_without_dual_seeding_still_differentiates() {
    let m = MaybeBiased {
        w: Tensor::from_vec(vec![1.0, 2.0], &[2, 1]),
        b: None,
    };
    let x = Tensor::from_vec(vec![3.0, 4.0], &[1, 2]);
    // d/dw (x w)² = 2 (x w) x = 2 · 11 · (3, 4).
    assert_eq!(maybe_biased_grad(&m, &x).w.to_vec(), [66.0, 88.0]);
}
