//! Constant code in `f_hvp`: the dual twin of a function on `f64` or `f32` computes the
//! constant code that reads only `#[nodiff]` tensors and `stop_gradient` values on real
//! numbers, and hands the rest of the twin its indices and masks. Hessian-vector products
//! checked against values derived by hand, and against finite differences of the gradient.

use rune_ad::prelude::*;

mod support;

/// `got` against `expected` written as numbers, to `tol` relative to `1 + |expected|`.
#[track_caller]
fn assert_close<T: Element + Into<f64>>(what: &str, got: &Tensor<T>, expected: &[f64], tol: f64) {
    let expected = Tensor::from_vec(expected.to_vec(), got.shape());
    let got = got.to_vec().into_iter().map(Into::into).collect();
    support::assert_close(
        &Tensor::from_vec(got, expected.shape()),
        &expected,
        tol,
        what,
    );
}

// ---- k-means: the assignment on real numbers, the residuals differentiated -------------------

/// `Σᵢ ‖Pᵢ − C_{a(i)}‖²` with `a(i)` the nearest centroid, found on `stop_gradient(C)` with the
/// distances expanded as `‖Cⱼ‖² − 2 Pᵢ·Cⱼ` (what GradBench's kmeans computes).
#[differentiable(hvp)]
fn kmeans_cost(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let fixed = stop_gradient(centroids);
    let scores = (&fixed * &fixed).sum_axes(&[1], false) - points.matmul(&(fixed.t() * 2.0));
    let nearest = scores.argmin(1);
    let residuals = points - centroids.index_select(0, &nearest);
    (&residuals * &residuals).sum()
}

/// The same in `f32`.
#[differentiable(hvp)]
fn kmeans_cost_f32(centroids: &Tensor<f32>, #[nodiff] points: &Tensor<f32>) -> Tensor<f32> {
    let fixed = stop_gradient(centroids);
    let scores = (&fixed * &fixed).sum_axes(&[1], false) - points.matmul(&(fixed.t() * 2.0));
    let nearest = scores.argmin(1);
    let residuals = points - centroids.index_select(0, &nearest);
    (&residuals * &residuals).sum()
}

/// Squared distances from each point to each centroid, `[n, k]`: a plain function on real
/// tensors, which the twin can call only because the assignment is computed on real numbers.
fn distances(points: &Tensor<f64>, centroids: &Tensor<f64>) -> Tensor<f64> {
    let (n, d) = (points.shape()[0], points.shape()[1]);
    let k = centroids.shape()[0];
    let diff = points.reshape(&[n as isize, 1, d as isize])
        - centroids.reshape(&[1, k as isize, d as isize]);
    (&diff * &diff).sum_axes(&[2], false)
}

/// [`kmeans_cost`] with the assignment from a helper on real tensors.
#[differentiable(hvp)]
fn kmeans_cost_helper(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let d = distances(points, &stop_gradient(centroids));
    let nearest = d.argmin(1);
    let residuals = points - centroids.index_select(0, &nearest);
    (&residuals * &residuals).sum()
}

/// [`kmeans_cost`] recomputed in the backward pass (a checkpoint).
#[differentiable(hvp, checkpoint)]
fn kmeans_block(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    kmeans_cost(centroids, points)
}

/// The cost summed over blocks of three points, as GradBench's kmeans keeps its distances in
/// cache: each block's twin gets its points from the caller's twin.
#[differentiable(hvp)]
fn kmeans_in_blocks(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let mut total = Tensor::scalar(0.0);
    for start in [0, 3] {
        let block = points.shrink(&[(start, start + 3), (0, 2)]);
        total += kmeans_block(centroids, &block);
    }
    total
}

/// Six points in the plane around three centroids: points 0, 1, 5 nearest centroid 0,
/// points 2, 3 nearest centroid 1, point 4 nearest centroid 2.
fn kmeans_data() -> (Vec<f64>, Vec<f64>) {
    let points = vec![
        0.1, 0.2, -0.2, 0.1, 3.1, 2.9, 2.8, 3.2, -3.0, 0.4, 0.3, -0.1,
    ];
    let centroids = vec![0.0, 0.0, 3.0, 3.0, -3.1, 0.5];
    (points, centroids)
}

/// The gradient `2 Σ_{i→j} (Cⱼ − Pᵢ)` and the Hessian along `v`, `2 |{i→j}| vⱼ`, by hand.
fn kmeans_by_hand(points: &[f64], centroids: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let assignment = [0, 0, 1, 1, 2, 0];
    let mut grad = vec![0.0; 6];
    let mut count = [0.0; 3];
    for (i, &j) in assignment.iter().enumerate() {
        count[j] += 1.0;
        for a in 0..2 {
            grad[2 * j + a] += 2.0 * (centroids[2 * j + a] - points[2 * i + a]);
        }
    }
    let hv = (0..6).map(|e| 2.0 * count[e / 2] * v[e]).collect();
    (grad, hv)
}

#[test]
fn kmeans_newton_direction_from_the_hessian_along_ones() {
    let (p, c) = kmeans_data();
    let points = Tensor::from_vec(p.clone(), &[6, 2]);
    let centroids = Tensor::from_vec(c.clone(), &[3, 2]);
    let v = vec![1.0, -0.5, 0.25, 2.0, -1.5, 0.75];
    let (grad, hv) = kmeans_by_hand(&p, &c, &v);
    let direction = Tensor::from_vec(v.clone(), &[3, 2]);
    for (what, (g, h)) in [
        (
            "argmin of the expanded scores",
            kmeans_cost_hvp(&centroids, &points, &direction),
        ),
        (
            "argmin of a helper's distances",
            kmeans_cost_helper_hvp(&centroids, &points, &direction),
        ),
        (
            "blocks of points, each a checkpoint",
            kmeans_in_blocks_hvp(&centroids, &points, &direction),
        ),
    ] {
        assert_close(what, &g, &grad, 1e-12);
        assert_close(what, &h, &hv, 1e-12);
    }
    // The Newton direction of GradBench's kmeans: the Hessian is diagonal, so along ones it is
    // the diagonal.
    let ones = Tensor::ones(&[3, 2]);
    let (g, diagonal) = kmeans_cost_hvp(&centroids, &points, &ones);
    let newton = &g / &diagonal;
    let (_, by_hand) = kmeans_by_hand(&p, &c, &[1.0; 6]);
    let expected: Vec<f64> = grad.iter().zip(&by_hand).map(|(g, h)| g / h).collect();
    assert_close("Newton direction", &newton, &expected, 1e-12);

    let points32 = Tensor::from_vec(p.iter().map(|&x| x as f32).collect(), &[6, 2]);
    let centroids32 = Tensor::from_vec(c.iter().map(|&x| x as f32).collect(), &[3, 2]);
    let direction32 = Tensor::from_vec(v.iter().map(|&x| x as f32).collect(), &[3, 2]);
    let (g, h) = kmeans_cost_f32_hvp(&centroids32, &points32, &direction32);
    assert_close("f32 gradient", &g, &grad, 1e-5);
    assert_close("f32 Hessian along v", &h, &hv, 1e-5);
}

// ---- constants the differentiated code reads, and masks ----------------------------------------

/// `scale · Σ where(data > cap, x², sin x)` with `scale = ½ Σ data`: the scale is constant code
/// the twin's dual code reads (a tensor, so it stays on dual numbers), the mask one it reads as
/// a mask (computed on real numbers), and `len` a number both read.
#[differentiable(hvp)]
fn masked_energy(
    x: &Tensor<f64>,
    #[nodiff] data: &Tensor<f64>,
    #[nodiff] cap: &Tensor<f64>,
) -> Tensor<f64> {
    let scale = data.sum() * 0.5;
    let mask = data.gt(cap);
    let n = data.len();
    let inside = where_cond(&mask, &(x * x), &x.sin());
    inside.sum() * &scale / n as f64
}

#[test]
fn masks_on_real_numbers_meet_dual_code() {
    let data = vec![0.5, 2.0, -1.0, 3.0];
    let cap = Tensor::from_vec(vec![1.0, 1.0, 1.0, 1.0], &[4]);
    let xs = vec![0.3, -0.7, 1.1, 0.4];
    let v = vec![1.0, 0.5, -2.0, 0.25];
    let x = Tensor::from_vec(xs.clone(), &[4]);
    let (g, h) = masked_energy_hvp(
        &x,
        &Tensor::from_vec(data.clone(), &[4]),
        &cap,
        &Tensor::from_vec(v.clone(), &[4]),
    );
    // scale / n = (½ · 4.5) / 4; the mask is data > 1: elements 1 and 3.
    let k = 0.5 * 4.5 / 4.0;
    let masked = [false, true, false, true];
    let grad: Vec<f64> = (0..4)
        .map(|i| k * if masked[i] { 2.0 * xs[i] } else { xs[i].cos() })
        .collect();
    let hv: Vec<f64> = (0..4)
        .map(|i| k * v[i] * if masked[i] { 2.0 } else { -xs[i].sin() })
        .collect();
    assert_close("gradient", &g, &grad, 1e-12);
    assert_close("Hessian along v", &h, &hv, 1e-12);
}

// ---- a loop over layers whose routing is computed from the data --------------------------------

/// Three rounds of `h ← tanh(h + w[top])` where `top` is each example's largest input feature:
/// the routing is an index computed in the loop from `#[nodiff]` data alone, the state is
/// differentiated.
#[differentiable(hvp)]
fn routed(w: &Tensor<f64>, #[nodiff] inputs: &Tensor<f64>) -> Tensor<f64> {
    let mut h = inputs * 0.5;
    for round in 0..3 {
        let top = inputs.argmax(1);
        let shifted = inputs.shrink(&[(0, 2), (round, round + 1)]);
        h = (h + w.index_select(0, &top) + &shifted).tanh();
    }
    (&h * &h).sum()
}

#[test]
fn routing_computed_in_a_loop_matches_finite_differences() {
    let inputs = Tensor::from_vec(vec![0.2, 0.9, -0.4, 0.1, -0.3, 0.6], &[2, 3]);
    let w = Tensor::from_vec(
        vec![0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.7, 0.05, -0.15],
        &[3, 3],
    );
    let v = Tensor::from_vec(
        vec![1.0, -0.5, 0.2, 0.3, 0.8, -1.0, 0.4, 0.6, -0.2],
        &[3, 3],
    );
    let (g, hv) = routed_hvp(&w, &inputs, &v);
    // Central differences of the gradient along v, and of the value along each coordinate.
    let eps = 1e-5;
    let plus = routed_grad(&(&w + &(&v * eps)), &inputs).to_vec();
    let minus = routed_grad(&(&w - &(&v * eps)), &inputs).to_vec();
    let fd: Vec<f64> = plus
        .iter()
        .zip(&minus)
        .map(|(p, m)| (p - m) / (2.0 * eps))
        .collect();
    assert_close("Hessian along v", &hv, &fd, 1e-7);
    let wv = w.to_vec();
    let value = |ws: Vec<f64>| routed(&Tensor::from_vec(ws, &[3, 3]), &inputs).item();
    let fd_grad: Vec<f64> = (0..9)
        .map(|e| {
            let (mut a, mut b) = (wv.clone(), wv.clone());
            a[e] += eps;
            b[e] -= eps;
            (value(a) - value(b)) / (2.0 * eps)
        })
        .collect();
    assert_close("gradient", &g, &fd_grad, 1e-7);
}

// ---- methods of a concrete type --------------------------------------------------------------

/// A quantizer's settings: numbers the dual twin of its methods reads as constants, and tensors
/// (one, and a list) that the twin lifts to dual numbers once a call.
struct Quantizer {
    weight: f64,
    passes: usize,
    /// The weight of each coordinate in the distortion.
    metric: Tensor<f64>,
    /// The layers of a readout, `[2, 2]` each.
    layers: Vec<Tensor<f64>>,
}

impl Quantizer {
    /// `weight · Σ_passes Σᵢ ‖m ⊙ (Pᵢ − C_{a(i)})‖²`, the assignment recomputed on each pass from
    /// the helper's distances in the metric (on real numbers in the twin, `self.metric` too),
    /// the residuals differentiated (where the twin reads `self.metric` lifted).
    #[differentiable(hvp)]
    fn distortion(
        #[nodiff] &self,
        centroids: &Tensor<f64>,
        #[nodiff] points: &Tensor<f64>,
    ) -> Tensor<f64> {
        let mut total = Tensor::scalar(0.0);
        for _ in 0..self.passes {
            let fixed = stop_gradient(centroids) * &self.metric;
            let nearest = distances(&(points * &self.metric), &fixed).argmin(1);
            let residuals = (points - centroids.index_select(0, &nearest)) * &self.metric;
            total += (&residuals * &residuals).sum() * self.weight;
        }
        total
    }

    /// `weight · ‖h‖²` after `h ← tanh(h L + b)` for each layer `L` of `self`, from `h = x`.
    #[differentiable(hvp)]
    fn readout(#[nodiff] &self, bias: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = (h.matmul(layer) + bias).tanh();
        }
        (&h * &h).sum() * self.weight
    }
}

fn quantizer() -> Quantizer {
    Quantizer {
        weight: 0.5,
        passes: 3,
        metric: Tensor::from_vec(vec![1.0, 2.0], &[2]),
        layers: vec![
            Tensor::from_vec(vec![0.6, -0.3, 0.2, 0.9], &[2, 2]),
            Tensor::from_vec(vec![-0.4, 0.7, 1.1, 0.1], &[2, 2]),
        ],
    }
}

#[test]
fn a_methods_twin_reads_its_numbers_and_lifts_its_tensors() {
    let (p, c) = kmeans_data();
    let points = Tensor::from_vec(p.clone(), &[6, 2]);
    let centroids = Tensor::from_vec(c.clone(), &[3, 2]);
    let v = vec![0.5, -1.0, 2.0, 0.25, -0.75, 1.5];
    let (grad, hv) = kmeans_by_hand(&p, &c, &v);
    let q = quantizer();
    // Three passes at weight ½, coordinate `a` weighted by `m_a² ∈ {1, 4}`: the cost's
    // derivatives times `1.5 m_a²`.
    let scaled = |xs: &[f64]| {
        xs.iter()
            .enumerate()
            .map(|(e, x)| 1.5 * [1.0, 4.0][e % 2] * x)
            .collect::<Vec<_>>()
    };
    let (g, h) = q.distortion_hvp(&centroids, &points, &Tensor::from_vec(v, &[3, 2]));
    assert_close("gradient", &g, &scaled(&grad), 1e-12);
    assert_close("Hessian along v", &h, &scaled(&hv), 1e-12);

    // The readout through the list of layers, against central differences.
    let x = Tensor::from_vec(vec![0.3, -0.8, 1.2, 0.4], &[2, 2]);
    let bias = Tensor::from_vec(vec![0.1, -0.2], &[2]);
    let u = Tensor::from_vec(vec![1.0, -0.5], &[2]);
    let (g, hu) = q.readout_hvp(&bias, &x, &u);
    let eps = 1e-5;
    let plus = q.readout_grad(&(&bias + &(&u * eps)), &x).to_vec();
    let minus = q.readout_grad(&(&bias - &(&u * eps)), &x).to_vec();
    let fd: Vec<f64> = plus
        .iter()
        .zip(&minus)
        .map(|(a, b)| (a - b) / (2.0 * eps))
        .collect();
    assert_close("readout's Hessian along u", &hu, &fd, 1e-7);
    let fd_grad: Vec<f64> = (0..2)
        .map(|e| {
            let step = Tensor::from_vec(vec![eps * (1 - e) as f64, eps * e as f64], &[2]);
            let value = |b: &Tensor<f64>| q.readout(b, &x).item();
            (value(&(&bias + &step)) - value(&(&bias - &step))) / (2.0 * eps)
        })
        .collect();
    assert_close("readout's gradient", &g, &fd_grad, 1e-7);
}

/// A spring of stiffness `k`: `k Σ xᵢ³`.
struct Spring {
    k: f64,
}

impl Spring {
    /// The stiffness comes through a helper type declared in the body, whose own `self` is
    /// not the spring's.
    #[differentiable(hvp)]
    fn energy(#[nodiff] &self, x: &Tensor<f64>) -> Tensor<f64> {
        struct Doubled(f64);
        impl Doubled {
            fn half(&self) -> f64 {
                self.0 / 2.0
            }
        }
        (x * x * x).sum() * Doubled(2.0 * self.k).half()
    }
}

/// A spring reached through a field, its input scaled by a tensor field.
struct Linkage {
    spring: Spring,
    gains: Tensor<f64>,
}

impl Linkage {
    #[differentiable(hvp)]
    fn energy(#[nodiff] &self, x: &Tensor<f64>) -> Tensor<f64> {
        self.spring.energy(&(x * &self.gains))
    }
}

#[test]
fn a_methods_twin_calls_a_fields_method() {
    let linkage = Linkage {
        spring: Spring { k: 2.0 },
        gains: Tensor::from_vec(vec![1.0, 2.0, -0.5], &[3]),
    };
    let x = [1.0, 0.5, 2.0];
    let v = [1.0, -1.0, 0.5];
    let (g, hv) = linkage.energy_hvp(
        &Tensor::from_vec(x.to_vec(), &[3]),
        &Tensor::from_vec(v.to_vec(), &[3]),
    );
    // E = k Σ (aᵢxᵢ)³: ∂E/∂xᵢ = 3k aᵢ³ xᵢ², (H v)ᵢ = 6k aᵢ³ xᵢ vᵢ.
    let a = [1.0, 2.0, -0.5];
    let grad: Vec<f64> = (0..3)
        .map(|i| 6.0 * a[i] * a[i] * a[i] * x[i] * x[i])
        .collect();
    let hess: Vec<f64> = (0..3)
        .map(|i| 12.0 * a[i] * a[i] * a[i] * x[i] * v[i])
        .collect();
    assert_close("gradient", &g, &grad, 1e-12);
    assert_close("Hessian along v", &hv, &hess, 1e-12);
}
