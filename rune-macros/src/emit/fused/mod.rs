//! Fused regions (`crate::fuse`) in the generated code: the statement that calls the runtime's
//! fused loop (`rune_runtime::fused`) for a region's value, its value and tangent, or its input
//! cotangents, with the region's scalar code (`code`) as a closure that a fn item of its own
//! makes, which the loop runs element by element.

mod code;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::Ident;

use self::code::{input_tangent, Code};
use super::tokens::{detached, lex, relocate_call};
use super::{rt, Emitter, Mode};
use crate::analyse::config_keep;
use crate::fuse::Needs;
use crate::ir::{Const, Operand, ReduceAxes, Reduction, Stmt, Val};
use crate::names::{
    adjoint_ident, config_ident, const_ident, hidden, partials_ident, region_fn_ident,
    residual_ident, shape_ident, tangent_ident, val_ident,
};
use crate::ops::Keep;

/// The length of the cotangent array whose positions `slots` are (targets may share one).
fn slot_count(slots: &[usize]) -> usize {
    slots.iter().max().map_or(0, |k| k + 1)
}

/// A fused region's parts.
struct Region<'a> {
    code: Code<'a>,
    out: Val,
    inputs: &'a [Operand],
    span: Span,
    /// The runtime's `Reduction` that ends the region, if one does.
    reduce: Option<TokenStream>,
    /// The axes of that reduction, when it is over some axes.
    axes: Option<ReduceAxes>,
}

fn region(stmt: &Stmt) -> Region<'_> {
    let Stmt::Fused {
        out,
        inputs,
        literals,
        nodes,
        span,
        reduce,
        axes,
    } = stmt
    else {
        unreachable!("a fused region")
    };
    let code = Code {
        inputs: inputs.len(),
        literals,
        nodes,
    };
    let rt = rt();
    let reduce = reduce.map(|r| match r {
        Reduction::Sum => quote!(#rt::Reduction::Sum),
        Reduction::Mean => quote!(#rt::Reduction::Mean),
    });
    Region {
        code,
        out: *out,
        inputs,
        span: *span,
        reduce,
        axes: *axes,
    }
}

/// The arguments `axes, keepdims,` of a reduction over some axes, from the constants of the
/// forward pass, or from those the backward pass keeps.
fn axes_args(axes: &ReduceAxes, backward: bool) -> TokenStream {
    let arg = |c: Const, index: usize| {
        if !backward {
            return const_ident(c).into_token_stream();
        }
        let k = config_ident(c);
        match config_keep(axes.op, index) {
            Some(Keep::Owned) => quote!(&#k),
            _ => quote!(#k),
        }
    };
    let (a, k) = (arg(axes.axes, 0), arg(axes.keepdims, 1));
    quote!(#a, #k,)
}

impl Emitter<'_> {
    /// The fn item of region `out`'s value: the same in the plain function and the forward pass,
    /// so written once and lexed for each.
    fn value_item(&self, code: &Code, out: Val) -> TokenStream {
        let text = self
            .value_items
            .borrow_mut()
            .entry(out)
            .or_insert_with(|| code.value_item(out))
            .clone();
        lex(&text)
    }

    /// The positions of a region's inputs that are differentiated values.
    fn differentiated(&self, inputs: &[Operand]) -> Vec<usize> {
        (0..inputs.len())
            .filter(|&i| inputs[i].val().is_some_and(|v| self.useful(v)))
            .collect()
    }

    /// A fused region's inputs as `OperandRef`s, in the forward pass.
    fn fused_inputs(&self, inputs: &[Operand], code: &Code) -> TokenStream {
        let items = inputs.iter().enumerate().map(|(k, o)| {
            let i = match *o {
                Operand::Val(v) => val_ident(v),
                Operand::Const(c) => const_ident(c),
            };
            self.carrier().fused_input(&i, code.is_mask(k))
        });
        quote!([#(#items),*])
    }

    /// The forward statement of a fused region: its value, or in forward mode its value and
    /// tangent.
    /// In the reverse pass, a reduced region computes its input cotangents for a cotangent of
    /// one on its result in the same pass as its value, and saves them (see
    /// [`Self::fused_backward`]).
    pub(super) fn fused_forward(&self, stmt: &Stmt, mode: Mode) -> TokenStream {
        let rt = rt();
        let Region {
            code,
            out,
            inputs,
            span,
            reduce,
            axes,
        } = region(stmt);
        let (ops, args, lits) = (
            code.ops_table(),
            self.fused_inputs(inputs, &code),
            code.literal_array(),
        );
        let v = val_ident(out);
        let useful = self.useful(out);
        let over = axes.as_ref().map(|a| axes_args(a, false));
        let f = region_fn_ident(out, false);
        let (item, call) = match (mode, reduce) {
            (Mode::Tangent, reduce) if useful => {
                let with_tangent = self.differentiated(inputs);
                let tangents = with_tangent.iter().map(|&i| {
                    let t = tangent_ident(inputs[i].val().expect("a value"));
                    quote!(&#t)
                });
                let t = tangent_ident(out);
                let (function, reduce) = match (reduce, &over) {
                    (Some(r), Some(over)) => {
                        (quote!(#rt::fused_reduce_axes_jvp), quote!(#r, #over))
                    }
                    (Some(r), None) => (quote!(#rt::fused_reduce_jvp), quote!(#r,)),
                    (None, _) => (self.glue("fused_jvp"), quote!()),
                };
                let k = with_tangent.len();
                let item = lex(&detached(|| {
                    let us = with_tangent.iter().map(|&i| input_tangent(i));
                    code.region_item(
                        out,
                        false,
                        Some((quote!([#(#us),*]), quote!([__RuneE; #k]))),
                        quote!((__RuneE, __RuneE)),
                        code.tangent_body(&with_tangent),
                    )
                }));
                let call = quote! {
                    let (#v, #t) = #function(#ops, #args, #lits, #reduce [#(#tangents),*], #f());
                };
                (item, call)
            }
            (_, Some(r)) if over.is_some() => (
                self.value_item(&code, out),
                quote!(let #v = #rt::fused_reduce_axes(#ops, #args, #lits, #r, #over #f());),
            ),
            (Mode::Reverse, Some(r)) if useful => {
                let targets = self.differentiated(inputs);
                let mut slots = Vec::new();
                let item = lex(&detached(|| {
                    let (body, s) = code.value_and_adjoint_body(&targets);
                    let k = slot_count(&s);
                    slots = s;
                    code.region_item(
                        out,
                        false,
                        Some((quote!(__rune_ge), quote!(__RuneE))),
                        quote!((__RuneE, [__RuneE; #k])),
                        body,
                    )
                }));
                let pairs = targets.iter().zip(&slots).map(|(i, k)| quote!((#i, #k)));
                let p = partials_ident(out);
                let call = quote! {
                    let (#v, #p) = #rt::fused_reduce_vjp(#ops, #args, #lits, #r, [#(#pairs),*], #f());
                };
                (item, call)
            }
            (_, Some(r)) => (
                self.value_item(&code, out),
                quote!(let #v = #rt::fused_reduce(#ops, #args, #lits, #r, #f());),
            ),
            (_, None) => {
                let function = self.glue("fused_map");
                (
                    self.value_item(&code, out),
                    quote!(let #v = #function(#ops, #args, #lits, #f());),
                )
            }
        };
        let call = relocate_call(call, span);
        quote!(#item #call)
    }

    /// The backward statement of a fused region: every differentiated input's cotangent in one
    /// pass.
    ///
    /// A reduced region's cotangents were computed by the forward pass for a cotangent of one:
    /// each is scaled by the result's cotangent.
    pub(super) fn fused_backward(&self, stmt: &Stmt) -> TokenStream {
        let rt = rt();
        let Region {
            code,
            out,
            inputs,
            span,
            reduce,
            axes,
        } = region(stmt);
        let targets = self.differentiated(inputs);
        let adj = adjoint_ident(out);
        if reduce.is_some() && axes.is_none() {
            let p = partials_ident(out);
            let accumulate = targets.iter().enumerate().map(|(k, &i)| {
                let a = adjoint_ident(inputs[i].val().expect("a value"));
                quote!(#rt::accumulate(&mut #a, #rt::fused_scale(&#p[#k], &__rune_g));)
            });
            return relocate_call(
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                        #(#accumulate)*
                    }
                },
                span,
            );
        }
        let needs = Needs::of(inputs, code.literals.len(), code.nodes);
        let args = inputs
            .iter()
            .zip(&needs.inputs)
            .enumerate()
            .map(|(k, (o, needed))| match *o {
                Operand::Val(v) => self
                    .carrier()
                    .fused_backward_value(v, *needed, &shape_ident(v)),
                Operand::Const(c) => self
                    .carrier()
                    .fused_backward_const(&residual_ident(c), code.is_mask(k)),
            });
        let args = quote!([#(#args),*]);
        let (ops, lits) = (code.ops_table(), code.literal_array());
        let mut slots = Vec::new();
        let item = lex(&detached(|| {
            let (body, s) = code.adjoint_body(&targets, &needs);
            let k = slot_count(&s);
            slots = s;
            code.region_item(
                out,
                true,
                Some((quote!(__rune_ge), quote!(__RuneE))),
                quote!([__RuneE; #k]),
                body,
            )
        }));
        let pairs = targets.iter().zip(&slots).map(|(i, k)| quote!((#i, #k)));
        let results: Vec<Ident> = (0..targets.len())
            .map(|k| hidden(&format!("f{k}")))
            .collect();
        let f = region_fn_ident(out, true);
        let accumulate = self.glue("accumulate");
        let (function, over) = match (&reduce, &axes) {
            (Some(r), Some(axes)) => {
                let axes = axes_args(axes, true);
                (quote!(#rt::fused_reduce_axes_vjp), quote!(#r, #axes))
            }
            _ => (self.glue("fused_vjp"), quote!()),
        };
        let accumulate = targets.iter().zip(&results).map(|(&i, r)| {
            let a = adjoint_ident(inputs[i].val().expect("a value"));
            quote!(#accumulate(&mut #a, #r);)
        });
        let call = relocate_call(
            quote! {
                if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                    let [#(#results),*] = #function(#ops, #args, #lits, #over [#(#pairs),*], &__rune_g, #f());
                    #(#accumulate)*
                }
            },
            span,
        );
        quote!(#item #call)
    }
}
