//! Rule calls: an op as the user wrote it (the forward op) and its tangent and VJP rules from
//! their argument lists in the op registry, on the generated locals.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};

use super::rt;
use crate::analyse::config_keep;
use crate::ir::walk;
use crate::ir::{Body, Const, Operand, Stmt, Use, Val};
use crate::names::{
    config_ident, const_ident, residual_ident, shape_ident, sizes_ident, tangent_ident, val_ident,
    witness_ident,
};
use crate::ops::{Form, Keep, OpSpec, Param, Rule, RuleArg};

/// How a hoisted constant is used, by id.
pub(super) struct Hoists {
    usage: Vec<Use>,
}

impl Hoists {
    pub(super) fn new(body: &Body) -> Self {
        let mut usage = Vec::new();
        walk(&body.stmts, &mut |s| {
            if let Stmt::Hoist { id, usage: u, .. } = s {
                if usage.len() <= id.0 {
                    usage.resize(id.0 + 1, Use::Plain);
                }
                usage[id.0] = *u;
            }
        });
        Hoists { usage }
    }

    /// The operand as written in a forward op.
    pub(super) fn forward(&self, o: Operand) -> TokenStream {
        match o {
            Operand::Val(v) => {
                let i = val_ident(v);
                quote!(&#i)
            }
            Operand::Const(c) => {
                let i = const_ident(c);
                match self.usage[c.0] {
                    Use::Plain => quote!(#i),
                    Use::Borrowed | Use::NumberOperand => quote!(&#i),
                }
            }
        }
    }
}

/// Which pass a rule call is written for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    Tangent,
    Backward,
}

pub(super) struct OpCtx<'a> {
    pub(super) out: Val,
    pub(super) op: &'static OpSpec,
    pub(super) inputs: &'a [Operand],
    pub(super) config: &'a [Const],
    pub(super) turbofish: &'a Option<TokenStream>,
    /// The tensor-list index (`k`), for concat/stack VJPs.
    pub(super) k: usize,
}

/// A rule call from its registry entry.
pub(super) fn rule_call(
    rule: &Rule,
    ctx: &OpCtx,
    pass: Pass,
    useful: &dyn Fn(Val) -> bool,
) -> TokenStream {
    call_with(rule.name, None, rule, ctx, pass, useful)
}

/// The call of an op's `vjp_into` rule `name`, which adds the VJP `rule` would return into
/// `adjoint` (`&mut __rune_aN`), on `rule`'s arguments.
pub(super) fn rule_call_into(
    name: &str,
    rule: &Rule,
    ctx: &OpCtx,
    adjoint: TokenStream,
    useful: &dyn Fn(Val) -> bool,
) -> TokenStream {
    call_with(name, Some(adjoint), rule, ctx, Pass::Backward, useful)
}

/// The call of runtime rule `name` on `rule`'s arguments, after `first` when given.
fn call_with(
    name: &str,
    first: Option<TokenStream>,
    rule: &Rule,
    ctx: &OpCtx,
    pass: Pass,
    useful: &dyn Fn(Val) -> bool,
) -> TokenStream {
    let name = format_ident!("{}", name);
    let rt = rt();
    let list_tokens = || -> Vec<TokenStream> {
        ctx.inputs
            .iter()
            .map(|o| match o {
                Operand::Val(v) => {
                    let i = val_ident(*v);
                    quote!(&#i)
                }
                Operand::Const(c) => {
                    let i = match pass {
                        Pass::Tangent => const_ident(*c),
                        Pass::Backward => residual_ident(*c),
                    };
                    quote!(&#i)
                }
            })
            .collect()
    };
    let args: Vec<TokenStream> = rule
        .args
        .iter()
        .map(|arg| match *arg {
            RuleArg::Cotangent => quote!(&__rune_g),
            RuleArg::Output => {
                let v = val_ident(ctx.out);
                quote!(&#v)
            }
            RuleArg::Input(i) => match ctx.inputs[i] {
                Operand::Val(v) => {
                    let v = val_ident(v);
                    quote!(&#v)
                }
                Operand::Const(c) => {
                    let c = match pass {
                        Pass::Tangent => const_ident(c),
                        Pass::Backward => residual_ident(c),
                    };
                    quote!(&#c)
                }
            },
            RuleArg::Shape(i) => {
                let v = ctx.inputs[i]
                    .val()
                    .expect("shape of a differentiated input");
                let s = shape_ident(v);
                quote!(&#s)
            }
            RuleArg::Config(i) => {
                let c = ctx.config[i];
                match (pass, config_keep(ctx.op, i)) {
                    (Pass::Backward, Some(Keep::Owned)) => {
                        let k = config_ident(c);
                        quote!(&#k)
                    }
                    (Pass::Backward, _) => {
                        let k = config_ident(c);
                        quote!(#k)
                    }
                    _ => {
                        let c = const_ident(c);
                        quote!(#c)
                    }
                }
            }
            RuleArg::Tangent(i) => {
                let v = ctx.inputs[i]
                    .val()
                    .expect("tangent of a differentiated input");
                let t = tangent_ident(v);
                quote!(&#t)
            }
            RuleArg::MaybeTangent(i) => match ctx.inputs[i] {
                Operand::Val(v) if useful(v) => {
                    let t = tangent_ident(v);
                    quote!(::core::option::Option::Some(&#t))
                }
                _ => quote!(::core::option::Option::None),
            },
            RuleArg::Inputs => {
                let items = list_tokens();
                quote!(&[#(#items),*])
            }
            RuleArg::MaybeTangents => {
                let items: Vec<TokenStream> = ctx
                    .inputs
                    .iter()
                    .map(|o| match o {
                        Operand::Val(v) if useful(*v) => {
                            let t = tangent_ident(*v);
                            quote!(::core::option::Option::Some(&#t))
                        }
                        _ => quote!(::core::option::Option::None),
                    })
                    .collect();
                quote!(&[#(#items),*])
            }
            RuleArg::ListIndex => {
                let k = ctx.k;
                quote!(#k)
            }
            RuleArg::ListSizes => {
                let z = sizes_ident(ctx.out);
                quote!(&#z)
            }
            RuleArg::CastWitness => {
                let w = witness_ident(ctx.out);
                quote!(#w)
            }
        })
        .collect();
    // `cast` rules are generic over the source and target element: the target comes from the
    // user's turbofish.
    let generics = match (ctx.op.name, ctx.turbofish) {
        ("cast", Some(tf)) => {
            let target = tf.clone();
            let target: syn::AngleBracketedGenericArguments =
                syn::parse2(target).expect("turbofish parses");
            let u = target.args.first().into_token_stream();
            quote!(::<_, #u>)
        }
        _ => quote!(),
    };
    let first = first.into_iter();
    quote!(#rt::rules::#name #generics (#(#first,)* #(#args),*))
}

/// The forward op as the user wrote it, on the generated locals.
pub(super) fn forward_op(ctx: &OpCtx, hoists: &Hoists, fallible: bool) -> TokenStream {
    let rt = rt();
    let op = ctx.op;
    // `x.try_reshape(..)?`: the op's `try_` twin.
    let name = if fallible {
        format_ident!("try_{}", op.name)
    } else {
        format_ident!("{}", op.name)
    };
    let mut tensors = ctx.inputs.iter().copied();
    let mut configs = ctx.config.iter().copied();
    match op.form {
        Form::Operator => {
            let a = hoists.forward(ctx.inputs[0]);
            let b = hoists.forward(ctx.inputs[1]);
            match op.name {
                "add" => quote!(#a + #b),
                "sub" => quote!(#a - #b),
                "mul" => quote!(#a * #b),
                _ => quote!(#a / #b),
            }
        }
        Form::Negation => {
            let a = hoists.forward(ctx.inputs[0]);
            quote!(-#a)
        }
        Form::Method => {
            let recv = match tensors.next().expect("receiver") {
                Operand::Val(v) => val_ident(v).into_token_stream(),
                Operand::Const(c) => const_ident(c).into_token_stream(),
            };
            let args: Vec<TokenStream> = op
                .params
                .iter()
                .map(|p| match p {
                    Param::Tensor => hoists.forward(tensors.next().expect("tensor input")),
                    Param::Config(..) => {
                        const_ident(configs.next().expect("config")).into_token_stream()
                    }
                    Param::TensorList => unreachable!("methods take no lists"),
                })
                .collect();
            let tf = ctx.turbofish;
            match (op.name, tf) {
                // A cast that would drop dual numbers' tangents stops there (see the function).
                ("cast", Some(tf)) if !fallible => {
                    let target: syn::AngleBracketedGenericArguments =
                        syn::parse2(tf.clone()).expect("turbofish parses");
                    let u = target.args.first().into_token_stream();
                    quote!(#rt::cast_differentiated::<_, #u>(&#recv))
                }
                _ => quote!(#recv.#name #tf (#(#args),*)),
            }
        }
        Form::Function => {
            let args: Vec<TokenStream> = op
                .params
                .iter()
                .map(|p| match p {
                    Param::Tensor => hoists.forward(tensors.next().expect("tensor input")),
                    Param::TensorList => {
                        let items: Vec<TokenStream> =
                            tensors.by_ref().map(|o| hoists.forward(o)).collect();
                        quote!(&[#(#items),*])
                    }
                    Param::Config(..) => {
                        const_ident(configs.next().expect("config")).into_token_stream()
                    }
                })
                .collect();
            quote!(#rt::#name(#(#args),*))
        }
        Form::Constructor => {
            unreachable!("`ops::lookup` finds no constructor: none is differentiable")
        }
    }
}
