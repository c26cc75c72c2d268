//! `ht`: hand tracking (ADBench). A hand model (a hierarchy of bones and a skinned mesh) is
//! posed by 26 parameters `θ`: a global angle-axis rotation, a global translation and 20 finger
//! angles. The objective is the residual of each observed point against the posed model: the
//! point minus its corresponding vertex ("simple" variant, `us` empty), or minus the point of
//! its corresponding triangle at barycentric coordinates `(u₀, u₁, 1 − u₀ − u₁)`
//! ("complicated" variant). The jacobian is that of the residuals (`3N` rows) with respect to
//! `(u₀, u₁, θ)` in the complicated variant (each point's residual depends only on its own
//! `u`, so two columns hold every point's) and to `θ` in the simple one.
//!
//! [`pose_frames`] turns `θ` into one affine map `F` (`[3, 4B + 1]`) that poses any vertex
//! from its blend row (its skinning weights times its rest position, and a 1). [`residuals`]
//! poses the vertices the points reach and reads them ([`surface_residuals`] for the
//! triangles' barycentric points). Residuals are computed coordinate by coordinate (`[3, N]`)
//! and written out point by point when encoded, as manual's column-major jacobian is.
//!
//! The jacobian's 26 pose columns come from one forward pass with the unit directions batched
//! (`pose_residuals_jvp_vmap`): [`pose_residuals`] writes the residuals, for a fixed `us`, as
//! `[−F | I]` times each point's blend row (barycentric mix of its triangle's) and position,
//! so the batch costs two matrix products (values and tangents). One `jvp` per direction
//! through the gathers of [`residuals`] took two to five times manual's time at 51 200
//! points. The `u₀` and `u₁` columns are two forward passes of [`surface_residuals`], every
//! point's `u` moved at once. Everything after decoding is timed: the vertices reached and
//! their blend rows ([`Surface`]) and the points' skin are built on every call.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, matrix, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// The number of pose parameters: global rotation (3), global translation (3), and four
/// angles for each of five fingers.
pub const POSE_PARAMETERS: usize = 26;

/// The bones the pose layout addresses: the wrist, then four bones for each of five fingers.
const POSED_BONES: usize = 21;

/// The bone hierarchy, level by level from the roots, so that each level's absolute
/// transforms are one batched product with its parents' (which an earlier level computed).
#[derive(Clone, Debug)]
pub struct Hierarchy {
    /// The root bones.
    roots: Tensor<i64>,
    /// Each further level: its bones, and the positions of their parents among the bones of
    /// the levels before it (in level order).
    levels: Vec<(Tensor<i64>, Tensor<i64>)>,
    /// The position of each bone in level order.
    order: Tensor<i64>,
}

impl Hierarchy {
    /// The levels of the tree `parents` (−1 for a root; a parent comes before its children).
    fn new(parents: &[i64]) -> Result<Hierarchy, String> {
        let mut depth = vec![0usize; parents.len()];
        for (bone, &parent) in parents.iter().enumerate() {
            match usize::try_from(parent) {
                Ok(p) if p < bone => depth[bone] = depth[p] + 1,
                Err(_) if parent == -1 => {}
                _ => {
                    return Err(format!(
                        "ht: data.model.parents[{bone}] is {parent}: a parent must be −1 or an \
                         earlier bone"
                    ))
                }
            }
        }
        let height = depth.iter().max().map_or(0, |d| d + 1);
        let mut position = vec![0i64; parents.len()];
        let mut placed = 0i64;
        let mut levels = Vec::with_capacity(height);
        for level in 0..height {
            let bones: Vec<usize> = (0..parents.len()).filter(|&b| depth[b] == level).collect();
            let parent_positions: Vec<i64> = bones
                .iter()
                .map(|&b| usize::try_from(parents[b]).map_or(-1, |p| position[p]))
                .collect();
            for &b in &bones {
                position[b] = placed;
                placed += 1;
            }
            let ids: Vec<i64> = bones.iter().map(|&b| b as i64).collect();
            levels.push((Tensor::from(ids), Tensor::from(parent_positions)));
        }
        let (roots, _) = levels.remove(0);
        Ok(Hierarchy {
            roots,
            levels,
            order: Tensor::from(position),
        })
    }
}

/// The hand model as tensors, and the constants the pose is built from.
#[derive(Clone, Debug)]
pub struct Model {
    /// Each bone's rest transform relative to its parent, `[B, 4, 4]`.
    pub base_relatives: Tensor<f64>,
    /// The inverse of each bone's absolute rest transform, `[B, 4, 4]`.
    pub inverse_base_absolutes: Tensor<f64>,
    /// The mesh vertices in homogeneous coordinates, `[V, 4]`.
    pub base_positions: Tensor<f64>,
    /// The skinning weight of each bone at each vertex, `[V, B]`.
    pub weights: Tensor<f64>,
    /// The mesh triangles' vertices.
    pub triangles: Vec<[usize; 3]>,
    /// Whether the model's x axis is mirrored.
    pub is_mirrored: bool,
    /// The bone hierarchy.
    pub hierarchy: Hierarchy,
    /// Where each bone's three Euler angles (x, z, y) are read in `[0, θ]`: `[3B]`, 0 for an
    /// angle the pose does not set.
    pub pose: Tensor<i64>,
    /// Rotation generators `K` of the Euler angles' axes in the order x, z, y, as 4×4
    /// matrices: a rotation by `t` is `I + sin t · K + (1 − cos t) · K²`. `[3, 4, 4]`.
    pub axes: Tensor<f64>,
    /// Their squares `K²`, `[3, 4, 4]`.
    pub axes_squared: Tensor<f64>,
    /// The 3×3 generators of the x, y and z axes (`[a]×` is `Σᵢ aᵢ Kᵢ`), `[3, 3, 3]`.
    pub cross: Tensor<f64>,
    /// The 3×3 identity.
    pub identity: Tensor<f64>,
    /// The 4×4 identity.
    pub identity4: Tensor<f64>,
    /// `[[−1], [1], [1]]`: the x axis mirrored.
    pub mirror: Tensor<f64>,
}

/// The 3×3 generator of rotations about axis `axis` (0 = x, 1 = y, 2 = z).
fn generator(axis: usize) -> [[f64; 3]; 3] {
    let mut k = [[0.0; 3]; 3];
    let (i, j) = ((axis + 1) % 3, (axis + 2) % 3);
    k[j][i] = 1.0;
    k[i][j] = -1.0;
    k
}

impl Model {
    /// Where the pose reads each bone's Euler angles: finger `f` (bones `1 + 4f` to `4 + 4f`)
    /// has angles x and z at its second bone (`θ[6 + 4f]`, `θ[7 + 4f]`) and x at its third
    /// and fourth (`θ[8 + 4f]`, `θ[9 + 4f]`); every other angle is 0 (index 0 of `[0, θ]`).
    fn pose_indices(bones: usize) -> Tensor<i64> {
        let mut at = vec![0i64; 3 * bones];
        for finger in 0..5 {
            let (bone, theta) = (2 + 4 * finger, 6 + 4 * finger);
            at[3 * bone] = 1 + theta as i64;
            at[3 * bone + 1] = 2 + theta as i64;
            at[3 * (bone + 1)] = 3 + theta as i64;
            at[3 * (bone + 2)] = 4 + theta as i64;
        }
        Tensor::from(at)
    }

    /// The rotation constants: the Euler generators in angle order x, z, y, padded to 4×4,
    /// with their squares; the angle-axis generators; the 3×3 and 4×4 identities; the mirror.
    fn constants() -> [Tensor<f64>; 6] {
        let embed = |k: [[f64; 3]; 3]| {
            let mut m = [0.0; 16];
            for r in 0..3 {
                for c in 0..3 {
                    m[4 * r + c] = k[r][c];
                }
            }
            m
        };
        let square = |k: [[f64; 3]; 3]| {
            let mut s = [[0.0; 3]; 3];
            for r in 0..3 {
                for c in 0..3 {
                    s[r][c] = (0..3).map(|j| k[r][j] * k[j][c]).sum();
                }
            }
            s
        };
        let euler = [0, 2, 1].map(generator);
        let axes: Vec<f64> = euler.iter().flat_map(|&k| embed(k)).collect();
        let squares: Vec<f64> = euler.iter().flat_map(|&k| embed(square(k))).collect();
        let cross: Vec<f64> = (0..3).flat_map(generator).flatten().collect();
        let identity = |n: usize| {
            let data = (0..n * n).map(|i| f64::from(i % (n + 1) == 0)).collect();
            Tensor::from_vec(data, &[n, n])
        };
        [
            Tensor::from_vec(axes, &[3, 4, 4]),
            Tensor::from_vec(squares, &[3, 4, 4]),
            Tensor::from_vec(cross, &[3, 3, 3]),
            identity(3),
            identity(4),
            Tensor::from_vec(vec![-1.0, 1.0, 1.0], &[3, 1]),
        ]
    }
}

/// What the points read of the mesh: the vertices the correspondences reach (only those are
/// posed), their blend rows, and where each point reads them.
#[derive(Clone, Debug)]
pub struct Surface {
    /// For each vertex reached, `w_b · p` for every bone `b` (its weight times its homogeneous
    /// rest position), then a 1: `[S, 4B + 1]`. `F` times its transpose poses the vertices.
    pub blend: Tensor<f64>,
    /// Each point's vertex (simple variant: one tensor) or its triangle's three
    /// (complicated: three tensors), as indices of `gather` along the columns of the posed
    /// vertices: `[3, N]`, a point's vertex repeated on the three coordinates' rows.
    pub corners: Vec<Tensor<i64>>,
}

impl Surface {
    /// The vertices `p`'s correspondences reach, in order of first use, and their blend rows.
    pub fn new(p: &Problem) -> Surface {
        let m = &p.model;
        let (count, bones) = (m.weights.shape()[0], m.weights.shape()[1]);
        let (weights, positions) = (m.weights.to_vec(), m.base_positions.to_vec());
        let mut slot = vec![usize::MAX; count];
        let mut blend = Vec::new();
        let mut reached = 0;
        let mut read = |v: usize| -> i64 {
            if slot[v] == usize::MAX {
                slot[v] = reached;
                reached += 1;
                for w in &weights[v * bones..(v + 1) * bones] {
                    blend.extend(positions[4 * v..4 * v + 4].iter().map(|x| w * x));
                }
                blend.push(1.0);
            }
            slot[v] as i64
        };
        let n = p.correspondences.len();
        let mut corner = |vertex: &dyn Fn(usize) -> usize| {
            let row: Vec<i64> = p.correspondences.iter().map(|&c| read(vertex(c))).collect();
            let mut rows = Vec::with_capacity(3 * n);
            for _ in 0..3 {
                rows.extend_from_slice(&row);
            }
            Tensor::from_vec(rows, &[3, n])
        };
        let corners = match &p.us {
            Some(_) => (0..3).map(|k| corner(&|t| m.triangles[t][k])).collect(),
            None => vec![corner(&|v| v)],
        };
        Surface {
            blend: Tensor::from_vec(blend, &[reached, 4 * bones + 1]),
            corners,
        }
    }

    /// The points' skin, `[N, 4B + 4]`: each point's row is the blend row of its vertex
    /// (simple) or the barycentric combination `u₀ b₀ + u₁ b₁ + (1 − u₀ − u₁) b₂` of its
    /// triangle's three (complicated), then the point itself.
    pub fn skin(&self, p: &Problem) -> Tensor<f64> {
        let (blend, width) = (self.blend.to_vec(), self.blend.shape()[1]);
        let corners: Vec<Vec<i64>> = self.corners.iter().map(Tensor::to_vec).collect();
        let us = p.us.as_ref().map(Tensor::to_vec);
        let points = p.points.to_vec();
        let n = p.correspondences.len();
        let mut skin = Vec::with_capacity((width + 3) * n);
        for i in 0..n {
            let row = |k: usize| {
                let v = corners[k][i] as usize;
                &blend[v * width..(v + 1) * width]
            };
            match &us {
                Some(u) => {
                    let (u0, u1) = (u[i], u[n + i]);
                    let u2 = 1.0 - u0 - u1;
                    let mixed = row(0).iter().zip(row(1)).zip(row(2));
                    skin.extend(mixed.map(|((a, b), c)| u0 * a + u1 * b + u2 * c));
                }
                None => skin.extend_from_slice(row(0)),
            }
            skin.extend((0..3).map(|j| points[j * n + i]));
        }
        Tensor::from_vec(skin, &[n, width + 3])
    }
}

/// The pose as one affine map `F = [R M T₁ … R M T_B | t]` (`[3, 4B + 1]`): `F` times a
/// vertex's blend row (`w_b p` for each bone `b`, then 1) is its posed position.
///
/// Each bone's relative transform is its rest transform times the rotation
/// `R_z R_y R_x` of its Euler angles, each axis rotation `I + sin t · K + (1 − cos t) · K²`
/// of all bones at once; the absolute transforms follow the hierarchy a level at a time, and
/// `T_b` is the top three rows of bone `b`'s absolute transform times its inverse rest one.
/// Skinning (`Σ_b w_b T_b p`) is linear in them. `M` mirrors the x axis for a mirrored model;
/// `R` is the global rotation (angle-axis, Rodrigues' formula; the identity below a norm of
/// 10⁻⁴) and `t` the global translation.
#[differentiable(vmap)]
pub fn pose_frames(theta: &Tensor<f64>, #[nodiff] model: &Model) -> Tensor<f64> {
    let bones = model.base_relatives.shape()[0];
    let angles = theta
        .pad(&[(1, 0)], 0.0)
        .index_select(0, &model.pose)
        .reshape(&[bones, 3, 1, 1]);
    let rotations = (angles.sin() * &model.axes + (1.0 - angles.cos()) * &model.axes_squared)
        + &model.identity4;
    let rx = rotations
        .shrink(&[(0, bones), (0, 1), (0, 4), (0, 4)])
        .squeeze(1);
    let rz = rotations
        .shrink(&[(0, bones), (1, 2), (0, 4), (0, 4)])
        .squeeze(1);
    let ry = rotations
        .shrink(&[(0, bones), (2, 3), (0, 4), (0, 4)])
        .squeeze(1);
    let relatives = model.base_relatives.matmul(&rz.matmul(&ry).matmul(&rx));
    let h = &model.hierarchy;
    let mut absolutes = relatives.index_select(0, &h.roots);
    for (level, parents) in &h.levels {
        let posed = absolutes
            .index_select(0, parents)
            .matmul(&relatives.index_select(0, level));
        absolutes = concat(&[&absolutes, &posed], 0);
    }
    let mut transforms = absolutes
        .index_select(0, &h.order)
        .matmul(&model.inverse_base_absolutes)
        .shrink(&[(0, bones), (0, 3), (0, 4)])
        .permute(&[1, 0, 2])
        .reshape(&[3, 4 * bones]);
    if model.is_mirrored {
        transforms *= &model.mirror;
    }
    // The global rotation. The norm is kept `[1, 1]`, not 0-d: in the batched twin a 0-d value
    // times a matrix read from a field of `model` is not aligned on the batch axis (the product
    // fails, or is wrong when the batch is as long as the matrix's last axis).
    let axis_angle = theta.shrink(&[(0, 3)]);
    let norm = (&axis_angle * &axis_angle)
        .sum_axes(&[0], true)
        .sqrt()
        .reshape(&[1, 1]);
    let small = norm.lt(1e-4);
    let safe = where_cond(&small, &1.0, &norm);
    let axis = axis_angle.reshape(&[3, 1]) / &safe;
    let sin = safe.sin();
    let cos = safe.cos();
    let rodrigues = &model.identity * &cos
        + axis.matmul(&axis.t()) * (1.0 - &cos)
        + (axis.reshape(&[3, 1, 1]) * &model.cross).sum_axes(&[0], false) * &sin;
    let rotation = where_cond(&small, &model.identity, &rodrigues);
    let translation = theta.shrink(&[(3, 6)]).reshape(&[3, 1]);
    concat(&[&rotation.matmul(&transforms), &translation], 1)
}

/// The complicated variant's residuals `[3, N]` for posed triangles: each point minus the
/// point of its triangle (corners `a`, `b`, `c`, each `[3, N]`) at barycentric coordinates
/// `(u₀, u₁, 1 − u₀ − u₁)`, `us` holding the `u₀` and the `u₁` of every point (`[2, N]`).
#[differentiable]
pub fn surface_residuals(
    us: &Tensor<f64>,
    #[nodiff] a: &Tensor<f64>,
    #[nodiff] b: &Tensor<f64>,
    #[nodiff] c: &Tensor<f64>,
    #[nodiff] points: &Tensor<f64>,
) -> Tensor<f64> {
    let n = points.shape()[1];
    let u0 = us.shrink(&[(0, 1), (0, n)]);
    let u1 = us.shrink(&[(1, 2), (0, n)]);
    let w2 = 1.0 - &u0 - &u1;
    points - (a * u0 + b * u1 + c * w2)
}

/// Either variant's residuals `[3, N]` for a fixed `us`, as one product: `[−F | I]` times the
/// transposed points' [`Surface::skin`] (`skin_t`, `[4B + 4, N]`), `F` the [`pose_frames`].
#[differentiable(vmap)]
pub fn pose_residuals(
    theta: &Tensor<f64>,
    #[nodiff] model: &Model,
    #[nodiff] skin_t: &Tensor<f64>,
) -> Tensor<f64> {
    concat(&[&-pose_frames(theta, model), &model.identity], 1).matmul(skin_t)
}

/// A decoded `ht` input, its points and barycentric coordinates coordinate by coordinate.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The pose, `[26]`.
    pub theta: Tensor<f64>,
    /// The `u₀` and the `u₁` of every point, `[2, N]` (complicated variant), or `None`
    /// (simple).
    pub us: Option<Tensor<f64>>,
    /// The hand model.
    pub model: Model,
    /// Each point's triangle (complicated) or vertex (simple).
    pub correspondences: Vec<usize>,
    /// The observed points, `[3, N]`.
    pub points: Tensor<f64>,
}

/// The posed vertices of `surface`, `[3, S]`.
pub fn posed_vertices(p: &Problem, surface: &Surface) -> Tensor<f64> {
    pose_frames(&p.theta, &p.model).matmul(&surface.blend.t())
}

/// Each corner of the points' triangles (complicated) or the points' vertices (simple),
/// posed: `[3, N]` each.
pub fn posed_corners(p: &Problem, surface: &Surface) -> Vec<Tensor<f64>> {
    let vertices = posed_vertices(p, surface);
    let corners = surface.corners.iter();
    corners.map(|c| vertices.gather(1, c)).collect()
}

/// The residuals of either variant, `[3, N]`.
pub fn residuals(p: &Problem, surface: &Surface) -> Tensor<f64> {
    let posed = posed_corners(p, surface);
    match &p.us {
        Some(us) => surface_residuals(us, &posed[0], &posed[1], &posed[2], &p.points),
        None => &p.points - &posed[0],
    }
}

/// The objective: the residuals, `[3, N]`.
pub fn objective(p: &Problem) -> Tensor<f64> {
    residuals(p, &Surface::new(p))
}

/// The jacobian: the columns of `u₀` and `u₁` (complicated variant), and the 26 columns of
/// the pose.
#[derive(Clone, Debug)]
pub struct Jacobian {
    /// `∂r/∂u₀` and `∂r/∂u₁` of every point at once, each `[3, N]` (none in the simple
    /// variant).
    pub barycentric: Vec<Tensor<f64>>,
    /// `∂r/∂θ_k` for each pose parameter: `[26, 3, N]`.
    pub pose: Tensor<f64>,
}

/// The jacobian from generated forward-mode derivatives: the 26 pose columns from one
/// `pose_residuals_jvp_vmap` (the unit directions batched: one product of the batch of
/// `F`'s tangents with the skin), and in the complicated variant the `u₀` and `u₁` columns
/// from two `surface_residuals_jvp` at the posed triangles, each moving every point's `u₀`
/// (or `u₁`) at once (a point's residual depends on its own `u` only).
pub fn jacobian(p: &Problem) -> Jacobian {
    let surface = Surface::new(p);
    let directions = Tensor::from_vec(
        (0..POSE_PARAMETERS * POSE_PARAMETERS)
            .map(|i| f64::from(i % (POSE_PARAMETERS + 1) == 0))
            .collect(),
        &[POSE_PARAMETERS, POSE_PARAMETERS],
    );
    let skin_t = surface.skin(p).t();
    let (_, pose) = pose_residuals_jvp_vmap(&p.theta, &p.model, &skin_t, Batch(&directions));
    let barycentric = match &p.us {
        Some(us) => {
            let posed = posed_corners(p, &surface);
            let n = p.correspondences.len();
            (0..2)
                .map(|k| {
                    let du = Tensor::<f64>::ones(&[1, n]).pad(&[(k, 1 - k), (0, 0)], 0.0);
                    let (a, b, c) = (&posed[0], &posed[1], &posed[2]);
                    surface_residuals_jvp(us, a, b, c, &p.points, &du).1
                })
                .collect()
        }
        None => Vec::new(),
    };
    Jacobian { barycentric, pose }
}

/// Residuals `[3, N]` as GradBench lays them out, point by point.
fn objective_json(r: Tensor<f64>) -> Value {
    let (data, n) = (r.to_vec(), r.shape()[1]);
    Value::from(
        (0..3 * n)
            .map(|k| data[(k % 3) * n + k / 3])
            .collect::<Vec<f64>>(),
    )
}

/// The jacobian as GradBench lays it out: one row per residual (point by point), the
/// columns `u₀`, `u₁` (complicated variant) and then the 26 of the pose.
fn jacobian_json(j: Jacobian) -> Value {
    let barycentric: Vec<Vec<f64>> = j.barycentric.iter().map(Tensor::to_vec).collect();
    let pose = j.pose.to_vec();
    let n = j.pose.shape()[2];
    Value::from(
        (0..3 * n)
            .map(|r| {
                let (i, c) = (r / 3, r % 3);
                let row = barycentric.iter().map(|b| b[c * n + i]);
                let row = row.chain((0..POSE_PARAMETERS).map(|k| pose[(3 * k + c) * n + i]));
                Value::from(row.collect::<Vec<f64>>())
            })
            .collect::<Vec<_>>(),
    )
}

#[derive(Deserialize)]
struct ModelInput {
    bone_count: usize,
    bone_names: Vec<String>,
    parents: Vec<i64>,
    base_relatives: Vec<Vec<Vec<f64>>>,
    inverse_base_absolutes: Vec<Vec<Vec<f64>>>,
    base_positions: Vec<Vec<f64>>,
    weights: Vec<Vec<f64>>,
    triangles: Vec<Vec<i64>>,
    is_mirrored: bool,
}

#[derive(Deserialize)]
struct DataInput {
    model: ModelInput,
    correspondences: Vec<i64>,
    points: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct Input {
    theta: Vec<f64>,
    data: DataInput,
    us: Vec<Vec<f64>>,
    #[serde(flatten)]
    runs: Runs,
}

/// `count` 4×4 matrices as a `[count, 4, 4]` tensor.
fn transforms(name: &str, m: Vec<Vec<Vec<f64>>>, count: usize) -> Result<Tensor<f64>, String> {
    if m.len() != count {
        return Err(format!(
            "ht: {name} has {} matrices, expected {count} (one per bone)",
            m.len()
        ));
    }
    let mut data = Vec::with_capacity(16 * count);
    for (b, rows) in m.into_iter().enumerate() {
        if rows.len() != 4 {
            return Err(format!(
                "ht: {name}[{b}] has {} rows, expected 4",
                rows.len()
            ));
        }
        data.extend(matrix(&format!("ht: {name}[{b}]"), rows, 4)?.to_vec());
    }
    Ok(Tensor::from_vec(data, &[count, 4, 4]))
}

/// `rows` of `width` entries each, coordinate by coordinate: a `[width, rows]` tensor.
fn columns(name: &str, rows: &[Vec<f64>], width: usize) -> Result<Tensor<f64>, String> {
    if let Some((i, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != width) {
        return Err(format!(
            "{name}: row {i} has {} entries, expected {width}",
            row.len()
        ));
    }
    let data = (0..width).flat_map(|j| rows.iter().map(move |r| r[j]));
    Ok(Tensor::from_vec(data.collect(), &[width, rows.len()]))
}

/// Each entry of `indices` (named `name`) as an index below `bound`.
fn indices(name: &str, indices: &[i64], bound: usize) -> Result<Vec<usize>, String> {
    indices
        .iter()
        .enumerate()
        .map(|(i, &v)| match usize::try_from(v) {
            Ok(v) if v < bound => Ok(v),
            _ => Err(format!("ht: {name}[{i}] is {v}, not in 0..{bound}")),
        })
        .collect()
}

/// Decodes an `ht` input, checking every array against the bone, vertex and point counts.
pub fn prepare(input: &Value) -> Result<(Problem, Runs), String> {
    let Input {
        theta,
        data,
        us,
        runs,
    } = decode("ht", input)?;
    let m = data.model;
    let bones = m.parents.len();
    if m.bone_count != bones || m.bone_names.len() != bones {
        return Err(format!(
            "ht: data.model has bone_count {}, {} bone_names and {bones} parents",
            m.bone_count,
            m.bone_names.len()
        ));
    }
    if bones < POSED_BONES {
        return Err(format!(
            "ht: the pose sets the wrist and five fingers of four bones ({POSED_BONES} bones), \
             the model has {bones}"
        ));
    }
    if theta.len() != POSE_PARAMETERS {
        return Err(format!(
            "ht: theta has {} entries, expected {POSE_PARAMETERS}",
            theta.len()
        ));
    }
    let vertices = m.base_positions.len();
    if m.weights.len() != vertices {
        return Err(format!(
            "ht: data.model.weights has {} rows, base_positions {vertices}",
            m.weights.len()
        ));
    }
    let triangles = m
        .triangles
        .iter()
        .enumerate()
        .map(|(t, corners)| {
            let name = format!("data.model.triangles[{t}]");
            match indices(&name, corners, vertices)?[..] {
                [a, b, c] => Ok([a, b, c]),
                _ => Err(format!(
                    "ht: {name} has {} entries, expected 3",
                    corners.len()
                )),
            }
        })
        .collect::<Result<Vec<_>, String>>()?;
    let n = data.points.len();
    if data.correspondences.len() != n {
        return Err(format!(
            "ht: data has {} correspondences and {n} points",
            data.correspondences.len()
        ));
    }
    let complicated = !us.is_empty();
    if complicated && us.len() != n {
        return Err(format!(
            "ht: us has {} rows, expected {n} or none",
            us.len()
        ));
    }
    let bound = if complicated {
        triangles.len()
    } else {
        vertices
    };
    let [axes, axes_squared, cross, identity, identity4, mirror] = Model::constants();
    let model = Model {
        base_relatives: transforms("data.model.base_relatives", m.base_relatives, bones)?,
        inverse_base_absolutes: transforms(
            "data.model.inverse_base_absolutes",
            m.inverse_base_absolutes,
            bones,
        )?,
        base_positions: matrix("ht: data.model.base_positions", m.base_positions, 4)?,
        weights: matrix("ht: data.model.weights", m.weights, bones)?,
        triangles,
        is_mirrored: m.is_mirrored,
        hierarchy: Hierarchy::new(&m.parents)?,
        pose: Model::pose_indices(bones),
        axes,
        axes_squared,
        cross,
        identity,
        identity4,
        mirror,
    };
    let problem = Problem {
        theta: Tensor::from(theta),
        us: if complicated {
            Some(columns("ht: us", &us, 2)?)
        } else {
            None
        },
        model,
        correspondences: indices("data.correspondences", &data.correspondences, bound)?,
        points: columns("ht: data.points", &data.points, 3)?,
    };
    Ok((problem, runs))
}

/// Runs `objective` or `jacobian` on an `ht` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (problem, runs) = prepare(input)?;
    match function {
        "objective" => Ok(timed(runs, &problem, objective, objective_json)),
        "jacobian" => Ok(timed(runs, &problem, jacobian, jacobian_json)),
        _ => Err(unknown_function("ht", function)),
    }
}
