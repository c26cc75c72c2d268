//! Fused elementwise regions, end to end: small models whose elementwise chains the macro fuses,
//! each checked by `check_variants!` (every variant against finite differences, the dot-product
//! test) and written twice, fused and with `#[differentiable(fuse = false)]`, whose values agree
//! bit for bit and whose derivatives agree to a few ulps.

mod support;

use rune_ad::prelude::*;
use support::{check_variants, check_vector_variants};

/// Defines `$fused` with `#[differentiable]` and `$unfused` with
/// `#[differentiable(fuse = false)]`, both with the same signature and body.
macro_rules! both {
    ($(#[$attr:meta])* fn $fused:ident / $unfused:ident $(<$t:ident: Element>)? ($($params:tt)*) -> $ret:ty $body:block) => {
        $(#[$attr])*
        #[differentiable]
        fn $fused $(<$t: Element>)? ($($params)*) -> $ret $body
        $(#[$attr])*
        #[differentiable(fuse = false)]
        fn $unfused $(<$t: Element>)? ($($params)*) -> $ret $body
    };
}

/// `a` and `b` agree to `ulps` units in the last place of the larger magnitude (f64).
fn assert_ulps(what: &str, a: &Tensor<f64>, b: &Tensor<f64>, ulps: f64) {
    assert_eq!(a.shape(), b.shape(), "{what}: shapes");
    for (i, (x, y)) in a.to_vec().iter().zip(b.to_vec()).enumerate() {
        let scale = x.abs().max(y.abs()).max(f64::MIN_POSITIVE);
        assert!(
            (x - y).abs() <= ulps * f64::EPSILON * scale,
            "{what}[{i}]: {x} against {y}"
        );
    }
}

/// `a` and `b` agree to `ulps` units in the last place of `b`'s largest magnitude: for sums of
/// terms of both signs (a broadcast operand's cotangent), which fused and unfused code add in
/// different orders, so that an element that cancels to near zero differs by more ulps of its
/// own.
fn assert_ulps_normwise(what: &str, a: &Tensor<f64>, b: &Tensor<f64>, ulps: f64) {
    assert_eq!(a.shape(), b.shape(), "{what}: shapes");
    let scale = b
        .to_vec()
        .iter()
        .fold(f64::MIN_POSITIVE, |m, y| m.max(y.abs()));
    for (i, (x, y)) in a.to_vec().iter().zip(b.to_vec()).enumerate() {
        assert!(
            (x - y).abs() <= ulps * f64::EPSILON * scale,
            "{what}[{i}]: {x} against {y}"
        );
    }
}

fn assert_ulps_f32(what: &str, a: &Tensor<f32>, b: &Tensor<f32>, ulps: f32) {
    assert_eq!(a.shape(), b.shape(), "{what}: shapes");
    for (i, (x, y)) in a.to_vec().iter().zip(b.to_vec()).enumerate() {
        let scale = x.abs().max(y.abs()).max(f32::MIN_POSITIVE);
        assert!(
            (x - y).abs() <= ulps * f32::EPSILON * scale,
            "{what}[{i}]: {x} against {y}"
        );
    }
}

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[derive(Clone, Differentiable)]
struct Mlp {
    layers: Vec<Layer>,
}

impl Mlp {
    /// A gated layer stack: each layer's activation is a fused chain around a product.
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let z = h.matmul(&layer.w) + &layer.b;
            h = z.tanh() * 0.5 + z.sigmoid() * (1.0 - z.tanh() * 0.5);
        }
        h
    }

    #[differentiable(fuse = false)]
    fn forward_unfused(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let z = h.matmul(&layer.w) + &layer.b;
            h = z.tanh() * 0.5 + z.sigmoid() * (1.0 - z.tanh() * 0.5);
        }
        h
    }
}

#[differentiable]
fn mlp_loss(model: &Mlp, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let d = model.forward(x) - y;
    (&d * &d).mean()
}

#[differentiable(fuse = false)]
fn mlp_loss_unfused(
    model: &Mlp,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let d = model.forward_unfused(x) - y;
    (&d * &d).mean()
}

fn mlp() -> Mlp {
    Mlp {
        layers: (0..3)
            .map(|i| Layer {
                w: Tensor::rand_uniform(&[4, 4], -0.8, 0.8, 10 + i),
                b: Tensor::rand_uniform(&[4], -0.3, 0.3, 20 + i),
            })
            .collect(),
    }
}

#[test]
fn a_model_with_fused_activations_has_the_derivatives_of_its_unfused_twin() {
    let model = mlp();
    let x = Tensor::rand_normal(&[5, 4], 0.0, 1.0, 1);
    let y = Tensor::rand_normal(&[5, 4], 0.0, 0.5, 2);
    check_variants!(mlp_loss, mlp_loss_value_and_grad, mlp_loss_grad, mlp_loss_vjp, mlp_loss_jvp, mlp_loss_pullback; [model]; (&model, &x, &y));

    let (value, grad) = mlp_loss_value_and_grad(&model, &x, &y);
    let (value_u, grad_u) = mlp_loss_unfused_value_and_grad(&model, &x, &y);
    assert_eq!(value.to_vec(), value_u.to_vec());
    for (i, (g, gu)) in grad.layers.iter().zip(&grad_u.layers).enumerate() {
        assert_ulps(&format!("layers[{i}].w"), &g.w, &gu.w, 64.0);
        assert_ulps(&format!("layers[{i}].b"), &g.b, &gu.b, 64.0);
    }
    let tangent = Mlp {
        layers: (0..3)
            .map(|i| Layer {
                w: Tensor::rand_normal(&[4, 4], 0.0, 1.0, 30 + i),
                b: Tensor::rand_normal(&[4], 0.0, 1.0, 40 + i),
            })
            .collect(),
    };
    let (_, t) = mlp_loss_jvp(&model, &x, &y, &tangent);
    let (_, tu) = mlp_loss_unfused_jvp(&model, &x, &y, &tangent);
    assert_ulps("the tangent", &t, &tu, 64.0);
}

both! {
    /// A region with a broadcast row, a broadcast column, a 0-d tensor and literals.
    fn broadcasting / broadcasting_unfused(x: &Tensor<f64>, row: &Tensor<f64>, col: &Tensor<f64>, s: &Tensor<f64>) -> Tensor<f64> {
        let u = (x * row - col / 2.0).exp() * s + (-x).sigmoid();
        u.sum()
    }
}

#[test]
fn a_region_broadcasts_rows_columns_and_numbers_and_reduces_their_gradients() {
    let x = Tensor::rand_normal(&[3, 4], 0.0, 0.5, 3);
    let row = Tensor::rand_normal(&[4], 0.0, 0.5, 4);
    let col = Tensor::rand_normal(&[3, 1], 0.0, 0.5, 5);
    let s = Tensor::scalar(0.7);
    check_variants!(broadcasting, broadcasting_value_and_grad, broadcasting_grad, broadcasting_vjp, broadcasting_jvp, broadcasting_pullback; [x, row, col, s]; (&x, &row, &col, &s));

    // By hand: d/ds = sum(e), d/drow_j = sum_i x_ij e_ij s, d/dcol_i = -sum_j e_ij s / 2.
    let (_, (gx, grow, gcol, gs)) = broadcasting_value_and_grad(&x, &row, &col, &s);
    let (xv, rv, cv, s) = (x.to_vec(), row.to_vec(), col.to_vec(), s.item());
    let e = |i: usize, j: usize| (xv[i * 4 + j] * rv[j] - cv[i] / 2.0).exp();
    let want_s: f64 = (0..3)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .map(|(i, j)| e(i, j))
        .sum();
    assert_eq!(gs.shape(), &[] as &[usize]);
    assert!((gs.item() - want_s).abs() <= 1e-12 * want_s);
    for j in 0..4 {
        let want: f64 = (0..3).map(|i| xv[i * 4 + j] * e(i, j) * s).sum();
        assert!((grow.to_vec()[j] - want).abs() <= 1e-12 * want.abs().max(1.0));
    }
    for i in 0..3 {
        let want: f64 = -(0..4).map(|j| e(i, j) * s / 2.0).sum::<f64>();
        assert!((gcol.to_vec()[i] - want).abs() <= 1e-12 * want.abs().max(1.0));
    }
    assert_eq!(grow.shape(), &[4]);
    assert_eq!(gcol.shape(), &[3, 1]);

    let (gx_u, grow_u, gcol_u, gs_u) =
        broadcasting_unfused_grad(&x, &row, &col, &Tensor::scalar(s));
    assert_ulps("x", &gx, &gx_u, 16.0);
    assert_ulps("row", &grow, &grow_u, 16.0);
    assert_ulps("col", &gcol, &gcol_u, 16.0);
    assert_ulps("s", &gs, &gs_u, 16.0);
}

both! {
    /// An input read twice, a value read inside and outside a region, a constant tensor and a
    /// plain-number constant computed at run time.
    fn shared / shared_unfused(x: &Tensor<f64>, #[nodiff] c: &Tensor<f64>, #[nodiff] k: f64) -> Tensor<f64> {
        let a = x.exp();
        let b = &a * &a / (x * x + 1.0) - c * k;
        let d = a.sum() * 0.25;
        b.sum() + d
    }
}

#[test]
fn inputs_read_twice_and_values_read_outside_a_region_are_differentiated_once_each() {
    let x = Tensor::rand_normal(&[6], 0.0, 0.5, 6);
    let c = Tensor::rand_normal(&[6], 0.0, 1.0, 7);
    let k = 2.0_f64.sqrt();
    check_variants!(shared, shared_value_and_grad, shared_grad, shared_vjp, shared_jvp, shared_pullback; [x]; (&x, &c, k));
    // d/dx [e^{2x} / (x² + 1)] + e^x / 4.
    let g = shared_grad(&x, &c, k);
    for (gi, xi) in g.to_vec().iter().zip(x.to_vec()) {
        let q = xi * xi + 1.0;
        let want =
            (2.0 * (2.0 * xi).exp() * q - (2.0 * xi).exp() * 2.0 * xi) / (q * q) + xi.exp() / 4.0;
        assert!(
            (gi - want).abs() <= 1e-12 * want.abs(),
            "{gi} against {want}"
        );
    }
    assert_ulps("the gradient", &g, &shared_unfused_grad(&x, &c, k), 16.0);
}

#[derive(Clone, Differentiable)]
struct Shared {
    layers: Vec<Layer>,
}

impl Shared {
    /// Each layer's activation is one region in which `d` is read by three of its ops and `e`
    /// by two: each is computed once inside the region, and the backward pass sums their
    /// adjoints over their readers.
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>, #[nodiff] damped: bool) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let d = h.matmul(&layer.w) - &layer.b;
            let e = &d * 0.5;
            h = if damped {
                (&e * &d + e.sin() - d.tanh()).tanh()
            } else {
                d.sigmoid() * &d + e.exp() * e.cos()
            };
        }
        (&h * &h).mean()
    }

    #[differentiable(fuse = false)]
    fn forward_unfused(&self, x: &Tensor<f64>, #[nodiff] damped: bool) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let d = h.matmul(&layer.w) - &layer.b;
            let e = &d * 0.5;
            h = if damped {
                (&e * &d + e.sin() - d.tanh()).tanh()
            } else {
                d.sigmoid() * &d + e.exp() * e.cos()
            };
        }
        (&h * &h).mean()
    }
}

#[differentiable]
fn shared_loss(model: &Shared, #[nodiff] x: &Tensor<f64>, #[nodiff] damped: bool) -> Tensor<f64> {
    model.forward(x, damped)
}

#[test]
fn values_read_by_several_ops_of_a_region_in_a_loop_over_layers_are_differentiated_once() {
    let layer = |seed| Layer {
        w: Tensor::rand_normal(&[4, 4], 0.0, 0.6, seed),
        b: Tensor::rand_normal(&[4], 0.0, 0.3, seed + 1),
    };
    let model = Shared {
        layers: vec![layer(71), layer(73), layer(75)],
    };
    let x = Tensor::rand_normal(&[3, 4], 0.0, 1.0, 77);
    for damped in [true, false] {
        check_variants!(shared_loss, shared_loss_value_and_grad, shared_loss_grad, shared_loss_vjp, shared_loss_jvp, shared_loss_pullback; [model]; (&model, &x, damped));
        let (value, (grads, gx)) = model.forward_value_and_grad(&x, damped);
        let (value_u, (grads_u, gx_u)) = model.forward_unfused_value_and_grad(&x, damped);
        assert_eq!(value.item().to_bits(), value_u.item().to_bits());
        assert_ulps("x", &gx, &gx_u, 256.0);
        for (i, (g, g_u)) in grads.layers.iter().zip(&grads_u.layers).enumerate() {
            assert_ulps_normwise(&format!("w of layer {i}"), &g.w, &g_u.w, 256.0);
            assert_ulps_normwise(&format!("b of layer {i}"), &g.b, &g_u.b, 256.0);
        }
    }
}

both! {
    /// Regions inside a loop and inside the arms of a branch.
    fn iterate / iterate_unfused(x: &Tensor<f64>, #[nodiff] steps: usize, #[nodiff] damped: bool) -> Tensor<f64> {
        let mut h = x.clone();
        for _ in 0..steps {
            if damped {
                h = (h.sin() * 0.9 + 0.1).tanh();
            } else {
                h = h.cos() * h.exp() / 3.0;
            }
        }
        (&h * &h).sum()
    }
}

#[test]
fn regions_inside_loops_and_branches_replay_in_the_backward_pass() {
    let x = Tensor::rand_normal(&[2, 3], 0.0, 0.5, 8);
    for damped in [true, false] {
        check_variants!(iterate, iterate_value_and_grad, iterate_grad, iterate_vjp, iterate_jvp, iterate_pullback; [x]; (&x, 4, damped));
        assert_ulps(
            "the gradient",
            &iterate_grad(&x, 4, damped),
            &iterate_unfused_grad(&x, 4, damped),
            64.0,
        );
    }
}

both! {
    /// A generic region, run on f32, f64 and (through `f_hvp`) dual numbers.
    fn generic / generic_unfused<T: Element>(x: &Tensor<T>, w: &Tensor<T>) -> Tensor<T> {
        let y = (x * w).tanh() * x - (w.square() + 1.0).ln() * 0.5;
        y.sum()
    }
}

#[test]
fn a_generic_region_agrees_with_its_unfused_twin_in_f32_f64_and_hessian_vector_products() {
    let x = Tensor::rand_normal(&[7], 0.0, 1.0, 9);
    let w = Tensor::rand_normal(&[7], 0.0, 1.0, 10);
    check_variants!(generic, generic_value_and_grad, generic_grad, generic_vjp, generic_jvp, generic_pullback; [x, w]; (&x, &w));
    let (gx, gw) = generic_grad(&x, &w);
    let (gx_u, gw_u) = generic_unfused_grad(&x, &w);
    assert_ulps("x", &gx, &gx_u, 16.0);
    assert_ulps("w", &gw, &gw_u, 16.0);

    let (x32, w32) = (x.cast::<f32>(), w.cast::<f32>());
    assert_eq!(
        generic(&x32, &w32).to_vec(),
        generic_unfused(&x32, &w32).to_vec()
    );
    let (gx32, gw32) = generic_grad(&x32, &w32);
    let (gx32_u, gw32_u) = generic_unfused_grad(&x32, &w32);
    assert_ulps_f32("x in f32", &gx32, &gx32_u, 16.0);
    assert_ulps_f32("w in f32", &gw32, &gw32_u, 16.0);

    let (dx, dw) = (
        Tensor::rand_normal(&[7], 0.0, 1.0, 11),
        Tensor::rand_normal(&[7], 0.0, 1.0, 12),
    );
    let (_, (hx, hw)) = generic_hvp(&x, &w, &dx, &dw);
    let (_, (hx_u, hw_u)) = generic_unfused_hvp(&x, &w, &dx, &dw);
    assert_ulps("Hv for x", &hx, &hx_u, 64.0);
    assert_ulps("Hv for w", &hw, &hw_u, 64.0);
}

both! {
    /// A value of many elements: the VJP of a fused region for any cotangent.
    fn vector / vector_unfused(x: &Tensor<f64>, b: &Tensor<f64>) -> Tensor<f64> {
        (x.sqrt() + b).recip() * x.log1p() - x.abs() * 0.25
    }
}

#[test]
fn a_fused_region_of_many_elements_passes_the_vector_checks() {
    // Over more than one block of the fused loops.
    let x = Tensor::rand_uniform(&[10, 30], 0.5, 2.0, 13);
    let b = Tensor::rand_uniform(&[30], 0.5, 1.0, 14);
    check_vector_variants!(vector, vector_vjp, vector_jvp, vector_pullback; [x, b]; (&x, &b));
    let ct = Tensor::rand_normal(&[10, 30], 0.0, 1.0, 15);
    let (value, (gx, gb)) = vector_vjp(&x, &b, &ct);
    let (value_u, (gx_u, gb_u)) = vector_unfused_vjp(&x, &b, &ct);
    assert_eq!(value.to_vec(), value_u.to_vec());
    assert_ulps("x", &gx, &gx_u, 16.0);
    assert_ulps_normwise("b", &gb, &gb_u, 64.0);
}

#[differentiable]
fn mismatched(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    (x.exp() * y + 1.0).sum()
}

#[test]
#[should_panic(expected = "mul: shapes [2, 3] and [4] do not broadcast")]
fn a_shape_error_inside_a_region_names_the_op_and_the_shapes() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let y = Tensor::<f64>::zeros(&[4]);
    // The forward pass itself (`f_grad` would run the plain function first in the tests, which
    // check every variant's value against it).
    let _ = mismatched::fwd(&x, &y);
}

both! {
    /// W2's shape: a fused update and a fused term summed in every step, the sum ending its
    /// region, in a loop; and a mean of a region over a column broadcast against a row.
    fn stepped / stepped_unfused(x: &Tensor<f64>, col: &Tensor<f64>, #[nodiff] steps: usize) -> Tensor<f64> {
        let mut x = x.clone();
        let mut acc = Tensor::scalar(0.0);
        for _ in 0..steps {
            x = &x * 0.9 + 0.1 * x.tanh();
            acc += (x.sin() * x.exp() / (1.0 + &x * &x)).sum();
        }
        acc + (&x * col).exp().mean() * 2.0
    }
}

#[test]
fn a_reduction_ending_a_region_has_the_derivatives_of_its_unfused_twin() {
    let x = Tensor::rand_uniform(&[6], -1.0, 1.0, 31);
    let col = Tensor::rand_uniform(&[3, 1], -0.5, 0.5, 32);
    for steps in [0, 1, 5] {
        check_variants!(stepped, stepped_value_and_grad, stepped_grad, stepped_vjp, stepped_jvp, stepped_pullback; [x, col]; (&x, &col, steps));
        let (value, (gx, gcol)) = stepped_value_and_grad(&x, &col, steps);
        let (value_u, (gx_u, gcol_u)) = stepped_unfused_value_and_grad(&x, &col, steps);
        assert_eq!(value.item().to_bits(), value_u.item().to_bits(), "{steps}");
        assert_ulps("x", &gx, &gx_u, 64.0);
        assert_ulps("col", &gcol, &gcol_u, 64.0);
        // A cotangent other than one scales the saved partials; zero gives zeros.
        for c in [-2.5, 0.0] {
            let (_, (gx_c, gcol_c)) = stepped_vjp(&x, &col, steps, &Tensor::scalar(c));
            assert_ulps("x, scaled", &gx_c, &(&gx * c), 4.0);
            assert_ulps("col, scaled", &gcol_c, &(&gcol * c), 4.0);
        }
        let (_, tangent) = stepped_jvp(
            &x,
            &col,
            steps,
            &Tensor::ones(&[6]),
            &Tensor::zeros(&[3, 1]),
        );
        let (_, tangent_u) = stepped_unfused_jvp(
            &x,
            &col,
            steps,
            &Tensor::ones(&[6]),
            &Tensor::zeros(&[3, 1]),
        );
        assert_ulps("tangent", &tangent, &tangent_u, 64.0);
    }
    // By hand, one step from x = 0 (the update keeps it 0, with derivative 0.9 + 0.1 (1 -
    // tanh² 0) = 1): the term sin x e^x / (1 + x²) is 0 with derivative 1 at 0; the last term,
    // 2 mean(e^(x col)) over [3, 6], is 2 with derivative 2 sum(col) / 18 in each x and
    // 2 sum(x) / 18 = 0 in each of col.
    let zero = Tensor::zeros(&[6]);
    let (value, (gx, gcol)) = stepped_value_and_grad(&zero, &col, 1);
    assert!((value.item() - 2.0).abs() < 1e-15);
    let s: f64 = col.to_vec().iter().sum();
    for g in gx.to_vec() {
        assert!((g - (1.0 + 2.0 * s / 18.0)).abs() < 1e-14, "{g}");
    }
    assert_eq!(gcol.to_vec(), [0.0; 3]);
}

both! {
    /// A normalised layer and a per-row error, written as users write them: the row means, the
    /// row variances and the per-row errors are reductions over the last axis ending regions;
    /// the column sums at the end reduce a region over its first axis.
    fn normed / normed_unfused(x: &Tensor<f64>, w: &Tensor<f64>, b: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let z = x.matmul(w);
        let mu = (&z + b).mean_axes(&[-1], true);
        let var = (&z + b - &mu).square().mean_axes(&[1], true);
        let h = (&z + b - &mu) / (var + 1e-3).sqrt();
        let err = ((&h - y).square() * 0.5).sum_axes(&[1], false);
        let cols = (h.tanh() * &err.reshape(&[4, 1])).sum_axes(&[0], false);
        (err.log1p() * 2.0).mean() + cols.sum()
    }
}

both! {
    /// Row sums of a region over a rank-3 value, over the two last axes and keeping them.
    fn planes / planes_unfused(x: &Tensor<f64>, s: &Tensor<f64>) -> Tensor<f64> {
        (x * s).sin().exp().sum_axes(&[2, 1], true) * 0.5
    }
}

both! {
    /// A generic row-wise reduction, run on f32, f64 and (through `f_hvp`) dual numbers.
    fn soft_rows / soft_rows_unfused<T: Element>(x: &Tensor<T>, w: &Tensor<T>) -> Tensor<T> {
        ((x * w).exp() + 1.0).ln().mean_axes(&[-1], false).square().sum()
    }
}

#[derive(Clone, Differentiable)]
struct Normed {
    layers: Vec<Layer>,
}

impl Normed {
    /// Layers with a layer norm each, in a loop over the layers: the row statistics are
    /// reductions over the last axis ending regions inside the loop's body, whose axes the
    /// backward pass keeps a trip each.
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>, #[nodiff] axis: isize) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let z = h.matmul(&layer.w);
            let mu = (&z + &layer.b).mean_axes(&[axis], true);
            let var = (&z + &layer.b - &mu).square().mean_axes(&[axis], true);
            h = ((&z + &layer.b - &mu) / (var + 1e-3).sqrt()).tanh();
        }
        (&h * &h).sum_axes(&[axis], false).mean()
    }

    #[differentiable(fuse = false)]
    fn forward_unfused(&self, x: &Tensor<f64>, #[nodiff] axis: isize) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            let z = h.matmul(&layer.w);
            let mu = (&z + &layer.b).mean_axes(&[axis], true);
            let var = (&z + &layer.b - &mu).square().mean_axes(&[axis], true);
            h = ((&z + &layer.b - &mu) / (var + 1e-3).sqrt()).tanh();
        }
        (&h * &h).sum_axes(&[axis], false).mean()
    }
}

#[test]
fn a_model_with_a_layer_norm_in_a_loop_over_layers_has_the_derivatives_of_its_unfused_twin() {
    let layer = |seed| Layer {
        w: Tensor::rand_normal(&[6, 6], 0.0, 0.5, seed),
        b: Tensor::rand_normal(&[6], 0.0, 0.5, seed + 1),
    };
    let model = Normed {
        layers: vec![layer(61), layer(63), layer(65)],
    };
    let x = Tensor::rand_normal(&[5, 6], 0.0, 1.0, 67);
    // The last axis (one pass) and the first (the values first), through the same code.
    for axis in [-1, 0] {
        let (value, (grads, gx)) = model.forward_value_and_grad(&x, axis);
        let (value_u, (grads_u, gx_u)) = model.forward_unfused_value_and_grad(&x, axis);
        assert_ulps(&format!("x, axis {axis}"), &gx, &gx_u, 1e4);
        assert_eq!(
            value.item().to_bits(),
            value_u.item().to_bits(),
            "axis {axis}"
        );
        for (i, (g, g_u)) in grads.layers.iter().zip(&grads_u.layers).enumerate() {
            assert_ulps(&format!("w of layer {i}, axis {axis}"), &g.w, &g_u.w, 1e4);
            if axis == 0 {
                // Normalised over the rows, a bias (the same in every row) is taken out again
                // with the rows' mean: its gradient is zero.
                for b in g.b.to_vec().iter().chain(&g_u.b.to_vec()) {
                    assert!(b.abs() <= 1e-12, "b of layer {i}: {b}");
                }
            } else {
                assert_ulps(&format!("b of layer {i}, axis {axis}"), &g.b, &g_u.b, 1e4);
            }
        }
        // Central differences on one weight of each layer.
        for l in 0..3 {
            let eps = 1e-6;
            let shifted = |d: f64| {
                let mut m = model.clone();
                let mut w = m.layers[l].w.to_vec();
                w[7] += d;
                m.layers[l].w = Tensor::from_vec(w, &[6, 6]);
                m.forward(&x, axis).item()
            };
            let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
            let g = grads.layers[l].w.to_vec()[7];
            assert!(
                (g - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                "layer {l}, axis {axis}: {g} against {fd}"
            );
        }
    }
}

#[test]
fn reductions_over_some_axes_end_regions_with_the_derivatives_of_their_unfused_twins() {
    let x = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 41);
    let w = Tensor::rand_normal(&[3, 70], 0.0, 0.5, 42);
    let b = Tensor::rand_normal(&[70], 0.0, 0.5, 43);
    let y = Tensor::rand_normal(&[4, 70], 0.0, 1.0, 44);
    check_variants!(normed, normed_value_and_grad, normed_grad, normed_vjp, normed_jvp, normed_pullback; [x, w, b]; (&x, &w, &b, &y));
    let (value, (gx, gw, gb)) = normed_value_and_grad(&x, &w, &b, &y);
    let (value_u, (gx_u, gw_u, gb_u)) = normed_unfused_value_and_grad(&x, &w, &b, &y);
    assert_ulps("value", &value, &value_u, 16.0);
    assert_ulps("x", &gx, &gx_u, 1e4);
    assert_ulps("w", &gw, &gw_u, 1e4);
    assert_ulps("b", &gb, &gb_u, 1e4);
    let tangents = (
        Tensor::rand_normal(&[4, 3], 0.0, 1.0, 45),
        Tensor::rand_normal(&[3, 70], 0.0, 1.0, 46),
        Tensor::rand_normal(&[70], 0.0, 1.0, 47),
    );
    let (_, t) = normed_jvp(&x, &w, &b, &y, &tangents.0, &tangents.1, &tangents.2);
    let (_, t_u) = normed_unfused_jvp(&x, &w, &b, &y, &tangents.0, &tangents.1, &tangents.2);
    assert_ulps("tangent", &t, &t_u, 1e4);

    // Rows of 2 × 70 elements cross the fused loops' blocks.
    let x = Tensor::rand_normal(&[3, 2, 70], 0.0, 1.0, 48);
    let s = Tensor::rand_normal(&[2, 70], 0.0, 1.0, 49);
    check_vector_variants!(planes, planes_vjp, planes_jvp, planes_pullback; [x, s]; (&x, &s));
    let ct = Tensor::rand_normal(&[3, 1, 1], 0.0, 1.0, 50);
    let (value, (gx, gs)) = planes_vjp(&x, &s, &ct);
    let (value_u, (gx_u, gs_u)) = planes_unfused_vjp(&x, &s, &ct);
    assert_eq!(value.shape(), &[3, 1, 1]);
    assert_ulps("planes", &value, &value_u, 16.0);
    assert_ulps("planes x", &gx, &gx_u, 16.0);
    assert_ulps("planes s", &gs, &gs_u, 64.0);
    // By hand: at s = 0 every element is e^0 = 1, so each plane sums to 140 and the result is
    // 70; d/dx is 0.5 cos(0) e^0 s = 0, and d/ds sums 0.5 x over the planes.
    let (value, (gx, gs)) = planes_vjp(&x, &Tensor::zeros(&[2, 70]), &Tensor::ones(&[3, 1, 1]));
    assert_eq!(value.to_vec(), [70.0; 3]);
    assert!(gx.to_vec().iter().all(|&g| g == 0.0));
    let xs = x.to_vec();
    for (j, g) in gs.to_vec().iter().enumerate() {
        let want: f64 = (0..3).map(|p| 0.5 * xs[p * 140 + j]).sum();
        assert!((g - want).abs() <= 1e-14, "{g} against {want}");
    }
}

#[test]
fn a_generic_row_reduction_agrees_with_its_twin_in_f32_and_hessian_vector_products() {
    let x = Tensor::rand_normal(&[5, 9], 0.0, 1.0, 51);
    let w = Tensor::rand_normal(&[9], 0.0, 1.0, 52);
    check_variants!(soft_rows, soft_rows_value_and_grad, soft_rows_grad, soft_rows_vjp, soft_rows_jvp, soft_rows_pullback; [x, w]; (&x, &w));
    let (gx, gw) = soft_rows_grad(&x, &w);
    let (gx_u, gw_u) = soft_rows_unfused_grad(&x, &w);
    assert_ulps("x", &gx, &gx_u, 64.0);
    assert_ulps("w", &gw, &gw_u, 64.0);
    let (x32, w32) = (x.cast::<f32>(), w.cast::<f32>());
    let (gx32, gw32) = soft_rows_grad(&x32, &w32);
    let (gx32_u, gw32_u) = soft_rows_unfused_grad(&x32, &w32);
    assert_ulps_f32("x in f32", &gx32, &gx32_u, 64.0);
    assert_ulps_f32("w in f32", &gw32, &gw32_u, 64.0);
    let (dx, dw) = (
        Tensor::rand_normal(&[5, 9], 0.0, 1.0, 53),
        Tensor::rand_normal(&[9], 0.0, 1.0, 54),
    );
    let (_, (hx, hw)) = soft_rows_hvp(&x, &w, &dx, &dw);
    let (_, (hx_u, hw_u)) = soft_rows_unfused_hvp(&x, &w, &dx, &dw);
    assert_ulps("Hv for x", &hx, &hx_u, 256.0);
    assert_ulps("Hv for w", &hw, &hw_u, 256.0);
}

/// An auxiliary output that is a value inside what would be a region.
#[differentiable(has_aux)]
fn with_aux(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    let y = x.square();
    let z = y.exp() * 0.5;
    ((z + &y).mean(), y)
}

#[test]
fn a_value_returned_as_aux_is_not_fused_away() {
    let x = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]);
    let ((value, aux), grad) = with_aux_value_and_grad(&x);
    assert_eq!(aux.to_vec(), [0.25, 1.0, 4.0]);
    let want: f64 = x
        .to_vec()
        .iter()
        .map(|v| (v * v).exp() * 0.5 + v * v)
        .sum::<f64>()
        / 3.0;
    assert!((value.item() - want).abs() < 1e-14);
    // d/dx of (e^(x²)/2 + x²)/3 is (x e^(x²) + 2x)/3.
    for (g, v) in grad.to_vec().iter().zip(x.to_vec()) {
        let want = (v * (v * v).exp() + 2.0 * v) / 3.0;
        assert!(
            (g - want).abs() < 1e-13 * want.abs().max(1.0),
            "{g} against {want}"
        );
    }
}

both! {
    /// A clipped loss: the residual clamped, a hinge by `maximum` against a literal and a cap by
    /// `minimum` against a tensor, in one region that the mean ends.
    fn clipped / clipped_unfused(pred: &Tensor<f64>, y: &Tensor<f64>, cap: &Tensor<f64>) -> Tensor<f64> {
        let r = (pred - y).clamp(-1.0, 1.0);
        let hinge = (1.0 - &r * y).maximum(0.0);
        (hinge.minimum(cap) + r.powi(2) * 0.5).mean()
    }
}

both! {
    /// The Huber loss written with `minimum`: `q (|d| - q/2)` with `q = min(|d|, δ)`.
    fn huber / huber_unfused(pred: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
        let a = (pred - y).abs();
        let q = a.minimum(0.5);
        (&q * (a - &q * 0.5)).sum()
    }
}

both! {
    /// Powers with a literal, an integer and a tensor exponent, and the smooth functions of two
    /// tensors, over a broadcast row.
    fn powers / powers_unfused(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
        let p = x.powf(1.5) + x.powi(-2) * 0.25 - x.pow(w);
        let s = x.atan2(w) + x.hypot(w) - x.logaddexp(w) + w.xlogy(x) + x.xlog1py(w);
        p * s
    }
}

both! {
    /// A floor and a cap that may be NaN, which `fmax` and `fmin` ignore.
    fn bounded / bounded_unfused(x: &Tensor<f64>, lo: &Tensor<f64>, hi: &Tensor<f64>) -> Tensor<f64> {
        (x.fmax(lo).fmin(hi) * x).sum()
    }
}

#[test]
fn fmax_and_fmin_fuse_and_ignore_nan() {
    let x = Tensor::from_vec(vec![0.3, -1.7, 2.4, 0.9, -0.2, 1.6], &[2, 3]);
    let lo = Tensor::from_vec(vec![0.0, f64::NAN, -0.5], &[3]);
    let hi = Tensor::from_vec(vec![1.0, 1.5, f64::NAN], &[3]);
    let (value, (gx, glo, ghi)) = bounded_value_and_grad(&x, &lo, &hi);
    let (value_u, (gx_u, glo_u, ghi_u)) = bounded_unfused_value_and_grad(&x, &lo, &hi);
    assert_eq!(value.item().to_bits(), value_u.item().to_bits());
    assert_eq!(
        (gx.to_vec(), glo.to_vec(), ghi.to_vec()),
        (gx_u.to_vec(), glo_u.to_vec(), ghi_u.to_vec())
    );
    // By hand, element by element: the bounded value b and d/dx of b x; a NaN bound is
    // ignored, so its column is x² (d/dx = 2x) where the other bound does not bind.
    // Column 0 [0, 1]: 0.3 -> 0.3 (0.6); 0.9 -> 0.9 (1.8). Column 1 [NaN, 1.5]: -1.7 -> -1.7
    // (-3.4); -0.2 -> -0.2 (-0.4). Column 2 [-0.5, NaN]: 2.4 -> 2.4 (4.8); 1.6 -> 1.6 (3.2).
    assert_eq!(gx.to_vec(), vec![0.6, -3.4, 4.8, 1.8, -0.4, 3.2]);
    assert_eq!(glo.to_vec(), vec![0.0, 0.0, 0.0]);
    assert_eq!(ghi.to_vec(), vec![0.0, 0.0, 0.0]);
    let want: f64 = x.to_vec().iter().map(|v| v * v).sum();
    assert!((value.item() - want).abs() < 1e-12);
    // Where a bound binds, it gets the gradient: x = 2.4 capped at 1.0 reads d/dhi = x.
    let hi = Tensor::from_vec(vec![1.0, 1.5, 1.0], &[3]);
    let (_, (_, _, ghi)) = bounded_value_and_grad(&x, &lo, &hi);
    assert_eq!(ghi.to_vec(), vec![0.0, 0.0, 2.4 + 1.6]);
}

#[test]
fn clamp_maximum_minimum_and_powi_fuse_with_the_derivatives_of_their_unfused_twins() {
    // Away from the kinks, where finite differences apply.
    let pred = Tensor::from_vec(vec![0.3, -1.7, 2.4, 0.9, -0.2, 1.6], &[2, 3]);
    let y = Tensor::from_vec(vec![0.5, 0.5, -0.7, 1.2, 0.35, -0.1], &[2, 3]);
    let cap = Tensor::from_vec(vec![0.8, 1.9, 2.2], &[3]);
    check_variants!(clipped, clipped_value_and_grad, clipped_grad, clipped_vjp, clipped_jvp, clipped_pullback; [pred, y, cap]; (&pred, &y, &cap));
    let (value, (gp, gy, gc)) = clipped_value_and_grad(&pred, &y, &cap);
    let (value_u, (gp_u, gy_u, gc_u)) = clipped_unfused_value_and_grad(&pred, &y, &cap);
    assert_eq!(value.item().to_bits(), value_u.item().to_bits());
    assert_ulps("pred", &gp, &gp_u, 16.0);
    assert_ulps("y", &gy, &gy_u, 16.0);
    assert_ulps("cap", &gc, &gc_u, 16.0);
    // By hand, element 0: r = -0.2, hinge = 1 + 0.2 * 0.5 = 1.1 against the cap 0.8, so the
    // cap wins and d/dcap_0 gets 1/6 from it; d/dpred_0 is r / 6 from r²/2 alone.
    assert!((gp.to_vec()[0] - (-0.2 / 6.0)).abs() < 1e-15);

    check_variants!(huber, huber_value_and_grad, huber_grad, huber_vjp, huber_jvp, huber_pullback; [pred, y]; (&pred, &y));
    let (value, (gp, gy)) = huber_value_and_grad(&pred, &y);
    let (value_u, (gp_u, gy_u)) = huber_unfused_value_and_grad(&pred, &y);
    assert_eq!(value.item().to_bits(), value_u.item().to_bits());
    assert_eq!(gp.to_vec(), gp_u.to_vec());
    assert_eq!(gy.to_vec(), gy_u.to_vec());
    // The Huber loss's derivative is d inside |d| <= 0.5 and 0.5 sign(d) outside.
    for (g, (p, t)) in gp.to_vec().iter().zip(pred.to_vec().iter().zip(y.to_vec())) {
        let d = p - t;
        let want = if d.abs() <= 0.5 { d } else { 0.5 * d.signum() };
        assert!((g - want).abs() < 1e-15, "{g} against {want}");
    }
}

#[test]
fn ties_of_maximum_minimum_and_clamp_route_the_gradient_as_the_unfused_rules() {
    // Residuals exactly at the clamp's bounds, hinges exactly at 0 and exactly at the cap:
    // the rules split a tie's gradient evenly between `maximum`'s and `minimum`'s sides and
    // pass it through `clamp`'s bounds; the fused region must route it the same way.
    let pred = Tensor::from_vec(vec![1.5, -0.5, 1.0, 0.0, 2.0, -1.0], &[2, 3]);
    let y = Tensor::from_vec(vec![0.5, 0.5, 1.0, 0.5, 1.0, -1.0], &[2, 3]);
    let cap = Tensor::from_vec(vec![1.5, 0.5, 1.0], &[3]);
    let (value, (gp, gy, gc)) = clipped_value_and_grad(&pred, &y, &cap);
    let (value_u, (gp_u, gy_u, gc_u)) = clipped_unfused_value_and_grad(&pred, &y, &cap);
    assert_eq!(value.item().to_bits(), value_u.item().to_bits());
    assert_eq!(gp.to_vec(), gp_u.to_vec());
    assert_eq!(gy.to_vec(), gy_u.to_vec());
    assert_eq!(gc.to_vec(), gc_u.to_vec());
    for t in [
        Tensor::from_vec(vec![1.0, -2.0, 0.5, 3.0, -1.0, 0.25], &[2, 3]),
        Tensor::ones(&[2, 3]),
    ] {
        let zero_y = Tensor::zeros(&[2, 3]);
        let zero_c = Tensor::zeros(&[3]);
        let (_, u) = clipped_jvp(&pred, &y, &cap, &t, &zero_y, &zero_c);
        let (_, u_u) = clipped_unfused_jvp(&pred, &y, &cap, &t, &zero_y, &zero_c);
        assert_eq!(u.item().to_bits(), u_u.item().to_bits());
    }
    // Element 0: r = 1 at the clamp's upper bound (passes), hinge = 1 - 1 * 0.5 = 0.5 > 0,
    // capped by 1.5: d/dpred_0 = (-y_0 + r) / 6 = 0.5 / 6.
    assert!((gp.to_vec()[0] - 0.5 / 6.0).abs() < 1e-15);
    // Element 1: r = -1 at the lower bound, hinge = 1 + 0.5 = 1.5 against the cap 0.5: the cap
    // wins, so d/dcap_1 gets 1/6 from it, and nothing from element 4, whose hinge 1 - 1 = 0 is
    // a tie of `maximum` below the cap. Elements 2 and 5: r = 0, hinge 1 tied with the cap 1:
    // half of each to the cap. Element 4: r = 1 at the bound, the hinge's tie passes half of
    // -y = -1, and r²/2 passes r = 1.
    assert!((gc.to_vec()[1] - 1.0 / 6.0).abs() < 1e-15);
    assert!((gc.to_vec()[2] - 1.0 / 6.0).abs() < 1e-15);
    assert!((gp.to_vec()[4] - 0.5 / 6.0).abs() < 1e-15);
}

#[test]
fn powers_and_smooth_binary_functions_fuse_with_the_derivatives_of_their_unfused_twins() {
    let x = Tensor::rand_uniform(&[4, 5], 0.5, 2.0, 41);
    let w = Tensor::rand_uniform(&[5], 0.2, 1.5, 42);
    check_vector_variants!(powers, powers_vjp, powers_jvp, powers_pullback; [x, w]; (&x, &w));
    let ct = Tensor::rand_normal(&[4, 5], 0.0, 1.0, 43);
    let (value, (gx, gw)) = powers_vjp(&x, &w, &ct);
    let (value_u, (gx_u, gw_u)) = powers_unfused_vjp(&x, &w, &ct);
    assert_eq!(value.to_vec(), value_u.to_vec());
    assert_ulps("x", &gx, &gx_u, 64.0);
    assert_ulps("w", &gw, &gw_u, 64.0);
    let (tx, tw) = (
        Tensor::rand_normal(&[4, 5], 0.0, 1.0, 44),
        Tensor::rand_normal(&[5], 0.0, 1.0, 45),
    );
    let (_, u) = powers_jvp(&x, &w, &tx, &tw);
    let (_, u_u) = powers_unfused_jvp(&x, &w, &tx, &tw);
    assert_ulps("the tangent", &u, &u_u, 64.0);
    // In f32 too (the literals converted to the element type as the unfused ops convert them).
    let (x32, w32) = (x.cast::<f32>(), w.cast::<f32>());
    assert_eq!(
        powers_generic(&x32, &w32).to_vec(),
        powers_generic_unfused(&x32, &w32).to_vec()
    );
}

both! {
    /// `powers` generic over the element type.
    fn powers_generic / powers_generic_unfused<T: Element>(x: &Tensor<T>, w: &Tensor<T>) -> Tensor<T> {
        let p = x.powf(1.5) + x.powi(-2) * 0.25 - x.pow(w);
        let s = x.atan2(w) + x.hypot(w) - x.logaddexp(w) + w.xlogy(x) + x.xlog1py(w);
        (p * s.clamp(-3.0, 3.0)).maximum(-1.0).sum()
    }
}

#[test]
fn a_generic_region_of_powers_agrees_with_its_twin_in_hessian_vector_products() {
    let x = Tensor::rand_uniform(&[6], 0.5, 2.0, 46);
    let w = Tensor::rand_uniform(&[6], 0.2, 1.5, 47);
    check_variants!(powers_generic, powers_generic_value_and_grad, powers_generic_grad, powers_generic_vjp, powers_generic_jvp, powers_generic_pullback; [x, w]; (&x, &w));
    let (gx, gw) = powers_generic_grad(&x, &w);
    let (gx_u, gw_u) = powers_generic_unfused_grad(&x, &w);
    assert_ulps("x", &gx, &gx_u, 64.0);
    assert_ulps("w", &gw, &gw_u, 64.0);
    let (dx, dw) = (
        Tensor::rand_normal(&[6], 0.0, 1.0, 48),
        Tensor::rand_normal(&[6], 0.0, 1.0, 49),
    );
    let (_, (hx, hw)) = powers_generic_hvp(&x, &w, &dx, &dw);
    let (_, (hx_u, hw_u)) = powers_generic_unfused_hvp(&x, &w, &dx, &dw);
    assert_ulps("Hv for x", &hx, &hx_u, 256.0);
    assert_ulps("Hv for w", &hw, &hw_u, 256.0);
}

both! {
    /// A masked Huber loss: `where_cond` on a comparison of the residual (computed in the
    /// region), on a given mask of observed targets, and on a comparison of two parameters.
    fn masked / masked_unfused(pred: &Tensor<f64>, y: &Tensor<f64>, #[nodiff] observed: &Tensor<bool>) -> Tensor<f64> {
        let d = pred - y;
        let a = d.abs();
        let huber = where_cond(&a.le(0.5), &(&d * &d * 0.5), &((a - 0.25) * 0.5));
        let seen = where_cond(observed, &huber, &0.0);
        (seen + where_cond(&pred.gt(y), &(pred.sin() * 0.1), &y.cos())).mean()
    }
}

#[test]
fn a_masked_huber_loss_fuses_with_the_derivatives_of_its_unfused_twin() {
    // Residuals away from the Huber threshold and predictions away from the targets.
    let pred = Tensor::from_vec(vec![0.3, -1.7, 2.4, 0.9, -0.2, 1.6], &[2, 3]);
    let y = Tensor::from_vec(vec![0.5, 0.5, -0.7, 1.2, 0.35, -0.1], &[2, 3]);
    let observed = Tensor::from_vec(vec![true, true, false, true, false, true], &[2, 3]);
    check_variants!(masked, masked_value_and_grad, masked_grad, masked_vjp, masked_jvp, masked_pullback; [pred, y]; (&pred, &y, &observed));
    let (value, (gp, gy)) = masked_value_and_grad(&pred, &y, &observed);
    let (value_u, (gp_u, gy_u)) = masked_unfused_value_and_grad(&pred, &y, &observed);
    assert_eq!(value.item().to_bits(), value_u.item().to_bits());
    assert_eq!(gp.to_vec(), gp_u.to_vec());
    assert_eq!(gy.to_vec(), gy_u.to_vec());
    let (tp, ty) = (
        Tensor::rand_normal(&[2, 3], 0.0, 1.0, 50),
        Tensor::rand_normal(&[2, 3], 0.0, 1.0, 51),
    );
    let (_, u) = masked_jvp(&pred, &y, &observed, &tp, &ty);
    let (_, u_u) = masked_unfused_jvp(&pred, &y, &observed, &tp, &ty);
    assert_eq!(u.item().to_bits(), u_u.item().to_bits());
    // By hand, d/dpred: the Huber derivative (d inside |d| <= 0.5, 0.5 sign d outside) where
    // observed, plus 0.1 cos(pred) where pred > y, over 6.
    let (pv, yv, ov) = (pred.to_vec(), y.to_vec(), observed.to_vec());
    for i in 0..6 {
        let d = pv[i] - yv[i];
        let huber = if d.abs() <= 0.5 { d } else { 0.5 * d.signum() };
        let seen = if ov[i] { huber } else { 0.0 };
        let hinge = if pv[i] > yv[i] {
            0.1 * pv[i].cos()
        } else {
            0.0
        };
        let want = (seen + hinge) / 6.0;
        assert!((gp.to_vec()[i] - want).abs() < 1e-15, "{i}");
    }
}

both! {
    /// A generic region with a comparison against a literal, for f32 and dual numbers.
    fn gated / gated_unfused<T: Element>(x: &Tensor<T>, w: &Tensor<T>) -> Tensor<T> {
        let z = x * w;
        let y = where_cond(&z.gt(0.25), &(x.exp() * w), &(z.sin() * 0.5));
        y.sum()
    }
}

#[test]
fn a_generic_region_with_a_comparison_agrees_with_its_twin_in_f32_and_hessian_vector_products() {
    let x = Tensor::from_vec(vec![0.3, -1.2, 0.9, 1.4, -0.4, 0.1, 0.8], &[7]);
    let w = Tensor::from_vec(vec![1.1, 0.6, -0.5, 0.9, -1.3, 0.7, 0.2], &[7]);
    check_variants!(gated, gated_value_and_grad, gated_grad, gated_vjp, gated_jvp, gated_pullback; [x, w]; (&x, &w));
    let (gx, gw) = gated_grad(&x, &w);
    let (gx_u, gw_u) = gated_unfused_grad(&x, &w);
    assert_ulps("x", &gx, &gx_u, 16.0);
    assert_ulps("w", &gw, &gw_u, 16.0);
    let (x32, w32) = (x.cast::<f32>(), w.cast::<f32>());
    assert_eq!(
        gated(&x32, &w32).item().to_bits(),
        gated_unfused(&x32, &w32).item().to_bits()
    );
    let (dx, dw) = (Tensor::ones(&[7]), Tensor::full(&[7], -0.5));
    let (_, (hx, hw)) = gated_hvp(&x, &w, &dx, &dw);
    let (_, (hx_u, hw_u)) = gated_unfused_hvp(&x, &w, &dx, &dw);
    assert_ulps("Hv for x", &hx, &hx_u, 64.0);
    assert_ulps("Hv for w", &hw, &hw_u, 64.0);
}

/// `a` and `b` hold the same numbers, bit for bit.
fn assert_bits(what: &str, a: &Tensor<f64>, b: &Tensor<f64>) {
    assert_eq!(a.shape(), b.shape(), "{what}: shapes");
    let bits = |t: &Tensor<f64>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(a), bits(b), "{what}");
}

/// `1.5 x` through `tanh`, doubled: a function the next one calls.
#[differentiable]
fn scaled_tanh(x: &Tensor<f64>) -> Tensor<f64> {
    (x * 1.5).tanh() * 2.0
}

/// Two results of one input: a call with several results.
#[differentiable]
fn sine_and_square(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    (x.sin(), x * x)
}

both! {
    /// Regions around calls of other differentiable functions, one with one result and one
    /// with two: the plain function runs the regions and calls the callees themselves.
    fn calling / calling_unfused(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
        let h = scaled_tanh(&(x * w + 0.5));
        let (a, b) = sine_and_square(&(h.exp() - 1.0));
        ((&h * a).exp() - b * 0.5).sum()
    }
}

#[test]
fn a_plain_function_with_calls_runs_its_regions() {
    let x = Tensor::rand_normal(&[5, 3], 0.0, 0.5, 70);
    let w = Tensor::rand_normal(&[3], 0.0, 0.5, 71);
    assert_bits("calling", &calling(&x, &w), &calling_unfused(&x, &w));
    check_variants!(calling, calling_value_and_grad, calling_grad, calling_vjp, calling_jvp, calling_pullback; [x, w]; (&x, &w));
    // By hand, elementwise: u = xw + 1/2, h = 2 tanh(1.5 u), e = exp h - 1,
    // f = exp(h sin e) - e² / 2, df/dh = exp(h sin e)(sin e + h cos e e') - e e' with e' = exp h.
    let (xv, wv) = (x.to_vec(), w.to_vec());
    let (gx, _) = calling_grad(&x, &w);
    for (i, g) in gx.to_vec().iter().enumerate() {
        let u = xv[i] * wv[i % 3] + 0.5;
        let h = 2.0 * (1.5 * u).tanh();
        let (e, de) = (h.exp() - 1.0, h.exp());
        let df_dh = (h * e.sin()).exp() * (e.sin() + h * e.cos() * de) - e * de;
        let dh_du = 3.0 * (1.0 - (1.5 * u).tanh().powi(2));
        let want = df_dh * dh_du * wv[i % 3];
        assert!(
            (g - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{i}: {g} against {want}"
        );
    }
}

#[test]
fn the_plain_functions_run_their_regions_and_equal_their_unfused_twins_bit_for_bit() {
    // The plain functions themselves are written from the fused code: a region with broadcast
    // inputs, regions in loops and branches, a reduction ending one, selections, powers and a
    // masked loss; their unfused twins are the bodies as written.
    let x = Tensor::rand_normal(&[3, 4], 0.0, 0.5, 60);
    let row = Tensor::rand_normal(&[4], 0.0, 0.5, 61);
    let col = Tensor::rand_normal(&[3, 1], 0.0, 0.5, 62);
    let s = Tensor::scalar(0.7);
    assert_bits(
        "broadcasting",
        &broadcasting(&x, &row, &col, &s),
        &broadcasting_unfused(&x, &row, &col, &s),
    );
    for damped in [true, false] {
        assert_bits(
            "iterate",
            &iterate(&x, 3, damped),
            &iterate_unfused(&x, 3, damped),
        );
    }
    let v = Tensor::rand_uniform(&[6], -1.0, 1.0, 63);
    assert_bits(
        "stepped",
        &stepped(&v, &col, 4),
        &stepped_unfused(&v, &col, 4),
    );
    let (xs, bs) = (
        Tensor::rand_uniform(&[10, 30], 0.5, 2.0, 64),
        Tensor::rand_uniform(&[30], 0.5, 1.0, 65),
    );
    assert_bits("vector", &vector(&xs, &bs), &vector_unfused(&xs, &bs));
    let w = Tensor::rand_uniform(&[4], 0.2, 1.5, 66);
    let xp = Tensor::rand_uniform(&[3, 4], 0.5, 2.0, 67);
    assert_bits("powers", &powers(&xp, &w), &powers_unfused(&xp, &w));
    let pred = Tensor::from_vec(vec![0.3, -1.7, 2.4, 0.9, -0.2, 1.6], &[2, 3]);
    let y = Tensor::from_vec(vec![0.5, 0.5, -0.7, 1.2, 0.35, -0.1], &[2, 3]);
    let cap = Tensor::from_vec(vec![0.8, 1.9, 2.2], &[3]);
    let observed = Tensor::from_vec(vec![true, false, true, true, false, true], &[2, 3]);
    assert_bits(
        "clipped",
        &clipped(&pred, &y, &cap),
        &clipped_unfused(&pred, &y, &cap),
    );
    assert_bits(
        "masked",
        &masked(&pred, &y, &observed),
        &masked_unfused(&pred, &y, &observed),
    );
    // Generic, in f32.
    let (x32, w32) = (xp.cast::<f32>(), w.cast::<f32>());
    assert_eq!(
        gated(&x32, &w32).item().to_bits(),
        gated_unfused(&x32, &w32).item().to_bits()
    );
    // With a value returned beside the loss.
    let ((value, aux), _) = with_aux_value_and_grad(&v);
    let (plain_value, plain_aux) = with_aux(&v);
    assert_bits("aux loss", &value, &plain_value);
    assert_bits("aux", &aux, &plain_aux);
}

both! {
    /// `sin` and `cos` of a product beside a comparison on the sine, for `f32`: the fast
    /// kernels' range (|y| ≤ 6000) ends inside the values, and a wrong sine in the fast pass
    /// would flip the comparison, not give a NaN.
    fn trig_gate / trig_gate_unfused(x: &Tensor<f32>, s: &Tensor<f32>) -> Tensor<f32> {
        let y = x * s;
        where_cond(&y.sin().gt(0.0), &(y.sin() * y.cos()), &(y.cos() + 2.0))
    }
}

both! {
    /// W3's shape with the sine and cosine of a product, summed.
    fn trig_sum / trig_sum_unfused(x: &Tensor<f32>, s: &Tensor<f32>) -> Tensor<f32> {
        let y = x * s;
        (y.sin().exp() * x + y.cos()).sum()
    }
}

/// 300 `f32`s (five blocks of the fused loops, the last one partial): small arguments, the
/// fast kernels' bound and its neighbours, and huge ones alone or among small ones in a block.
fn trig_arguments() -> Tensor<f32> {
    let max = rune_ad::__private::vmath::trig::FAST_MAX_F32;
    let above = f32::from_bits(max.to_bits() + 1);
    let mut xs: Vec<f32> = (0..300).map(|i| (i as f32 * 0.731).sin() * 9.0).collect();
    for (i, v) in [
        (3, max),
        (5, -max),
        (70, 7.729_179e28),
        (71, -1e6),
        (140, above),
        (141, -above),
        (299, 3.0e30),
    ] {
        xs[i] = v;
    }
    Tensor::from_vec(xs, &[300])
}

#[test]
fn sin_and_cos_of_huge_arguments_in_a_block_of_small_ones_are_full_range() {
    use rune_ad::__private::vmath::trig::{cos_f32, sin_f32};
    let x = trig_arguments();
    let s = Tensor::ones(&[300]);
    let xv = x.to_vec();
    // The values, element by element, with the full-range kernels: bit for bit, fused and not.
    let want: Vec<u32> = xv
        .iter()
        .map(|&y| {
            let (sy, cy) = (sin_f32(y), cos_f32(y));
            if sy > 0.0 { sy * cy } else { cy + 2.0 }.to_bits()
        })
        .collect();
    let bits = |t: &Tensor<f32>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&trig_gate(&x, &s)), want);
    assert_eq!(bits(&trig_gate_unfused(&x, &s)), want);
    // The derivatives: cos² y - sin² y where the sine is positive, -sin y elsewhere.
    let ones = Tensor::ones(&[300]);
    let (_, (gx, _)) = trig_gate_vjp(&x, &s, &ones);
    let (_, (gx_u, _)) = trig_gate_unfused_vjp(&x, &s, &ones);
    assert_ulps_f32("gate x", &gx, &gx_u, 4.0);
    for (i, (&y, g)) in xv.iter().zip(gx.to_vec()).enumerate() {
        let (sy, cy) = (f64::from(sin_f32(y)), f64::from(cos_f32(y)));
        let want = if sy > 0.0 { cy * cy - sy * sy } else { -sy };
        assert!(
            (f64::from(g) - want).abs() <= 1e-6,
            "{i}: {g} against {want}"
        );
    }
    // The sum and its gradient e^(sin y) (x cos y + 1) - sin y (s = 1).
    let total = trig_sum(&x, &s);
    assert_eq!(
        total.item().to_bits(),
        trig_sum_unfused(&x, &s).item().to_bits()
    );
    let terms: Vec<f32> = xv
        .iter()
        .map(|&y| sin_f32(y).exp() * y + cos_f32(y))
        .collect();
    let want_total = Tensor::from_vec(terms, &[300]).sum().item();
    assert_eq!(total.item().to_bits(), want_total.to_bits());
    let (value, (gx, _)) = trig_sum_value_and_grad(&x, &s);
    assert_eq!(value.item().to_bits(), want_total.to_bits());
    let (gx_u, _) = trig_sum_unfused_grad(&x, &s);
    assert_ulps_f32("sum x", &gx, &gx_u, 4.0);
    for (i, (&y, g)) in xv.iter().zip(gx.to_vec()).enumerate() {
        let (sy, cy) = (f64::from(sin_f32(y)), f64::from(cos_f32(y)));
        let want = sy.exp() * (f64::from(y) * cy + 1.0) - sy;
        let tol = 1e-5 * want.abs().max(1.0);
        assert!(
            (f64::from(g) - want).abs() <= tol,
            "{i}: {g} against {want}"
        );
    }
    // Forward mode along x's tangent of ones: the same numbers.
    let zeros = Tensor::zeros(&[300]);
    let (_, u) = trig_sum_jvp(&x, &s, &ones, &zeros);
    let want_u = gx.sum().item();
    assert!((f64::from(u.item()) - f64::from(want_u)).abs() <= 1e-5 * f64::from(want_u.abs()));
}
