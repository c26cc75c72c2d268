//! Parsing: the attribute's options (`options`) and the function's signature model (which
//! parameters are differentiated, what the function returns), from what the types as written
//! say (`types`).

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::diag::Errors;

mod options;
mod types;

pub use options::{options, take_dyn, Options};
pub use types::{
    contains_tensor_of, contains_type, float_element, is_map_type, single_ident, tensor_elem,
    type_text,
};
use types::{
    holds_differentiable, is_collection, is_float, is_float_array, is_map, is_nondiff_elem,
    is_structure, option_inner, option_of_ref, result_parts, returns_tensor_like,
};

/// How a parameter is passed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Passing {
    /// `&Tensor<E>`
    Borrowed,
    /// `Tensor<E>`
    Owned,
}

/// One parameter of the function.
#[derive(Clone)]
pub struct Param {
    pub ident: Ident,
    /// The parameter's type as written.
    pub ty: Type,
    /// Whether the pattern had `mut`.
    pub mutable: bool,
    /// `Some` for a differentiated tensor parameter.
    pub active: Option<Active>,
}

/// A differentiated parameter.
#[derive(Clone)]
pub struct Active {
    pub passing: Passing,
    /// The element type `E` of `Tensor<E>` (for a struct, its `Differentiable::Elem`).
    pub elem: Type,
    /// A structure of tensors (`#[derive(Differentiable)]`) rather than one tensor.
    pub structure: bool,
    /// A number (`f32`/`f64`, by value or reference) of a function returning a number: a 0-d
    /// tensor inside, a number in the generated functions' signatures.
    pub scalar: bool,
    /// An array of numbers (`[f64; N]`, by value or reference) of a function returning a
    /// number: a list of its elements inside (`scalar` is set too), arrays in the signatures.
    pub array: bool,
    /// How a structure parameter enters the generated passes.
    pub entry: Entry,
}

/// How a structure parameter enters the generated passes: as it is, or as the owned
/// `Differentiable` value it copies into (cheap: tensors share their buffers).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    AsIs,
    /// `&[X]` as the `Vec<X>` it copies into.
    SliceToVec,
    /// `Option<&X>` as the `Option<X>` it clones into.
    OptionCloned,
}

/// What the function returns.
#[allow(clippy::large_enum_variant)] // one per macro invocation
pub enum Returns {
    /// One tensor.
    Single(Type),
    /// A tuple of tensors.
    Tuple(Vec<Type>),
    /// `(value, aux)` under `has_aux`.
    Aux { value: Type, aux: Type },
}

/// The signature model.
pub struct Signature {
    pub params: Vec<Param>,
    pub returns: Returns,
    /// The error type `E` of a function returning `Result<value, E>` (its body uses `?` and ends
    /// with `Ok(value)`): every generated function returns a `Result` with it.
    pub fallible: Option<Type>,
    /// The function returns a number (`f32`/`f64`): its value, tangent and cotangent are numbers.
    pub scalar_out: bool,
    /// The function returns an array of numbers (`[f64; 2]`): `returns` is the tuple of its
    /// elements, which the generated passes carry; the entry points take and give the array.
    pub array_out: Option<Type>,
}

/// `ty` without the invisible groups a `macro_rules!` fragment (`$t:ty`) wraps it in, at the
/// top and under a reference, so that `&[f64; 3]` passed through a macro is seen as written.
fn ungrouped(ty: &Type) -> Type {
    match ty {
        Type::Group(g) => ungrouped(&g.elem),
        Type::Reference(r) => Type::Reference(syn::TypeReference {
            elem: Box::new(ungrouped(&r.elem)),
            ..r.clone()
        }),
        other => other.clone(),
    }
}

/// Builds the signature model, removing `#[nodiff]` from the function's parameters.
pub fn signature(func: &mut ItemFn, options: &Options, errors: &mut Errors) -> Option<Signature> {
    let generics = func.sig.generics.clone();
    // A function returning `Result<value, E>` is differentiated as one returning `value`.
    let fallible = match &mut func.sig.output {
        ReturnType::Type(_, t) => result_parts(t),
        ReturnType::Default => None,
    };
    let value_output = match (&fallible, &func.sig.output) {
        (Some((value, _)), _) => ReturnType::Type(Default::default(), Box::new(value.clone())),
        (None, output) => output.clone(),
    };
    let fallible = fallible.map(|(_, e)| e);
    // A function returning a number, or a tuple of numbers, differentiates its number
    // parameters.
    let scalar_out = match &value_output {
        ReturnType::Type(_, t) => match ungrouped(t) {
            Type::Tuple(tuple) if !options.has_aux => {
                !tuple.elems.is_empty() && tuple.elems.iter().all(is_float)
            }
            Type::Array(a) if !options.has_aux => is_float(&a.elem),
            t => is_float(&t),
        },
        ReturnType::Default => false,
    };
    let sig = &mut func.sig;
    for (what, present) in [
        ("async", sig.asyncness.is_some()),
        ("unsafe", sig.unsafety.is_some()),
        ("const", sig.constness.is_some()),
        ("variadic", sig.variadic.is_some()),
    ] {
        if present {
            errors.at(
                sig.fn_token,
                format!("#[differentiable] does not support {what} functions"),
            );
        }
    }
    let mut params = Vec::new();
    for input in sig.inputs.iter_mut() {
        let attrs = match input {
            FnArg::Typed(pt) => &mut pt.attrs,
            FnArg::Receiver(r) => &mut r.attrs,
        };
        let mut nodiff = false;
        attrs.retain(|a| {
            if a.path().is_ident("nodiff") {
                nodiff = true;
                false
            } else {
                true
            }
        });
        // `self` is a parameter named `self` of type `Self`, `&Self` (or as written).
        let (ident, mutable, ty) = match &*input {
            FnArg::Receiver(r) => (
                Ident::new("self", r.self_token.span),
                r.mutability.is_some(),
                (*r.ty).clone(),
            ),
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    (pi.ident.clone(), pi.mutability.is_some(), (*pt.ty).clone())
                }
                other => {
                    errors.at(
                        other,
                        "parameters of a #[differentiable] function must be plain names",
                    );
                    continue;
                }
            },
        };
        let ty = ungrouped(&ty);
        let (inner, passing, mutable_ref) = match &ty {
            Type::Reference(r) => (&*r.elem, Passing::Borrowed, r.mutability.is_some()),
            other => (other, Passing::Owned, false),
        };
        let active = match tensor_elem(inner) {
            None if scalar_out && !nodiff && !mutable_ref && is_float(inner) => Some(Active {
                passing,
                elem: inner.clone(),
                structure: false,
                scalar: true,
                array: false,
                entry: Entry::AsIs,
            }),
            None if scalar_out && !nodiff && !mutable_ref && is_float_array(inner) => {
                // A slice enters as the `Vec` its gradient is.
                let list = Signature::grad_type_of(&ty);
                Some(Active {
                    passing,
                    elem: syn::parse_quote!(<#list as ::rune_ad::__private::NumberArray>::Elem),
                    structure: false,
                    scalar: true,
                    array: true,
                    entry: if matches!(inner, Type::Slice(_)) {
                        Entry::SliceToVec
                    } else {
                        Entry::AsIs
                    },
                })
            }
            Some(elem) if !nodiff && !is_nondiff_elem(elem) => {
                if mutable_ref {
                    errors.at(
                        &ty,
                        "a differentiated parameter cannot be `&mut Tensor`: take `&Tensor` or \
                         `Tensor` and return the new value (or mark it #[nodiff])",
                    );
                    continue;
                }
                Some(Active {
                    passing,
                    elem: elem.clone(),
                    structure: false,
                    scalar: false,
                    array: false,
                    entry: Entry::AsIs,
                })
            }
            None if !nodiff
                && (is_structure(inner, &generics)
                    || is_collection(inner, &generics)
                    || is_map(inner, &generics)) =>
            {
                if mutable_ref {
                    errors.at(
                        &ty,
                        "a differentiated parameter cannot be `&mut`: take `&Model` or `Model` \
                         (or mark it #[nodiff])",
                    );
                    continue;
                }
                Some(Active {
                    passing,
                    elem: match inner {
                        Type::Slice(sl) => {
                            let e = &sl.elem;
                            syn::parse_quote!(<::std::vec::Vec<#e> as ::rune_ad::__private::Differentiable>::Elem)
                        }
                        _ => {
                            syn::parse_quote!(<#inner as ::rune_ad::__private::Differentiable>::Elem)
                        }
                    },
                    structure: true,
                    scalar: false,
                    array: false,
                    entry: if matches!(inner, Type::Slice(_)) {
                        Entry::SliceToVec
                    } else {
                        Entry::AsIs
                    },
                })
            }
            None if !nodiff && option_inner(inner, &generics).is_some() => {
                let owned = Signature::grad_type_of(inner);
                Some(Active {
                    passing,
                    elem: syn::parse_quote!(<#owned as ::rune_ad::__private::Differentiable>::Elem),
                    structure: true,
                    scalar: false,
                    array: false,
                    entry: if option_of_ref(inner) {
                        Entry::OptionCloned
                    } else {
                        Entry::AsIs
                    },
                })
            }
            None if !nodiff && holds_differentiable(&ty, &generics) => {
                errors.at(
                    &ty,
                    format!(
                        "#[differentiable] cannot differentiate a parameter of type `{}`: take a \
                         `Tensor`, `&Tensor`, a `Differentiable` structure, or a `Vec`, array or \
                         slice of them, or mark it `#[nodiff]` to make it a constant",
                        type_text(&ty)
                    ),
                );
                continue;
            }
            _ => None,
        };
        params.push(Param {
            ident,
            ty,
            mutable,
            active,
        });
    }
    if !params.iter().any(|p| p.active.is_some()) && errors.is_empty() {
        // A parameter of a generic type is a structure once bounded by `Differentiable`.
        let generic = params.iter().find_map(|p| {
            let Type::Path(t) = ungrouped_ref(&p.ty) else {
                return None;
            };
            let name = t.path.get_ident()?;
            generics
                .type_params()
                .any(|g| g.ident == *name)
                .then(|| name.clone())
        });
        let hint = generic.map_or(String::new(), |g| {
            format!(
                "; a parameter of generic type `{g}` is a structure of parameters when `{g}` is \
                 bounded by `Differentiable` (`{g}: Layer + Differentiable`)"
            )
        });
        errors.at(
            &sig.ident,
            format!(
                "a #[differentiable] function needs at least one differentiated parameter \
                 without #[nodiff]: a `Tensor<T>`, `&Tensor<T>`, a `Differentiable` structure, \
                 or a `Vec`, slice or `Option` of them; in a function returning a number or a \
                 tuple of numbers also an `f32`/`f64`, an array `[f64; N]`, a slice `&[f64]` or \
                 a `Vec<f64>` (a function returning a tensor takes numbers as constants){hint}"
            ),
        );
    }
    let mut array_out = None;
    let returns = match &value_output {
        ReturnType::Default => {
            errors.at(
                &sig.ident,
                "a #[differentiable] function must return a tensor or a tuple of tensors",
            );
            return None;
        }
        ReturnType::Type(_, ty) => match (&ungrouped(ty), options.has_aux) {
            (Type::Tuple(t), true) if t.elems.len() == 2 => Returns::Aux {
                value: t.elems[0].clone(),
                aux: t.elems[1].clone(),
            },
            (other, true) => {
                errors.at(
                    other,
                    "#[differentiable(has_aux)] needs the function to return a pair \
                     `(Tensor<T>, Aux)`",
                );
                return None;
            }
            (Type::Tuple(t), false) if !t.elems.is_empty() => {
                Returns::Tuple(t.elems.iter().cloned().collect())
            }
            (Type::Array(a), false) if scalar_out => {
                let n = match &a.len {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(n),
                        ..
                    }) => n.base10_parse::<usize>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) if (2..=6).contains(&n) => {
                        array_out = Some(Type::Array(a.clone()));
                        Returns::Tuple(vec![(*a.elem).clone(); n])
                    }
                    _ => {
                        errors.at(
                            &a.len,
                            "an array returned by a #[differentiable] function has a length \
                             written as a number from 2 to 6 (`[f64; 3]`); return a tensor for \
                             more",
                        );
                        return None;
                    }
                }
            }
            (other, false) => {
                if !scalar_out && !returns_tensor_like(other, &generics) {
                    errors.at(
                        other,
                        format!(
                            "a #[differentiable] function returns a tensor, a tuple of tensors or \
                             a number (`f32`, `f64`), not `{}`",
                            type_text(other)
                        ),
                    );
                    return None;
                }
                Returns::Single(other.clone())
            }
        },
    };
    Some(Signature {
        params,
        returns,
        fallible,
        scalar_out,
        array_out,
    })
}

impl Signature {
    /// The differentiated parameters.
    pub fn active(&self) -> impl Iterator<Item = (&Param, &Active)> {
        self.params
            .iter()
            .filter_map(|p| p.active.as_ref().map(|a| (p, a)))
    }

    /// The number of outputs that are differentiated.
    pub fn outputs(&self) -> usize {
        match &self.returns {
            Returns::Single(_) | Returns::Aux { .. } => 1,
            Returns::Tuple(ts) => ts.len(),
        }
    }

    /// The full return type.
    pub fn return_type(&self) -> TokenStream {
        match &self.returns {
            Returns::Single(t) => quote!(#t),
            Returns::Tuple(ts) => quote!((#(#ts,)*)),
            Returns::Aux { value, aux } => quote!((#value, #aux)),
        }
    }

    /// The type of the differentiated value(s): the return type without the aux.
    pub fn value_type(&self) -> TokenStream {
        match &self.returns {
            Returns::Single(t) | Returns::Aux { value: t, .. } => quote!(#t),
            Returns::Tuple(ts) => quote!((#(#ts,)*)),
        }
    }

    /// The value's type at the entry points: the array a function returning one returns,
    /// otherwise [`Self::value_type`].
    pub fn entry_value_type(&self) -> TokenStream {
        match &self.array_out {
            Some(a) => quote!(#a),
            None => self.value_type(),
        }
    }

    /// The return type at the entry points (the array, or [`Self::return_type`]).
    pub fn entry_return_type(&self) -> TokenStream {
        match &self.array_out {
            Some(a) => quote!(#a),
            None => self.return_type(),
        }
    }

    /// The cotangent type at the entry points: `&[f64; N]` for a function returning an array,
    /// otherwise [`Self::cotangent_type`].
    pub fn entry_cotangent_type(&self) -> TokenStream {
        match &self.array_out {
            Some(a) => quote!(&#a),
            None => self.cotangent_type(),
        }
    }

    /// The cotangent type: `&Tensor<E>`, or a tuple of them.
    pub fn cotangent_type(&self) -> TokenStream {
        match &self.returns {
            Returns::Single(t) | Returns::Aux { value: t, .. } => quote!(&#t),
            Returns::Tuple(ts) => quote!((#(&#ts,)*)),
        }
    }

    /// The gradient type of parameter `p` (its tensor type, owned).
    pub fn grad_type(p: &Param) -> TokenStream {
        Self::grad_type_of(&p.ty)
    }

    /// The gradient type of a parameter of type `ty`: itself, owned (`Option<&X>` → `Option<X>`,
    /// `&[X]` → `Vec<X>`).
    pub fn grad_type_of(ty: &Type) -> TokenStream {
        if let Type::Path(p) = ty {
            if let Some(last) = p.path.segments.last().filter(|s| s.ident == "Option") {
                if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(Type::Reference(r))) = args.args.first()
                    {
                        let inner = &r.elem;
                        return quote!(::core::option::Option<#inner>);
                    }
                }
            }
        }
        match ty {
            // A slice's gradient is a `Vec` of its elements' gradients.
            Type::Reference(r) if matches!(&*r.elem, Type::Slice(_)) => {
                let Type::Slice(s) = &*r.elem else {
                    unreachable!("matched")
                };
                let elem = &s.elem;
                quote!(::std::vec::Vec<#elem>)
            }
            Type::Reference(r) => r.elem.to_token_stream(),
            other => other.to_token_stream(),
        }
    }

    /// The gradients' type: one gradient, or a tuple in parameter order.
    pub fn grads_type(&self) -> TokenStream {
        let types: Vec<_> = self.active().map(|(p, _)| Self::grad_type(p)).collect();
        if types.len() == 1 {
            types[0].clone()
        } else {
            quote!((#(#types,)*))
        }
    }

    /// The slot type of each parameter in a pullback's result.
    pub fn slot_types(&self) -> Vec<TokenStream> {
        self.params
            .iter()
            .map(|p| match p.active {
                Some(_) => Self::grad_type(p),
                None => quote!(::rune_ad::__private::NoGrad),
            })
            .collect()
    }
}

/// `ty` behind one reference (`&M` → `M`).
fn ungrouped_ref(ty: &Type) -> &Type {
    match ty {
        Type::Reference(r) => &r.elem,
        other => other,
    }
}
