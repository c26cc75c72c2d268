//! Second and higher derivatives from the generated code: Hessians assembled from `f_hvp`
//! against finite differences of `f_grad`, the Jacobian and Hessian helpers on generated JVPs,
//! VJPs and HVPs against closed forms, `check_hvp` on generated code, and nested dual numbers.

use rune_ad::prelude::*;

// ---- helpers ---------------------------------------------------------------------------------

/// The standard basis tensor of `shape` with a one at flat index `at`.
fn one_hot(shape: &[usize], at: usize) -> Tensor<f64> {
    let mut data = vec![0.0; shape.iter().product()];
    data[at] = 1.0;
    Tensor::from_vec(data, shape)
}

/// Asserts `|a - b| <= tol * (1 + |b|)` elementwise, naming the first element that fails.
#[track_caller]
fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: element {i} is {x}, expected {y} (tolerance {tol:e})"
        );
    }
}

/// Row-major `rows × cols` matrix from a closure.
fn matrix(rows: usize, cols: usize, entry: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    (0..rows)
        .flat_map(|i| (0..cols).map(move |j| (i, j)))
        .map(|(i, j)| entry(i, j))
        .collect()
}

// ---- (a) the Hessian of a small MLP loss -----------------------------------------------------

/// Mean squared error of a two-layer tanh network `tanh(x w1 + b1) w2` on a fixed batch.
#[differentiable]
fn mlp_loss<T: Element>(
    w1: &Tensor<T>,
    b1: &Tensor<T>,
    w2: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let hidden = (x.matmul(w1) + b1).tanh();
    let d = hidden.matmul(w2) - y;
    (&d * &d).mean()
}

/// A batch of 5 inputs in R³ and targets in R, and parameters w1 [3, 4], b1 [4], w2 [4, 1].
struct Mlp {
    x: Tensor<f64>,
    y: Tensor<f64>,
    params: Vec<Tensor<f64>>,
}

impl Mlp {
    fn new() -> Self {
        Mlp {
            x: Tensor::rand_normal(&[5, 3], 0.0, 1.0, 1),
            y: Tensor::rand_normal(&[5, 1], 0.0, 1.0, 2),
            params: vec![
                Tensor::rand_normal(&[3, 4], 0.0, 0.7, 3),
                Tensor::rand_normal(&[4], 0.0, 0.3, 4),
                Tensor::rand_normal(&[4, 1], 0.0, 0.7, 5),
            ],
        }
    }

    fn grad(&self, p: &[Tensor<f64>]) -> Vec<Tensor<f64>> {
        let (g1, gb, g2) = mlp_loss_grad(&p[0], &p[1], &p[2], &self.x, &self.y);
        vec![g1, gb, g2]
    }

    fn hvp(&self, p: &[Tensor<f64>], v: &[Tensor<f64>]) -> Vec<Tensor<f64>> {
        let (_, (h1, hb, h2)) =
            mlp_loss_hvp(&p[0], &p[1], &p[2], &self.x, &self.y, &v[0], &v[1], &v[2]);
        vec![h1, hb, h2]
    }
}

/// The parameters flattened into one vector: which tensor and which element is entry `k`.
fn locate(params: &[Tensor<f64>], mut k: usize) -> (usize, usize) {
    for (p, t) in params.iter().enumerate() {
        if k < t.len() {
            return (p, k);
        }
        k -= t.len();
    }
    panic!("index out of range");
}

/// The `k`-th standard basis direction in the flattened parameter space, as one tensor per
/// parameter.
fn basis_direction(params: &[Tensor<f64>], k: usize) -> Vec<Tensor<f64>> {
    let (p, at) = locate(params, k);
    params
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i == p {
                one_hot(t.shape(), at)
            } else {
                Tensor::zeros(t.shape())
            }
        })
        .collect()
}

fn flatten(tensors: &[Tensor<f64>]) -> Vec<f64> {
    tensors.iter().flat_map(|t| t.to_vec()).collect()
}

#[test]
fn mlp_hessian_from_hvps_matches_finite_differences_of_the_gradient() {
    let mlp = Mlp::new();
    let p = &mlp.params;
    let n: usize = p.iter().map(|t| t.len()).sum();
    assert_eq!(n, 12 + 4 + 4);

    // The gradient that comes with each HVP is the plain gradient, up to rounding: on dual
    // numbers `matmul` runs ndarray's generic loop rather than `matrixmultiply`, which sums in
    // another order.
    let zeros: Vec<_> = p.iter().map(|t| Tensor::zeros(t.shape())).collect();
    let (grads, zero_hv) = mlp_loss_hvp(
        &p[0], &p[1], &p[2], &mlp.x, &mlp.y, &zeros[0], &zeros[1], &zeros[2],
    );
    assert_close(
        "gradient from the HVP",
        &flatten(&[grads.0, grads.1, grads.2]),
        &flatten(&mlp.grad(p)),
        1e-15,
    );
    assert!(flatten(&[zero_hv.0, zero_hv.1, zero_hv.2])
        .iter()
        .all(|&h| h == 0.0));

    // Column k of H is H e_k, one HVP per parameter element; row-major `hessian[i * n + k]`.
    let mut hessian = vec![0.0; n * n];
    for k in 0..n {
        let column = flatten(&mlp.hvp(p, &basis_direction(p, k)));
        for (i, h) in column.into_iter().enumerate() {
            hessian[i * n + k] = h;
        }
    }

    // Column k by central differences of the gradient, (∇f(p + h e_k) − ∇f(p − h e_k)) / 2h.
    //
    // Tolerance: the truncation error is h²/6 · |∂³f| ≈ 1e-10 · O(1) for h = 1e-5, and the
    // cancellation error about ε·|∇f| / h ≈ 1e-16 / 1e-5 = 1e-11 (the largest difference seen
    // is about 2e-10). 1e-8, relative to 1 + |H|, leaves a wide margin while a wrong term in
    // any rule shows up at O(1e-2) or more (the entries of H are up to about 1.5).
    let h = 1e-5;
    let mut finite = vec![0.0; n * n];
    for k in 0..n {
        let e = basis_direction(p, k);
        let shift = |sign: f64| -> Vec<Tensor<f64>> {
            p.iter()
                .zip(&e)
                .map(|(t, d)| t + &(d * (sign * h)))
                .collect()
        };
        let plus = flatten(&mlp.grad(&shift(1.0)));
        let minus = flatten(&mlp.grad(&shift(-1.0)));
        for i in 0..n {
            finite[i * n + k] = (plus[i] - minus[i]) / (2.0 * h);
        }
    }
    assert_close("H vs finite differences", &hessian, &finite, 1e-8);

    // Symmetric up to rounding: H[i, k] and H[k, i] come from different HVPs.
    for i in 0..n {
        for k in 0..i {
            let (a, b) = (hessian[i * n + k], hessian[k * n + i]);
            assert!(
                (a - b).abs() <= 1e-13 * (1.0 + a.abs()),
                "H[{i}, {k}] = {a} but H[{k}, {i}] = {b}"
            );
        }
    }

    // Not a degenerate test: the Hessian has couplings between all three parameter blocks,
    // and both signs on its diagonal-free part.
    let block = |k: usize| locate(p, k).0;
    for (bi, bk) in [(0, 1), (0, 2), (1, 2)] {
        assert!((0..n)
            .flat_map(|i| (0..n).map(move |k| (i, k)))
            .any(|(i, k)| block(i) == bi && block(k) == bk && hessian[i * n + k].abs() > 1e-3));
    }
    assert!(hessian.iter().any(|&v| v < -1e-3) && hessian.iter().any(|&v| v > 1e-3));
}

// ---- (b) the Jacobian and Hessian helpers on generated code ----------------------------------

/// `x tanh x`, elementwise.
#[differentiable]
fn x_tanh_x<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x * &x.tanh()
}

/// `tanh(A x)`: a map from R³ to R^m.
#[differentiable]
fn tanh_of_matvec<T: Element>(x: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    a.matmul(x).tanh()
}

/// The quadratic form `xᵀ A x`, a 0-d tensor.
#[differentiable]
fn quadratic_form<T: Element>(x: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    x.matmul(&a.matmul(x))
}

/// `log Σ exp x`.
#[differentiable]
fn logsumexp<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.logsumexp_axes(&[0], false)
}

/// `(Σᵢⱼ Xᵢⱼ bⱼ)²` of a matrix `X`: a Hessian of shape [2, 3, 2, 3].
#[differentiable]
fn squared_weighted_sum<T: Element>(x: &Tensor<T>, #[nodiff] b: &Tensor<T>) -> Tensor<T> {
    let s = x.matmul(b).sum();
    &s * &s
}

/// Forward, reverse and automatic Jacobians of `f` from its generated JVP and VJP all equal
/// `expected` (row-major, shape `out ++ x.shape`).
#[track_caller]
fn check_jacobians(
    what: &str,
    jvp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
    vjp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
    x: &Tensor<f64>,
    out_shape: &[usize],
    expected: &[f64],
) {
    let shape: Vec<usize> = out_shape.iter().chain(x.shape()).copied().collect();
    let forward = jacfwd(&jvp, x);
    let reverse = jacrev(&vjp, x, out_shape);
    let either = jacobian(&jvp, &vjp, x);
    for (mode, j) in [
        ("jacfwd", forward),
        ("jacrev", reverse),
        ("jacobian", either),
    ] {
        assert_eq!(j.shape(), &shape[..], "{what}: {mode} shape");
        assert_close(&format!("{what}: {mode}"), &j.to_vec(), expected, 1e-14);
    }
}

#[test]
fn jacobian_of_an_elementwise_function() {
    // d/dx (x tanh x) = tanh x + x (1 − tanh² x), on the diagonal.
    let x: Tensor<f64> = Tensor::from_vec(vec![0.3, -1.2, 2.0, 0.0], &[4]);
    let xs = x.to_vec();
    let expected = matrix(4, 4, |i, j| {
        let t = xs[i].tanh();
        if i == j {
            t + xs[i] * (1.0 - t * t)
        } else {
            0.0
        }
    });
    check_jacobians(
        "x tanh x",
        |x, v| x_tanh_x_jvp(x, v).1,
        |x, w| x_tanh_x_vjp(x, w).1,
        &x,
        &[4],
        &expected,
    );
}

#[test]
fn jacobian_of_a_matrix_vector_map() {
    // J = diag(1 − tanh²(A x)) A, for a wide A (reverse mode is cheaper) and a tall one
    // (forward mode is).
    let x = Tensor::from_vec(vec![0.5, -0.25, 0.75], &[3]);
    for (m, seed) in [(2, 11), (5, 12)] {
        let a = Tensor::rand_normal(&[m, 3], 0.0, 1.0, seed);
        let (av, xs) = (a.to_vec(), x.to_vec());
        let expected = matrix(m, 3, |i, j| {
            let z: f64 = (0..3).map(|k| av[i * 3 + k] * xs[k]).sum();
            (1.0 - z.tanh().powi(2)) * av[i * 3 + j]
        });
        check_jacobians(
            &format!("tanh(A x), A {m}x3"),
            |x, v| tanh_of_matvec_jvp(x, &a, v).1,
            |x, w| tanh_of_matvec_vjp(x, &a, w).1,
            &x,
            &[m],
            &expected,
        );
    }
}

#[test]
fn jacobian_and_hessian_of_a_quadratic_form() {
    let a = Tensor::from_vec(vec![2.0, 1.0, 0.0, -1.0, 3.0, 0.5, 4.0, 0.0, 1.0], &[3, 3]);
    let x = Tensor::from_vec(vec![1.0, -2.0, 0.5], &[3]);
    let (av, xs) = (a.to_vec(), x.to_vec());
    let sym = |i: usize, j: usize| av[i * 3 + j] + av[j * 3 + i];

    // The Jacobian of a scalar is the gradient, (A + Aᵀ) x, with shape [] ++ [3].
    let gradient: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| sym(i, j) * xs[j]).sum())
        .collect();
    check_jacobians(
        "xᵀ A x",
        |x, v| quadratic_form_jvp(x, &a, v).1,
        |x, w| quadratic_form_vjp(x, &a, w).1,
        &x,
        &[],
        &gradient,
    );

    // The Hessian is A + Aᵀ, whatever x.
    let h = hessian(|x, v| quadratic_form_hvp(x, &a, v).1, &x);
    assert_eq!(h.shape(), &[3, 3]);
    assert_eq!(h.to_vec(), matrix(3, 3, sym));
}

#[test]
fn hessian_of_logsumexp() {
    // With p = softmax(x): H = diag(p) − p pᵀ.
    let x: Tensor<f64> = Tensor::from_vec(vec![0.2, -1.0, 1.5, 0.0], &[4]);
    let e: Vec<f64> = x.to_vec().iter().map(|v| v.exp()).collect();
    let total: f64 = e.iter().sum();
    let p: Vec<f64> = e.iter().map(|v| v / total).collect();
    let expected = matrix(4, 4, |i, j| {
        if i == j {
            p[i] - p[i] * p[j]
        } else {
            -p[i] * p[j]
        }
    });

    let from_hvp = hessian(|x, v| logsumexp_hvp(x, v).1, &x);
    assert_eq!(from_hvp.shape(), &[4, 4]);
    assert_close("logsumexp: hessian", &from_hvp.to_vec(), &expected, 1e-15);

    // The same from the generated gradient run on dual numbers.
    let from_grad = hessian_from_grad(|x: &Tensor<Dual<f64>>| logsumexp_grad(x), &x);
    assert_close(
        "logsumexp: hessian_from_grad",
        &from_grad.to_vec(),
        &expected,
        1e-15,
    );
}

#[test]
fn hessian_of_a_function_of_a_matrix_has_shape_x_by_x() {
    // f(X) = s², s = Σᵢⱼ Xᵢⱼ bⱼ: ∂²f / ∂Xᵢⱼ ∂Xₖₗ = 2 bⱼ bₗ.
    let b = Tensor::from_vec(vec![1.0, -2.0, 0.5], &[3]);
    let x = Tensor::from_vec(vec![0.1, 0.2, 0.3, -0.4, 0.5, -0.6], &[2, 3]);
    let h = hessian(|x, v| squared_weighted_sum_hvp(x, &b, v).1, &x);
    assert_eq!(h.shape(), &[2, 3, 2, 3]);
    let bv = b.to_vec();
    assert_eq!(
        h.to_vec(),
        matrix(6, 6, |ij, kl| 2.0 * bv[ij % 3] * bv[kl % 3])
    );
}

// ---- (c) check_hvp on generated code ---------------------------------------------------------

/// Softmax cross-entropy of a linear classifier `x w + b` against one-hot labels.
#[differentiable]
fn softmax_cross_entropy<T: Element>(
    w: &Tensor<T>,
    b: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] labels: &Tensor<T>,
) -> Tensor<T> {
    let logits = x.matmul(w) + b;
    -(logits.log_softmax(-1) * labels)
        .sum_axes(&[1], false)
        .mean()
}

#[test]
fn check_hvp_passes_on_the_mlp() {
    let mlp = Mlp::new();
    check_hvp(
        |p| mlp.grad(p),
        |p, v| mlp.hvp(p, v),
        &mlp.params,
        f64::FD_EPS,
        1e-7,
        1e-8,
    )
    .unwrap();
}

#[test]
fn check_hvp_passes_on_softmax_cross_entropy() {
    let x = Tensor::rand_normal(&[6, 4], 0.0, 1.0, 21);
    let labels = Tensor::from_vec(
        (0..6)
            .flat_map(|i| (0..3).map(move |c| if c == i % 3 { 1.0 } else { 0.0 }))
            .collect(),
        &[6, 3],
    );
    let args = [
        Tensor::rand_normal(&[4, 3], 0.0, 0.5, 22),
        Tensor::rand_normal(&[3], 0.0, 0.5, 23),
    ];
    let grad = |p: &[Tensor<f64>]| {
        let (gw, gb) = softmax_cross_entropy_grad(&p[0], &p[1], &x, &labels);
        vec![gw, gb]
    };
    let hvp = |p: &[Tensor<f64>], v: &[Tensor<f64>]| {
        let (_, (hw, hb)) = softmax_cross_entropy_hvp(&p[0], &p[1], &x, &labels, &v[0], &v[1]);
        vec![hw, hb]
    };
    check_hvp(grad, hvp, &args, f64::FD_EPS, 1e-7, 1e-8).unwrap();

    // And it is not vacuous: a product with one block's sign flipped fails.
    let wrong = |p: &[Tensor<f64>], v: &[Tensor<f64>]| {
        let mut hv = hvp(p, v);
        hv[1] = -&hv[1];
        hv
    };
    let err = check_hvp(grad, wrong, &args, f64::FD_EPS, 1e-7, 1e-8).unwrap_err();
    assert!(matches!(err, GradCheckError::Hvp { index: 1, .. }), "{err}");
}

/// `hvp`'s products against finite differences of `grad` at `x`, for a function of one tensor.
fn check_products(
    grad: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    hvp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>,
    x: Tensor<f64>,
) {
    check_hvp(
        |a: &[Tensor<f64>]| vec![grad(&a[0])],
        |a: &[Tensor<f64>], v: &[Tensor<f64>]| vec![hvp(&a[0], &v[0])],
        &[x],
        f64::FD_EPS,
        1e-7,
        1e-8,
    )
    .unwrap();
}

/// `Σ x⁴ w` with `w = [1, 2, 3] · 0.5` at `x = [1, -0.5, 2]` along `[1, 2, -1]`: the gradient
/// `2 w x³` and the product with the Hessian `diag(6 w x²)`, derived by hand; and the products
/// against finite differences.
fn assert_weighted_quartic(
    grad: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    hvp: impl Fn(&Tensor<f64>, &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>),
) {
    let x = Tensor::from_vec(vec![1.0, -0.5, 2.0], &[3]);
    let v = Tensor::from_vec(vec![1.0, 2.0, -1.0], &[3]);
    let (g, hv) = hvp(&x, &v);
    assert_eq!(g.to_vec(), vec![2.0, -0.5, 48.0]);
    assert_eq!(hv.to_vec(), vec![6.0, 6.0, -72.0]);
    check_products(grad, |x, v| hvp(x, v).1, x);
}

/// Constants built from `f64` values by `Tensor::<f64>::from_vec` and `full` in a concrete
/// function with `hvp`: its twin on dual numbers builds them as written and casts them.
#[differentiable(hvp)]
fn weighted_quartic(x: &Tensor<f64>) -> Tensor<f64> {
    let w = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    let half: Tensor<f64> = Tensor::<f64>::full(&[3], 0.5);
    (x.square().square() * w * half).sum()
}

#[test]
fn constants_built_from_values_read_in_the_hvp_twin() {
    assert_weighted_quartic(weighted_quartic_grad, weighted_quartic_hvp);
}

/// The same constants written without a turbofish, as users write them, and a sum kept in a
/// `Tensor::scalar(0.0)` over a loop of calls: the twin gives them the element type.
#[differentiable(hvp)]
fn weighted_quartic_in_parts(x: &Tensor<f64>) -> Tensor<f64> {
    let w = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    let half = Tensor::full(&[3], 0.5);
    let ones = Tensor::from_vec(vec![1.0; 3], &[3]);
    let mut total = Tensor::scalar(0.0);
    for part in 0..2 {
        total += quartic_part(x, &(&w * &half * &ones), part);
    }
    total
}

/// `Σ x⁴ w` over one half of the elements (`part` 0: the first, 1: the others).
#[differentiable(hvp)]
fn quartic_part(x: &Tensor<f64>, #[nodiff] w: &Tensor<f64>, #[nodiff] part: usize) -> Tensor<f64> {
    let (start, end) = if part == 0 { (0, 1) } else { (1, 3) };
    let xs = x.shrink(&[(start, end)]);
    (xs.square().square() * w.shrink(&[(start, end)])).sum()
}

#[test]
fn constants_without_a_turbofish_read_in_the_hvp_twin() {
    // The same function as `weighted_quartic`, in parts.
    assert_weighted_quartic(
        weighted_quartic_in_parts_grad,
        weighted_quartic_in_parts_hvp,
    );
}

/// A checkpointed callee inside a function with `f_hvp`: the twin recomputes its forward pass
/// on dual numbers in the pullback, as the real gradient does.
#[differentiable(hvp)]
fn cubes_in_blocks(x: &Tensor<f64>, #[nodiff] w: &Tensor<f64>) -> Tensor<f64> {
    let mut total = Tensor::scalar(0.0);
    for start in [0, 2] {
        let block = x.shrink(&[(start, start + 2)]);
        total += weighted_cubes(&block, &w.shrink(&[(start, start + 2)]));
    }
    total
}

/// `Σ w x³ + Π x` over a block (the product couples the block's elements).
#[differentiable(hvp, checkpoint)]
fn weighted_cubes(x: &Tensor<f64>, #[nodiff] w: &Tensor<f64>) -> Tensor<f64> {
    (x * x * x * w).sum() + x.prod()
}

#[test]
fn checkpointed_callees_in_the_hvp_twin() {
    let x = Tensor::from_vec(vec![1.0, 2.0, -1.0, 0.5], &[4]);
    let w = Tensor::from_vec(vec![1.0, -2.0, 3.0, 0.5], &[4]);
    let v = Tensor::from_vec(vec![1.0, -1.0, 2.0, 3.0], &[4]);
    // grad: 3 w x² + the other element of the block; Hessian: diag(6 w x) + 1 off the diagonal
    // within each block.
    let (g, hv) = cubes_in_blocks_hvp(&x, &w, &v);
    assert_eq!(
        g.to_vec(),
        vec![3.0 + 2.0, -24.0 + 1.0, 9.0 + 0.5, 0.375 - 1.0]
    );
    assert_eq!(
        hv.to_vec(),
        vec![6.0 - 1.0, 24.0 + 1.0, -36.0 + 3.0, 4.5 + 2.0]
    );
    check_products(
        |x| cubes_in_blocks_grad(x, &w),
        |x, v| cubes_in_blocks_hvp(x, &w, v).1,
        x,
    );
}

// ---- (d) derivatives of order three, and nesting modes ---------------------------------------

#[differentiable]
fn quartic<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let square = x * x;
    (&square * &square).sum()
}

#[test]
fn third_derivative_of_x4_by_nested_duals() {
    // f(x) = x⁴: f' = 4x³ = 32, f'' = 12x² = 48, f''' = 24x = 48, f'''' = 24 at x = 2.
    type D1 = Dual<f64>;
    type D2 = Dual<D1>;
    type D3 = Dual<D2>;
    let scalar = |v: D2| Tensor::from_vec(vec![v], &[1]);

    // Through the generated JVP, at elements Dual<Dual<f64>>: evaluating f' (the JVP along 1)
    // at x = 2 + ε₁ + ε₂ gives f'(2) + f''(2)(ε₁ + ε₂) + f'''(2) ε₁ε₂.
    let x = D2::new(D1::new(2.0, 1.0), D1::new(1.0, 0.0));
    let one = D2::new(D1::new(1.0, 0.0), D1::new(0.0, 0.0));
    let (value, tangent) = quartic_jvp(&scalar(x), &scalar(one));
    let (value, tangent) = (value.item(), tangent.item());
    assert_eq!(value.re.re, 16.0);
    assert_eq!(tangent.re.re, 32.0);
    assert_eq!((tangent.re.du, tangent.du.re), (48.0, 48.0));
    assert_eq!(tangent.du.du, 48.0, "f'''(2)");

    // Through the generated gradient (reverse mode) at the same elements: the same numbers.
    let g = quartic_grad(&scalar(x)).item();
    assert_eq!((g.re.re, g.re.du, g.du.du), (32.0, 48.0, 48.0));

    // Through the plain body at Dual<Dual<Dual<f64>>>: the ε₁ε₂ε₃ coefficient of
    // f(2 + ε₁ + ε₂ + ε₃) is f'''(2).
    let x3 = D3::new(x, D2::new(D1::new(1.0, 0.0), D1::new(0.0, 0.0)));
    let y = quartic(&Tensor::from_vec(vec![x3], &[1])).item();
    assert_eq!(y.re.re.re, 16.0);
    assert_eq!(y.du.du.du, 48.0, "f'''(2)");

    // And the fourth derivative through the JVP at Dual<Dual<Dual<f64>>>.
    let (_, t) = quartic_jvp(
        &Tensor::from_vec(vec![x3], &[1]),
        &Tensor::from_vec(
            vec![D3::new(one, D2::new(D1::new(0.0, 0.0), D1::new(0.0, 0.0)))],
            &[1],
        ),
    );
    assert_eq!(t.item().du.du.du, 24.0, "f''''(2)");
}

/// `Σ sin(x) x²`, whose directional derivative is differentiated below.
#[differentiable]
fn wave<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    (x.sin() * x * x).sum()
}

#[test]
fn gradient_of_a_directional_derivative() {
    // g(x) = ∇f(x) · v, the directional derivative; ∇g = H v with
    // H = diag((2 − x²) sin x + 4x cos x) for f = Σ sin(x) x².
    //
    // `#[differentiable]` cannot differentiate a body that calls `wave_jvp` (it is not itself
    // `#[differentiable]`, and the call is an error saying so), so reverse over forward through
    // it is out of reach. Instead the reverse pass (`wave_grad`) is run on dual numbers x + v·ε:
    // forward over reverse, whose tangent is ∇(∇f · v) = H v all the same. `wave_hvp` does
    // exactly that.
    let x: Tensor<f64> = Tensor::from_vec(vec![0.4, -1.3, 2.2], &[3]);
    let v = Tensor::from_vec(vec![1.0, 0.5, -2.0], &[3]);
    let expected: Vec<f64> = x
        .to_vec()
        .iter()
        .zip(v.to_vec())
        .map(|(&x, v)| ((2.0 - x * x) * x.sin() + 4.0 * x * x.cos()) * v)
        .collect();

    let seeded = Tensor::from_vec(
        x.to_vec()
            .iter()
            .zip(v.to_vec())
            .map(|(&re, du)| Dual::new(re, du))
            .collect(),
        &[3],
    );
    let dual_grad = wave_grad(&seeded);
    let hv: Vec<f64> = dual_grad.to_vec().iter().map(|d| d.du).collect();
    assert_close("wave_grad on duals", &hv, &expected, 1e-15);
    assert_close("wave_hvp", &wave_hvp(&x, &v).1.to_vec(), &expected, 1e-15);

    // The directional derivative itself, from the generated JVP, and its gradient by central
    // differences: the same H v.
    let directional = |x: &Tensor<f64>| wave_jvp(x, &v).1.item();
    let h = 1e-6;
    let fd: Vec<f64> = (0..3)
        .map(|i| {
            let e = one_hot(&[3], i);
            (directional(&(&x + &(&e * h))) - directional(&(&x - &(&e * h)))) / (2.0 * h)
        })
        .collect();
    assert_close("finite differences of wave_jvp", &fd, &expected, 1e-8);
}

// ---- (h) owned `#[nodiff]` parameters ---------------------------------------------------------

/// `scale · Σ wᵢ² dᵢ` with the data and the scale passed by value: the generated nested entry
/// points (`f_jvp`'s and `f_value_and_grad`'s derivatives, which call `f_hvp` and then `f_jvp`
/// with the same arguments) clone what they pass first.
#[differentiable(hvp)]
fn weighted_energy(
    w: &Tensor<f64>,
    #[nodiff] data: Tensor<f64>,
    #[nodiff] scale: f64,
) -> Tensor<f64> {
    (w * w * &data).sum() * scale
}

#[test]
fn owned_nodiff_parameters_reach_every_entry_point() {
    let w = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]);
    let data = Tensor::from_vec(vec![1.0, 3.0, -0.5], &[3]);
    let v = Tensor::from_vec(vec![1.0, 2.0, -1.0], &[3]);
    // gradient 2 s wᵢ dᵢ, Hessian 2 s dᵢ on the diagonal.
    let (g, hv) = weighted_energy_hvp(&w, data.clone(), 0.5, &v);
    assert_close("gradient", &g.to_vec(), &[0.5, -3.0, -1.0], 1e-14);
    assert_close("Hessian along v", &hv.to_vec(), &[1.0, 6.0, 0.5], 1e-14);
    let (value, tangent) = weighted_energy_jvp(&w, data, 0.5, &v);
    assert_close("value", &value.to_vec(), &[0.5 * (0.25 + 3.0 - 2.0)], 1e-14);
    assert_close("tangent", &tangent.to_vec(), &[0.5 - 6.0 + 1.0], 1e-14);
}
