//! Matrix functions and factorizations: every rule against finite differences and by the
//! dot-product test on single and batched, well-conditioned matrices, and the factorizations
//! against hand-computed values.

use rune_runtime::__private::rules::*;
use rune_runtime::{dual_of, einsum, primal_of, tangent_of, Dual, Element, Tensor};

use crate::common::{assert_close, panic_message, shifted, spd, tensor, uniform, Case};

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (label, shape) in [
        ("[3, 4]", &[3usize, 4][..]),
        ("batched [2, 3, 3]", &[2, 3, 3]),
    ] {
        let x: Tensor<T> = uniform(shape, -1.0, 1.0, 800);
        cases.push(Case::new(
            "trace",
            label,
            vec![x.clone()],
            |x| x[0].trace(),
            |_, t| trace_jvp(&t[0]),
            |x, g| vec![trace_vjp(g, x[0].shape())],
        ));
        cases.push(Case::new(
            "diagonal",
            label,
            vec![x.clone()],
            |x| x[0].diagonal(),
            |_, t| diagonal_jvp(&t[0]),
            |x, g| vec![diagonal_vjp(g, x[0].shape())],
        ));
        for k in [0, 1, -1] {
            cases.push(Case::new(
                "triu",
                label,
                vec![x.clone()],
                move |x| x[0].triu(k),
                move |_, t| triu_jvp(k, &t[0]),
                move |_, g| vec![triu_vjp(g, k)],
            ));
            cases.push(Case::new(
                "tril",
                label,
                vec![x.clone()],
                move |x| x[0].tril(k),
                move |_, t| tril_jvp(k, &t[0]),
                move |_, g| vec![tril_vjp(g, k)],
            ));
        }
    }
    let (u, v, w) = (
        uniform::<T>(&[4], -1.0, 1.0, 805),
        uniform::<T>(&[4], -1.0, 1.0, 806),
        uniform::<T>(&[3], -1.0, 1.0, 807),
    );
    cases.push(Case::new(
        "dot",
        "[4] and [4]",
        vec![u.clone(), v],
        |x| x[0].dot(&x[1]),
        |x, t| dot_jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
        |x, g| vec![dot_vjp_lhs(g, &x[1]), dot_vjp_rhs(g, &x[0])],
    ));
    cases.push(Case::new(
        "outer",
        "[4] and [3]",
        vec![u, w],
        |x| x[0].outer(&x[1]),
        |x, t| outer_jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
        |x, g| vec![outer_vjp_lhs(g, &x[1]), outer_vjp_rhs(g, &x[0])],
    ));
    for (label, shape) in [("[5]", &[5usize][..]), ("Frobenius [2, 3]", &[2, 3])] {
        cases.push(Case::new(
            "norm",
            label,
            vec![uniform(shape, -1.0, 1.0, 808)],
            |x| x[0].norm(),
            |x, t| norm_jvp(&x[0], &x[0].norm(), &t[0]),
            |x, g| vec![norm_vjp(g, &x[0], &x[0].norm())],
        ));
    }
    cases.push(Case::new(
        "diag",
        "batched [2, 3]",
        vec![uniform(&[2, 3], -1.0, 1.0, 801)],
        |x| x[0].diag(),
        |_, t| diag_jvp(&t[0]),
        |_, g| vec![diag_vjp(g)],
    ));
    for (label, shape) in [
        ("[3, 3]", &[3usize, 3][..]),
        ("batched [2, 3, 3]", &[2, 3, 3]),
    ] {
        let a = spd::<T>(shape, 802);
        cases.push(Case::new(
            "cholesky",
            label,
            vec![a],
            |x| x[0].cholesky(),
            |x, t| cholesky_jvp(&x[0].cholesky(), &t[0]),
            |x, g| vec![cholesky_vjp(g, &x[0].cholesky())],
        ));
        let a = shifted::<T>(shape, 2.0, 803);
        cases.push(Case::new(
            "inv",
            label,
            vec![a.clone()],
            |x| x[0].inv(),
            |x, t| inv_jvp(&x[0].inv(), &t[0]),
            |x, g| vec![inv_vjp(g, &x[0].inv())],
        ));
        // A negative determinant too: -A for odd n.
        for a in [a.clone(), -&a] {
            cases.push(Case::new(
                "det",
                label,
                vec![a.clone()],
                |x| x[0].det(),
                |x, t| det_jvp(&x[0], &t[0]),
                |x, g| vec![det_vjp(g, &x[0])],
            ));
            cases.push(Case::new(
                "logabsdet",
                label,
                vec![a],
                |x| x[0].logabsdet(),
                |x, t| logabsdet_jvp(&x[0], &t[0]),
                |x, g| vec![logabsdet_vjp(g, &x[0])],
            ));
        }
    }
    cases.extend(system_cases());
    cases.extend(factorization_cases());
    cases.extend(einsum_cases());
    cases
}

/// The shapes of a matrix `[.., m, n]` and a right-hand side `[.., m, 2]` for each way their
/// batch axes meet: none, the same batch, one matrix against a batch of right-hand sides and the
/// reverse, and batches `[2, 1]` and `[5]` that broadcast to `[2, 5]`.
fn systems(m: usize, n: usize) -> Vec<(&'static str, Vec<usize>, Vec<usize>)> {
    let with = |batch: &[usize], cols: usize| [batch, &[m, cols]].concat();
    [
        ("single", &[][..], &[][..]),
        ("batched [2]", &[2], &[2]),
        ("one matrix, batched right-hand sides [2]", &[], &[2]),
        ("batched matrices [2], one right-hand side", &[2], &[]),
        ("batches [2, 1] and [5] broadcast", &[2, 1], &[5]),
    ]
    .into_iter()
    .map(|(label, a, b)| (label, with(a, n), with(b, 2)))
    .collect()
}

/// The ops of a matrix and a right-hand side (`solve_triangular`, `solve`, `cho_solve`,
/// `lstsq`) over every batch pattern of [`systems`]: the VJPs sum over the axes an operand was
/// broadcast along, which the dot-product test checks against the JVPs.
fn system_cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (label, a_shape, b_shape) in systems(3, 3) {
        let a = shifted::<T>(&a_shape, 2.0, 803);
        let b: Tensor<T> = uniform(&b_shape, -1.0, 1.0, 804);
        for (lower, transpose) in [(true, false), (false, false), (true, true), (false, true)] {
            cases.push(Case::new(
                "solve_triangular",
                label,
                vec![a.clone(), b.clone()],
                move |x| x[0].solve_triangular(&x[1], lower, transpose),
                move |x, t| {
                    let y = x[0].solve_triangular(&x[1], lower, transpose);
                    solve_triangular_jvp(&x[0], &y, lower, transpose, Some(&t[0]), Some(&t[1]))
                },
                move |x, g| {
                    let y = x[0].solve_triangular(&x[1], lower, transpose);
                    vec![
                        solve_triangular_vjp_lhs(g, &x[0], &y, lower, transpose),
                        solve_triangular_vjp_rhs(g, &x[0], x[1].shape(), lower, transpose),
                    ]
                },
            ));
        }
        cases.push(Case::new(
            "solve",
            label,
            vec![a.clone(), b.clone()],
            |x| x[0].solve(&x[1]),
            |x, t| solve_jvp(&x[0], &x[0].solve(&x[1]), Some(&t[0]), Some(&t[1])),
            |x, g| {
                let y = x[0].solve(&x[1]);
                vec![
                    solve_vjp_lhs(g, &x[0], &y),
                    solve_vjp_rhs(g, &x[0], x[1].shape()),
                ]
            },
        ));
        let l = spd::<T>(&a_shape, 820).cholesky();
        cases.push(Case::new(
            "cho_solve",
            label,
            vec![l, b],
            |x| x[0].cho_solve(&x[1]),
            |x, t| cho_solve_jvp(&x[0], &x[0].cho_solve(&x[1]), Some(&t[0]), Some(&t[1])),
            |x, g| {
                let y = x[0].cho_solve(&x[1]);
                vec![
                    cho_solve_vjp_lhs(g, &x[0], &y),
                    cho_solve_vjp_rhs(g, &x[0], x[1].shape()),
                ]
            },
        ));
    }
    for (m, n) in [(3, 3), (4, 3)] {
        for (label, a_shape, b_shape) in systems(m, n) {
            cases.push(Case::new(
                "lstsq",
                label,
                vec![
                    uniform(&a_shape, -1.0, 1.0, 823),
                    uniform(&b_shape, -1.0, 1.0, 824),
                ],
                |x| x[0].lstsq(&x[1]),
                |x, t| {
                    let y = x[0].lstsq(&x[1]);
                    lstsq_jvp(&x[0], &x[1], &y, Some(&t[0]), Some(&t[1]))
                },
                |x, g| {
                    let y = x[0].lstsq(&x[1]);
                    vec![
                        lstsq_vjp_lhs(g, &x[0], &x[1], &y),
                        lstsq_vjp_rhs(g, &x[0], x[1].shape()),
                    ]
                },
            ));
        }
    }
    cases
}

/// `einsum` on the common two-operand contractions, and on specs that sum a letter only one
/// operand has (whose VJP broadcasts over it) or permute the output.
fn einsum_cases<T: Element>() -> Vec<Case<T>> {
    let specs: [(&'static str, &[usize], &[usize]); 11] = [
        ("ij,jk->ik", &[2, 3], &[3, 4]),
        ("bij,bjk->bik", &[2, 2, 3], &[2, 3, 2]),
        ("i,i->", &[4], &[4]),
        ("ij,ij->", &[2, 3], &[2, 3]),
        ("i,j->ij", &[3], &[2]),
        ("ij,kj->ik", &[2, 3], &[4, 3]),
        ("ij,j->i", &[2, 3], &[3]),
        ("bij,jk->kbi", &[2, 3, 2], &[2, 3]),
        ("ij,k->ik", &[2, 3], &[4]),
        ("ij, jk", &[3, 2], &[2, 2]),
        ("ab,cd->", &[2, 2], &[3, 1]),
    ];
    specs
        .into_iter()
        .enumerate()
        .map(|(i, (spec, sa, sb))| {
            Case::new(
                "einsum",
                spec,
                vec![
                    uniform(sa, -1.0, 1.0, 850 + i as u64),
                    uniform(sb, -1.0, 1.0, 870 + i as u64),
                ],
                move |x| einsum(spec, &x[0], &x[1]),
                move |x, t| einsum_jvp(&x[0], &x[1], spec, Some(&t[0]), Some(&t[1])),
                move |x, g| {
                    vec![
                        einsum_vjp_lhs(g, x[0].shape(), &x[1], spec),
                        einsum_vjp_rhs(g, &x[0], x[1].shape(), spec),
                    ]
                },
            )
        })
        .collect()
}

/// `sign_det`, `eigh`, `svd` and `qr` (tall, square and wide), on well-conditioned matrices
/// with distinct eigen- and singular values (the eigen- and singular vectors are signed by their
/// largest component, a choice that is locally constant, so finite differences see them as
/// smooth).
fn factorization_cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (label, shape) in [
        ("[3, 3]", &[3usize, 3][..]),
        ("batched [2, 3, 3]", &[2, 3, 3]),
    ] {
        let a = shifted::<T>(shape, 2.0, 825);
        for a in [a.clone(), -&a] {
            cases.push(Case::new(
                "sign_det",
                label,
                vec![a],
                |x| x[0].sign_det(),
                |_, t| sign_det_jvp(&t[0]),
                |x, g| vec![sign_det_vjp(g, x[0].shape())],
            ));
        }
        let a = spd::<T>(shape, 822);
        cases.push(Case::new(
            "eigvalsh",
            label,
            vec![a.clone()],
            |x| x[0].eigvalsh(),
            |x, t| eigvalsh_jvp(&x[0], &t[0]),
            |x, g| vec![eigvalsh_vjp(g, &x[0])],
        ));
        cases.push(Case::new(
            "eigh_vectors",
            label,
            vec![a],
            |x| x[0].eigh_vectors(),
            |x, t| eigh_vectors_jvp(&x[0], &t[0]),
            |x, g| vec![eigh_vectors_vjp(g, &x[0])],
        ));
    }
    for (label, shape) in [
        ("square [3, 3]", &[3usize, 3][..]),
        ("tall [4, 3]", &[4, 3]),
        ("wide [2, 4]", &[2, 4]),
        ("batched [2, 4, 2]", &[2, 4, 2]),
        ("batched wide [2, 3, 5]", &[2, 3, 5]),
    ] {
        let a: Tensor<T> = uniform(shape, -1.0, 1.0, 823);
        cases.push(Case::new(
            "svdvals",
            label,
            vec![a.clone()],
            |x| x[0].svdvals(),
            |x, t| svdvals_jvp(&x[0], &t[0]),
            |x, g| vec![svdvals_vjp(g, &x[0])],
        ));
        cases.push(Case::new(
            "svd_u",
            label,
            vec![a.clone()],
            |x| x[0].svd_u(),
            |x, t| svd_u_jvp(&x[0], &t[0]),
            |x, g| vec![svd_u_vjp(g, &x[0])],
        ));
        cases.push(Case::new(
            "svd_vh",
            label,
            vec![a.clone()],
            |x| x[0].svd_vh(),
            |x, t| svd_vh_jvp(&x[0], &t[0]),
            |x, g| vec![svd_vh_vjp(g, &x[0])],
        ));
        cases.push(Case::new(
            "qr_q",
            label,
            vec![a.clone()],
            |x| x[0].qr_q(),
            |x, t| qr_q_jvp(&x[0], &t[0]),
            |x, g| vec![qr_q_vjp(g, &x[0])],
        ));
        cases.push(Case::new(
            "qr_r",
            label,
            vec![a.clone()],
            |x| x[0].qr_r(),
            |x, t| qr_r_jvp(&x[0], &t[0]),
            |x, g| vec![qr_r_vjp(g, &x[0])],
        ));
    }
    cases
}

/// The factorizations at matrices worked out by hand, in f32 and f64.
#[test]
fn factorizations_at_known_matrices() {
    fn check<T: Element>(tol: f64) {
        // [[4, 2, 2], [2, 5, 3], [2, 3, 6]] = L Lᵀ with L = [[2, 0, 0], [1, 2, 0], [1, 1, 2]];
        // the upper triangle is never read (here it holds garbage).
        let a = tensor::<T>(&[4.0, 99.0, -7.0, 2.0, 5.0, 13.0, 2.0, 3.0, 6.0], &[3, 3]);
        let l = a.cholesky();
        assert_close(&l, &[2.0, 0.0, 0.0, 1.0, 2.0, 0.0, 1.0, 1.0, 2.0], tol);
        // L x = [2, 5, 8] gives x = [1, 2, 2.5]; Lᵀ y = [4, 6, 4] gives y = [0, 2, 2].
        let b = tensor::<T>(&[2.0, 5.0, 8.0], &[3, 1]);
        assert_close(&l.solve_triangular(&b, true, false), &[1.0, 2.0, 2.5], tol);
        let b = tensor::<T>(&[4.0, 6.0, 4.0], &[3, 1]);
        assert_close(&l.solve_triangular(&b, true, true), &[0.0, 2.0, 2.0], tol);
        assert_close(
            &l.t().solve_triangular(&b, false, false),
            &[0.0, 2.0, 2.0],
            tol,
        );
        // det A = det(L)² = 64 for the symmetric matrix; a permutation needs a pivot.
        let s = tensor::<T>(&[4.0, 2.0, 2.0, 2.0, 5.0, 3.0, 2.0, 3.0, 6.0], &[3, 3]);
        assert_close(&s.det(), &[64.0], tol);
        assert_close(&s.logabsdet(), &[64f64.ln()], tol);
        let p = tensor::<T>(&[0.0, 1.0, 1.0, 0.0], &[2, 2]);
        assert_close(&p.det(), &[-1.0], tol);
        assert_close(&p.inv(), &[0.0, 1.0, 1.0, 0.0], tol);
        // [[1, 2], [3, 4]]⁻¹ = [[-2, 1], [1.5, -0.5]]; solving [5, 6] gives [-4, 4.5].
        let m = tensor::<T>(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        assert_close(&m.inv(), &[-2.0, 1.0, 1.5, -0.5], tol);
        let b = tensor::<T>(&[5.0, 6.0], &[2, 1]);
        assert_close(&m.solve(&b), &[-4.0, 4.5], tol);
        assert_close(&m.det(), &[-2.0], tol);
        assert_close(&m.logabsdet(), &[2f64.ln()], tol);
        // The linear ones.
        let x = tensor::<T>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        assert_close(&x.trace(), &[6.0], 0.0);
        assert_close(&x.diagonal(), &[1.0, 5.0], 0.0);
        assert_close(&x.triu(1), &[0.0, 2.0, 3.0, 0.0, 0.0, 6.0], 0.0);
        assert_close(&x.tril(0), &[1.0, 0.0, 0.0, 4.0, 5.0, 0.0], 0.0);
        assert_close(
            &tensor::<T>(&[1.0, 2.0], &[2]).diag(),
            &[1.0, 0.0, 0.0, 2.0],
            0.0,
        );
        assert_close(
            &Tensor::<T>::eye(3),
            &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            0.0,
        );
    }
    check::<f32>(1e-6);
    check::<f64>(1e-14);
}

/// Batched ops factor each matrix of the batch on its own.
#[test]
fn batched_matrices_are_factored_one_by_one() {
    let a = spd::<f64>(&[3, 4, 4], 810);
    let b = uniform::<f64>(&[3, 4, 2], -1.0, 1.0, 811);
    let (l, x, d) = (a.cholesky(), a.solve(&b), a.logabsdet());
    for i in 0..3 {
        let ai = a.shrink(&[(i, i + 1), (0, 4), (0, 4)]).reshape(&[4, 4]);
        let bi = b.shrink(&[(i, i + 1), (0, 4), (0, 2)]).reshape(&[4, 2]);
        let li = l.shrink(&[(i, i + 1), (0, 4), (0, 4)]).reshape(&[4, 4]);
        assert_eq!(li.to_vec(), ai.cholesky().to_vec());
        assert_close(&li.matmul(&li.t()), &ai.to_vec(), 1e-14);
        let xi = x.shrink(&[(i, i + 1), (0, 4), (0, 2)]).reshape(&[4, 2]);
        assert_close(&ai.matmul(&xi), &bi.to_vec(), 1e-13);
        // log det A = 2 Σ ln diag(L).
        let want = 2.0 * li.diagonal().ln().sum().item();
        assert!((d.to_vec()[i] - want).abs() < 1e-13);
    }
}

/// A matrix and a right-hand side whose batch axes broadcast give what the operands broadcast
/// by hand give, for each op of the two and each pattern (one matrix against a batch and the
/// reverse, `[2, 1]` against `[5]`); shapes that do not broadcast are errors naming the op and
/// both shapes.
#[test]
fn systems_broadcast_their_batch_axes() {
    fn check<T: Element>(tol: f64) {
        for (_, a_shape, b_shape) in systems(4, 3) {
            let a: Tensor<T> = uniform(&a_shape, -1.0, 1.0, 880);
            let b: Tensor<T> = uniform(&b_shape, -1.0, 1.0, 881);
            let batch = rune_runtime::broadcast_shapes(
                "test",
                &a_shape[..a_shape.len() - 2],
                &b_shape[..b_shape.len() - 2],
            )
            .unwrap();
            let full = |x: &Tensor<T>| {
                let s = x.shape();
                x.broadcast_to(&[&batch[..], &s[s.len() - 2..]].concat())
            };
            let expect = |got: Tensor<T>, want: Tensor<T>| {
                assert_eq!(got.shape(), want.shape());
                let want: Vec<f64> = want.to_vec().iter().map(|v| v.to_real()).collect();
                assert_close(&got, &want, tol);
            };
            expect(a.lstsq(&b), full(&a).lstsq(&full(&b)));
            let sq = shifted::<T>(&[&a_shape[..a_shape.len() - 2], &[4, 4]].concat(), 2.0, 882);
            expect(sq.solve(&b), full(&sq).solve(&full(&b)));
            for (lower, transpose) in [(true, false), (false, true)] {
                expect(
                    sq.solve_triangular(&b, lower, transpose),
                    full(&sq).solve_triangular(&full(&b), lower, transpose),
                );
            }
            let l = spd::<T>(sq.shape(), 883).cholesky();
            expect(l.cho_solve(&b), full(&l).cho_solve(&full(&b)));
        }
    }
    check::<f32>(1e-6);
    check::<f64>(1e-14);
    let a = Tensor::<f64>::eye(3).broadcast_to(&[2, 3, 3]);
    let b = Tensor::<f64>::ones(&[3, 3, 2]);
    let errors = [
        a.try_solve(&b).unwrap_err(),
        a.try_solve_triangular(&b, true, false).unwrap_err(),
        a.try_cho_solve(&b).unwrap_err(),
        a.try_lstsq(&b).unwrap_err(),
    ];
    for (err, op) in errors
        .iter()
        .zip(["solve", "solve_triangular", "cho_solve", "lstsq"])
    {
        let err = err.to_string();
        assert!(
            err.starts_with(&format!("{op}:"))
                && err.contains("[2, 3, 3]")
                && err.contains("[3, 3, 2]")
                && err.contains("do not broadcast"),
            "{err}"
        );
    }
    // A vector right-hand side is written as a column.
    let err = Tensor::<f64>::eye(3)
        .try_solve(&Tensor::ones(&[3]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("solve:") && err.contains("[.., n, 1]"),
        "{err}"
    );
}

/// Bad input names the op and the shapes, or says which matrix is not positive definite or is
/// singular.
#[test]
fn bad_matrices_are_errors_naming_the_op() {
    let not_square = Tensor::<f64>::ones(&[2, 3]);
    let err = not_square.try_cholesky().unwrap_err().to_string();
    assert!(
        err.starts_with("cholesky:") && err.contains("[2, 3]"),
        "{err}"
    );
    let indefinite = tensor::<f64>(&[1.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 1.0], &[2, 2, 2]);
    let err = indefinite.try_cholesky().unwrap_err().to_string();
    assert!(
        err.contains("matrix 1") && err.contains("not positive definite"),
        "{err}"
    );
    let singular = tensor::<f64>(&[1.0, 2.0, 2.0, 4.0], &[2, 2]);
    let msg = panic_message(|| singular.inv());
    assert!(msg.starts_with("inv:") && msg.contains("singular"), "{msg}");
    assert_eq!(singular.det().item(), 0.0);
    assert_eq!(singular.logabsdet().item(), f64::NEG_INFINITY);
    let a = Tensor::<f64>::eye(3);
    let err = a.try_solve(&Tensor::ones(&[2, 1])).unwrap_err().to_string();
    assert!(
        err.starts_with("solve:") && err.contains("[3, 3]") && err.contains("[2, 1]"),
        "{err}"
    );
    let err = a
        .try_solve_triangular(&Tensor::ones(&[3]), true, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("solve_triangular:") && err.contains("[3]"),
        "{err}"
    );
    let err = Tensor::<f64>::ones(&[3])
        .try_trace()
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("diagonal:") || err.starts_with("trace:"),
        "{err}"
    );
}

/// `norm` neither overflows nor underflows where `Σ x²` would (1e200 in f64, 1e30 in f32), and
/// its gradient at 0 is 0.
#[test]
fn norm_is_stable_and_zero_at_the_origin() {
    fn check<T: Element>(big: f64) {
        let x = tensor::<T>(&[3.0 * big, -4.0 * big], &[2]);
        assert_close(&(x.norm() / T::from_f64(big)), &[5.0], 1e-6);
        let g = norm_vjp(&Tensor::ones(&[]), &x, &x.norm());
        assert_close(&g, &[0.6, -0.8], 1e-6);
        let tiny = tensor::<T>(&[3.0 / big, 4.0 / big], &[2]);
        assert_close(&(tiny.norm() * T::from_f64(big)), &[5.0], 1e-6);
        let zero = Tensor::<T>::zeros(&[3]);
        assert_close(&zero.norm(), &[0.0], 0.0);
        assert_close(
            &norm_vjp(&Tensor::ones(&[]), &zero, &zero.norm()),
            &[0.0; 3],
            0.0,
        );
        assert_close(
            &norm_jvp(&zero, &zero.norm(), &Tensor::ones(&[3])),
            &[0.0],
            0.0,
        );
        let u = tensor::<T>(&[1.0, 2.0, 3.0], &[3]);
        let v = tensor::<T>(&[4.0, -5.0, 6.0], &[3]);
        assert_close(&u.dot(&v), &[12.0], 0.0);
        assert_close(
            &u.outer(&v.shrink(&[(0, 2)])),
            &[4.0, -5.0, 8.0, -10.0, 12.0, -15.0],
            0.0,
        );
    }
    check::<f32>(1e30);
    check::<f64>(1e200);
    let err = Tensor::<f64>::ones(&[3])
        .try_dot(&Tensor::ones(&[2]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("dot:") && err.contains("[3]") && err.contains("[2]"),
        "{err}"
    );
}

/// The largest `|x - y|` over two tensors of one shape.
fn max_diff<T: Element>(x: &Tensor<T>, y: &Tensor<T>) -> f64 {
    assert_eq!(x.shape(), y.shape());
    x.to_vec()
        .iter()
        .zip(y.to_vec())
        .map(|(a, b)| (a.to_real() - b.to_real()).abs())
        .fold(0.0, f64::max)
}

/// `Q R = A`, `U diag(s) Vh = A` and `V diag(w) Vᵀ = A` on random matrices (tall, wide, square,
/// batched), with orthonormal factors, `R` upper triangular (`[.., k, n]`, `k = min(m, n)`)
/// with a positive diagonal, and the
/// eigen- and singular values in order.
#[test]
fn factorizations_reconstruct_their_matrices_with_orthonormal_factors() {
    fn check<T: Element>(tol: f64) {
        for shape in [&[5usize, 3][..], &[3, 3], &[2, 6, 4], &[3, 5], &[2, 2, 4]] {
            let a: Tensor<T> = uniform(shape, -1.0, 1.0, 830);
            let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
            let (u, s, vh) = a.svd();
            let us = &u * &s.expand_dims(-2);
            assert!(max_diff(&us.matmul(&vh), &a) < tol, "svd of {shape:?}");
            let k = m.min(n);
            let eye =
                Tensor::<T>::eye(k).broadcast_to(&[&shape[..shape.len() - 2], &[k, k]].concat());
            assert!(max_diff(&u.t().matmul(&u), &eye) < tol);
            assert!(max_diff(&vh.matmul(&vh.t()), &eye) < tol);
            let sv = s.to_vec();
            for pair in sv.chunks(k) {
                assert!(pair.windows(2).all(|w| w[0] >= w[1]) && pair[k - 1] >= T::zero());
            }
            {
                let (q, r) = a.qr();
                assert!(max_diff(&q.matmul(&r), &a) < tol, "qr of {shape:?}");
                assert!(max_diff(&q.t().matmul(&q), &eye) < tol);
                assert_eq!(r.to_vec(), r.triu(0).to_vec());
                assert!(r.diagonal().to_vec().iter().all(|&d| d > T::zero()));
            }
            if m == n {
                let sym = &a + &a.t();
                let (w, v) = sym.eigh();
                let vw = &v * &w.expand_dims(-2);
                assert!(
                    max_diff(&vw.matmul(&v.t()), &sym) < tol,
                    "eigh of {shape:?}"
                );
                assert!(max_diff(&v.t().matmul(&v), &eye) < tol);
                for run in w.to_vec().chunks(n) {
                    assert!(run.windows(2).all(|w| w[0] <= w[1]));
                }
                // Only the lower triangle is read.
                let garbage = sym.tril(0) + a.triu(1) * T::from_f64(7.0);
                assert_eq!(garbage.eigvalsh().to_vec(), w.to_vec());
            }
        }
    }
    check::<f32>(1e-5);
    check::<f64>(1e-13);
}

/// The factorizations at matrices worked out by hand, in f32 and f64.
#[test]
fn spectral_factorizations_at_known_matrices() {
    fn check<T: Element>(tol: f64) {
        // [[2, 2], [2, 5]] has eigenvalues 1 and 6, eigenvectors [2, -1]/√5 and [1, 2]/√5.
        let a = tensor::<T>(&[2.0, 2.0, 2.0, 5.0], &[2, 2]);
        let (w, v) = a.eigh();
        let r = 0.2f64.sqrt();
        assert_close(&w, &[1.0, 6.0], tol);
        assert_close(&v, &[2.0 * r, r, -r, 2.0 * r], tol);
        // [[3, 0], [4, 5]] has AᵀA = [[25, 20], [20, 25]]: s² = 45 and 5, V's columns [1, 1]/√2
        // and [-1, 1]/√2 (signed by U), U = A V / s.
        let a = tensor::<T>(&[3.0, 0.0, 4.0, 5.0], &[2, 2]);
        let (u, s, vh) = a.svd();
        let h = 0.5f64.sqrt();
        assert_close(&s, &[45f64.sqrt(), 5f64.sqrt()], tol);
        // A [1, 1]/√2 = [3, 9]/√2, over √45: [1, 3]/√10; A [1, -1]/√2 = [3, -1]/√2, over √5:
        // [3, -1]/√10 (largest component positive).
        let t = 0.1f64.sqrt();
        assert_close(&u, &[t, 3.0 * t, 3.0 * t, -t], tol);
        assert_close(&vh, &[h, h, h, -h], tol);
        // A rank-one matrix: one singular value is zero, and U is still orthonormal.
        let a = tensor::<T>(&[1.0, 2.0, 2.0, 4.0, 3.0, 6.0], &[3, 2]);
        let (u, s, _) = a.svd();
        assert_close(&s, &[70f64.sqrt(), 0.0], tol);
        assert_close(&u.t().matmul(&u), &[1.0, 0.0, 0.0, 1.0], tol);
        // cho_solve against solve; slogdet of [[1, 2], [3, 4]] is (-1, ln 2).
        let spd = tensor::<T>(&[4.0, 2.0, 2.0, 5.0], &[2, 2]);
        let b = tensor::<T>(&[6.0, 7.0], &[2, 1]);
        assert_close(&spd.cholesky().cho_solve(&b), &[1.0, 1.0], tol);
        let (sign, logdet) = tensor::<T>(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).slogdet();
        assert_close(&sign, &[-1.0], 0.0);
        assert_close(&logdet, &[2f64.ln()], tol);
        // The line through (0, 1), (1, 2), (2, 4): intercept 5/6, slope 3/2.
        let design = tensor::<T>(&[1.0, 0.0, 1.0, 1.0, 1.0, 2.0], &[3, 2]);
        let y = tensor::<T>(&[1.0, 2.0, 4.0], &[3, 1]);
        assert_close(&design.lstsq(&y), &[5.0 / 6.0, 1.5], tol);
        // A wide QR through the leading square block: [[3, 1], [4, 2]] = Q R_X with Q =
        // [[0.6, -0.8], [0.8, 0.6]], R_X = [[5, 2.2], [0, 0.4]]; the last column is Q [5.2, 1.4].
        let (q, r) = tensor::<T>(&[3.0, 1.0, 2.0, 4.0, 2.0, 5.0], &[2, 3]).qr();
        assert_close(&q, &[0.6, -0.8, 0.8, 0.6], tol);
        assert_close(&r, &[5.0, 2.2, 5.2, 0.0, 0.4, 1.4], tol);
    }
    check::<f32>(1e-6);
    check::<f64>(1e-14);
}

/// `slogdet` where `det` underflows: the sign and `ln |det|` of `diag(1e-3, .., -1e-3)` of
/// order 120 (`|det| = 1e-360`); and `0` and `-inf` for a singular matrix.
#[test]
fn slogdet_does_not_underflow() {
    let n = 120;
    let mut d = vec![1e-3; n];
    d[n - 1] = -1e-3;
    let a = Tensor::<f64>::from_vec(d, &[n]).diag();
    assert_eq!(a.det().item(), 0.0);
    let (sign, logdet) = a.slogdet();
    assert_eq!(sign.item(), -1.0);
    assert!((logdet.item() - n as f64 * 1e-3f64.ln()).abs() < 1e-10);
    let (sign, logdet) = tensor::<f64>(&[1.0, 2.0, 2.0, 4.0], &[2, 2]).slogdet();
    assert_eq!((sign.item(), logdet.item()), (0.0, f64::NEG_INFINITY));
}

/// Gradients that hold whatever the eigen- or singular vectors' signs, against formulas derived
/// by hand: `∂ tr(exp(S)) / ∂S = exp(S)` (a matrix function through `eigh`, folded onto the lower
/// triangle that is read), and `∂ Σ s / ∂A = U Vh` (the nuclear norm).
#[test]
fn gauge_invariant_gradients_match_their_formulas() {
    let a = spd::<f64>(&[4, 4], 840) * 0.3;
    let (w, v) = a.eigh();
    // f(w, V) = tr(V diag(e^w) Vᵀ) through both ops' VJPs, with w̄ = e^w ∘ diag(VᵀV) = e^w and
    // V̄ = 2 V diag(e^w): the vectors' part vanishes (Vᵀ V̄ is diagonal), the values' part is
    // V diag(e^w) Vᵀ.
    let e = w.exp();
    let gv = (&v * &e.expand_dims(-2)) * 2.0;
    let grad = eigvalsh_vjp(&e, &a) + eigh_vectors_vjp(&gv, &a);
    let expm = (&v * &e.expand_dims(-2)).matmul(&v.t());
    let want = (&expm + &expm.t()).tril(-1) + expm.diagonal().diag();
    assert!(max_diff(&grad, &want) < 1e-12, "{:?}", grad.to_vec());
    let b = uniform::<f64>(&[3, 5], -1.0, 1.0, 841);
    let (u, _, vh) = b.svd();
    let nuclear = svdvals_vjp(&Tensor::ones(&[3]), &b);
    assert!(max_diff(&nuclear, &u.matmul(&vh)) < 1e-14);
}

/// At a repeated eigenvalue the eigenvalues' gradient is finite and the eigenvectors' is not
/// (as documented, and as in JAX and PyTorch).
#[test]
fn repeated_eigenvalues_have_eigenvalue_gradients_only() {
    let a = tensor::<f64>(&[2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 5.0], &[3, 3]);
    assert_close(&a.eigvalsh(), &[2.0, 2.0, 5.0], 0.0);
    let g = eigvalsh_vjp(&Tensor::ones(&[3]), &a);
    assert_close(&g, &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], 1e-15);
    let g = eigh_vectors_vjp(&Tensor::ones(&[3, 3]), &a);
    assert!(g.to_vec().iter().any(|x| !x.is_finite()));
}

/// Bad input to the factorizations names the op and the shapes.
#[test]
fn bad_factorization_input_names_the_op() {
    let wide = Tensor::<f64>::ones(&[2, 3]);
    // A wide matrix factors through its leading square block, which here is singular.
    let zero_column = tensor::<f64>(&[0.0, 1.0, 2.0, 0.0, 3.0, 4.0], &[2, 3]);
    let err = zero_column.try_qr().unwrap_err().to_string();
    assert!(
        err.starts_with("qr:") && err.contains("[2, 3]") && err.contains("column 0"),
        "{err}"
    );
    let err = zero_column.try_qr_r().unwrap_err().to_string();
    assert!(err.starts_with("qr_r:"), "{err}");
    let err = tensor::<f64>(&[1.0, 0.0, 2.0, 0.0, 1.0, 3.0], &[2, 3])
        .try_lstsq(&Tensor::ones(&[2, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("lstsq:") && err.contains("m >= n") && err.contains("[2, 3]"),
        "{err}"
    );
    let dependent = tensor::<f64>(&[1.0, 2.0, 2.0, 4.0, 3.0, 6.0], &[3, 2]);
    let err = dependent.try_qr().unwrap_err().to_string();
    assert!(
        err.contains("rank-deficient") && err.contains("column 1"),
        "{err}"
    );
    let err = dependent
        .try_lstsq(&Tensor::ones(&[2, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("lstsq:") && err.contains("[3, 2]") && err.contains("[2, 1]"),
        "{err}"
    );
    let err = dependent
        .try_lstsq(&Tensor::ones(&[3, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("lstsq:") && err.contains("rank-deficient"),
        "{err}"
    );
    let err = wide.try_eigh().unwrap_err().to_string();
    assert!(err.starts_with("eigh:") && err.contains("[2, 3]"), "{err}");
    let err = Tensor::<f64>::ones(&[3])
        .try_svdvals()
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("svdvals:") && err.contains("[3]"), "{err}");
    let err = Tensor::<f64>::eye(3)
        .try_cho_solve(&Tensor::ones(&[2, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("cho_solve:") && err.contains("[3, 3]") && err.contains("[2, 1]"),
        "{err}"
    );
    let err = wide.try_slogdet().unwrap_err().to_string();
    assert!(
        err.starts_with("slogdet:") && err.contains("[2, 3]"),
        "{err}"
    );
    let err = wide.try_sign_det().unwrap_err().to_string();
    assert!(err.starts_with("sign_det:"), "{err}");
}

/// `einsum` against the ops it stands for, in f32 and f64, and its errors.
#[test]
fn einsum_is_the_contraction_it_writes() {
    fn check<T: Element>(tol: f64) {
        let a: Tensor<T> = uniform(&[2, 3, 4], -1.0, 1.0, 890);
        let b: Tensor<T> = uniform(&[2, 4, 5], -1.0, 1.0, 891);
        let c: Tensor<T> = uniform(&[3, 4], -1.0, 1.0, 892);
        let close = |x: Tensor<T>, y: Tensor<T>| {
            assert_close(
                &x,
                &y.to_vec().iter().map(|v| v.to_real()).collect::<Vec<_>>(),
                tol,
            )
        };
        close(einsum("bij,bjk->bik", &a, &b), a.matmul(&b));
        close(einsum("ij,kj->ik", &c, &c), c.matmul(&c.t()));
        close(einsum("ij,ij->", &c, &c), c.square().sum());
        close(einsum("ij,ij", &c, &c), c.square().sum());
        close(einsum("bij,jk", &a, &c.t()), a.matmul(&c.t()));
        close(
            einsum("bij,jk->kib", &a, &c.t()),
            a.matmul(&c.t()).permute(&[2, 1, 0]),
        );
        let u = tensor::<T>(&[1.0, 2.0, 3.0], &[3]);
        let v = tensor::<T>(&[4.0, 5.0], &[2]);
        assert_close(
            &einsum("i,j->ij", &u, &v),
            &[4.0, 5.0, 8.0, 10.0, 12.0, 15.0],
            0.0,
        );
        assert_close(&einsum("i,i->", &u, &u), &[14.0], 0.0);
        // A letter only one operand has is summed: Σ_j c_ij times Σ_k u_k.
        close(
            einsum("ij,k->i", &c, &u),
            c.sum_axes(&[1], false) * T::from_f64(6.0),
        );
    }
    check::<f32>(1e-6);
    check::<f64>(1e-14);
    let (a, b) = (Tensor::<f64>::ones(&[2, 3]), Tensor::<f64>::ones(&[4, 5]));
    for (spec, needle) in [
        ("ij,jk->ik", "'j' is 3 in one operand and 4 in the other"),
        ("ij->ij", "two operands"),
        ("ii,jk->ik", "repeats 'i'"),
        ("ij,kl->iz", "'z' is in neither operand"),
        ("ijk,jk->i", "3 subscripts but shape [2, 3]"),
        ("...j,jk->k", "ellipses"),
    ] {
        let err = rune_runtime::try_einsum(spec, &a, &b)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("einsum:") && err.contains(spec) && err.contains(needle),
            "{err}"
        );
    }
}

/// The generic Jacobi kernels (what dual numbers run) against faer's (what `f64` runs): the same
/// factors, and tangents that are the JVP rules' — so the sweep past convergence makes the
/// tangents converge too. Tall, wide, square, batched and rank-deficient matrices.
#[test]
fn jacobi_kernels_on_dual_numbers_agree_with_faer_and_the_rules() {
    let close = |x: &Tensor<f64>, y: &Tensor<f64>, tol: f64, what: &str| {
        let d = max_diff(x, y);
        assert!(d < tol, "{what}: {d}");
    };
    let rank_one = tensor::<f64>(&[1.0, 2.0, 2.0, 4.0, 3.0, 6.0], &[3, 2]);
    for (i, a) in [
        uniform::<f64>(&[5, 3], -1.0, 1.0, 860),
        uniform::<f64>(&[3, 5], -1.0, 1.0, 861),
        uniform::<f64>(&[2, 4, 4], -1.0, 1.0, 862),
        rank_one,
    ]
    .into_iter()
    .enumerate()
    {
        let da = uniform::<f64>(a.shape(), -1.0, 1.0, 870 + i as u64);
        let ad = dual_of(&a, &da);
        let (u, s, vh) = ad.svd();
        let (fu, fs, fvh) = a.svd();
        close(&primal_of(&s), &fs, 1e-13, "singular values");
        if i == 3 {
            // Rank one: the vectors of the zero singular value are not unique, nor their
            // derivatives; the leading ones are. Nor is the zero singular value differentiable
            // (`s₂(A + t dA)` grows as `|t|`): its tangent depends on the rounding that left
            // the second column tiny or exactly zero, and only the leading one is compared.
            let lead = |x: &Tensor<f64>| x.shrink(&[(0, 3), (0, 1)]);
            close(
                &tangent_of(&s).shrink(&[(0, 1)]),
                &svdvals_jvp(&a, &da).shrink(&[(0, 1)]),
                1e-12,
                "the leading one's tangent",
            );
            close(
                &lead(&primal_of(&u)),
                &lead(&fu),
                1e-13,
                "leading left vector",
            );
            let ut = primal_of(&u);
            close(&ut.t().matmul(&ut), &Tensor::eye(2), 1e-13, "orthonormal U");
            continue;
        }
        close(
            &tangent_of(&s),
            &svdvals_jvp(&a, &da),
            1e-12,
            "their tangents",
        );
        close(&primal_of(&u), &fu, 1e-12, "U");
        close(&primal_of(&vh), &fvh, 1e-12, "Vh");
        close(&tangent_of(&u), &svd_u_jvp(&a, &da), 1e-9, "U's tangent");
        close(&tangent_of(&vh), &svd_vh_jvp(&a, &da), 1e-9, "Vh's tangent");
        if a.shape()[a.ndim() - 1] == a.shape()[a.ndim() - 2] {
            let sym = &a + &a.t();
            let (w, v) = dual_of(&sym, &da).eigh();
            let (fw, fv) = sym.eigh();
            close(&primal_of(&w), &fw, 1e-13, "eigenvalues");
            close(&primal_of(&v), &fv, 1e-12, "eigenvectors");
            close(
                &tangent_of(&w),
                &eigvalsh_jvp(&sym, &da),
                1e-12,
                "their tangents",
            );
            close(
                &tangent_of(&v),
                &eigh_vectors_jvp(&sym, &da),
                1e-9,
                "eigenvectors' tangents",
            );
        }
    }
}

// ---- second order: the VJPs run on dual numbers, as `f_hvp` runs them -----------------------

/// `f_hvp` runs a function's VJPs on dual numbers whose tangents are the direction: the tangent
/// of `grad` at `a + ε d` is the Hessian of the loss times `d`. Checks it against central
/// differences of `grad` in f64 (which factors through faer where the duals go through the
/// Jacobi kernels), and the primal against `grad` itself; returns the HVP.
#[track_caller]
fn check_hvp_by_duals(
    what: &str,
    grad: fn(&Tensor<f64>) -> Tensor<f64>,
    grad_dual: fn(&Tensor<Dual<f64>>) -> Tensor<Dual<f64>>,
    a: &Tensor<f64>,
    d: &Tensor<f64>,
) -> Tensor<f64> {
    let g = grad_dual(&dual_of(a, d));
    let (primal, hvp) = (primal_of(&g), tangent_of(&g));
    let exact = grad(a);
    let scale = 1.0 + max_diff(&exact, &Tensor::zeros(exact.shape()));
    assert!(
        max_diff(&primal, &exact) < 1e-11 * scale,
        "{what}: gradient {:?}, expected {:?}",
        primal.to_vec(),
        exact.to_vec()
    );
    let h = 1e-5;
    let fd = (grad(&(a + &(d * h))) - grad(&(a - &(d * h)))) / (2.0 * h);
    let scale = 1.0 + max_diff(&fd, &Tensor::zeros(fd.shape()));
    assert!(
        hvp.to_vec().iter().all(|x| x.is_finite()) && max_diff(&hvp, &fd) < 1e-7 * scale,
        "{what}: HVP {:?}, central differences {:?}",
        hvp.to_vec(),
        fd.to_vec()
    );
    hvp
}

/// Fixed weights in `[0.5, 1.5)` of the given shape, as any element type.
fn weights<T: Element>(shape: &[usize], seed: u64) -> Tensor<T> {
    tensor(&uniform::<f64>(shape, 0.5, 1.5, seed).to_vec(), shape)
}

/// The shape of `a [.., m, n]` with its last two axes replaced by `tail`.
fn with_tail(a: &[usize], tail: &[usize]) -> Vec<usize> {
    [&a[..a.len() - 2], tail].concat()
}

/// `min(m, n)` of `a [.., m, n]`.
fn thin<T: Element>(a: &Tensor<T>) -> usize {
    let s = a.shape();
    s[s.len() - 2].min(s[s.len() - 1])
}

/// The gradient of `Σ cₖ sₖ`, weighted singular values.
fn weighted_svdvals_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    let shape = with_tail(a.shape(), &[thin(a)]);
    svdvals_vjp(&weights(&[thin(a)], 950).broadcast_to(&shape), a)
}

/// The gradient of `Σ W ∘ U ∘ U`, which does not see the signs of `U`'s columns.
fn squared_u_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    let u = a.svd_u();
    let w = weights::<T>(&u.shape()[u.ndim() - 2..], 951);
    svd_u_vjp(&(u * w * T::from_f64(2.0)), a)
}

/// The gradient of `Σ W ∘ Vh ∘ Vh`, which does not see the signs of `Vh`'s rows.
fn squared_vh_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    let vh = a.svd_vh();
    let w = weights::<T>(&vh.shape()[vh.ndim() - 2..], 952);
    svd_vh_vjp(&(vh * w * T::from_f64(2.0)), a)
}

/// The gradient of `Σ W ∘ (U diag(s) Vh)` through the three factors' VJPs. `U diag(s) Vh = A`,
/// so it is `W` and its HVP is zero: the three parts' second-order terms cancel.
fn reconstruction_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
    let (u, s, vh) = a.svd();
    let w = weights::<T>(&a.shape()[a.ndim() - 2..], 953).broadcast_to(a.shape());
    let wv = w.matmul(&vh.t());
    let gu = &wv * &s.expand_dims(-2);
    let gs = (&u * &wv).sum_axes(&[-2], false);
    let gvh = u.t().matmul(&w) * s.expand_dims(-1);
    svd_u_vjp(&gu, a) + svdvals_vjp(&gs, a) + svd_vh_vjp(&gvh, a)
}

/// The HVP of `Σ s` at `[[2, 1], [0.5, 3]]` along ones, which was NaN: the Jacobi kernel on
/// dual numbers divided by the exactly zero inner product of the columns it had just made
/// orthogonal. For a 2 × 2 matrix with `det A > 0`, `(s₁ + s₂)² = ‖A‖² + 2 det A`, so `f =
/// √(‖A‖² + 2 det A)`, `∇f = (A + cof A) / f` (`cof [[a, b], [c, d]] = [[d, -c], [-b, a]]`,
/// linear), and `H D = (D + cof D) / f - (A + cof A) ⟨A + cof A, D⟩ / f³`: with `D` all ones,
/// `D + cof D = 2I`, `A + cof A = [[5, 0.5], [-0.5, 5]]`, `⟨A + cof A, D⟩ = 10`, `f = √25.25`.
/// JAX (`jax.jvp(jax.grad(f), (a,), (ones,))`) prints `[[0.00394, -0.0394], [0.0394,
/// 0.00394]]`.
#[test]
fn nuclear_norm_hvp_of_a_two_by_two_matrix_is_its_closed_form() {
    fn grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        svdvals_vjp(&Tensor::ones(&with_tail(a.shape(), &[thin(a)])), a)
    }
    let a = tensor::<f64>(&[2.0, 1.0, 0.5, 3.0], &[2, 2]);
    let d = Tensor::<f64>::ones(&[2, 2]);
    let hvp = check_hvp_by_duals("Σ s", grad::<f64>, grad::<Dual<f64>>, &a, &d);
    let f = 25.25f64.sqrt();
    let (diag, off) = (2.0 / f - 50.0 / f.powi(3), 5.0 / f.powi(3));
    assert_close(&hvp, &[diag, -off, off, diag], 1e-13);
    assert_close(&hvp, &[0.00394, -0.0394, 0.0394, 0.00394], 2e-3);
    for (got, jax) in hvp.to_vec().iter().zip([0.00394, -0.0394, 0.0394, 0.00394]) {
        assert!(
            (got - jax).abs() <= 5e-6 * (jax / 0.00394f64).abs(),
            "{got} vs {jax}"
        );
    }
}

/// The singular values' and vectors' VJPs on dual numbers (what `f_hvp` runs) against central
/// differences of the f64 VJPs, square, wide, tall and batched, for losses that do not see the
/// vectors' signs.
#[test]
fn svd_rules_on_dual_numbers_give_the_hessian() {
    let cases: [(&str, Tensor<f64>); 5] = [
        ("[2, 2]", tensor(&[2.0, 1.0, 0.5, 3.0], &[2, 2])),
        ("[4, 4]", uniform(&[4, 4], -1.0, 1.0, 940)),
        ("[2, 5]", uniform(&[2, 5], -1.0, 1.0, 941)),
        ("[5, 2]", uniform(&[5, 2], -1.0, 1.0, 942)),
        ("[2, 5, 5]", uniform(&[2, 5, 5], -1.0, 1.0, 943)),
    ];
    for (i, (label, a)) in cases.into_iter().enumerate() {
        let ones = Tensor::<f64>::ones(a.shape());
        let d = uniform::<f64>(a.shape(), -1.0, 1.0, 944 + i as u64);
        for d in [ones, d] {
            let what = |loss: &str| format!("{loss} at {label}");
            check_hvp_by_duals(
                &what("Σ c s"),
                weighted_svdvals_grad::<f64>,
                weighted_svdvals_grad::<Dual<f64>>,
                &a,
                &d,
            );
            check_hvp_by_duals(
                &what("Σ W U²"),
                squared_u_grad::<f64>,
                squared_u_grad::<Dual<f64>>,
                &a,
                &d,
            );
            check_hvp_by_duals(
                &what("Σ W Vh²"),
                squared_vh_grad::<f64>,
                squared_vh_grad::<Dual<f64>>,
                &a,
                &d,
            );
            let hvp = check_hvp_by_duals(
                &what("Σ W (U S Vh)"),
                reconstruction_grad::<f64>,
                reconstruction_grad::<Dual<f64>>,
                &a,
                &d,
            );
            assert!(max_diff(&hvp, &Tensor::zeros(a.shape())) < 1e-10, "{label}");
        }
    }
}

/// The eigen-decomposition's and QR's VJPs on dual numbers against central differences of the
/// f64 VJPs: symmetric matrices (one diagonal, where every off-diagonal value is exactly zero
/// and only its tangent is not, which gave NaN), and tall, wide and batched QR.
#[test]
fn eigh_and_qr_rules_on_dual_numbers_give_the_hessian() {
    fn eigvalsh_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        let n = a.shape()[a.ndim() - 1];
        eigvalsh_vjp(
            &weights(&[n], 954).broadcast_to(&a.shape()[..a.ndim() - 1]),
            a,
        )
    }
    fn squared_v_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        let v = a.eigh_vectors();
        let w = weights::<T>(&v.shape()[v.ndim() - 2..], 955);
        eigh_vectors_vjp(&(v * w * T::from_f64(2.0)), a)
    }
    fn qr_q_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        let q = a.qr_q();
        let w = weights::<T>(&q.shape()[q.ndim() - 2..], 956);
        qr_q_vjp(&(q * w), a)
    }
    fn qr_r_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        let r = a.qr_r();
        let w = weights::<T>(&r.shape()[r.ndim() - 2..], 957);
        qr_r_vjp(&(r * w), a)
    }
    let diagonal = tensor::<f64>(&[1.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 6.0], &[3, 3]);
    for (label, a) in [
        ("diagonal [3, 3]", diagonal),
        ("[4, 4]", spd::<f64>(&[4, 4], 958)),
        ("[2, 3, 3]", spd::<f64>(&[2, 3, 3], 959)),
    ] {
        for d in [Tensor::ones(a.shape()), uniform(a.shape(), -1.0, 1.0, 960)] {
            check_hvp_by_duals(
                &format!("Σ c w at {label}"),
                eigvalsh_grad::<f64>,
                eigvalsh_grad::<Dual<f64>>,
                &a,
                &d,
            );
            check_hvp_by_duals(
                &format!("Σ W V² at {label}"),
                squared_v_grad::<f64>,
                squared_v_grad::<Dual<f64>>,
                &a,
                &d,
            );
        }
    }
    for shape in [&[3usize, 3][..], &[5, 2], &[2, 4], &[2, 4, 3]] {
        let a = uniform::<f64>(shape, -1.0, 1.0, 961);
        let d = uniform::<f64>(shape, -1.0, 1.0, 962);
        let what = |loss: &str| format!("{loss} at {shape:?}");
        check_hvp_by_duals(
            &what("Σ W Q"),
            qr_q_grad::<f64>,
            qr_q_grad::<Dual<f64>>,
            &a,
            &d,
        );
        check_hvp_by_duals(
            &what("Σ W R"),
            qr_r_grad::<f64>,
            qr_r_grad::<Dual<f64>>,
            &a,
            &d,
        );
    }
}

/// The Jacobi kernel on a diagonal matrix pushed along ones, whose off-diagonal values are
/// exactly zero and tangents are not: `dw = diag(dA) = [1, 1]` and `dV = V (F ∘ Vᵀ dA V)` with
/// `V = I` and `F₀₁ = 1 / (3 - 1)`, so `dV = [[0, 1/2], [-1/2, 0]]`.
#[test]
fn eigh_of_a_diagonal_matrix_on_dual_numbers_has_the_rules_tangents() {
    let a = tensor::<f64>(&[1.0, 0.0, 0.0, 3.0], &[2, 2]);
    let (w, v) = dual_of(&a, &Tensor::ones(&[2, 2])).eigh();
    assert_close(&primal_of(&w), &[1.0, 3.0], 0.0);
    assert_close(&tangent_of(&w), &[1.0, 1.0], 1e-15);
    assert_close(&primal_of(&v), &[1.0, 0.0, 0.0, 1.0], 0.0);
    assert_close(&tangent_of(&v), &[0.0, 0.5, -0.5, 0.0], 1e-15);
    // A repeated eigenvalue whose pair is already diagonal is left alone: the eigenvalues'
    // tangents are `diag(dA)` in the basis `V = I`, as `eigvalsh_jvp` gives, and finite.
    let a = tensor::<f64>(&[2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 5.0], &[3, 3]);
    let da = tensor::<f64>(&[0.5, 0.0, 0.0, 0.3, -0.25, 0.0, 0.7, -0.4, 2.0], &[3, 3]);
    let (w, v) = dual_of(&a, &da).eigh();
    assert_close(&tangent_of(&w), &[0.5, -0.25, 2.0], 1e-15);
    assert_close(&tangent_of(&w), &eigvalsh_jvp(&a, &da).to_vec(), 1e-15);
    assert!(tangent_of(&v).to_vec().iter().all(|x| x.is_finite()));
}

// ---- det, slogdet at singular matrices --------------------------------------------------------

/// The cofactor matrix of a 3 × 3 matrix by its definition, `Cᵢⱼ = (-1)^(i+j) det(A without row
/// i and column j)`, each minor `a d - b c`.
fn cofactors_3x3(a: &[f64]) -> Vec<f64> {
    let others = |k: usize| -> [usize; 2] {
        match k {
            0 => [1, 2],
            1 => [0, 2],
            _ => [0, 1],
        }
    };
    (0..9)
        .map(|idx| {
            let (i, j) = (idx / 3, idx % 3);
            let ([r0, r1], [c0, c1]) = (others(i), others(j));
            let minor = a[r0 * 3 + c0] * a[r1 * 3 + c1] - a[r0 * 3 + c1] * a[r1 * 3 + c0];
            if (i + j) % 2 == 0 {
                minor
            } else {
                -minor
            }
        })
        .collect()
}

/// A singular matrix (row-major, of `shape`) and its cofactor matrix.
struct Singular {
    label: &'static str,
    a: Vec<f64>,
    shape: Vec<usize>,
    cofactors: Vec<f64>,
}

/// Singular matrices, each with its cofactor matrix worked out by hand: `[[0]]` (`[[1]]`), a
/// 2 × 2 of rank one (`[[d, -c], [-b, a]]`), a 3 × 3 of rank two (by `cofactors_3x3`: rank one,
/// not zero), a 3 × 3 of rank one and the zero matrix (cofactors zero: every 2 × 2 minor of a
/// rank-one matrix vanishes), and a matrix with a zero column under a non-zero one, where LU
/// with partial pivoting meets a zero pivot above a row that is not zero.
fn singular_matrices() -> Vec<Singular> {
    let rank_two = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    let rank_two_cof = cofactors_3x3(&rank_two);
    // Worked out: C₀₀ = 5·9 - 6·8 = -3, C₀₁ = -(4·9 - 6·7) = 6, C₁₁ = 1·9 - 3·7 = -12.
    assert_eq!(&rank_two_cof[..5], &[-3.0, 6.0, -3.0, 6.0, -12.0]);
    let rank_one = vec![1.0, 2.0, 3.0, 2.0, 4.0, 6.0, -1.0, -2.0, -3.0];
    assert!(cofactors_3x3(&rank_one).iter().all(|&c| c == 0.0));
    [
        ("[[0]]", vec![0.0], vec![1, 1], vec![1.0]),
        (
            "rank one [[1, 2], [3, 6]]",
            vec![1.0, 2.0, 3.0, 6.0],
            vec![2, 2],
            vec![6.0, -3.0, -2.0, 1.0],
        ),
        (
            "a zero column [[0, 1], [0, 1]]",
            vec![0.0, 1.0, 0.0, 1.0],
            vec![2, 2],
            vec![1.0, 0.0, -1.0, 0.0],
        ),
        ("rank two 3 × 3", rank_two, vec![3, 3], rank_two_cof),
        ("rank one 3 × 3", rank_one, vec![3, 3], vec![0.0; 9]),
        ("zero 3 × 3", vec![0.0; 9], vec![3, 3], vec![0.0; 9]),
    ]
    .into_iter()
    .map(|(label, a, shape, cofactors)| Singular {
        label,
        a,
        shape,
        cofactors,
    })
    .collect()
}

/// `det`'s VJP is the cofactor matrix at singular matrices, where `det A · A⁻ᵀ` is `0 · ∞` (it
/// panicked): hand-derived cofactors, a batch mixing singular and invertible matrices, and
/// central differences of `det` (a polynomial, so they are accurate at singular points too).
#[test]
fn det_gradient_is_the_cofactor_matrix_at_singular_matrices() {
    fn check<T: Element>(tol: f64) {
        for Singular {
            label,
            a,
            shape,
            cofactors: cof,
        } in singular_matrices()
        {
            let a = tensor::<T>(&a, &shape);
            assert_eq!(a.det().item().to_real(), 0.0, "{label}");
            assert_close(&det_vjp(&tensor(&[1.0], &[]), &a), &cof, tol);
            assert_close(
                &det_vjp(&tensor(&[-2.0], &[]), &a),
                &cof.iter().map(|c| -2.0 * c).collect::<Vec<_>>(),
                tol,
            );
        }
        // One batch: singular, invertible ([[2, 1], [0.5, 3]], cofactors [[3, -0.5], [-1, 2]]),
        // zero; each scaled by its cotangent.
        let a = tensor::<T>(
            &[1.0, 2.0, 3.0, 6.0, 2.0, 1.0, 0.5, 3.0, 0.0, 0.0, 0.0, 0.0],
            &[3, 2, 2],
        );
        assert_close(&a.det(), &[0.0, 5.5, 0.0], tol);
        let g = tensor::<T>(&[2.0, -1.0, 0.5], &[3]);
        assert_close(
            &det_vjp(&g, &a),
            &[
                12.0, -6.0, -4.0, 2.0, -3.0, 0.5, 1.0, -2.0, 0.0, 0.0, 0.0, 0.0,
            ],
            tol,
        );
    }
    check::<f32>(1e-5);
    check::<f64>(1e-14);
}

/// `det`'s JVP at singular matrices: against central differences of `det` along a direction,
/// and against the VJP by the dot-product test `⟨jvp(v), w⟩ = ⟨v, vjp(w)⟩`; and the gradient
/// entry by entry against central differences.
#[test]
fn det_jvp_at_singular_matrices_matches_differences_and_the_vjp() {
    for Singular {
        label, a, shape, ..
    } in singular_matrices()
    {
        let a = tensor::<f64>(&a, &shape);
        let v = uniform::<f64>(&shape, -1.0, 1.0, 970);
        let h = 1e-4;
        let jvp = det_jvp(&a, &v).item();
        // det(A + tV) is a cubic in t (for n ≤ 3) whose t³ coefficient is det V: the central
        // difference is the derivative plus h² det V, which is taken off.
        let fd = ((&a + &(&v * h)).det().item() - (&a - &(&v * h)).det().item()) / (2.0 * h);
        let fd = if shape[0] == 3 {
            fd - h * h * v.det().item()
        } else {
            fd
        };
        assert!(
            (jvp - fd).abs() < 1e-9,
            "{label}: jvp {jvp}, differences {fd}"
        );
        let w = 0.7;
        let vjp = det_vjp(&Tensor::scalar(w), &a);
        let rhs: f64 = (&vjp * &v).sum().item();
        assert!(
            (jvp * w - rhs).abs() < 1e-14,
            "{label}: {jvp} · {w} vs {rhs}"
        );
        let n = a.len();
        let grad: Vec<f64> = (0..n)
            .map(|k| {
                let mut e = vec![0.0; n];
                e[k] = h;
                let e = Tensor::from_vec(e, &shape);
                ((&a + &e).det().item() - (&a - &e).det().item()) / (2.0 * h)
            })
            .collect();
        assert_close(&det_vjp(&Tensor::scalar(1.0), &a), &grad, 1e-9);
    }
}

/// `f_hvp` runs `det`'s VJP on dual numbers: its tangent must be the derivative of the cofactor
/// matrix, which central differences of the cofactors give (they are polynomials of degree `n -
/// 1`, so for `n ≤ 3` the differences are exact but for rounding). The rank-one 3 × 3 matrix
/// exercises a trailing 2 × 2 block whose values are zero and tangents are not (its cofactors'
/// derivative is not zero, though they are). `det` itself on dual numbers has `det_jvp`'s
/// tangent.
#[test]
fn det_rules_on_dual_numbers_differentiate_the_cofactors() {
    fn cof_grad<T: Element>(a: &Tensor<T>) -> Tensor<T> {
        det_vjp(&Tensor::ones(&a.shape()[..a.ndim() - 2]), a)
    }
    let mut cases: Vec<(String, Tensor<f64>)> = singular_matrices()
        .into_iter()
        .map(|m| (m.label.to_string(), tensor(&m.a, &m.shape)))
        .collect();
    cases.push((
        "batch: singular, invertible, zero".into(),
        tensor(
            &[1.0, 2.0, 3.0, 6.0, 2.0, 1.0, 0.5, 3.0, 0.0, 0.0, 0.0, 0.0],
            &[3, 2, 2],
        ),
    ));
    cases.push(("invertible 4 × 4".into(), shifted(&[4, 4], 1.0, 971)));
    for (label, a) in cases {
        let d = uniform::<f64>(a.shape(), -1.0, 1.0, 972);
        let hvp = check_hvp_by_duals(&label, cof_grad::<f64>, cof_grad::<Dual<f64>>, &a, &d);
        let det = dual_of(&a, &d).det();
        assert!(
            max_diff(&tangent_of(&det), &det_jvp(&a, &d)) < 1e-13,
            "{label}: det's tangent"
        );
        assert!(max_diff(&primal_of(&det), &a.det()) == 0.0, "{label}");
        if a.shape() == [2, 2] {
            // The cofactors of a 2 × 2 matrix are linear: their derivative along D is cof D.
            let d = d.to_vec();
            assert_close(&hvp, &[d[3], -d[2], -d[1], d[0]], 1e-15);
        }
        if a.shape() == [1, 1] {
            assert_close(&hvp, &[0.0], 0.0);
        }
    }
    // Zero column: partial pivoting would skip the column and miss the entry -1 of the cofactors
    // in det's tangent, dA₀₀ - dA₁₀.
    let a = tensor::<f64>(&[0.0, 1.0, 0.0, 1.0], &[2, 2]);
    let d = tensor::<f64>(&[0.5, 0.25, 2.0, -1.0], &[2, 2]);
    assert_close(&tangent_of(&dual_of(&a, &d).det()), &[0.5 - 2.0], 1e-15);
}

/// `sign_det` is `0` at a singular matrix and `±1` elsewhere, its rules zero; `logabsdet` is
/// `-∞` there and its gradient, as documented, `ḡ adj(A)ᵀ / 0`: `±∞` with the sign of `ḡ` times
/// the cofactor, NaN where the cofactor is zero; its JVP is not finite. Nothing panics.
#[test]
fn slogdet_at_singular_matrices_is_documented_and_does_not_panic() {
    let a = tensor::<f64>(
        &[1.0, 2.0, 3.0, 6.0, 2.0, 1.0, 0.5, 3.0, 1.0, 2.0, 4.0, 3.0],
        &[3, 2, 2],
    );
    let (sign, logdet) = a.slogdet();
    assert_close(&sign, &[0.0, 1.0, -1.0], 0.0);
    let l = logdet.to_vec();
    assert_eq!(l[0], f64::NEG_INFINITY);
    assert!((l[1] - 5.5f64.ln()).abs() < 1e-15 && (l[2] - 5f64.ln()).abs() < 1e-15);
    let da = uniform::<f64>(&[3, 2, 2], -1.0, 1.0, 973);
    assert_close(&sign_det_jvp(&da), &[0.0, 0.0, 0.0], 0.0);
    assert_close(
        &sign_det_vjp(&Tensor::<f64>::ones(&[3]), &[3, 2, 2]),
        &[0.0; 12],
        0.0,
    );
    let g = logabsdet_vjp(&tensor(&[1.0, 1.0, -1.0], &[3]), &a);
    let g = g.to_vec();
    // Cofactors [[6, -3], [-2, 1]] over zero.
    assert_eq!(
        &g[..4],
        &[
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY
        ]
    );
    // The invertible ones: ḡ A⁻ᵀ, A⁻ᵀ = cof(A) / det A.
    let want = [3.0 / 5.5, -0.5 / 5.5, -1.0 / 5.5, 2.0 / 5.5];
    for (got, want) in g[4..8].iter().zip(want) {
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    }
    // det [[1, 2], [4, 3]] = -5 and ḡ = -1: ḡ A⁻ᵀ = cof(A) / 5.
    let want = [3.0 / 5.0, -4.0 / 5.0, -2.0 / 5.0, 1.0 / 5.0];
    for (got, want) in g[8..].iter().zip(want) {
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    }
    let jvp = logabsdet_jvp(&a, &da).to_vec();
    assert!(!jvp[0].is_finite() && jvp[1].is_finite() && jvp[2].is_finite());
    for zero_cofactors in [
        vec![0.0; 9],
        vec![1.0, 2.0, 3.0, 2.0, 4.0, 6.0, -1.0, -2.0, -3.0],
    ] {
        let z = tensor::<f64>(&zero_cofactors, &[3, 3]);
        assert_eq!(z.slogdet().0.item(), 0.0);
        assert_eq!(z.logabsdet().item(), f64::NEG_INFINITY);
        assert!(logabsdet_vjp(&Tensor::scalar(1.0), &z)
            .to_vec()
            .iter()
            .all(|x| x.is_nan()));
        assert!(logabsdet_jvp(&z, &Tensor::ones(&[3, 3])).item().is_nan());
    }
    // On dual numbers (f_hvp's backward pass) too: no panic, not finite.
    let z = dual_of(
        &tensor::<f64>(&[1.0, 2.0, 3.0, 6.0], &[2, 2]),
        &da.shrink(&[(0, 1), (0, 2), (0, 2)]).reshape(&[2, 2]),
    );
    let g = logabsdet_vjp(&Tensor::scalar(Dual::constant(1.0)), &z);
    assert!(primal_of(&g).to_vec().iter().all(|x| x.is_infinite()));
    assert_eq!(primal_of(&z.logabsdet()).item(), f64::NEG_INFINITY);
}

/// The rules of `det` and `logabsdet` name themselves and the shape of a matrix that is not
/// square.
#[test]
fn determinant_rules_name_the_op_for_matrices_that_are_not_square() {
    let wide = Tensor::<f64>::ones(&[2, 3]);
    for (op, msg) in [
        (
            "det_vjp",
            panic_message(|| det_vjp(&Tensor::scalar(1.0), &wide)),
        ),
        ("det_jvp", panic_message(|| det_jvp(&wide, &wide))),
        (
            "logabsdet_vjp",
            panic_message(|| logabsdet_vjp(&Tensor::scalar(1.0), &wide)),
        ),
        (
            "logabsdet_jvp",
            panic_message(|| logabsdet_jvp(&wide, &wide)),
        ),
    ] {
        assert!(msg.starts_with(op) && msg.contains("[2, 3]"), "{msg}");
    }
}
