//! Fused regions (`crate::fuse`) in the generated code: the statement that calls the runtime's
//! fused loop (`rune_runtime::fused`) for a region's value, its value and tangent, or its input
//! cotangents, with the region's scalar code (`code`) as a closure that a fn item of its own
//! makes, which the loop runs element by element; and those fn items ([`RegionItems`]), one for
//! each piece of code however many passes run it.

mod code;

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use self::code::Code;
use super::carrier::Carrier;
use super::tokens::{lex, relocate_call};
use super::{rt, Emitter, Generated, Host, Mode};
use crate::analyse::config_keep;
use crate::fuse::Needs;
use crate::ir::{Const, Operand, ReduceAxes, Reduction, Stmt, Val};
use crate::names::{
    adjoint_ident, config_ident, const_ident, hidden, partials_ident, residual_ident, shape_ident,
    tangent_ident, val_ident,
};
use crate::ops::Keep;

/// A region item's key: the region, and the inputs whose cotangents it gives (`None` for the
/// value alone).
type RegionKey = (Val, Option<Vec<usize>>);

/// The fn items of a function's fused regions, each written once, as text, and called by every
/// pass that runs it: a region's value by the plain function and the forward pass, its value
/// and cotangents ([`Code::partials_item`]) by the backward pass, by a reduced region's forward
/// pass and by forward mode. Written into each pass, a long body's scalar code was checked by
/// rustc four times.
#[derive(Default)]
pub struct RegionItems {
    /// Each item's name, its text, its targets' slots and how many calls of it were written.
    made: HashMap<RegionKey, (String, String, Vec<usize>, usize)>,
    /// The items written beside the entry points, in the order they were made.
    texts: Vec<String>,
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

/// `(Slot::<0, i0>, Slot::<1, i1>)`, ..: tangent `j` weighting partial `slots[j]`, as a
/// balanced tree of pairs (`rune_runtime::fused::TangentSlots`).
fn slot_tree(slots: &[usize]) -> TokenStream {
    fn tree(slots: &[(usize, usize)]) -> TokenStream {
        let rt = rt();
        match slots {
            [] => quote!(()),
            [(j, i)] => quote!(#rt::Slot::<#j, #i>),
            _ => {
                let (a, b) = slots.split_at(slots.len() / 2);
                let (a, b) = (tree(a), tree(b));
                quote!((#a, #b))
            }
        }
    }
    let pairs: Vec<(usize, usize)> = slots.iter().copied().enumerate().collect();
    tree(&pairs)
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
    /// The call `path::<_, n>()` of a region item, made by `make(name)` the first time `key` is
    /// asked for, with its targets' slots; and the item itself, to be written before the call,
    /// where the function's items cannot hold it.
    ///
    /// Beside a free function the items are associated functions of its type, which
    /// [`Self::region_items`] writes once. A method's items are written in each pass that calls
    /// them, as before: the method may be in a trait impl, which holds no items but the
    /// trait's.
    fn region_fn(
        &self,
        key: RegionKey,
        make: impl FnOnce(&str) -> (String, Vec<usize>),
    ) -> (TokenStream, TokenStream, Vec<usize>) {
        let mut items = self.regions.borrow_mut();
        let kind = match &key.1 {
            None => format!("v{}", key.0 .0),
            Some(_) => format!(
                "d{}_{}",
                key.0 .0,
                items
                    .made
                    .keys()
                    .filter(|(v, t)| *v == key.0 && t.is_some())
                    .count()
            ),
        };
        let local = self.host == Host::Impl;
        let items = &mut *items;
        let (name, text, slots, calls) = items.made.entry(key).or_insert_with(|| {
            let name = crate::names::region_item(self.is_twin, &kind);
            let (text, slots) = make(&name);
            if !local {
                items.texts.push(text.clone());
            }
            (name, text, slots, 0)
        });
        let call = *calls;
        *calls += 1;
        let item = format_ident!("{}", name);
        if local {
            return (lex(text), quote!(#item::<_, 0>()), slots.clone());
        }
        let path = self.api().item_path(&item);
        (
            TokenStream::new(),
            quote!(#path::<_, #call>()),
            slots.clone(),
        )
    }

    /// Region `out`'s value item, where it is written with the call, and its call.
    fn value_fn(&self, code: &Code, out: Val) -> (TokenStream, TokenStream) {
        let (item, call, _) =
            self.region_fn((out, None), |name| (code.value_item(name), Vec::new()));
        (item, call)
    }

    /// Region `out`'s item of its value and the cotangents of `targets` (where it is written
    /// with the call), its call, and each target's slot in its array of cotangents.
    fn partials_fn(
        &self,
        code: &Code,
        out: Val,
        targets: &[usize],
    ) -> (TokenStream, TokenStream, Vec<usize>) {
        self.region_fn((out, Some(targets.to_vec())), |name| {
            code.partials_item(name, targets)
        })
    }

    /// The region items the passes called, as hidden associated functions.
    pub fn region_items(&self) -> Generated {
        let texts = &self.regions.borrow().texts;
        let items = texts.iter().map(|t| lex(t));
        Generated {
            hidden: quote!(#(#items)*),
            public: TokenStream::new(),
        }
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
                let (item, f, slots) = self.partials_fn(&code, out, &with_tangent);
                let pairs = slot_tree(&slots);
                let call = quote! {
                    let (#v, #t) = #function(#ops, #args, #lits, #reduce [#(#tangents),*],
                        #rt::fused_tangent_of(#f, #pairs));
                };
                (item, call)
            }
            (_, Some(r)) if over.is_some() => {
                let (item, f) = self.value_fn(&code, out);
                let call =
                    quote!(let #v = #rt::fused_reduce_axes(#ops, #args, #lits, #r, #over #f););
                (item, call)
            }
            (Mode::Reverse, Some(r)) if useful => {
                let targets = self.differentiated(inputs);
                let (item, f, slots) = self.partials_fn(&code, out, &targets);
                let pairs = targets.iter().zip(&slots).map(|(i, k)| quote!((#i, #k)));
                let p = partials_ident(out);
                let call = quote! {
                    let (#v, #p) = #rt::fused_reduce_vjp(#ops, #args, #lits, #r, [#(#pairs),*], #f);
                };
                (item, call)
            }
            (_, Some(r)) => {
                let (item, f) = self.value_fn(&code, out);
                (
                    item,
                    quote!(let #v = #rt::fused_reduce(#ops, #args, #lits, #r, #f);),
                )
            }
            (_, None) => {
                let function = self.glue("fused_map");
                let (item, f) = self.value_fn(&code, out);
                (item, quote!(let #v = #function(#ops, #args, #lits, #f);))
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
        // The item computes the region's value too, which the backward pass does not read: an
        // input only that value reads is passed by its shape (its elements read as zeros), and
        // the optimiser drops what nothing reads.
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
        let (item, f, slots) = self.partials_fn(&code, out, &targets);
        let pairs = targets.iter().zip(&slots).map(|(i, k)| quote!((#i, #k)));
        let results: Vec<Ident> = (0..targets.len())
            .map(|k| hidden(&format!("f{k}")))
            .collect();
        let adjoints: Vec<Ident> = targets
            .iter()
            .map(|&i| adjoint_ident(inputs[i].val().expect("a value")))
            .collect();
        // On tensors, a region without a reduction adds its cotangents to the adjoints as its
        // loop makes them (each target's adjoint is a variable of its own: the inputs of a
        // region are distinct values). A target that is a window of another value
        // (`x.shrink(..).pad(..)`) has its cotangent added into that value's adjoint, which
        // several targets may share (`fused_vjp_routed`); its own adjoint is left empty, so
        // the VJPs of its `pad` and `shrink` find nothing to do unless another reader gave it
        // one.
        let windows: Vec<Option<Window>> = targets
            .iter()
            .map(|&i| self.window_of(inputs[i].val().expect("a value")))
            .collect();
        if reduce.is_none()
            && self.carrier() == Carrier::Tensors
            && windows.iter().any(Option::is_some)
        {
            let mut slots: Vec<Ident> = Vec::new();
            let mut slot_of = |a: Ident| match slots.iter().position(|s| *s == a) {
                Some(j) => j,
                None => {
                    slots.push(a);
                    slots.len() - 1
                }
            };
            let routes: Vec<TokenStream> = adjoints
                .iter()
                .zip(&windows)
                .map(|(a, w)| match w {
                    Some(w) => {
                        let j = slot_of(adjoint_ident(w.of));
                        let (s, k_shrink, k_pad) = (
                            shape_ident(w.of),
                            config_ident(w.shrink),
                            config_ident(w.pad),
                        );
                        quote!(#rt::fused_window(#j, &#s, &#k_shrink, &#k_pad))
                    }
                    None => {
                        let j = slot_of(a.clone());
                        quote!(#rt::fused_route(#j))
                    }
                })
                .collect();
            let call = relocate_call(
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                        #rt::fused_vjp_routed(#ops, #args, #lits, [#(#pairs),*], &__rune_g,
                            #rt::fused_cotangents_of(#f), [#(#routes),*], [#(&mut #slots),*]);
                    }
                },
                span,
            );
            return quote!(#item #call);
        }
        if reduce.is_none() && self.carrier() == Carrier::Tensors {
            let call = relocate_call(
                quote! {
                    if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                        #rt::fused_vjp_into(#ops, #args, #lits, [#(#pairs),*], &__rune_g,
                            #rt::fused_cotangents_of(#f), [#(&mut #adjoints),*]);
                    }
                },
                span,
            );
            return quote!(#item #call);
        }
        let accumulate = self.glue("accumulate");
        let (function, over) = match (&reduce, &axes) {
            (Some(r), Some(axes)) => {
                let axes = axes_args(axes, true);
                (quote!(#rt::fused_reduce_axes_vjp), quote!(#r, #axes))
            }
            _ => (self.glue("fused_vjp"), quote!()),
        };
        let accumulate = adjoints
            .iter()
            .zip(&results)
            .map(|(a, r)| quote!(#accumulate(&mut #a, #r);));
        let call = relocate_call(
            quote! {
                if let ::core::option::Option::Some(__rune_g) = #adj.take() {
                    let [#(#results),*] = #function(#ops, #args, #lits, #over [#(#pairs),*],
                        &__rune_g, #rt::fused_cotangents_of(#f));
                    #(#accumulate)*
                }
            },
            span,
        );
        quote!(#item #call)
    }

    /// `v` as a window of another value, when it is `x.shrink(..).pad(..)` for a differentiated
    /// `x` whose shape and both ops' ranges the backward pass keeps (it runs their VJPs).
    fn window_of(&self, v: Val) -> Option<Window> {
        let op_of = |out: Val| {
            let mut found = None;
            crate::ir::walk(&self.body.stmts, &mut |s| {
                if let Stmt::Op {
                    out: o,
                    op,
                    inputs,
                    config,
                    ..
                } = s
                {
                    if *o == out {
                        found = Some((op.name, inputs.first().copied(), config.first().copied()));
                    }
                }
            });
            found
        };
        let ("pad", Some(Operand::Val(u)), Some(pad)) = op_of(v)? else {
            return None;
        };
        let ("shrink", Some(Operand::Val(of)), Some(shrink)) = op_of(u)? else {
            return None;
        };
        let a = self.analysis;
        let kept = a.keep_shape.contains(&of)
            && a.keep_config.contains(&pad)
            && a.keep_config.contains(&shrink);
        (self.useful(of) && kept).then_some(Window { of, shrink, pad })
    }
}

/// A region input that is `of.shrink(shrink).pad(pad, _)` ([`Emitter::window_of`]).
struct Window {
    of: Val,
    shrink: Const,
    pad: Const,
}
