//! Each op's batching rule (`rune_ops::Batching`) as code: the call rewritten into ops of
//! the op table whose configuration `rune_runtime::vmap` computes from the flags.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::body::{either, is_literal, Batcher, Rewritten};
use crate::ops::{Form, Param};
use rune_ops::Batching;

impl Batcher<'_> {
    /// An op call by the op's batching rule. `operands`: the receiver (methods) then the
    /// arguments; `call` writes the call from rewritten operands.
    pub(super) fn apply(
        &mut self,
        op: &'static rune_ops::OpDef,
        operands: Vec<Rewritten>,
        call: &dyn Fn(&[TokenStream]) -> TokenStream,
        span: Span,
    ) -> Rewritten {
        let rt = quote!(::rune_ad::__private);
        let method = op.form == Form::Method;
        // The position among `operands` of configuration argument `j`.
        let config_at = |j: usize| -> usize {
            let mut seen = 0;
            for (k, p) in op.params.iter().enumerate() {
                if matches!(p, Param::Config(..)) {
                    if seen == j {
                        return k + method as usize;
                    }
                    seen += 1;
                }
            }
            usize::MAX
        };
        let config_ty = |j: usize| -> Option<&'static str> {
            op.params
                .iter()
                .filter_map(|p| match p {
                    Param::Config(ty, _) => Some(*ty),
                    _ => None,
                })
                .nth(j)
                .flatten()
        };
        let flags: Vec<TokenStream> = operands.iter().filter_map(|o| o.1.clone()).collect();
        let out_flag = either(&flags);
        let mut tokens: Vec<TokenStream> = operands.iter().map(|o| o.0.clone()).collect();
        let recv_flag = operands[0].1.clone().unwrap_or_else(|| quote!(false));
        let n = quote!(__vmap_n);
        match op.batch {
            // A list op is batched by `list_call`, before its arguments are rewritten one by one.
            Batching::List => {
                self.errors.at(
                    proc_macro2::Ident::new(op.name, span),
                    format!(
                        "`vmap` batches `{}` of a list written out: `&[&a, &b]`",
                        op.name
                    ),
                );
                return (TokenStream::new(), None);
            }
            Batching::Each => return self.each(op, &operands, tokens, call, false, method),
            Batching::Images => return self.each(op, &operands, tokens, call, true, method),
            Batching::Einsum(spec) => {
                let first = spec.is_none() as usize;
                let flag_of = |k: usize| operands[k].1.clone().unwrap_or_else(|| quote!(false));
                let (a, fa) = self.place(tokens[first].clone(), flag_of(first));
                let (b, fb) = self.place(tokens[first + 1].clone(), flag_of(first + 1));
                let name = op.name;
                let spec = match spec {
                    Some(spec) => quote!(#spec),
                    None => tokens[0].clone(),
                };
                let spec =
                    quote!(&#rt::vmap_einsum(#name, #spec, #a.shape(), #fa, #b.shape(), #fb));
                return (
                    quote!(::rune_ad::einsum(#spec, &#a, &#b)),
                    Some(quote!((#fa || #fb))),
                );
            }
            Batching::Elementwise => {
                let tensor_at: Vec<usize> = (0..operands.len())
                    .filter(|&k| operands[k].1.is_some())
                    .collect();
                // Operands held as written, shared by every example: a tensor among them (a
                // `#[nodiff]` structure's field, a constant of the body) may have more axes
                // than a batched operand's examples, which must then line up with it. Held in
                // a local of the type written, whose shape (a number's is none) is read at run
                // time. A literal is a number and stays where it is.
                // Only a tensor's place (the receiver, a `Param::Tensor` argument) can hold
                // one; configuration (`powi`'s exponent, `clamp`'s bounds) stays as written.
                let tensor_place = |k: usize| match (method, k) {
                    (true, 0) => true,
                    (true, k) => op.params.get(k - 1) == Some(&Param::Tensor),
                    (false, k) => op.params.get(k) == Some(&Param::Tensor),
                };
                let mut shared = Vec::new();
                for k in 0..operands.len() {
                    if operands[k].1.is_none() && tensor_place(k) && !is_literal(&operands[k].0) {
                        // A receiver is read through a reference, as the method call would.
                        let operand = &operands[k].0;
                        let operand = if k == 0 && method {
                            quote!(&(#operand))
                        } else {
                            operand.clone()
                        };
                        let (local, shape) = self.shared_operand(operand);
                        shared.push(shape);
                        tokens[k] = quote!(#local);
                    }
                }
                if !tensor_at.is_empty() && tensor_at.len() + shared.len() >= 2 {
                    let aligned = self.align(
                        tensor_at
                            .iter()
                            .map(|&k| {
                                (
                                    operands[k].0.clone(),
                                    operands[k].1.clone().expect("a tensor"),
                                )
                            })
                            .collect(),
                        &shared,
                    );
                    for (k, a) in tensor_at.iter().zip(aligned) {
                        tokens[*k] = if *k == 0 && method {
                            quote!(#a)
                        } else {
                            quote!(&#a)
                        };
                    }
                }
            }
            Batching::Trailing => {}
            Batching::AllAxes(reduction) => {
                let (x, f) = self.place(tokens[0].clone(), recv_flag);
                let reduction = format_ident!("{}", reduction, span = span);
                let rest = &tokens[1..];
                let value =
                    quote!(#x.#reduction(&#rt::vmap_all_axes(#x.ndim(), #f), false #(, #rest)*));
                return (value, Some(f));
            }
            Batching::Axis(js) => {
                for &j in js {
                    let k = config_at(j);
                    let a = &tokens[k];
                    tokens[k] = quote!(#rt::vmap_axis(#a, #recv_flag));
                }
            }
            Batching::Axes(j) => {
                let k = config_at(j);
                let a = &tokens[k];
                tokens[k] = if config_ty(j) == Some("&[usize]") {
                    quote!(&#rt::vmap_axes_usize(#a, #recv_flag))
                } else {
                    quote!(&#rt::vmap_axes(#a, #recv_flag))
                };
            }
            Batching::Shape(j) => {
                let k = config_at(j);
                let a = &tokens[k];
                tokens[k] = if config_ty(j) == Some("&[usize]") {
                    quote!(&#rt::vmap_out_shape(#a, !#recv_flag, #n))
                } else {
                    quote!(&#rt::vmap_new_shape(#a, #recv_flag, #n))
                };
            }
            Batching::Permutation(j) => {
                let k = config_at(j);
                let a = &tokens[k];
                tokens[k] = quote!(&#rt::vmap_permutation(#a, #recv_flag));
            }
            Batching::Ranges(j) => {
                let k = config_at(j);
                let a = &tokens[k];
                let name = op.name;
                tokens[k] = quote!(&#rt::vmap_ranges(#name, #a, #recv_flag, #n));
            }
            Batching::Matmul => {
                let fa = operands[0].1.clone().unwrap_or_else(|| quote!(false));
                let fb = operands[1].1.clone().unwrap_or_else(|| quote!(false));
                let (a, fa) = self.place(tokens[0].clone(), fa);
                let (b, fb) = self.place(tokens[1].clone(), fb);
                let p = self.temp();
                let shapes = quote!(#a.shape(), #fa, #b.shape(), #fb);
                self.pending.push(quote! {
                    let #p = if #rt::vmap_matmul_swap(#shapes) {
                        #b.matmul(&#a.t())
                    } else {
                        #a.reshape(&#rt::vmap_matmul_lhs(#shapes))
                            .matmul(&#b.reshape(&#rt::vmap_matmul_rhs(#shapes)))
                    };
                });
                let value = quote!(#p.reshape(&#rt::vmap_matmul_out(#p.shape(), #shapes)));
                return (value, Some(quote!((#fa || #fb))));
            }
        }
        (call(&tokens), Some(out_flag))
    }

    /// An op called once per example, each call reading its example of every batched operand
    /// and the whole of every shared one, the results stacked (`Batching::Each`). `images`:
    /// while only the receiver is batched, its batch axis is merged into its first axis and
    /// the op called once (`Batching::Images`).
    fn each(
        &mut self,
        op: &'static rune_ops::OpDef,
        operands: &[Rewritten],
        mut tokens: Vec<TokenStream>,
        call: &dyn Fn(&[TokenStream]) -> TokenStream,
        images: bool,
        method: bool,
    ) -> Rewritten {
        let rt = quote!(::rune_ad::__private);
        let placed: Vec<_> = operands
            .iter()
            .enumerate()
            .filter_map(|(k, o)| o.1.clone().map(|f| (k, o.0.clone(), f)))
            .map(|(k, t, f)| {
                let (name, f) = self.place(t, f);
                (k, name, f)
            })
            .collect();
        let flags: Vec<TokenStream> = placed.iter().map(|p| p.2.clone()).collect();
        let (any, merged, outs, i) = (self.temp(), self.temp(), self.temp(), self.temp());
        let stacked = self.temp();
        let any_flag = either(&flags);
        let receiver_flag = match placed.first() {
            Some((0, _, f)) if images => f.clone(),
            _ => quote!(false),
        };
        let others = either(
            &placed
                .iter()
                .filter(|p| p.0 != 0)
                .map(|p| p.2.clone())
                .collect::<Vec<_>>(),
        );
        let merge = if images {
            quote!(!#others)
        } else {
            quote!(false)
        };
        let name = op.name;
        let mut examples = Vec::new();
        for (k, operand, f) in &placed {
            let x = self.temp();
            let merged_receiver = (images && *k == 0).then(|| {
                quote!(if #merged {
                    #operand.reshape(&#rt::vmap_merge(#name, #operand.shape(), #f))
                } else)
            });
            examples.push(quote! {
                let #x = #merged_receiver if #f {
                    #operand.shrink(&#rt::vmap_example(#operand.shape(), #i)).squeeze(0)
                } else {
                    #operand.clone()
                };
            });
            tokens[*k] = if *k == 0 && method {
                quote!(#x)
            } else {
                quote!(&#x)
            };
        }
        let value = call(&tokens);
        self.pending.push(quote! {
            let #any: bool = #any_flag;
            let #merged: bool = #merge;
            let mut #outs = Vec::new();
            for #i in 0..#rt::vmap_each_len(#any && !#merged, __vmap_n) {
                #(#examples)*
                #outs.push(#value);
            }
            let #stacked = ::rune_ad::stack(&#outs, 0);
        });
        (
            quote!(#stacked.reshape(&#rt::vmap_each_out(
                #stacked.shape(), #any, #merged, #receiver_flag, __vmap_n))),
            Some(quote!(#any)),
        )
    }

    /// `concat(&[&a, &b], axis)` and `stack`: when one tensor of the list is batched, every one
    /// is (the others repeated), and the axis is shifted past the batch axis.
    pub(super) fn list_call(
        &mut self,
        c: &syn::ExprCall,
        op: &'static rune_ops::OpDef,
    ) -> Rewritten {
        let rt = quote!(::rune_ad::__private);
        let mut list = c.args.first();
        while let Some(syn::Expr::Reference(r)) = list {
            list = Some(&r.expr);
        }
        let Some(syn::Expr::Array(items)) = list else {
            self.errors.at(
                &c.func,
                format!(
                    "`vmap` batches `{}` of a list written out: `&[&a, &b]`",
                    op.name
                ),
            );
            return (TokenStream::new(), None);
        };
        let rewritten: Vec<Rewritten> = items.elems.iter().map(|e| self.expr(e)).collect();
        let flags: Vec<TokenStream> = rewritten.iter().filter_map(|r| r.1.clone()).collect();
        let rest: Vec<Rewritten> = c.args.iter().skip(1).map(|a| self.expr(a)).collect();
        if flags.is_empty() {
            let items = rewritten.iter().map(|r| &r.0);
            let rest = rest.iter().map(|r| &r.0);
            let func = &c.func;
            return (quote!(#func(&[#(#items),*] #(, #rest)*)), None);
        }
        let any = self.temp();
        let any_flag = either(&flags);
        self.pending.push(quote!(let #any: bool = #any_flag;));
        let mut placed = Vec::new();
        for (t, f) in rewritten {
            let f = f.unwrap_or_else(|| quote!(false));
            let (name, f) = self.place(t, f);
            let b = self.temp();
            self.pending.push(quote! {
                let #b = #name.broadcast_to(&#rt::vmap_out_shape(#name.shape(), #f || !#any, __vmap_n));
            });
            placed.push(b);
        }
        let Some((axis, others)) = rest.split_first() else {
            self.errors
                .at(&c.func, format!("`{}` takes an axis", op.name));
            return (TokenStream::new(), None);
        };
        let axis = &axis.0;
        let others = others.iter().map(|r| &r.0);
        let func = &c.func;
        (
            quote!(#func(&[#(&#placed),*], #rt::vmap_axis(#axis, #any) #(, #others)*)),
            Some(quote!(#any)),
        )
    }
}
