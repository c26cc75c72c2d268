//! What a differentiated value is in the generated code: a tensor, or, in a function that
//! `crate::numbers` writes on numbers, the number itself. Every piece of generated code that
//! differs between the two is written here, so the other emitters say what they need (a zero
//! like this value, the cotangent a callee gets) and not how each carrier spells it.
//!
//! The choice is made here, in the macro, rather than by a runtime trait both carriers
//! implement: a trait call in every generated statement is one more obligation for rustc to
//! solve, and the time rustc takes over long generated bodies is what limits them
//! (docs/guarantees.md, "Long and deep bodies").

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::rt;
use crate::ir::{Operand, Val};
use crate::names::{const_ident, val_ident};

/// A tensor (`Tensor<T>`) or a number (`T`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    Tensors,
    Numbers,
}

impl Carrier {
    pub(super) fn of(numbers: bool) -> Self {
        if numbers {
            Carrier::Numbers
        } else {
            Carrier::Tensors
        }
    }

    /// The runtime's function `name` for this carrier: the tensor one, or its twin on numbers
    /// (`number_map` for `fused_map`, ..).
    pub(super) fn glue(self, name: &str) -> TokenStream {
        let rt = rt();
        let name = match (self, name) {
            (Carrier::Tensors, name) => name,
            (Carrier::Numbers, "accumulate") => "accumulate_number",
            (Carrier::Numbers, "accumulate_option") => "accumulate_number_option",
            (Carrier::Numbers, "accumulate_slot") => "accumulate_number_slot",
            (Carrier::Numbers, "adjoint_or_zeros") => "number_or_zero",
            (Carrier::Numbers, "fused_map") => "number_map",
            (Carrier::Numbers, "fused_jvp") => "number_jvp",
            (Carrier::Numbers, "fused_vjp") => "number_vjp",
            (Carrier::Numbers, "array_param") => "number_array_param",
            (Carrier::Numbers, "array_grad") => "number_array_grad",
            (Carrier::Numbers, "array_tangent") => "number_array_tangent",
            (Carrier::Numbers, "array_tangent_arg") => "number_array_tangent_arg",
            (Carrier::Numbers, "accumulate_array_slot") => "accumulate_number_array_slot",
            (Carrier::Numbers, other) => unreachable!("`{other}` has no twin on numbers"),
        };
        let name = format_ident!("{name}");
        quote!(#rt::#name)
    }

    /// The type of a value whose elements are `elem`.
    pub(super) fn value_type(self, elem: &TokenStream) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Tensors => quote!(#rt::Tensor<#elem>),
            Carrier::Numbers => quote!(#elem),
        }
    }

    /// An owned copy of value `v` (a slot's new value, a saved value, the function's result).
    pub(super) fn value(self, v: Val) -> TokenStream {
        let rt = rt();
        let v = val_ident(v);
        match self {
            Carrier::Tensors => quote!(::core::clone::Clone::clone(#rt::as_tensor(&#v))),
            Carrier::Numbers => quote!(#rt::number_of(&#v)),
        }
    }

    /// An operand as an owned value: a value's copy, or a constant as one (a 0-d tensor; in a
    /// function of numbers a copy whose type is the variable's, as in the user's code, for
    /// `let mut x = 1.0;`).
    pub(super) fn owned(self, o: Operand) -> TokenStream {
        let rt = rt();
        match (self, o) {
            (_, Operand::Val(v)) => self.value(v),
            (Carrier::Tensors, Operand::Const(c)) => {
                let c = const_ident(c);
                quote!(#rt::slot_value(&#c))
            }
            (Carrier::Numbers, Operand::Const(c)) => {
                let c = const_ident(c);
                quote!(#rt::number_of(&#c))
            }
        }
    }

    /// A number parameter's value `value` entering the body.
    pub(super) fn number_param(self, value: TokenStream) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Tensors => quote!(#rt::Tensor::scalar(#value)),
            Carrier::Numbers => value,
        }
    }

    /// What the saved shape of value `v` is.
    pub(super) fn shape(self, v: Val) -> TokenStream {
        let rt = rt();
        let v = val_ident(v);
        match self {
            Carrier::Tensors => quote!(#rt::shape_of(&#v)),
            Carrier::Numbers => quote!(#rt::number_shape(&#v)),
        }
    }

    /// The `let`s that make a callee's results `idents` values of this carrier (a callee
    /// returning a number gives a tensor a 0-d tensor).
    pub(super) fn call_results(self, idents: &[Ident]) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Tensors => quote!(#(let #idents = #rt::into_tensor(#idents);)*),
            Carrier::Numbers => quote!(),
        }
    }

    /// The cotangent a callee's pullback gets (owned; it takes it by reference) for an output
    /// whose adjoint is `adjoint` (an `Option`) and whose shape is saved as `shape`.
    pub(super) fn callee_cotangent(self, adjoint: TokenStream, shape: &Ident) -> TokenStream {
        let rt = rt();
        match self {
            // As the tensor, or its number for a callee returning a number.
            Carrier::Tensors => quote!(#rt::arg(#rt::adjoint_or_zeros(#adjoint, &#shape))),
            Carrier::Numbers => quote!(#rt::number_or_zero(#adjoint, &#shape)),
        }
    }

    /// The statement that adds the function's cotangent `ct` to the adjoint `adj` of an output.
    pub(super) fn seed(self, adj: &Ident, ct: TokenStream) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Tensors => {
                quote!(#rt::accumulate(&mut #adj, #rt::IntoCotangent::into_cotangent(#ct));)
            }
            Carrier::Numbers => quote!(#rt::accumulate_number(&mut #adj, #rt::number_of(#ct));),
        }
    }

    /// A gradient `grad` of this carrier as the parameter's gradient: a number parameter's is
    /// a number.
    pub(super) fn grad(self, grad: TokenStream, number_param: bool) -> TokenStream {
        match self {
            Carrier::Tensors if number_param => quote!(#grad.item()),
            _ => grad,
        }
    }

    /// The tangent of parameter value `v` from the entry point's tangent argument `slot`.
    pub(super) fn param_tangent(self, slot: &Ident, v: Val) -> TokenStream {
        let rt = rt();
        let v = val_ident(v);
        match self {
            Carrier::Tensors => quote!(#rt::TangentSlot::tangent_or_zeros(#slot, &#v)),
            Carrier::Numbers => quote!(#rt::number_tangent(#slot, &#v)),
        }
    }

    /// A zero of the value that the reference `value` points at.
    pub(super) fn zero_like(self, value: TokenStream) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Tensors => quote!(#rt::Tensor::zeros((#value).shape())),
            Carrier::Numbers => quote!(#rt::fused_zero(*#value)),
        }
    }

    /// A fused region's input in the forward pass (a `where_cond` mask as a value of the
    /// element type when `mask`).
    pub(super) fn fused_input(self, input: &Ident, mask: bool) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Numbers => quote!(#rt::number_of(&#input)),
            Carrier::Tensors if mask => {
                quote!(#rt::OperandOf::operand_of(&#rt::fused_mask(&#input)))
            }
            Carrier::Tensors => quote!(#rt::OperandOf::operand_of(&#input)),
        }
    }

    /// A fused region's input in the backward pass: value `v` if the region's partials read it
    /// (`needed`), else its saved shape `shape` standing for zeros.
    pub(super) fn fused_backward_value(self, v: Val, needed: bool, shape: &Ident) -> TokenStream {
        let rt = rt();
        let v = val_ident(v);
        match (self, needed) {
            (Carrier::Numbers, true) => quote!(#rt::number_of(&#v)),
            (Carrier::Numbers, false) => quote!(#rt::number_zero(&#shape)),
            (Carrier::Tensors, true) => quote!(#rt::fused_value(&#v)),
            (Carrier::Tensors, false) => quote!(#rt::fused_shape(&#shape)),
        }
    }

    /// A fused region's constant input `c` in the backward pass, kept as its residual
    /// `residual`.
    pub(super) fn fused_backward_const(self, residual: &Ident, mask: bool) -> TokenStream {
        let rt = rt();
        match self {
            Carrier::Numbers => quote!(#rt::number_of(&#residual)),
            Carrier::Tensors if mask => quote!(#rt::fused_value(&#rt::fused_mask(&#residual))),
            Carrier::Tensors => quote!(#rt::fused_value(&#residual)),
        }
    }
}
