//! Ops of the op table: operators, tensor methods (`x.exp()`), function ops (`matmul(&a, &b)`,
//! `stack(&[&a, &b], 0)`) and their constant arguments, and methods that stay constant code.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::Expr;

use crate::ir::{Const, List, Operand, OutShape, Stmt, Taint, Use};
use crate::names::{const_ident, val_ident};
use crate::ops::{self, Form, OpSpec, Param};

use super::iter::UNSUPPORTED_CHAIN;
use super::syntax::{paren, strip};
use super::{Lowered, Lowerer};

impl Lowerer<'_> {
    pub(super) fn push_op(
        &mut self,
        op: &'static OpSpec,
        inputs: Vec<Operand>,
        config: Vec<Const>,
        turbofish: Option<TokenStream>,
        span: Span,
        tainted_by: Option<Taint>,
    ) -> Lowered {
        let out = self.new_val();
        self.stmts.push(Stmt::Op {
            out,
            op,
            inputs,
            config,
            turbofish,
            span,
            tainted_by,
            fallible: false,
        });
        Lowered::Val(out)
    }

    /// `base.get(key).unwrap()` or `.expect(msg)` of part `base` of a structure parameter: the
    /// part `base[key]` (a map's by key, a `Vec`'s by position). A `get` whose `Option` the body
    /// keeps is not read here, and is an error at it when `base` is a map parameter.
    fn unwrapped_part(&mut self, mc: &syn::ExprMethodCall) -> Option<Lowered> {
        let unwraps = (mc.method == "unwrap" && mc.args.is_empty())
            || (mc.method == "expect" && mc.args.len() == 1);
        let Expr::MethodCall(get) = strip(&mc.receiver) else {
            return None;
        };
        if !unwraps || get.method != "get" || get.args.len() != 1 {
            return None;
        }
        if !self.structure_source(&get.receiver) {
            return None;
        }
        let base = self.expr(&get.receiver);
        self.part_at(mc.span(), &base, &get.args[0])
    }

    pub(super) fn binary_op(
        &mut self,
        spec: &'static OpSpec,
        lhs: Lowered,
        rhs: Lowered,
        span: Span,
    ) -> Lowered {
        let taint = Self::taint_of(&[&lhs, &rhs]);
        // `x * x` is `x.square()`: one rule reading `x` instead of two rules and a sum.
        if let (Lowered::Val(a), Lowered::Val(b), "mul") = (&lhs, &rhs, spec.name) {
            if a == b {
                let square = ops::lookup("square", Form::Method).expect("in the table");
                return self.push_op(square, vec![Operand::Val(*a)], vec![], None, span, taint);
            }
        }
        let a = self.operand(lhs, Use::Borrowed);
        let b = self.operand(rhs, Use::Borrowed);
        self.push_op(spec, vec![a, b], vec![], None, span, taint)
    }

    pub(super) fn method_call(&mut self, mc: &syn::ExprMethodCall) -> Lowered {
        let method = mc.method.to_string();
        if let Some(receiver) = self.inline_iter(&mc.receiver) {
            let mut inlined = mc.clone();
            *inlined.receiver = receiver;
            return self.method_call(&inlined);
        }
        if let Some(part) = self.unwrapped_part(mc) {
            return part;
        }
        if matches!(method.as_str(), "unwrap" | "expect") {
            if let Some(element) = self.selected_value(&Expr::MethodCall(mc.clone())) {
                return element;
            }
        }
        // `fold` and `sum` of an iterator over differentiated values (not the tensor op `fold`).
        if Self::is_iterator(&mc.receiver) && self.mentions_active(&mc.receiver) {
            if let Some(flat) = self.flat(&mc.receiver) {
                let Ok(flat) = flat else {
                    return Lowered::constant(quote!(::core::unreachable!()));
                };
                let (init, step) = match (method.as_str(), mc.args.len()) {
                    ("fold", 2) => (mc.args[0].to_token_stream(), mc.args[1].to_token_stream()),
                    ("sum", 0) => (quote!(::rune_ad::__private::SumStart), quote!(|a, b| a + b)),
                    ("product", 0) => (
                        quote!(::rune_ad::__private::ProductStart),
                        quote!(|a, b| a * b),
                    ),
                    _ => {
                        self.errors.at(&mc.method, UNSUPPORTED_CHAIN);
                        return Lowered::constant(quote!(::core::unreachable!()));
                    }
                };
                return self.flat_fold(&flat, init, step);
            }
        }
        if Self::is_iterator(&mc.receiver) {
            match (method.as_str(), mc.args.len()) {
                ("fold", 2) => {
                    if let Some(chain) = self.chain(&mc.receiver) {
                        let init = self.expr(&mc.args[0]);
                        return self.fold_chain(chain, init, Ok(&mc.args[1]), mc.method.span());
                    }
                }
                ("sum", 0) => {
                    if let Some(chain) = self.chain(&mc.receiver) {
                        let zero = Lowered::constant(quote!(::rune_ad::__private::SumStart));
                        return self.fold_chain(chain, zero, Err("add"), mc.method.span());
                    }
                }
                ("product", 0) => {
                    if let Some(chain) = self.chain(&mc.receiver) {
                        let one = Lowered::constant(quote!(::rune_ad::__private::ProductStart));
                        return self.fold_chain(chain, one, Err("mul"), mc.method.span());
                    }
                }
                _ => {
                    if self.chain(&mc.receiver).is_some() {
                        let hint = if super::select::SELECTORS.contains(&method.as_str()) {
                            let args = if mc.args.is_empty() { "" } else { ".." };
                            format!(
                                "`{method}` of differentiated values gives an `Option`: take \
                                 the element with `.{method}({args}).unwrap()` (or \
                                 `.expect(..)`)"
                            )
                        } else {
                            format!("`{method}` is not supported here; {UNSUPPORTED_CHAIN}")
                        };
                        self.errors.at(&mc.method, hint);
                        return Lowered::constant(quote!(::core::unreachable!()));
                    }
                }
            }
        }
        if let Some(list) = self.list_of(&mc.receiver) {
            if method == "push" && mc.args.len() == 1 && self.array_param(list).is_none() {
                let value = self.expr(&mc.args[0]);
                self.list_push(list, value);
                return Lowered::constant(quote!(()));
            }
            self.errors.at(&mc.method, self.list_uses(list));
            return Lowered::constant(quote!(::core::unreachable!()));
        }
        // In a function returning a number, `a.max(b)` and `a.min(b)` are `f64::max` and
        // `f64::min` on numbers, which ignore NaN: the ops `fmax` and `fmin`.
        if self.scalar_out
            && mc.args.len() == 1
            && (method == "max" || method == "min")
            && (self.mentions_active(&mc.receiver) || self.mentions_active(&mc.args[0]))
        {
            let mut f = mc.clone();
            f.method = syn::Ident::new(&format!("f{method}"), mc.method.span());
            return self.method_call(&f);
        }
        // In a function of numbers, which holds them as 0-d tensors, `t.item()` of a
        // differentiated tensor of one element is that element, still differentiated.
        if self.scalar_out
            && method == "item"
            && mc.args.is_empty()
            && self.mentions_active(&mc.receiver)
        {
            let receiver = &mc.receiver;
            let e: syn::Expr =
                syn::parse_quote_spanned!(mc.method.span()=> #receiver.reshape(&[0usize; 0]));
            return self.expr(&e);
        }
        // `a.powf(b)` of numbers with a differentiated exponent: the op `pow`, whose exponent is
        // an operand (`powf`'s is a constant).
        if self.scalar_out
            && method == "powf"
            && mc.args.len() == 1
            && self.mentions_active(&mc.args[0])
        {
            let mut f = mc.clone();
            f.method = syn::Ident::new("pow", mc.method.span());
            return self.method_call(&f);
        }
        let receiver = self.expr(&mc.receiver);
        let receiver_active = matches!(receiver, Lowered::Val(_));

        if receiver_active && method == "clone" && mc.args.is_empty() {
            return receiver;
        }
        if let Lowered::Val(v) = &receiver {
            if self.paths.contains_key(v) && method == "iter" && mc.args.is_empty() {
                return receiver;
            }
        }
        if let Lowered::Val(v) = &receiver {
            if self.is_map_root(*v) && Self::calls_method(mc) {
                self.errors.at(&mc.method, super::MAP_USES);
                return Lowered::constant(quote!(::core::unreachable!()));
            }
        }
        if let Some(mut outs) = self.structure_method(mc, &receiver, OutShape::One) {
            return outs
                .pop()
                .unwrap_or_else(|| Lowered::constant(quote!(::core::unreachable!())));
        }
        let spec = ops::lookup(&method, Form::Method);
        if receiver_active && spec.is_none() {
            let recv = self.const_tokens(&receiver);
            let args: Vec<Lowered> = mc.args.iter().map(|a| self.expr(a)).collect();
            let arg_tokens = self.constant_method_args(mc, &args);
            let m = &mc.method;
            let tf = &mc.turbofish;
            let tokens = quote!(#recv.#m #tf (#(#arg_tokens),*));
            let refs: Vec<&Lowered> = args.iter().collect();
            let arg_taint = Self::taint_of(&refs);
            return if ops::is_metadata(&method) || ops::NONDIFF.contains(&method.as_str()) {
                Lowered::Const {
                    tokens,
                    taint: arg_taint,
                    is_ref: false,
                }
            } else if ops::CONCRETIZING.contains(&method.as_str()) {
                Lowered::Const {
                    tokens,
                    taint: Some(Taint::of(mc)),
                    is_ref: false,
                }
            } else if let Some(parts) = ops::tuple_parts(&method) {
                self.errors.at(
                    &mc.method,
                    format!(
                        "`{method}` returns {} values: bind them with a tuple pattern, `let ({}) \
                         = x.{method}();`, or call the op of the one needed: {}",
                        parts.len(),
                        parts.join(", "),
                        parts.join(", ")
                    ),
                );
                Lowered::constant(quote!(::core::unreachable!()))
            } else {
                let mut names = ops::method_names();
                names.sort_unstable();
                let hint = ops::closest_spelling(&method)
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                self.errors.at(
                    &mc.method,
                    format!(
                        "`{method}` is not an op #[differentiable] can differentiate{hint}; \
                         tensor methods supported on differentiated values: {}; shape \
                         metadata: {}; constants: {}",
                        names.join(", "),
                        ops::METADATA.join(", "),
                        ops::NONDIFF.join(", ")
                    ),
                );
                Lowered::constant(quote!(::core::unreachable!()))
            };
        }

        let args: Vec<Lowered> = mc.args.iter().map(|a| self.expr(a)).collect();
        let Some(spec) = spec else {
            return self.rebuild_method(mc, receiver, args);
        };
        if args.len() != spec.params.len() {
            // `x.sum(-1)`, `x.logsumexp(1)` as in PyTorch: the reduction over chosen axes.
            let along = ops::lookup(&format!("{method}_axes"), Form::Method)
                .map(|axes| format!("; over chosen axes, write `{}`", axes.name))
                .unwrap_or_default();
            self.errors.at(
                mc,
                format!(
                    "`{method}` takes {} argument{}{along}",
                    spec.params.len(),
                    if spec.params.len() == 1 { "" } else { "s" }
                ),
            );
            return Lowered::constant(quote!(::core::unreachable!()));
        }
        let any_active = receiver_active
            || spec
                .params
                .iter()
                .zip(&args)
                .any(|(p, a)| *p == Param::Tensor && matches!(a, Lowered::Val(_)));
        if !any_active {
            return self.rebuild_method(mc, receiver, args);
        }
        let mut refs: Vec<&Lowered> = args.iter().collect();
        refs.push(&receiver);
        let taint = Self::taint_of(&refs);
        // In a function of numbers a constant tensor input is a number, which the tensor form of
        // the op takes as a 0-d tensor.
        let number_operand = |l: &mut Self, tokens: TokenStream| {
            Operand::Const(l.hoist(tokens, None, Use::NumberOperand))
        };
        let mut inputs = vec![match receiver {
            Lowered::Val(v) => Operand::Val(v),
            Lowered::Const { tokens, .. } if self.scalar_out => number_operand(self, tokens),
            Lowered::Const { tokens, .. } => {
                Operand::Const(self.hoist(quote!(&(#tokens)), None, Use::Plain))
            }
        }];
        let mut config = Vec::new();
        for ((param, arg), syn_arg) in spec.params.iter().zip(args).zip(&mc.args) {
            match param {
                Param::Tensor => {
                    let o = match arg {
                        Lowered::Const { tokens, .. } if self.scalar_out => {
                            number_operand(self, tokens)
                        }
                        arg => self.operand(arg, Use::Plain),
                    };
                    inputs.push(o);
                }
                Param::Config(None, crate::ops::Keep::Copy) => {
                    // A scalar of the element type: converted from the tensor's base scalar, so
                    // that `x.powf(2.0)` also reads on tensors of dual numbers.
                    let receiver = match inputs[0] {
                        Operand::Val(v) => {
                            let v = val_ident(v);
                            quote!(&#v)
                        }
                        Operand::Const(c) => const_ident(c).into_token_stream(),
                    };
                    let arg = match arg {
                        Lowered::Const {
                            tokens,
                            taint,
                            is_ref,
                        } => Lowered::Const {
                            tokens: quote!(::rune_ad::__private::scalar_like(#receiver, #tokens)),
                            taint,
                            is_ref,
                        },
                        other => other,
                    };
                    config.push(self.config_arg(arg, None, syn_arg, &method));
                }
                Param::Config(ty, _) => config.push(self.config_arg(arg, *ty, syn_arg, &method)),
                Param::TensorList => unreachable!("no method takes a tensor list"),
            }
        }
        let turbofish = mc.turbofish.as_ref().map(|t| t.to_token_stream());
        self.push_op(spec, inputs, config, turbofish, mc.method.span(), taint)
    }

    fn config_arg(&mut self, arg: Lowered, ty: Option<&str>, syn_arg: &Expr, op: &str) -> Const {
        match arg {
            Lowered::Val(_) => {
                self.errors.at(
                    syn_arg,
                    format!(
                        "this argument of `{op}` must be a constant, not a differentiated tensor"
                    ),
                );
                self.hoist(quote!(::core::unreachable!()), None, Use::Plain)
            }
            Lowered::Const { tokens, .. } => {
                let ty = ty.map(|t| t.parse::<TokenStream>().expect("op table types parse"));
                self.hoist(tokens, ty, Use::Plain)
            }
        }
    }

    /// The arguments of a method whose result is a constant. A comparison or a shape query
    /// may read a differentiated tensor (borrowed); any other method taking one would make a
    /// constant of it, which is an error.
    fn constant_method_args(
        &mut self,
        mc: &syn::ExprMethodCall,
        args: &[Lowered],
    ) -> Vec<TokenStream> {
        let method = mc.method.to_string();
        let reads_freely = ops::NONDIFF.contains(&method.as_str()) || ops::is_metadata(&method);
        args.iter()
            .zip(&mc.args)
            .map(|(a, syn_arg)| match a {
                Lowered::Val(v) if reads_freely => {
                    let v = val_ident(*v);
                    quote!(&#v)
                }
                Lowered::Val(_) => {
                    self.errors.at(
                        syn_arg,
                        format!(
                            "`{method}` cannot take a differentiated tensor as an argument: its \
                             result would be a constant and the gradient through it lost (use \
                             `stop_gradient(..)` to cut the gradient on purpose)"
                        ),
                    );
                    quote!(::core::unreachable!())
                }
                Lowered::Const { .. } => self.const_tokens(a),
            })
            .collect()
    }

    fn rebuild_method(
        &mut self,
        mc: &syn::ExprMethodCall,
        receiver: Lowered,
        args: Vec<Lowered>,
    ) -> Lowered {
        let mut refs: Vec<&Lowered> = args.iter().collect();
        refs.push(&receiver);
        let taint = Self::taint_of(&refs);
        let recv = paren(self.const_tokens(&receiver));
        let arg_tokens = self.constant_method_args(mc, &args);
        let m = &mc.method;
        let tf = &mc.turbofish;
        Lowered::Const {
            tokens: quote!(#recv.#m #tf (#(#arg_tokens),*)),
            taint,
            is_ref: false,
        }
    }

    pub(super) fn function_op(&mut self, c: &syn::ExprCall, spec: &'static OpSpec) -> Lowered {
        if c.args.len() != spec.params.len() {
            self.errors.at(
                c,
                format!("`{}` takes {} arguments", spec.name, spec.params.len()),
            );
            return Lowered::constant(quote!(::core::unreachable!()));
        }
        // Lower every argument; a tensor list is lowered element by element.
        let mut lowered: Vec<Vec<Lowered>> = Vec::new();
        for (param, arg) in spec.params.iter().zip(&c.args) {
            if *param == Param::TensorList {
                if let Some(list) = self.list_of(arg) {
                    return self.list_op(c, spec, list);
                }
                let collected = match strip(arg) {
                    Expr::Reference(r) => &*r.expr,
                    other => other,
                };
                if let Some(list) = self.collected_list(collected, "collected") {
                    return self.list_op(c, spec, list);
                }
                let elems = match strip(arg) {
                    Expr::Reference(r) => match strip(&r.expr) {
                        Expr::Array(a) => Some(&a.elems),
                        _ => None,
                    },
                    Expr::Array(a) => Some(&a.elems),
                    _ => None,
                };
                match elems {
                    Some(elems) => lowered.push(elems.iter().map(|e| self.expr(e)).collect()),
                    None => {
                        let l = self.expr(arg);
                        if self.mentions_active(arg) {
                            self.errors.at(
                                arg,
                                format!(
                                    "`{}` of differentiated tensors needs its inputs written as a \
                                     list: `&[&a, &b]`",
                                    spec.name
                                ),
                            );
                        }
                        lowered.push(vec![l]);
                    }
                }
            } else {
                lowered.push(vec![self.expr(arg)]);
            }
        }
        let any_active = spec.params.iter().zip(&lowered).any(|(p, ls)| {
            matches!(p, Param::Tensor | Param::TensorList)
                && ls.iter().any(|l| matches!(l, Lowered::Val(_)))
        });
        let all: Vec<&Lowered> = lowered.iter().flatten().collect();
        let taint = Self::taint_of(&all);
        if !any_active {
            let func = &c.func;
            let args: Vec<TokenStream> = spec
                .params
                .iter()
                .zip(&lowered)
                .zip(&c.args)
                .map(|((p, ls), arg)| {
                    if *p == Param::TensorList && ls.len() != 1
                        || matches!(strip(arg), Expr::Array(_))
                    {
                        let elems: Vec<TokenStream> =
                            ls.iter().map(|l| self.const_tokens(l)).collect();
                        if matches!(strip(arg), Expr::Array(_)) {
                            quote!([#(#elems),*])
                        } else {
                            quote!(&[#(#elems),*])
                        }
                    } else {
                        self.const_tokens(&ls[0])
                    }
                })
                .collect();
            return Lowered::Const {
                tokens: quote!(#func(#(#args),*)),
                taint,
                is_ref: false,
            };
        }
        let mut inputs = Vec::new();
        let mut config = Vec::new();
        for ((param, ls), arg) in spec.params.iter().zip(lowered).zip(&c.args) {
            match param {
                Param::Tensor | Param::TensorList => {
                    for l in ls {
                        let o = self.operand(l, Use::Plain);
                        inputs.push(o);
                    }
                }
                Param::Config(ty, _) => {
                    let l = ls.into_iter().next().expect("one lowered argument");
                    config.push(self.config_arg(l, *ty, arg, spec.name));
                }
            }
        }
        self.push_op(spec, inputs, config, None, c.span(), taint)
    }

    /// `stack(&list, axis)` / `concat(&list, axis)` over a list of differentiated tensors.
    fn list_op(&mut self, c: &syn::ExprCall, spec: &'static OpSpec, list: List) -> Lowered {
        let mut config = Vec::new();
        for (param, arg) in spec.params.iter().zip(&c.args) {
            if let Param::Config(ty, _) = param {
                let l = self.expr(arg);
                config.push(self.config_arg(l, *ty, arg, spec.name));
            }
        }
        let ident = &self.lists[list.0];
        let count = self.hoist(quote!(#ident.len()), Some(quote!(usize)), Use::Plain);
        let out = self.new_val();
        self.stmts.push(Stmt::ListOp {
            out,
            op: spec,
            list,
            config,
            count,
            span: c.span(),
        });
        Lowered::Val(out)
    }
}
