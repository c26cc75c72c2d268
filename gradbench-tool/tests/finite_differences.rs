//! Every eval's generated derivative against central finite differences of its own primal:
//! on small random inputs (every entry), and on every workload of the vector files (a few
//! entries each, default sizes included). This does not lean on GradBench's check, which
//! accepted an all-zero lse gradient at n = 80000.
mod common;

use common::vector_file;
use rune_ad::prelude::*;
use rune_gradbench::evals::{ba, det, gmm, ht, kmeans, llsq, lse, lstm, ode};
use serde_json::{json, Value};

/// A primal function of one input tensor.
type Primal<'a> = &'a dyn Fn(&Tensor<f64>) -> f64;

/// `t` with entry `i` moved by `delta`.
fn moved(t: &Tensor<f64>, i: usize, delta: f64) -> Tensor<f64> {
    let mut data = t.to_vec();
    data[i] += delta;
    Tensor::from_vec(data, t.shape())
}

/// The central difference of `f` along entry `i` of `t`.
fn central(f: Primal, t: &Tensor<f64>, i: usize) -> f64 {
    let h = 1e-5 * t.to_vec()[i].abs().max(1.0);
    (f(&moved(t, i, h)) - f(&moved(t, i, -h))) / (2.0 * h)
}

/// `i` evenly spread entries of `0..len` (all of them when `len ≤ count`).
fn some_entries(len: usize, count: usize) -> Vec<usize> {
    if len <= count {
        return (0..len).collect();
    }
    (0..count).map(|j| j * (len - 1) / (count - 1)).collect()
}

/// Checks `gradient` against central differences of `f` at the `entries`: within `rtol` of
/// the gradient's largest entry, plus an absolute term for the differences' rounding error
/// (about 1e-16 · |f| / h).
fn check(what: &str, f: Primal, t: &Tensor<f64>, gradient: &Tensor<f64>, entries: &[usize]) {
    assert_eq!(gradient.shape(), t.shape(), "{what}: gradient shape");
    let g = gradient.to_vec();
    let scale = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let rounding = 1e-10 * f(t).abs().max(1.0);
    for &i in entries {
        let fd = central(f, t, i);
        assert!(
            (fd - g[i]).abs() <= 1e-6 * scale + rounding,
            "{what}: entry {i}: generated {} against finite differences {fd}",
            g[i]
        );
    }
}

fn tensor(values: &Value) -> Tensor<f64> {
    let data: Vec<f64> = serde_json::from_value(values.clone()).unwrap();
    let n = data.len();
    Tensor::from_vec(data, &[n])
}

#[test]
fn lse_gradient() {
    let x = Tensor::rand_uniform(&[7], -3.0, 3.0, 1);
    let f = |x: &Tensor<f64>| lse::logsumexp(x).item();
    check(
        "lse n=7",
        &f,
        &x,
        &lse::logsumexp_grad(&x),
        &some_entries(7, 7),
    );
    for file in ["lse-small-n10.json", "lse-default-n2500.json"] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let x = tensor(&w["input"]["x"]);
            let at = format!("{file} {}", w["description"]);
            check(
                &at,
                &f,
                &x,
                &lse::logsumexp_grad(&x),
                &some_entries(x.len(), 6),
            );
        }
    }
}

#[test]
fn llsq_gradient() {
    for n in [2, 9, 10] {
        let x = Tensor::rand_uniform(&[5], -1.0, 1.0, n as u64);
        let f = |x: &Tensor<f64>| llsq::objective(x, n).item();
        let g = llsq::objective_grad(&x, n);
        check(&format!("llsq n={n}, m=5"), &f, &x, &g, &some_entries(5, 5));
    }
    for file in ["llsq-small-n9-m4.json", "llsq-default-all.json"] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let x = tensor(&w["input"]["x"]);
            let n = w["input"]["n"].as_u64().unwrap() as usize;
            let f = |x: &Tensor<f64>| llsq::objective(x, n).item();
            let at = format!("{file} {}", w["description"]);
            check(
                &at,
                &f,
                &x,
                &llsq::objective_grad(&x, n),
                &some_entries(x.len(), 3),
            );
        }
    }
}

/// Checks each of gmm's four gradients at `per_parameter` entries.
fn check_gmm(at: &str, p: &gmm::Problem, per_parameter: usize) {
    let (g_alpha, g_mu, g_q, g_l) = gmm::jacobian(p);
    let with = |alpha: &Tensor<f64>, mu: &Tensor<f64>, q: &Tensor<f64>, l: &Tensor<f64>| {
        gmm::objective(alpha, mu, q, l, &p.x, p.wishart).item()
    };
    let f_alpha = |t: &Tensor<f64>| with(t, &p.mu, &p.q, &p.l);
    let f_mu = |t: &Tensor<f64>| with(&p.alpha, t, &p.q, &p.l);
    let f_q = |t: &Tensor<f64>| with(&p.alpha, &p.mu, t, &p.l);
    let f_l = |t: &Tensor<f64>| with(&p.alpha, &p.mu, &p.q, t);
    let cases: [(&str, Primal, &Tensor<f64>, &Tensor<f64>); 4] = [
        ("alpha", &f_alpha, &p.alpha, &g_alpha),
        ("mu", &f_mu, &p.mu, &g_mu),
        ("q", &f_q, &p.q, &g_q),
        ("l", &f_l, &p.l, &g_l),
    ];
    for (name, f, t, g) in cases {
        let entries = some_entries(t.len(), per_parameter);
        check(&format!("{at} {name}"), f, t, g, &entries);
    }
}

#[test]
fn gmm_gradients() {
    let (d, k, n) = (3, 2, 6);
    let small = gmm::Problem {
        alpha: Tensor::rand_normal(&[k], 0.0, 1.0, 1),
        mu: Tensor::rand_uniform(&[k, d], 0.0, 1.0, 2),
        q: Tensor::rand_normal(&[k, d], 0.0, 0.5, 3),
        l: Tensor::rand_normal(&[k, d * (d - 1) / 2], 0.0, 1.0, 4),
        x: Tensor::rand_normal(&[n, d], 0.0, 1.0, 5),
        wishart: gmm::Wishart { gamma: 0.8, m: 1 },
    };
    check_gmm("gmm d=3 k=2 n=6", &small, usize::MAX);
    for file in [
        "gmm-small-d4-k3-n20-m2-g0.7.json",
        "gmm-default-2_5_1000.json",
        "gmm-default-10_5_1000.json",
    ] {
        let vectors = vector_file(file);
        for w in vectors["workloads"].as_array().unwrap() {
            let (p, _) = gmm::prepare(&w["input"]).unwrap();
            check_gmm(&format!("{file} {}", w["description"]), &p, 4);
        }
    }
}

/// `dir` against the finite-difference gradient over the second difference, entry by entry
/// (the cost is piecewise quadratic in the centroids, so both are exact up to rounding while
/// no point changes cluster: the step is small enough that none does among 1000 points, and
/// large enough that the second difference's rounding, about 1e-16 · f / h², stays below
/// 1e-5 of a curvature 2|S_j| with the cost rounded to about 1e-13).
fn check_kmeans(at: &str, points: &Tensor<f64>, centroids: &Tensor<f64>) {
    let dir = kmeans::direction(centroids, points).to_vec();
    let f = |c: &Tensor<f64>| kmeans::cost(c, points).item();
    let h = 1e-4;
    for (i, &generated) in dir.iter().enumerate() {
        let (up, down) = (f(&moved(centroids, i, h)), f(&moved(centroids, i, -h)));
        let gradient = (up - down) / (2.0 * h);
        let curvature = (up - 2.0 * f(centroids) + down) / (h * h);
        let expected = gradient / curvature;
        assert!(
            (generated - expected).abs() <= 1e-5 * expected.abs().max(1e-2),
            "{at}: entry {i}: dir {generated} against {expected}"
        );
    }
}

#[test]
fn kmeans_direction() {
    let points = Tensor::rand_uniform(&[12, 2], 0.0, 1.0, 7);
    let centroids = points.shrink(&[(9, 12), (0, 2)]) + 0.01;
    check_kmeans("kmeans k=3 n=12 d=2", &points, &centroids);
    for file in [
        "kmeans-small-k3-n12-d2.json",
        "kmeans-default-k10-n1000-d8.json",
    ] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let (points, centroids, _) = kmeans::prepare(&w["input"]).unwrap();
            check_kmeans(&format!("{file} {}", w["description"]), &points, &centroids);
        }
    }
}

/// Enough centroids that the cost runs over several blocks of points (the last one partial):
/// the cost against the definition, a loop over points and centroids, and `dir` against its
/// closed form, `Cⱼ − mean(Pᵢ : i nearest to j)` (the gradient `Σ 2 (Cⱼ − Pᵢ)` over the
/// Hessian's diagonal `2 |Sⱼ|`).
#[test]
fn kmeans_over_several_blocks() {
    let (n, k, d) = (2000, 300, 3);
    let points = Tensor::<f64>::rand_uniform(&[n, d], 0.0, 1.0, 11);
    // Every centroid near a point of its own, so that no cluster is empty.
    let picked: Vec<usize> = (0..k).map(|j| j * (n / k)).collect();
    let centroids = points.index_select(0, &picked) + 1e-3;
    let (p, c) = (points.to_vec(), centroids.to_vec());
    let distance =
        |i: usize, j: usize| -> f64 { (0..d).map(|a| (p[i * d + a] - c[j * d + a]).powi(2)).sum() };
    let nearest: Vec<usize> = (0..n)
        .map(|i| {
            (0..k)
                .min_by(|&a, &b| distance(i, a).total_cmp(&distance(i, b)))
                .unwrap()
        })
        .collect();
    let want: f64 = (0..n).map(|i| distance(i, nearest[i])).sum();
    let got = kmeans::cost(&centroids, &points).item();
    assert!(
        (got - want).abs() <= 1e-10 * want,
        "cost {got} against {want}"
    );

    let dir = kmeans::direction(&centroids, &points).to_vec();
    for j in 0..k {
        let members: Vec<usize> = (0..n).filter(|&i| nearest[i] == j).collect();
        assert!(!members.is_empty(), "centroid {j} has a point");
        for a in 0..d {
            let mean = members.iter().map(|&i| p[i * d + a]).sum::<f64>() / members.len() as f64;
            let expected = c[j * d + a] - mean;
            let generated = dir[j * d + a];
            assert!(
                (generated - expected).abs() <= 1e-9,
                "dir[{j}, {a}] = {generated} against {expected}"
            );
        }
    }
}

#[test]
fn ode_gradient() {
    for (n, s) in [(1, 1), (3, 1), (6, 2), (9, 3)] {
        let x = Tensor::rand_uniform(&[n], 0.0, 2.0, n as u64);
        let f = |x: &Tensor<f64>| ode::last_component(x, s).item();
        let g = ode::last_component_grad(&x, s);
        check(&format!("ode n={n} s={s}"), &f, &x, &g, &some_entries(n, n));
    }
    for file in [
        "ode-small-n4-n8-s2-s3.json",
        "ode-default-n1000-s1-s10.json",
    ] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let x = tensor(&w["input"]["x"]);
            let s = w["input"]["s"].as_u64().unwrap() as usize;
            let f = |x: &Tensor<f64>| ode::last_component(x, s).item();
            let at = format!("{file} {}", w["description"]);
            check(
                &at,
                &f,
                &x,
                &ode::last_component_grad(&x, s),
                &some_entries(x.len(), 5),
            );
        }
    }
}

/// One RK4 step of the linear chain written out element by element, the stages one after
/// another: `f(y)₀ = x₀`, `f(y)ᵢ = xᵢ yᵢ₋₁`.
fn rk4_step_by_hand(y: &[f64], x: &[f64], h: f64) -> Vec<f64> {
    let f = |y: &[f64]| -> Vec<f64> {
        (0..y.len())
            .map(|i| if i == 0 { x[0] } else { x[i] * y[i - 1] })
            .collect()
    };
    let along =
        |k: &[f64], c: f64| -> Vec<f64> { y.iter().zip(k).map(|(a, b)| a + c * b).collect() };
    let k1 = f(y);
    let k2 = f(&along(&k1, h / 2.0));
    let k3 = f(&along(&k2, h / 2.0));
    let k4 = f(&along(&k3, h));
    (0..y.len())
        .map(|i| y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
        .collect()
}

/// The RK4 step, written over the shifts of `y` and `x`, against the stages written out by
/// hand, and its pullback by the dot-product test against central differences of the step:
/// vectors shorter than the four shifts, short ones whose shifts are copies, and long ones
/// whose shifts the fused regions read in place and whose cotangents they add at offsets.
#[test]
fn ode_step() {
    let h = 0.3;
    for n in [1, 2, 3, 4, 7, 300, 1000] {
        let y = Tensor::rand_uniform(&[n], -1.0, 1.0, 1);
        let x = Tensor::rand_uniform(&[n], 0.0, 2.0, 2);
        let ct = Tensor::rand_uniform(&[n], -1.0, 1.0, 3);
        let want = rk4_step_by_hand(&y.to_vec(), &x.to_vec(), h);
        let (value, (gy, gx)) = ode::rk4_step_vjp(&y, &x, h, &ct);
        for (p, q) in value.to_vec().iter().zip(&want) {
            assert!(
                (p - q).abs() <= 1e-14 * q.abs().max(1.0),
                "n = {n}: {p} against {q}"
            );
        }
        let dy = Tensor::rand_uniform(&[n], -1.0, 1.0, 4);
        let dx = Tensor::rand_uniform(&[n], -1.0, 1.0, 5);
        let along = |t: f64| {
            let step = ode::rk4_step(&(&y + &dy * t), &(&x + &dx * t), h);
            (&step * &ct).sum().item()
        };
        let e = 1e-5;
        let difference = (along(e) - along(-e)) / (2.0 * e);
        let pulled = (&gy * &dy).sum().item() + (&gx * &dx).sum().item();
        assert!(
            (difference - pulled).abs() <= 1e-8 * pulled.abs().max(1.0),
            "n = {n}: dot-product test: {difference} against {pulled}"
        );
    }
}

/// The objective of `problem` in the Jacobian's row order: observation `i`'s x and y errors
/// at rows `2i` and `2i + 1`, then the weight errors.
fn ba_rows(problem: &ba::Problem) -> Vec<f64> {
    let (reprojection, weight_errors) = ba::objective(problem);
    let p = weight_errors.len();
    let errors = reprojection.to_vec();
    let mut rows: Vec<f64> = (0..p).flat_map(|i| [errors[i], errors[p + i]]).collect();
    rows.extend(weight_errors.to_vec());
    rows
}

/// `problem` with parameter `column` (in the Jacobian's column order: the cameras' 11N, the
/// points' 3M, the weights' P) moved by `delta`.
fn ba_moved(problem: &ba::Problem, column: usize, delta: f64) -> ba::Problem {
    let (n, m, _) = problem.sizes();
    let mut moved = problem.clone();
    let (cameras, points) = (ba::CAMERA * n, 3 * m);
    if column < cameras {
        moved.cameras = self::moved(&problem.cameras, column, delta);
    } else if column < cameras + points {
        moved.points = self::moved(&problem.points, column - cameras, delta);
    } else {
        moved.weights = self::moved(&problem.weights, column - cameras - points, delta);
    }
    moved
}

/// The central difference of every row of the objective along parameter `column`.
fn ba_column(problem: &ba::Problem, column: usize) -> Vec<f64> {
    let parameters = [&problem.cameras, &problem.points, &problem.weights];
    let value = parameters
        .iter()
        .flat_map(|t| t.to_vec())
        .nth(column)
        .unwrap();
    let h = 1e-5 * value.abs().max(1.0);
    let up = ba_rows(&ba_moved(problem, column, h));
    let down = ba_rows(&ba_moved(problem, column, -h));
    up.iter()
        .zip(&down)
        .map(|(u, d)| (u - d) / (2.0 * h))
        .collect()
}

/// The sparse Jacobian as a dense `[rows][columns]` matrix, every entry placed by its row's
/// offsets and its column.
fn ba_dense(j: &ba::SparseMatrix, columns: usize) -> Vec<Vec<f64>> {
    (0..j.rows.len() - 1)
        .map(|r| {
            let mut row = vec![0.0; columns];
            for e in j.rows[r] as usize..j.rows[r + 1] as usize {
                assert_eq!(
                    row[j.cols[e] as usize], 0.0,
                    "row {r}: column {} twice",
                    j.cols[e]
                );
                row[j.cols[e] as usize] = j.vals[e];
            }
            row
        })
        .collect()
}

/// Nine observations of four points by three cameras, each observation's camera and point
/// drawn at random (each camera and point observed), camera 1 with a zero rotation: the
/// points lie in front of the cameras, so that the projection is smooth around them.
fn ba_random_problem() -> ba::Problem {
    let (n, m, p) = (3, 4, 9);
    let mut cameras = Vec::new();
    for c in 0..n {
        let u = Tensor::<f64>::rand_uniform(&[ba::CAMERA], -1.0, 1.0, 100 + c as u64).to_vec();
        let rotation = if c == 1 { 0.0 } else { 0.4 };
        cameras.extend(u[..3].iter().map(|r| r * rotation));
        cameras.extend(&u[3..6]);
        cameras.push(2.0 + u[6]);
        cameras.extend(&u[7..9]);
        cameras.extend([0.1 * u[9], 0.05 * u[10]]);
    }
    let points = Tensor::<f64>::rand_uniform(&[m, 3], -1.0, 1.0, 7).to_vec();
    let points: Vec<f64> = points
        .chunks(3)
        .flat_map(|q| [q[0], q[1], 6.0 + q[2]])
        .collect();
    // At random, except that the last observations see every camera and every point.
    let pick = |modulus: usize, seed: u64| -> Vec<usize> {
        let drawn = Tensor::<f64>::rand_uniform(&[p], 0.0, modulus as f64, seed).to_vec();
        (0..p)
            .map(|i| match i.checked_sub(p - modulus) {
                Some(k) => k,
                None => (drawn[i] as usize).min(modulus - 1),
            })
            .collect()
    };
    ba::Problem {
        cameras: Tensor::from_vec(cameras, &[n, ba::CAMERA]),
        points: Tensor::from_vec(points, &[m, 3]),
        weights: Tensor::rand_uniform(&[p], 0.5, 1.5, 8),
        features: Tensor::rand_uniform(&[p, 2], -1.0, 1.0, 9),
        camera_of: pick(n, 10),
        point_of: pick(m, 11),
    }
}

/// Every entry of the Jacobian of a small random problem, the zeros too, against central
/// differences of the objective, computed in chunks of 4 observations (across chunk ends) and
/// in one; and the rows' layout, GradBench's: 15 entries for each error, then 1 for each
/// weight error.
#[test]
fn ba_jacobian() {
    let problem = ba_random_problem();
    let (n, m, p) = problem.sizes();
    let columns = ba::CAMERA * n + 3 * m + p;
    let j = ba::jacobian_in_chunks(&problem, 4);
    assert_eq!(
        j,
        ba::jacobian(&problem),
        "chunks of 4 and of {}",
        ba::CHUNK
    );
    let expected_rows: Vec<u32> = (0..=2 * p)
        .map(|r| (r * ba::BLOCK) as u32)
        .chain((1..=p).map(|i| (2 * p * ba::BLOCK + i) as u32))
        .collect();
    assert_eq!(j.rows, expected_rows);
    let dense = ba_dense(&j, columns);
    let scale = j.vals.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    for column in 0..columns {
        let fd = ba_column(&problem, column);
        for (r, (row, fd)) in dense.iter().zip(&fd).enumerate() {
            assert!(
                (row[column] - fd).abs() <= 1e-6 * scale + 1e-9,
                "entry ({r}, {column}): generated {} against finite differences {fd}",
                row[column]
            );
        }
    }
    let (chunked, weight_errors) = ba::objective_in_chunks(&problem, 4);
    assert_eq!((chunked, weight_errors), ba::objective(&problem));
}

/// The first observation's two rows of the Jacobian on the vector workloads (default sizes
/// included) against central differences of the objective along its 15 parameters.
#[test]
fn ba_first_block_of_the_vector_workloads() {
    for file in [
        "ba-small-p10-p12-zero-rotation.json",
        "ba-default-ba1-ba2.json",
    ] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let (problem, _) = ba::prepare(&w["input"]).unwrap();
            let (n, m, _) = problem.sizes();
            let j = ba::jacobian(&problem);
            let block: Vec<usize> = (0..ba::CAMERA)
                .chain([ba::CAMERA * n, ba::CAMERA * n + 1, ba::CAMERA * n + 2])
                .chain([ba::CAMERA * n + 3 * m])
                .collect();
            let scale = j.vals[..2 * ba::BLOCK]
                .iter()
                .fold(0.0f64, |a, v| a.max(v.abs()));
            for (k, &column) in block.iter().enumerate() {
                let fd = ba_column(&problem, column);
                for (row, fd) in fd[..2].iter().enumerate() {
                    let generated = j.vals[row * ba::BLOCK + k];
                    assert_eq!(j.cols[row * ba::BLOCK + k] as usize, column);
                    assert!(
                        (generated - fd).abs() <= 1e-6 * scale,
                        "{file} {}: entry ({row}, {column}): generated {generated} against \
                         finite differences {fd}",
                        w["description"],
                    );
                }
            }
        }
    }
}

/// `det`'s gradient at `a` (`ell × ell`) against central differences at `entries`. The
/// determinant is linear in each entry, so the differences are exact up to rounding.
fn check_det(at: &str, a: &[f64], ell: usize, entries: &[usize]) {
    let t = Tensor::from_vec(a.to_vec(), &[a.len()]);
    let f = |t: &Tensor<f64>| det::det(&t.to_vec(), ell);
    let gradient = Tensor::from_vec(det::det_grad(a, ell), &[a.len()]);
    check(at, &f, &t, &gradient, entries);
}

#[test]
fn det_gradient() {
    for ell in 1..=6 {
        let a = Tensor::rand_uniform(&[ell * ell], -1.0, 1.0, ell as u64).to_vec();
        check_det(
            &format!("det ell={ell}"),
            &a,
            ell,
            &some_entries(ell * ell, ell * ell),
        );
    }
    for file in ["det-small-l2-l3-l4.json", "det-default-l5-to-l9.json"] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let a = tensor(&w["input"]["A"]).to_vec();
            let ell = w["input"]["ell"].as_u64().unwrap() as usize;
            let at = format!("{file} {}", w["description"]);
            check_det(&at, &a, ell, &some_entries(a.len(), 5));
        }
    }
}

/// Checks `lstm`'s two gradients at `per_parameter` entries each.
fn check_lstm(at: &str, p: &lstm::Problem, per_parameter: usize) {
    let (g_main, g_extra) = lstm::objective_grad(&p.main, &p.extra, &p.state, &p.sequence);
    let f_main = |t: &Tensor<f64>| lstm::objective(t, &p.extra, &p.state, &p.sequence).item();
    let f_extra = |t: &Tensor<f64>| lstm::objective(&p.main, t, &p.state, &p.sequence).item();
    let cases: [(&str, Primal, &Tensor<f64>, &Tensor<f64>); 2] = [
        ("main_params", &f_main, &p.main, &g_main),
        ("extra_params", &f_extra, &p.extra, &g_extra),
    ];
    for (name, f, t, g) in cases {
        let entries = some_entries(t.len(), per_parameter);
        check(&format!("{at} {name}"), f, t, g, &entries);
    }
}

#[test]
fn lstm_gradients() {
    for (l, b, c) in [(1, 2, 3), (2, 3, 4), (3, 7, 6)] {
        let seed = (l * 100 + b * 10 + c) as u64;
        let small = lstm::Problem {
            main: Tensor::rand_uniform(&[2 * l, 4 * b], 0.0, 1.0, seed),
            extra: Tensor::rand_uniform(&[3, b], 0.0, 1.0, seed + 1),
            state: Tensor::rand_uniform(&[2 * l, b], 0.0, 1.0, seed + 2),
            sequence: Tensor::rand_uniform(&[c, b], 0.0, 1.0, seed + 3)
                .gt(0.5)
                .cast::<f64>(),
        };
        check_lstm(&format!("lstm l={l} b={b} c={c}"), &small, usize::MAX);
    }
    for file in [
        "lstm-small-l1-l2-c21-c30.json",
        "lstm-default-l2-l4-l6-c1024.json",
    ] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let (p, _) = lstm::prepare(&w["input"]).unwrap();
            check_lstm(&format!("{file} {}", w["description"]), &p, 4);
        }
    }
}

/// Central differences of the `ht` objective along `moved` (a problem moved by `±h`).
fn ht_difference(moved: &dyn Fn(f64) -> ht::Problem, h: f64) -> Vec<f64> {
    let (up, down) = (ht::objective(&moved(h)), ht::objective(&moved(-h)));
    let (up, down) = (up.to_vec(), down.to_vec());
    up.iter()
        .zip(&down)
        .map(|(u, d)| (u - d) / (2.0 * h))
        .collect()
}

/// Every column of the `ht` jacobian, every entry, against central differences of the
/// objective: along each pose parameter, and (complicated variant) along every point's `u₀`
/// (or `u₁`) moved at once, which moves each point's residual by its own column entry. Within
/// `1e-6` of the jacobian's largest entry, plus the differences' rounding error (about
/// `1e-16 · |p| / h` for points of size `|p|`).
fn check_ht(at: &str, p: &ht::Problem) {
    let j = ht::jacobian(p);
    let n = p.correspondences.len();
    let pose = j.pose.to_vec();
    let barycentric: Vec<Vec<f64>> = j.barycentric.iter().map(Tensor::to_vec).collect();
    assert_eq!(
        j.pose.shape(),
        [ht::POSE_PARAMETERS, 3, n],
        "{at}: pose columns"
    );
    assert_eq!(barycentric.len(), if p.us.is_some() { 2 } else { 0 });
    let all = pose.iter().chain(barycentric.iter().flatten());
    let scale = all.fold(0.0f64, |m, v| m.max(v.abs()));
    let size = p.points.to_vec().iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let close = |what: String, column: &[f64], fd: &[f64], h: f64| {
        for (i, (c, d)) in column.iter().zip(fd).enumerate() {
            assert!(
                (c - d).abs() <= 1e-6 * scale + 1e-14 * size / h,
                "{at} {what}: entry {i}: generated {c} against finite differences {d}"
            );
        }
    };
    let theta = p.theta.to_vec();
    for k in 0..ht::POSE_PARAMETERS {
        let h = 1e-5 * theta[k].abs().max(1.0);
        let moved = |delta: f64| {
            let mut q = p.clone();
            let mut t = theta.clone();
            t[k] += delta;
            q.theta = Tensor::from(t);
            q
        };
        let column = &pose[3 * n * k..3 * n * (k + 1)];
        close(format!("theta[{k}]"), column, &ht_difference(&moved, h), h);
    }
    if let Some(us) = &p.us {
        for (k, column) in barycentric.iter().enumerate() {
            let h = 1e-5;
            let moved = |delta: f64| {
                let mut q = p.clone();
                let step = Tensor::<f64>::full(&[1, n], delta).pad(&[(k, 1 - k), (0, 0)], 0.0);
                q.us = Some(us + step);
                q
            };
            close(format!("u{k}"), column, &ht_difference(&moved, h), h);
        }
    }
}

/// Numbers drawn uniformly from `[lo, hi)`.
fn uniform(len: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    Tensor::rand_uniform(&[len], lo, hi, seed).to_vec()
}

/// `count` 4×4 affine transforms with random top rows.
fn affine(count: usize, seed: u64) -> Value {
    let top = uniform(12 * count, -1.0, 1.0, seed);
    let matrices: Vec<Vec<Vec<f64>>> = top
        .chunks(12)
        .map(|t| {
            let mut rows: Vec<Vec<f64>> = t.chunks(4).map(<[f64]>::to_vec).collect();
            rows.push(vec![0.0, 0.0, 0.0, 1.0]);
            rows
        })
        .collect();
    json!(matrices)
}

/// A small random `ht` input with GradBench's hand layout (a wrist, five fingers of four
/// bones, a forearm): 12 vertices, 8 triangles, 7 points.
fn random_ht(complicated: bool, mirrored: bool, rotation: f64, seed: u64) -> ht::Problem {
    let (bones, vertices, triangles, n) = (22, 12, 8, 7);
    let mut parents = vec![-1i64];
    for _ in 0..5 {
        let first = parents.len() as i64;
        parents.extend([0, first, first + 1, first + 2]);
    }
    parents.push(0);
    let positions: Vec<Vec<f64>> = uniform(3 * vertices, -1.0, 1.0, seed + 1)
        .chunks(3)
        .map(|p| vec![p[0], p[1], p[2], 1.0])
        .collect();
    let weights: Vec<Vec<f64>> = uniform(bones * vertices, -2.0, 1.0, seed + 2)
        .chunks(bones)
        .map(|w| w.iter().map(|&x| x.max(0.0)).collect())
        .collect();
    let corners: Vec<Vec<usize>> = (0..triangles)
        .map(|t| vec![t % vertices, (t + 3) % vertices, (t + 7) % vertices])
        .collect();
    let bound = if complicated { triangles } else { vertices };
    let correspondences: Vec<usize> = (0..n).map(|i| (5 * i + 2) % bound).collect();
    let points: Vec<Vec<f64>> = uniform(3 * n, -1.0, 1.0, seed + 3)
        .chunks(3)
        .map(<[f64]>::to_vec)
        .collect();
    let us: Vec<Vec<f64>> = if complicated {
        uniform(2 * n, 0.0, 0.5, seed + 4)
            .chunks(2)
            .map(<[f64]>::to_vec)
            .collect()
    } else {
        Vec::new()
    };
    let mut theta = uniform(ht::POSE_PARAMETERS, -1.0, 1.0, seed + 5);
    for t in &mut theta[..3] {
        *t *= rotation;
    }
    let input = json!({
        "theta": theta,
        "us": us,
        "data": {
            "model": {
                "bone_count": bones,
                "bone_names": (0..bones).map(|b| format!("bone{b}")).collect::<Vec<_>>(),
                "parents": parents,
                "base_relatives": affine(bones, seed + 6),
                "inverse_base_absolutes": affine(bones, seed + 7),
                "base_positions": positions,
                "weights": weights,
                "triangles": corners,
                "is_mirrored": mirrored,
            },
            "correspondences": correspondences,
            "points": points,
        },
    });
    ht::prepare(&input).unwrap().0
}

#[test]
fn ht_jacobian() {
    for (complicated, mirrored, rotation, seed) in [
        (true, false, 1.0, 10),
        (true, true, 1.0, 20),
        (false, false, 1.0, 30),
        (false, true, 1.0, 40),
        // A global rotation of norm below 10⁻⁴, taken as the identity on both sides.
        (true, false, 1e-6, 50),
    ] {
        let p = random_ht(complicated, mirrored, rotation, seed);
        let at = format!("ht complicated={complicated} mirrored={mirrored} rotation={rotation}");
        check_ht(&at, &p);
    }
    for file in [
        "ht-small-complicated-hand1.json",
        "ht-small-simple-hand1.json",
        "ht-default-hand1.json",
    ] {
        for w in vector_file(file)["workloads"].as_array().unwrap() {
            let (p, _) = ht::prepare(&w["input"]).unwrap();
            check_ht(&format!("{file} {}", w["description"]), &p);
        }
    }
}
