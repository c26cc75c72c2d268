//! `ba`: bundle adjustment as ADBench defines it: the weighted reprojection errors of P
//! observations of M points by N cameras and the weight errors `1 − w²`, and the sparse
//! Jacobian of both, `(2P + P) × (11N + 3M + P)`, in GradBench's `BASparseMat` layout.
//!
//! GradBench sends one camera, point, weight and feature with the counts N, M and P; they are
//! repeated as its reference tool repeats them (observation `i` sees camera `i mod N` and
//! point `i mod M`) when the input is decoded, outside the clock, and every observation is
//! then computed: nothing uses the repetition.
//!
//! **Objective.** [`reprojection`] is the projection of every observation at once, as
//! elementwise tensor code over one `[len]` tensor per parameter ([`Observations`], each
//! observation's camera and point gathered by index), which the macro fuses into one pass;
//! [`weight_error`] is `1 − w²`. A fused region has one result, so the `[2, len]` errors
//! evaluate each observation's projection once for x and once for y; about half of that time
//! is the sine and cosine of the angle, which the runtime computes in `f64` with a full-range
//! argument reduction. Splitting the region at the values x and y share (returning the pair)
//! measured no faster: the sine and cosine then become regions of their own, one reduction
//! each, and the shared values become tensors.
//!
//! **Jacobian.** Row `2i` (x) and row `2i + 1` (y) of observation `i` each have 15 entries:
//! the error's partial derivatives in the observation's camera (11), point (3) and weight.
//! Observation `i`'s errors depend on its own gathered parameters only, so the gradient of
//! `Σᵢ eᵢ` in the gathered parameters is every observation's row at once (the Jacobian is
//! block diagonal in them: row compression). One `reprojection_vjp` with a cotangent of ones
//! along x and one along y therefore give all `2 × 15` entries of every block; the gather is
//! a selection, so entry `(2i, 11c + k)` is the derivative in observation `i`'s copy of its
//! camera `c`'s parameter `k`, and the columns are the sparsity pattern. The slopes `−2w` of
//! the weight errors are `weight_error_vjp`'s. Nothing else is differentiated.
//!
//! Measured against the alternatives on ba1 / ba3 (31843 / 182072 observations, one loaded
//! core, the same run): this whole Jacobian took 11 / 70 ms; 15 `_jvp` passes of the function
//! with the gather inside (the tangent one-hot on one parameter of every camera, point or
//! weight: column compression) took 110 / 740 ms for the derivatives alone, and
//! `_vjp_vmap` of a one-observation function 95 / 660 ms. Forward mode needs 15 passes where
//! reverse mode needs 2, and each pass through a fused region evaluates all the partial
//! derivatives of an element anyway; with the gather inside, reverse mode would sum the rows
//! of the observations that share a camera.
//!
//! The observations are processed [`CHUNK`] at a time, each chunk vectorised: the gathered
//! parameters, the region's inputs and the gradients of a chunk stay in the core's cache, and
//! the memory a call touches is little more than its result's (which on the largest inputs,
//! run once or twice, is paid for in page faults). The gather is plain indexing: the
//! runtime's `gather` checks the indices, zero-fills and copies in separate passes, which
//! took 45 % of the objective's time.
use std::ops::Range;

use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{decode, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// The parameters of a camera: rotation (3, angle-axis), centre (3), focal length, principal
/// point (2), radial distortion (2).
pub const CAMERA: usize = 11;

/// The parameters one observation's errors depend on: its camera's, its point's and its
/// weight; the entries of one row of the Jacobian.
pub const BLOCK: usize = CAMERA + 3 + 1;

/// Observations per chunk: the ~50 `[CHUNK]` tensors a chunk's Jacobian uses fit in a core's
/// 2 MB L2 cache.
pub const CHUNK: usize = 4096;

/// Each observation's parameters, one `[len]` tensor per parameter: its camera's, its point's
/// and its weight. The leaves are in the order of a block's columns.
#[derive(Clone, Debug, Differentiable)]
pub struct Observations {
    /// The camera's rotation, angle-axis (Rodrigues).
    pub rotation: [Tensor<f64>; 3],
    /// The camera's centre.
    pub center: [Tensor<f64>; 3],
    /// The focal length.
    pub focal: Tensor<f64>,
    /// The principal point.
    pub principal: [Tensor<f64>; 2],
    /// The radial distortion coefficients.
    pub distortion: [Tensor<f64>; 2],
    /// The point.
    pub point: [Tensor<f64>; 3],
    /// The observation's weight.
    pub weight: Tensor<f64>,
}

/// The weighted reprojection errors `w (proj − feature)` of every observation, along x where
/// `along_x` holds and along y where it does not: `along_x` broadcasts against the `[len]`
/// observations, so a 0-d mask gives one `[len]` error and `[[true], [false]]` both, `[2, len]`.
///
/// `proj = f · distort(Xcam[..2] / Xcam[2]) + principal`, with `Xcam = R (X − C)`, `R` the
/// Rodrigues rotation of the angle-axis vector (`I + [r]×` where it is zero),
/// `distort(e) = e (1 + k₁ ‖e‖² + k₂ ‖e‖⁴)`: ADBench's operations in ADBench's order. All of it
/// is one fused region: each element is evaluated in one pass, without intermediate tensors.
#[differentiable]
pub fn reprojection(
    o: &Observations,
    #[nodiff] feature_x: &Tensor<f64>,
    #[nodiff] feature_y: &Tensor<f64>,
    #[nodiff] along_x: &Tensor<bool>,
) -> Tensor<f64> {
    let r0 = &o.rotation[0];
    let r1 = &o.rotation[1];
    let r2 = &o.rotation[2];
    let p0 = &o.point[0] - &o.center[0];
    let p1 = &o.point[1] - &o.center[1];
    let p2 = &o.point[2] - &o.center[2];
    let sq = r0 * r0 + r1 * r1 + r2 * r2;
    // The angle where it is not zero, 1 where it is (that branch is not selected below).
    let theta = where_cond(&sq.gt(0.0), &sq, &1.0).sqrt();
    let cos = theta.cos();
    let sin = theta.sin();
    let inverse = 1.0 / &theta;
    let w0 = r0 * &inverse;
    let w1 = r1 * &inverse;
    let w2 = r2 * &inverse;
    let along = (&w0 * &p0 + &w1 * &p1 + &w2 * &p2) * (1.0 - &cos);
    let turned0 = &p0 * &cos + (&w1 * &p2 - &w2 * &p1) * &sin + &w0 * &along;
    let turned1 = &p1 * &cos + (&w2 * &p0 - &w0 * &p2) * &sin + &w1 * &along;
    let turned2 = &p2 * &cos + (&w0 * &p1 - &w1 * &p0) * &sin + &w2 * &along;
    let q0 = where_cond(&sq.gt(0.0), &turned0, &(&p0 + (r1 * &p2 - r2 * &p1)));
    let q1 = where_cond(&sq.gt(0.0), &turned1, &(&p1 + (r2 * &p0 - r0 * &p2)));
    let q2 = where_cond(&sq.gt(0.0), &turned2, &(&p2 + (r0 * &p1 - r1 * &p0)));
    let e0 = &q0 / &q2;
    let e1 = &q1 / &q2;
    let rsq = &e0 * &e0 + &e1 * &e1;
    let l = 1.0 + &o.distortion[0] * &rsq + &o.distortion[1] * &rsq * &rsq;
    let x = (&e0 * &l * &o.focal + &o.principal[0] - feature_x) * &o.weight;
    let y = (&e1 * &l * &o.focal + &o.principal[1] - feature_y) * &o.weight;
    where_cond(along_x, &x, &y)
}

/// The weight errors `1 − w²`.
#[differentiable]
pub fn weight_error(w: &Tensor<f64>) -> Tensor<f64> {
    1.0 - w * w
}

/// A decoded `ba` input: the parameters and the observations.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The cameras, `[N, 11]`.
    pub cameras: Tensor<f64>,
    /// The points, `[M, 3]`.
    pub points: Tensor<f64>,
    /// The weights, `[P]`.
    pub weights: Tensor<f64>,
    /// The observed features, `[P, 2]`.
    pub features: Tensor<f64>,
    /// The camera of each observation.
    pub camera_of: Vec<usize>,
    /// The point of each observation.
    pub point_of: Vec<usize>,
}

impl Problem {
    /// The numbers of cameras, points and observations.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.cameras.shape()[0],
            self.points.shape()[0],
            self.weights.len(),
        )
    }

    /// The parameters of observations `range`, each camera's and point's gathered by index,
    /// and their features along x and y.
    ///
    /// # Panics
    /// When an observation's camera or point is out of range.
    pub fn observations(&self, range: Range<usize>) -> (Observations, [Tensor<f64>; 2]) {
        let cameras = self.cameras.as_slice().expect("contiguous cameras");
        let points = self.points.as_slice().expect("contiguous points");
        let features = self.features.as_slice().expect("contiguous features");
        let camera_of = &self.camera_of[range.clone()];
        let point_of = &self.point_of[range.clone()];
        let camera = |k: usize| gather(cameras, CAMERA, k, camera_of.iter().copied());
        let point = |k: usize| gather(points, 3, k, point_of.iter().copied());
        let feature = |k: usize| gather(features, 2, k, range.clone());
        let observations = Observations {
            rotation: [0, 1, 2].map(camera),
            center: [3, 4, 5].map(camera),
            focal: camera(6),
            principal: [7, 8].map(camera),
            distortion: [9, 10].map(camera),
            point: [0, 1, 2].map(point),
            weight: self.weights.shrink(&[(range.start, range.end)]),
        };
        (observations, [feature(0), feature(1)])
    }
}

/// Column `k` of the rows `rows` of `data`, row-major with `width` columns.
fn gather(
    data: &[f64],
    width: usize,
    k: usize,
    rows: impl ExactSizeIterator<Item = usize>,
) -> Tensor<f64> {
    let len = rows.len();
    Tensor::from_vec(rows.map(|r| data[r * width + k]).collect(), &[len])
}

/// The objective: the reprojection errors (`[2, P]`, the x errors, then the y errors) and the
/// weight errors (`[P]`).
pub fn objective(problem: &Problem) -> (Tensor<f64>, Tensor<f64>) {
    objective_in_chunks(problem, CHUNK)
}

/// [`objective`], `chunk` observations at a time.
pub fn objective_in_chunks(problem: &Problem, chunk: usize) -> (Tensor<f64>, Tensor<f64>) {
    let p = problem.weights.len();
    let both = Tensor::from_vec(vec![true, false], &[2, 1]);
    let mut errors = vec![0.0; 2 * p];
    for start in (0..p).step_by(chunk) {
        let end = (start + chunk).min(p);
        let (observations, [feature_x, feature_y]) = problem.observations(start..end);
        let part = reprojection(&observations, &feature_x, &feature_y, &both);
        let part = part.as_slice().expect("a fresh tensor");
        let (x, y) = part.split_at(end - start);
        errors[start..end].copy_from_slice(x);
        errors[p + start..p + end].copy_from_slice(y);
    }
    (
        Tensor::from_vec(errors, &[2, p]),
        weight_error(&problem.weights),
    )
}

/// A sparse matrix in compressed rows, as GradBench's `BASparseMat` holds it: the entries of
/// row `r` are `cols[rows[r]..rows[r + 1]]` and `vals[rows[r]..rows[r + 1]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseMatrix {
    /// Where each row starts in `cols` and `vals`, and the number of entries last.
    pub rows: Vec<u32>,
    /// The column of each entry.
    pub cols: Vec<u32>,
    /// The value of each entry.
    pub vals: Vec<f64>,
}

/// The Jacobian of the objective, `(2P + P) × (11N + 3M + P)`: the rows `2i` (x) and
/// `2i + 1` (y) of observation `i`'s errors, each with the columns of its camera's 11
/// parameters, its point's 3 and its weight, then the P rows of the weight errors, each with
/// its weight's column.
pub fn jacobian(problem: &Problem) -> SparseMatrix {
    jacobian_in_chunks(problem, CHUNK)
}

/// [`jacobian`], `chunk` observations at a time.
pub fn jacobian_in_chunks(problem: &Problem, chunk: usize) -> SparseMatrix {
    let (n, m, p) = problem.sizes();
    let entries = 2 * BLOCK * p + p;
    let mut rows = Vec::with_capacity(3 * p + 1);
    let mut cols = Vec::with_capacity(entries);
    let mut vals = Vec::with_capacity(entries);
    let (point_base, weight_base) = (CAMERA * n, CAMERA * n + 3 * m);
    rows.push(0);
    for start in (0..p).step_by(chunk) {
        let end = (start + chunk).min(p);
        let (observations, [feature_x, feature_y]) = problem.observations(start..end);
        let ones = Tensor::ones(&[end - start]);
        let slopes = |along_x: bool| {
            let along_x = Tensor::scalar(along_x);
            reprojection_vjp(&observations, &feature_x, &feature_y, &along_x, &ones).1
        };
        let (along_x, along_y) = (slopes(true), slopes(false));
        let (gx, gy) = (leaves(&along_x), leaves(&along_y));
        for i in start..end {
            let camera = CAMERA * problem.camera_of[i];
            let point = point_base + 3 * problem.point_of[i];
            let columns: [u32; BLOCK] = std::array::from_fn(|k| match k {
                _ if k < CAMERA => (camera + k) as u32,
                _ if k < CAMERA + 3 => (point + k - CAMERA) as u32,
                _ => (weight_base + i) as u32,
            });
            for g in [&gx, &gy] {
                rows.push((rows.len() * BLOCK) as u32);
                cols.extend_from_slice(&columns);
                vals.extend_from_slice(&std::array::from_fn::<f64, BLOCK, _>(|k| g[k][i - start]));
            }
        }
    }
    for start in (0..p).step_by(chunk) {
        let end = (start + chunk).min(p);
        let weights = problem.weights.shrink(&[(start, end)]);
        let (_, slopes) = weight_error_vjp(&weights, &Tensor::ones(&[end - start]));
        vals.extend_from_slice(slopes.as_slice().expect("a fresh gradient"));
        for i in start..end {
            rows.push((2 * BLOCK * p + i + 1) as u32);
            cols.push((weight_base + i) as u32);
        }
    }
    SparseMatrix { rows, cols, vals }
}

/// The leaves of a gradient, in the order of a block's columns.
fn leaves(g: &Observations) -> [&[f64]; BLOCK] {
    let leaves = g.leaves();
    std::array::from_fn(|k| leaves[k].as_slice().expect("a fresh gradient"))
}

#[derive(Deserialize)]
struct Input {
    n: usize,
    m: usize,
    p: usize,
    cam: Vec<f64>,
    x: Vec<f64>,
    w: f64,
    feat: Vec<f64>,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes a `ba` input: one camera, point, weight and feature, repeated as GradBench's
/// reference tool repeats them (N cameras, M points, P observations, observation `i` of
/// camera `i mod N` and point `i mod M`).
pub fn prepare(input: &Value) -> Result<(Problem, Runs), String> {
    let Input {
        n,
        m,
        p,
        cam,
        x,
        w,
        feat,
        runs,
    } = decode("ba", input)?;
    for (name, values, expected) in [("cam", &cam, CAMERA), ("x", &x, 3), ("feat", &feat, 2)] {
        if values.len() != expected {
            return Err(format!(
                "ba: {name} has {} entries, expected {expected}",
                values.len()
            ));
        }
    }
    if n == 0 || m == 0 || p == 0 {
        return Err(format!("ba: needs n, m, p ≥ 1, got {n}, {m}, {p}"));
    }
    let columns = CAMERA * n + 3 * m + p;
    let entries = (2 * BLOCK + 1) * p;
    if u32::try_from(columns.max(entries)).is_err() {
        return Err(format!(
            "ba: n = {n}, m = {m}, p = {p} give {columns} columns and {entries} entries, more \
             than the Jacobian's 32-bit indices hold"
        ));
    }
    let repeat = |v: &[f64], count: usize| Tensor::from_vec(v.repeat(count), &[count, v.len()]);
    let problem = Problem {
        cameras: repeat(&cam, n),
        points: repeat(&x, m),
        weights: Tensor::full(&[p], w),
        features: repeat(&feat, p),
        camera_of: (0..p).map(|i| i % n).collect(),
        point_of: (0..p).map(|i| i % m).collect(),
    };
    Ok((problem, runs))
}

/// The objective's JSON as GradBench's reference tool writes it: the first observation's
/// errors and the number of observations.
fn objective_json((reprojection, weight_errors): (Tensor<f64>, Tensor<f64>)) -> Value {
    let p = weight_errors.len();
    let errors = reprojection.as_slice().expect("a fresh tensor");
    let weight_errors = weight_errors.as_slice().expect("a fresh tensor");
    json!({
        "reproj_error": {"elements": [errors[0], errors[p]], "repeated": p},
        "w_err": {"element": weight_errors[0], "repeated": p},
    })
}

/// The Jacobian's JSON as GradBench's reference tool writes it: the first 30 entries of each
/// array (the first observation's two rows) and the last.
fn jacobian_json(j: SparseMatrix) -> Value {
    fn ends<T: Copy + Into<Value>>(v: &[T]) -> Value {
        let head = &v[..v.len().min(2 * BLOCK)];
        let mut out: Vec<Value> = head.iter().map(|&a| a.into()).collect();
        out.push(v[v.len() - 1].into());
        Value::from(out)
    }
    json!({"rows": ends(&j.rows), "cols": ends(&j.cols), "vals": ends(&j.vals)})
}

/// Runs `objective` or `jacobian` on a `ba` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (problem, runs) = prepare(input)?;
    match function {
        "objective" => Ok(timed(runs, &problem, objective, objective_json)),
        "jacobian" => Ok(timed(runs, &problem, jacobian, jacobian_json)),
        _ => Err(unknown_function("ba", function)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> Value {
        json!({"n": 1, "m": 1, "p": 1, "cam": [0.1, 0.2, 0.3, 0.0, 0.0, -5.0, 1.0, 0.0, 0.0, 0.0, 0.0],
               "x": [0.0, 0.0, 0.0], "w": 2.0, "feat": [0.0, 0.0]})
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let with = |key: &str, value: Value| {
            let mut i = input();
            i[key] = value;
            prepare(&i).unwrap_err()
        };
        assert_eq!(
            with("cam", json!([1.0])),
            "ba: cam has 1 entries, expected 11"
        );
        assert_eq!(
            with("feat", json!([1.0, 2.0, 3.0])),
            "ba: feat has 3 entries, expected 2"
        );
        assert_eq!(with("m", json!(0)), "ba: needs n, m, p ≥ 1, got 1, 0, 1");
        assert!(with("w", json!("one")).starts_with("ba: bad input: "));
        assert!(with("p", json!(200_000_000)).contains("32-bit indices"));
    }

    /// One observation: its two rows, then its weight error's, and every array shorter than
    /// the 30 entries GradBench's reference tool writes.
    #[test]
    fn one_observation() {
        let (problem, _) = prepare(&input()).unwrap();
        let j = jacobian(&problem);
        let block: Vec<u32> = (0..15).collect();
        assert_eq!(j.rows, [0, 15, 30, 31]);
        assert_eq!(j.cols, [block.clone(), block, vec![14]].concat());
        assert_eq!(j.vals[30], -4.0);
        let out = jacobian_json(j);
        assert_eq!(out["rows"], json!([0, 15, 30, 31, 31]));
        assert_eq!(out["vals"].as_array().unwrap().len(), 31);
        let out = objective_json(objective(&problem));
        assert_eq!(out["w_err"], json!({"element": -3.0, "repeated": 1}));
    }
}
