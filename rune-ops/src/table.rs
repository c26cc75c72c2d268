//! Every op but the elementwise functions of one tensor (those are in [`crate::for_each_unary!`]).
//!
//! Rule argument lists follow the runtime's conventions (see `rune_runtime::ops`): a JVP takes
//! what it reads, then configuration, then tangents; a VJP takes the cotangent first. Entries
//! without rules are ops whose results AD treats as constants; their `params` are left empty,
//! since the macro never lowers them to rule calls.

use crate::{Eval, Form, Fusion, Keep, Kind, OpDef, Param, Partial, Read, Rule, RuleArg::*, Rules};

const T: Param = Param::Tensor;
const LIST: Param = Param::TensorList;
const SCALAR: Param = Param::Config(None, Keep::Copy);
const AXIS: Param = Param::Config(Some("isize"), Keep::Copy);
const AXES: Param = Param::Config(Some("&[isize]"), Keep::Owned);
const KEEPDIMS: Param = Param::Config(Some("bool"), Keep::Copy);
const USIZE: Param = Param::Config(Some("usize"), Keep::Copy);
const INT: Param = Param::Config(Some("i32"), Keep::Copy);
const OFFSET: Param = Param::Config(Some("isize"), Keep::Copy);
const FLAG: Param = Param::Config(Some("bool"), Keep::Copy);
const SHAPE: Param = Param::Config(Some("&[usize]"), Keep::Owned);
const RANGES: Param = Param::Config(Some("&[(usize, usize)]"), Keep::Owned);
const MASK: Param = Param::Config(None, Keep::Owned);
const INDICES: Param = Param::Config(None, Keep::Owned);
const SPEC: Param = Param::Config(Some("&str"), Keep::Owned);

/// Every op but the elementwise functions of one tensor.
pub const OTHER: &[OpDef] = &[
    OpDef {
        name: "add",
        form: Form::Operator,
        kind: Kind::Elementwise,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "add_jvp",
                args: &[Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "add_vjp_lhs",
                    args: &[Cotangent, Shape(0)],
                },
                Rule {
                    name: "add_vjp_rhs",
                    args: &[Cotangent, Shape(1)],
                },
            ],
        }),
        reference: "add",
        fusion: Some(Fusion {
            eval: Eval::Arithmetic,
            partials: &[
                Partial {
                    operand: 0,
                    form: "",
                    reads: &[],
                },
                Partial {
                    operand: 1,
                    form: "",
                    reads: &[],
                },
            ],
        }),
    },
    OpDef {
        name: "sub",
        form: Form::Operator,
        kind: Kind::Elementwise,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "sub_jvp",
                args: &[Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "sub_vjp_lhs",
                    args: &[Cotangent, Shape(0)],
                },
                Rule {
                    name: "sub_vjp_rhs",
                    args: &[Cotangent, Shape(1)],
                },
            ],
        }),
        reference: "add, neg",
        fusion: Some(Fusion {
            eval: Eval::Arithmetic,
            partials: &[
                Partial {
                    operand: 0,
                    form: "",
                    reads: &[],
                },
                Partial {
                    operand: 1,
                    form: "",
                    reads: &[],
                },
            ],
        }),
    },
    OpDef {
        name: "mul",
        form: Form::Operator,
        kind: Kind::Elementwise,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "mul_jvp",
                args: &[Input(0), Input(1), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "mul_vjp_lhs",
                    args: &[Cotangent, Shape(0), Input(1)],
                },
                Rule {
                    name: "mul_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1)],
                },
            ],
        }),
        reference: "mul",
        fusion: Some(Fusion {
            eval: Eval::Arithmetic,
            partials: &[
                Partial {
                    operand: 0,
                    form: "",
                    reads: &[Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "",
                    reads: &[Read::Operand(0)],
                },
            ],
        }),
    },
    OpDef {
        name: "div",
        form: Form::Operator,
        kind: Kind::Elementwise,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "div_jvp",
                args: &[Input(1), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "div_vjp_lhs",
                    args: &[Cotangent, Shape(0), Input(1)],
                },
                Rule {
                    name: "div_vjp_rhs",
                    args: &[Cotangent, Input(1), Output],
                },
            ],
        }),
        reference: "fdiv",
        fusion: Some(Fusion {
            eval: Eval::Arithmetic,
            partials: &[
                Partial {
                    operand: 0,
                    form: "",
                    reads: &[Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "",
                    reads: &[Read::Operand(1), Read::Output],
                },
            ],
        }),
    },
    OpDef {
        name: "neg",
        form: Form::Negation,
        kind: Kind::Elementwise,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "neg_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "neg_vjp",
                args: &[Cotangent],
            }],
        }),
        reference: "neg",
        fusion: Some(Fusion {
            eval: Eval::Negation,
            partials: &[Partial {
                operand: 0,
                form: "",
                reads: &[],
            }],
        }),
    },
    OpDef {
        name: "clamp",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[SCALAR, SCALAR],
        rules: Some(Rules {
            jvp: Rule {
                name: "clamp_jvp",
                args: &[Input(0), Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "clamp_vjp",
                args: &[Cotangent, Input(0), Config(0), Config(1)],
            }],
        }),
        reference: "composite: max, neg",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[Partial {
                operand: 0,
                form: "clamp_d",
                reads: &[Read::Operand(0), Read::Operand(1), Read::Operand(2)],
            }],
        }),
    },
    OpDef {
        name: "powf",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[SCALAR],
        rules: Some(Rules {
            jvp: Rule {
                name: "powf_jvp",
                args: &[Input(0), Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "powf_vjp",
                args: &[Cotangent, Input(0), Config(0)],
            }],
        }),
        reference: "pow",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[Partial {
                operand: 0,
                form: "powf_d",
                reads: &[Read::Operand(0), Read::Operand(1)],
            }],
        }),
    },
    OpDef {
        name: "pow",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "pow_jvp",
                args: &[Input(0), Input(1), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "pow_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "pow_vjp_rhs",
                    args: &[Cotangent, Input(0), Output, Shape(1)],
                },
            ],
        }),
        reference: "pow",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "pow_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "pow_rhs",
                    reads: &[Read::Operand(0), Read::Output],
                },
            ],
        }),
    },
    OpDef {
        name: "logaddexp",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "logaddexp_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "logaddexp_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "logaddexp_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: max, add, exp2, log2",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "logaddexp_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "logaddexp_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "xlogy",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "xlogy_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "xlogy_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "xlogy_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: mul, log2, where",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "xlogy_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "xlogy_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "xlog1py",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "xlog1py_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "xlog1py_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "xlog1py_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: mul, add, log2, where",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "xlog1py_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "xlog1py_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "atan2",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "atan2_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "atan2_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "atan2_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: not in the reference",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "atan2_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "atan2_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "hypot",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "hypot_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "hypot_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "hypot_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: mul, add, sqrt",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "hypot_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "hypot_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "powi",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[INT],
        rules: Some(Rules {
            jvp: Rule {
                name: "powi_jvp",
                args: &[Input(0), Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "powi_vjp",
                args: &[Cotangent, Input(0), Config(0)],
            }],
        }),
        reference: "composite: mul",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[Partial {
                operand: 0,
                form: "powi_d",
                reads: &[Read::Operand(0), Read::Operand(1)],
            }],
        }),
    },
    OpDef {
        name: "dot",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "dot_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "dot_vjp_lhs",
                    args: &[Cotangent, Input(1)],
                },
                Rule {
                    name: "dot_vjp_rhs",
                    args: &[Cotangent, Input(0)],
                },
            ],
        }),
        reference: "composite: mul, reduce_sum",
        fusion: None,
    },
    OpDef {
        name: "outer",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "outer_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "outer_vjp_lhs",
                    args: &[Cotangent, Input(1)],
                },
                Rule {
                    name: "outer_vjp_rhs",
                    args: &[Cotangent, Input(0)],
                },
            ],
        }),
        reference: "composite: reshape, expand, mul",
        fusion: None,
    },
    OpDef {
        name: "norm",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "norm_jvp",
                args: &[Input(0), Output, Tangent(0)],
            },
            vjp: &[Rule {
                name: "norm_vjp",
                args: &[Cotangent, Input(0), Output],
            }],
        }),
        reference: "composite: mul, reduce_sum, sqrt",
        fusion: None,
    },
    OpDef {
        name: "trace",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "trace_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "trace_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "composite: reduce_sum, mul",
        fusion: None,
    },
    OpDef {
        name: "diagonal",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "diagonal_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "diagonal_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "composite: gather, scatter",
        fusion: None,
    },
    OpDef {
        name: "diag",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "diag_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "diag_vjp",
                args: &[Cotangent],
            }],
        }),
        reference: "composite: scatter, gather",
        fusion: None,
    },
    OpDef {
        name: "triu",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[OFFSET],
        rules: Some(Rules {
            jvp: Rule {
                name: "triu_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "triu_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "composite: cmplt, where",
        fusion: None,
    },
    OpDef {
        name: "tril",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[OFFSET],
        rules: Some(Rules {
            jvp: Rule {
                name: "tril_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "tril_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "composite: cmplt, where",
        fusion: None,
    },
    OpDef {
        name: "cholesky",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "cholesky_jvp",
                args: &[Output, Tangent(0)],
            },
            vjp: &[Rule {
                name: "cholesky_vjp",
                args: &[Cotangent, Output],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "solve_triangular",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T, FLAG, FLAG],
        rules: Some(Rules {
            jvp: Rule {
                name: "solve_triangular_jvp",
                args: &[
                    Input(0),
                    Output,
                    Config(0),
                    Config(1),
                    MaybeTangent(0),
                    MaybeTangent(1),
                ],
            },
            vjp: &[
                Rule {
                    name: "solve_triangular_vjp_lhs",
                    args: &[Cotangent, Input(0), Output, Config(0), Config(1)],
                },
                Rule {
                    name: "solve_triangular_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1), Config(0), Config(1)],
                },
            ],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "solve",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "solve_jvp",
                args: &[Input(0), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "solve_vjp_lhs",
                    args: &[Cotangent, Input(0), Output],
                },
                Rule {
                    name: "solve_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1)],
                },
            ],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "inv",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "inv_jvp",
                args: &[Output, Tangent(0)],
            },
            vjp: &[Rule {
                name: "inv_vjp",
                args: &[Cotangent, Output],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "det",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "det_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "det_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "logabsdet",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "logabsdet_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "logabsdet_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "sign_det",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "sign_det_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "sign_det_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "cho_solve",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "cho_solve_jvp",
                args: &[Input(0), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "cho_solve_vjp_lhs",
                    args: &[Cotangent, Input(0), Output],
                },
                Rule {
                    name: "cho_solve_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1)],
                },
            ],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "qr_q",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "qr_q_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "qr_q_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "qr_r",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "qr_r_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "qr_r_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "eigvalsh",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "eigvalsh_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "eigvalsh_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "eigh_vectors",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "eigh_vectors_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "eigh_vectors_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "svd_u",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "svd_u_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "svd_u_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "svdvals",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "svdvals_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "svdvals_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "svd_vh",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "svd_vh_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "svd_vh_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "lstsq",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "lstsq_jvp",
                args: &[Input(0), Input(1), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "lstsq_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1), Output],
                },
                Rule {
                    name: "lstsq_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1)],
                },
            ],
        }),
        reference: "composite: not in the reference",
        fusion: None,
    },
    OpDef {
        name: "einsum",
        form: Form::Function,
        kind: Kind::LinearAlgebra,
        params: &[SPEC, T, T],
        rules: Some(Rules {
            jvp: Rule {
                name: "einsum_jvp",
                args: &[
                    Input(0),
                    Input(1),
                    Config(0),
                    MaybeTangent(0),
                    MaybeTangent(1),
                ],
            },
            vjp: &[
                Rule {
                    name: "einsum_vjp_lhs",
                    args: &[Cotangent, Shape(0), Input(1), Config(0)],
                },
                Rule {
                    name: "einsum_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1), Config(0)],
                },
            ],
        }),
        reference: "composite: reshape, permute, reduce_sum, mul",
        fusion: None,
    },
    OpDef {
        name: "maximum",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "maximum_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "maximum_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "maximum_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "max",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "maximum_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "maximum_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "minimum",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "minimum_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "minimum_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "minimum_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: max, neg",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "minimum_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "minimum_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "fmax",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "fmax_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "fmax_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "fmax_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: max, isnan, where",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "fmax_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "fmax_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "fmin",
        form: Form::Method,
        kind: Kind::Elementwise,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "fmin_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "fmin_vjp_lhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
                Rule {
                    name: "fmin_vjp_rhs",
                    args: &[Cotangent, Input(0), Input(1)],
                },
            ],
        }),
        reference: "composite: max, neg, isnan, where",
        fusion: Some(Fusion {
            eval: Eval::Scalar,
            partials: &[
                Partial {
                    operand: 0,
                    form: "fmin_lhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
                Partial {
                    operand: 1,
                    form: "fmin_rhs",
                    reads: &[Read::Operand(0), Read::Operand(1)],
                },
            ],
        }),
    },
    OpDef {
        name: "sum",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "sum_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "sum_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "reduce_sum",
        fusion: None,
    },
    OpDef {
        name: "sum_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS],
        rules: Some(Rules {
            jvp: Rule {
                name: "sum_axes_jvp",
                args: &[Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "sum_axes_vjp",
                args: &[Cotangent, Shape(0), Config(0), Config(1)],
            }],
        }),
        reference: "reduce_sum",
        fusion: None,
    },
    OpDef {
        name: "mean",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "mean_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "mean_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "composite: reduce_sum, mul",
        fusion: None,
    },
    OpDef {
        name: "mean_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS],
        rules: Some(Rules {
            jvp: Rule {
                name: "mean_axes_jvp",
                args: &[Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "mean_axes_vjp",
                args: &[Cotangent, Shape(0), Config(0), Config(1)],
            }],
        }),
        reference: "composite: reduce_sum, mul",
        fusion: None,
    },
    OpDef {
        name: "max",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "max_jvp",
                args: &[Input(0), Output, Tangent(0)],
            },
            vjp: &[Rule {
                name: "max_vjp",
                args: &[Cotangent, Input(0), Output],
            }],
        }),
        reference: "reduce_max",
        fusion: None,
    },
    OpDef {
        name: "max_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS],
        rules: Some(Rules {
            jvp: Rule {
                name: "max_axes_jvp",
                args: &[Input(0), Output, Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "max_axes_vjp",
                args: &[Cotangent, Input(0), Output, Config(0), Config(1)],
            }],
        }),
        reference: "reduce_max",
        fusion: None,
    },
    OpDef {
        name: "min",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "min_jvp",
                args: &[Input(0), Output, Tangent(0)],
            },
            vjp: &[Rule {
                name: "min_vjp",
                args: &[Cotangent, Input(0), Output],
            }],
        }),
        reference: "composite: neg, reduce_max",
        fusion: None,
    },
    OpDef {
        name: "min_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS],
        rules: Some(Rules {
            jvp: Rule {
                name: "min_axes_jvp",
                args: &[Input(0), Output, Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "min_axes_vjp",
                args: &[Cotangent, Input(0), Output, Config(0), Config(1)],
            }],
        }),
        reference: "composite: neg, reduce_max",
        fusion: None,
    },
    OpDef {
        name: "prod",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "prod_jvp",
                args: &[Input(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "prod_vjp",
                args: &[Cotangent, Input(0)],
            }],
        }),
        reference: "reduce_prod",
        fusion: None,
    },
    OpDef {
        name: "prod_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS],
        rules: Some(Rules {
            jvp: Rule {
                name: "prod_axes_jvp",
                args: &[Input(0), Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "prod_axes_vjp",
                args: &[Cotangent, Input(0), Config(0), Config(1)],
            }],
        }),
        reference: "reduce_prod",
        fusion: None,
    },
    OpDef {
        name: "logsumexp",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "logsumexp_jvp",
                args: &[Input(0), Output, Tangent(0)],
            },
            vjp: &[Rule {
                name: "logsumexp_vjp",
                args: &[Cotangent, Input(0), Output],
            }],
        }),
        reference: "composite: reduce_max, add, exp2, reduce_sum, log2",
        fusion: None,
    },
    OpDef {
        name: "logsumexp_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS],
        rules: Some(Rules {
            jvp: Rule {
                name: "logsumexp_axes_jvp",
                args: &[Input(0), Output, Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "logsumexp_axes_vjp",
                args: &[Cotangent, Input(0), Output, Config(0), Config(1)],
            }],
        }),
        reference: "composite: reduce_max, add, exp2, reduce_sum, log2",
        fusion: None,
    },
    OpDef {
        name: "softmax",
        form: Form::Method,
        kind: Kind::Normalization,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "softmax_jvp",
                args: &[Output, Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "softmax_vjp",
                args: &[Cotangent, Output, Config(0)],
            }],
        }),
        reference: "composite: reduce_max, add, exp2, reduce_sum, fdiv",
        fusion: None,
    },
    OpDef {
        name: "log_softmax",
        form: Form::Method,
        kind: Kind::Normalization,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "log_softmax_jvp",
                args: &[Output, Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "log_softmax_vjp",
                args: &[Cotangent, Output, Config(0)],
            }],
        }),
        reference: "composite: reduce_max, add, exp2, reduce_sum, log2",
        fusion: None,
    },
    OpDef {
        name: "cumsum",
        form: Form::Method,
        kind: Kind::Scan,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "cumsum_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "cumsum_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "associative_scan sum",
        fusion: None,
    },
    OpDef {
        name: "cumprod",
        form: Form::Method,
        kind: Kind::Scan,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "cumprod_jvp",
                args: &[Input(0), Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "cumprod_vjp",
                args: &[Cotangent, Input(0), Output, Config(0)],
            }],
        }),
        reference: "associative_scan prod",
        fusion: None,
    },
    OpDef {
        name: "var",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "var_jvp",
                args: &[Input(0), Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "var_vjp",
                args: &[Cotangent, Input(0), Config(0)],
            }],
        }),
        reference: "composite: reduce_sum, add, mul",
        fusion: None,
    },
    OpDef {
        name: "var_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "var_axes_jvp",
                args: &[Input(0), Config(0), Config(1), Config(2), Tangent(0)],
            },
            vjp: &[Rule {
                name: "var_axes_vjp",
                args: &[Cotangent, Input(0), Config(0), Config(1), Config(2)],
            }],
        }),
        reference: "composite: reduce_sum, add, mul",
        fusion: None,
    },
    OpDef {
        name: "std",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "std_jvp",
                args: &[Input(0), Output, Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "std_vjp",
                args: &[Cotangent, Input(0), Output, Config(0)],
            }],
        }),
        reference: "composite: reduce_sum, add, mul, sqrt",
        fusion: None,
    },
    OpDef {
        name: "std_axes",
        form: Form::Method,
        kind: Kind::Reduction,
        params: &[AXES, KEEPDIMS, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "std_axes_jvp",
                args: &[
                    Input(0),
                    Output,
                    Config(0),
                    Config(1),
                    Config(2),
                    Tangent(0),
                ],
            },
            vjp: &[Rule {
                name: "std_axes_vjp",
                args: &[Cotangent, Input(0), Output, Config(0), Config(1), Config(2)],
            }],
        }),
        reference: "composite: reduce_sum, add, mul, sqrt",
        fusion: None,
    },
    OpDef {
        name: "logcumsumexp",
        form: Form::Method,
        kind: Kind::Scan,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "logcumsumexp_jvp",
                args: &[Input(0), Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "logcumsumexp_vjp",
                args: &[Cotangent, Input(0), Config(0)],
            }],
        }),
        reference: "composite: max, add, exp2, log2",
        fusion: None,
    },
    OpDef {
        name: "sort",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "sort_jvp",
                args: &[Input(0), Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "sort_vjp",
                args: &[Cotangent, Input(0), Config(0)],
            }],
        }),
        reference: "composite: cmplt, gather, scatter",
        fusion: None,
    },
    OpDef {
        name: "reshape",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[SHAPE],
        rules: Some(Rules {
            jvp: Rule {
                name: "reshape_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "reshape_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "reshape",
        fusion: None,
    },
    OpDef {
        name: "permute",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[SHAPE],
        rules: Some(Rules {
            jvp: Rule {
                name: "permute_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "permute_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "permute",
        fusion: None,
    },
    OpDef {
        name: "t",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "t_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "t_vjp",
                args: &[Cotangent],
            }],
        }),
        reference: "permute",
        fusion: None,
    },
    OpDef {
        name: "broadcast_to",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[SHAPE],
        rules: Some(Rules {
            jvp: Rule {
                name: "broadcast_to_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "broadcast_to_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "reshape, expand",
        fusion: None,
    },
    OpDef {
        name: "expand_dims",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "expand_dims_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "expand_dims_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "reshape",
        fusion: None,
    },
    OpDef {
        name: "squeeze",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "squeeze_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "squeeze_vjp",
                args: &[Cotangent, Shape(0)],
            }],
        }),
        reference: "reshape",
        fusion: None,
    },
    OpDef {
        name: "shrink",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[RANGES],
        rules: Some(Rules {
            jvp: Rule {
                name: "shrink_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "shrink_vjp",
                args: &[Cotangent, Shape(0), Config(0)],
            }],
        }),
        reference: "shrink",
        fusion: None,
    },
    OpDef {
        name: "pad",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[RANGES, SCALAR],
        rules: Some(Rules {
            jvp: Rule {
                name: "pad_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "pad_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "pad",
        fusion: None,
    },
    OpDef {
        name: "flip",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[SHAPE],
        rules: Some(Rules {
            jvp: Rule {
                name: "flip_jvp",
                args: &[Config(0), Tangent(0)],
            },
            vjp: &[Rule {
                name: "flip_vjp",
                args: &[Cotangent, Config(0)],
            }],
        }),
        reference: "flip",
        fusion: None,
    },
    OpDef {
        name: "unfold",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[USIZE, USIZE, USIZE, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "unfold_jvp",
                args: &[Config(0), Config(1), Config(2), Config(3), Tangent(0)],
            },
            vjp: &[Rule {
                name: "unfold_vjp",
                args: &[
                    Cotangent,
                    Shape(0),
                    Config(0),
                    Config(1),
                    Config(2),
                    Config(3),
                ],
            }],
        }),
        reference: "unfold",
        fusion: None,
    },
    OpDef {
        name: "fold",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[SHAPE, USIZE, USIZE, USIZE, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "fold_jvp",
                args: &[
                    Config(0),
                    Config(1),
                    Config(2),
                    Config(3),
                    Config(4),
                    Tangent(0),
                ],
            },
            vjp: &[Rule {
                name: "fold_vjp",
                args: &[Cotangent, Config(1), Config(2), Config(3), Config(4)],
            }],
        }),
        reference: "fold",
        fusion: None,
    },
    OpDef {
        name: "concat",
        form: Form::Function,
        kind: Kind::Combine,
        params: &[LIST, AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "concat_jvp",
                args: &[Inputs, Config(0), MaybeTangents],
            },
            vjp: &[Rule {
                name: "concat_vjp",
                args: &[Cotangent, ListIndex, ListSizes, Config(0)],
            }],
        }),
        reference: "cat",
        fusion: None,
    },
    OpDef {
        name: "stack",
        form: Form::Function,
        kind: Kind::Combine,
        params: &[LIST, AXIS],
        rules: Some(Rules {
            jvp: Rule {
                name: "stack_jvp",
                args: &[Inputs, Config(0), MaybeTangents],
            },
            vjp: &[Rule {
                name: "stack_vjp",
                args: &[Cotangent, ListIndex, Config(0)],
            }],
        }),
        reference: "composite: reshape, cat",
        fusion: None,
    },
    OpDef {
        name: "where_cond",
        form: Form::Function,
        kind: Kind::Combine,
        params: &[MASK, T, T],
        rules: Some(Rules {
            jvp: Rule {
                name: "where_cond_jvp",
                args: &[Config(0), Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "where_cond_vjp_lhs",
                    args: &[Cotangent, Config(0), Shape(0)],
                },
                Rule {
                    name: "where_cond_vjp_rhs",
                    args: &[Cotangent, Config(0), Shape(1)],
                },
            ],
        }),
        reference: "where",
        fusion: Some(Fusion {
            eval: Eval::Select,
            partials: &[
                Partial {
                    operand: 1,
                    form: "where_cond_lhs",
                    reads: &[Read::Operand(0)],
                },
                Partial {
                    operand: 2,
                    form: "where_cond_rhs",
                    reads: &[Read::Operand(0)],
                },
            ],
        }),
    },
    OpDef {
        name: "gather",
        form: Form::Method,
        kind: Kind::Indexing,
        params: &[AXIS, INDICES],
        rules: Some(Rules {
            jvp: Rule {
                name: "gather_jvp",
                args: &[Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "gather_vjp",
                args: &[Cotangent, Shape(0), Config(0), Config(1)],
            }],
        }),
        reference: "gather",
        fusion: None,
    },
    OpDef {
        name: "scatter_add",
        form: Form::Method,
        kind: Kind::Indexing,
        params: &[AXIS, INDICES, T],
        rules: Some(Rules {
            jvp: Rule {
                name: "scatter_add_jvp",
                args: &[
                    Output,
                    Config(0),
                    Config(1),
                    MaybeTangent(0),
                    MaybeTangent(1),
                ],
            },
            vjp: &[
                Rule {
                    name: "scatter_add_vjp_input",
                    args: &[Cotangent],
                },
                Rule {
                    name: "scatter_add_vjp_updates",
                    args: &[Cotangent, Config(0), Config(1)],
                },
            ],
        }),
        reference: "scatter",
        fusion: None,
    },
    OpDef {
        name: "matmul",
        form: Form::Method,
        kind: Kind::LinearAlgebra,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "matmul_jvp",
                args: &[Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "matmul_vjp_lhs",
                    args: &[Cotangent, Shape(0), Input(1)],
                },
                Rule {
                    name: "matmul_vjp_rhs",
                    args: &[Cotangent, Input(0), Shape(1)],
                },
            ],
        }),
        reference: "matmul",
        fusion: None,
    },
    OpDef {
        name: "conv2d",
        form: Form::Method,
        kind: Kind::Window,
        params: &[T, USIZE, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "conv2d_jvp",
                args: &[
                    Input(0),
                    Input(1),
                    Config(0),
                    Config(1),
                    MaybeTangent(0),
                    MaybeTangent(1),
                ],
            },
            vjp: &[
                Rule {
                    name: "conv2d_vjp_input",
                    args: &[Cotangent, Shape(0), Input(1), Config(0), Config(1)],
                },
                Rule {
                    name: "conv2d_vjp_weight",
                    args: &[Cotangent, Input(0), Shape(1), Config(0), Config(1)],
                },
            ],
        }),
        reference: "composite: pad, unfold, matmul",
        fusion: None,
    },
    OpDef {
        name: "max_pool2d",
        form: Form::Method,
        kind: Kind::Window,
        params: &[USIZE, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "max_pool2d_jvp",
                args: &[Input(0), Output, Config(0), Config(1), Tangent(0)],
            },
            vjp: &[Rule {
                name: "max_pool2d_vjp",
                args: &[Cotangent, Input(0), Output, Config(0), Config(1)],
            }],
        }),
        reference: "composite: unfold, reduce_max",
        fusion: None,
    },
    OpDef {
        name: "avg_pool2d",
        form: Form::Method,
        kind: Kind::Window,
        params: &[USIZE, USIZE],
        rules: Some(Rules {
            jvp: Rule {
                name: "avg_pool2d_jvp",
                args: &[Tangent(0), Config(0), Config(1)],
            },
            vjp: &[Rule {
                name: "avg_pool2d_vjp",
                args: &[Cotangent, Shape(0), Config(0), Config(1)],
            }],
        }),
        reference: "composite: unfold, reduce_sum, mul",
        fusion: None,
    },
    OpDef {
        name: "dual_of",
        form: Form::Function,
        kind: Kind::Dual,
        params: &[T, T],
        rules: Some(Rules {
            jvp: Rule {
                name: "dual_of_jvp",
                args: &[Output, MaybeTangent(0), MaybeTangent(1)],
            },
            vjp: &[
                Rule {
                    name: "dual_of_vjp_lhs",
                    args: &[Cotangent],
                },
                Rule {
                    name: "dual_of_vjp_rhs",
                    args: &[Cotangent],
                },
            ],
        }),
        reference: "composite: forward mode by dual numbers",
        fusion: None,
    },
    OpDef {
        name: "tangent_of",
        form: Form::Function,
        kind: Kind::Dual,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "tangent_of_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "tangent_of_vjp",
                args: &[Cotangent],
            }],
        }),
        reference: "composite: forward mode by dual numbers",
        fusion: None,
    },
    OpDef {
        name: "primal_of",
        form: Form::Function,
        kind: Kind::Dual,
        params: &[T],
        rules: Some(Rules {
            jvp: Rule {
                name: "primal_of_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "primal_of_vjp",
                args: &[Cotangent],
            }],
        }),
        reference: "composite: forward mode by dual numbers",
        fusion: None,
    },
    OpDef {
        name: "cast",
        form: Form::Method,
        kind: Kind::Cast,
        params: &[],
        rules: Some(Rules {
            jvp: Rule {
                name: "cast_jvp",
                args: &[Tangent(0)],
            },
            vjp: &[Rule {
                name: "cast_vjp_as",
                args: &[Cotangent, CastWitness],
            }],
        }),
        reference: "cast",
        fusion: None,
    },
    OpDef {
        name: "lt",
        form: Form::Method,
        kind: Kind::Comparison,
        params: &[],
        rules: None,
        reference: "cmplt",
        fusion: None,
    },
    OpDef {
        name: "gt",
        form: Form::Method,
        kind: Kind::Comparison,
        params: &[],
        rules: None,
        reference: "cmplt",
        fusion: None,
    },
    OpDef {
        name: "le",
        form: Form::Method,
        kind: Kind::Comparison,
        params: &[],
        rules: None,
        reference: "composite: cmplt, xor",
        fusion: None,
    },
    OpDef {
        name: "ge",
        form: Form::Method,
        kind: Kind::Comparison,
        params: &[],
        rules: None,
        reference: "composite: cmplt, xor",
        fusion: None,
    },
    OpDef {
        name: "eq",
        form: Form::Method,
        kind: Kind::Comparison,
        params: &[],
        rules: None,
        reference: "composite: cmpne, xor",
        fusion: None,
    },
    OpDef {
        name: "ne",
        form: Form::Method,
        kind: Kind::Comparison,
        params: &[],
        rules: None,
        reference: "cmpne",
        fusion: None,
    },
    OpDef {
        name: "argmax",
        form: Form::Method,
        kind: Kind::Indexing,
        params: &[],
        rules: None,
        reference: "composite: reduce_max, cmpne, where",
        fusion: None,
    },
    OpDef {
        name: "argmin",
        form: Form::Method,
        kind: Kind::Indexing,
        params: &[],
        rules: None,
        reference: "composite: neg, reduce_max, cmpne, where",
        fusion: None,
    },
    OpDef {
        name: "argsort",
        form: Form::Method,
        kind: Kind::Indexing,
        params: &[],
        rules: None,
        reference: "composite: cmplt, where",
        fusion: None,
    },
    OpDef {
        name: "and",
        form: Form::Method,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "and",
        fusion: None,
    },
    OpDef {
        name: "or",
        form: Form::Method,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "or",
        fusion: None,
    },
    OpDef {
        name: "xor",
        form: Form::Method,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "xor",
        fusion: None,
    },
    OpDef {
        name: "not",
        form: Form::Method,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "composite: xor",
        fusion: None,
    },
    OpDef {
        name: "int_add",
        form: Form::Operator,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "add",
        fusion: None,
    },
    OpDef {
        name: "int_sub",
        form: Form::Operator,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "composite: add, neg",
        fusion: None,
    },
    OpDef {
        name: "int_mul",
        form: Form::Operator,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "mul",
        fusion: None,
    },
    OpDef {
        name: "int_div",
        form: Form::Operator,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "idiv",
        fusion: None,
    },
    OpDef {
        name: "int_rem",
        form: Form::Operator,
        kind: Kind::Discrete,
        params: &[],
        rules: None,
        reference: "mod",
        fusion: None,
    },
    OpDef {
        name: "stop_gradient",
        form: Form::Function,
        kind: Kind::Cast,
        params: &[],
        rules: None,
        reference: "composite: identity whose result AD treats as a constant",
        fusion: None,
    },
    OpDef {
        name: "clone",
        form: Form::Method,
        kind: Kind::Shape,
        params: &[],
        rules: None,
        reference: "contiguous, copy",
        fusion: None,
    },
    OpDef {
        name: "scalar",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_scalar",
        fusion: None,
    },
    OpDef {
        name: "full",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_scalar, expand",
        fusion: None,
    },
    OpDef {
        name: "eye",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "zeros",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_scalar, expand",
        fusion: None,
    },
    OpDef {
        name: "ones",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_scalar, expand",
        fusion: None,
    },
    OpDef {
        name: "zeros_like",
        form: Form::Method,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_scalar, expand",
        fusion: None,
    },
    OpDef {
        name: "ones_like",
        form: Form::Method,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_scalar, expand",
        fusion: None,
    },
    OpDef {
        name: "from_vec",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "try_from_vec",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "arange",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "arange_step",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "try_arange_step",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "linspace",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "try_linspace",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "const_array",
        fusion: None,
    },
    OpDef {
        name: "rand_uniform",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "threefry",
        fusion: None,
    },
    OpDef {
        name: "rand_normal",
        form: Form::Constructor,
        kind: Kind::Constructor,
        params: &[],
        rules: None,
        reference: "threefry",
        fusion: None,
    },
    OpDef {
        name: "add_assign",
        form: Form::Operator,
        kind: Kind::Assign,
        params: &[],
        rules: None,
        reference: "assign",
        fusion: None,
    },
    OpDef {
        name: "sub_assign",
        form: Form::Operator,
        kind: Kind::Assign,
        params: &[],
        rules: None,
        reference: "assign",
        fusion: None,
    },
    OpDef {
        name: "mul_assign",
        form: Form::Operator,
        kind: Kind::Assign,
        params: &[],
        rules: None,
        reference: "assign",
        fusion: None,
    },
    OpDef {
        name: "div_assign",
        form: Form::Operator,
        kind: Kind::Assign,
        params: &[],
        rules: None,
        reference: "assign",
        fusion: None,
    },
];
