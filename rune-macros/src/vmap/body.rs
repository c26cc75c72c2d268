//! The batched body: each statement of the function rewritten so that tensors may carry a
//! leading batch axis, each op by its batching rule.
//!
//! An expression's rewrite is its tokens and, for a tensor, the tokens of its flag; the
//! operands an op's rule reshapes or reads the shape of are first bound to variables
//! (`__vmap_tN`), by statements placed before the statement being rewritten. Conditions of
//! branches and loops must be constants: a branch on a batched value would differ per example.

use std::collections::{HashMap, HashSet};

use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, ItemFn, Pat, Stmt};

mod control;

use super::{flag, VmapParam};
use crate::diag::Errors;
use crate::ops::{self, Form};

/// The body of `__vmap_f`.
pub fn batched_body(
    func: &ItemFn,
    params: &[VmapParam],
    tuple_out: bool,
    errors: &mut Errors,
) -> TokenStream {
    let mut assigned = HashSet::new();
    find_assigned(&func.block.stmts, &mut assigned);
    let mut b = Batcher {
        tensors: vec![params
            .iter()
            .map(|p| (p.ident.to_string(), p.tensor.is_some()))
            .collect()],
        structures: params
            .iter()
            .filter(|p| p.structure)
            .map(|p| p.ident.to_string())
            .collect(),
        assigned,
        tuple_out,
        pending: Vec::new(),
        temps: 0,
        errors,
    };
    let body = b.block(&func.block.stmts, true);
    quote! {
        #[allow(unused_imports)]
        use ::rune_ad::__private::ExampleLen as _;
        #body
    }
}

pub(super) struct Batcher<'e> {
    /// The variables of each scope, innermost last, and whether each is a tensor.
    tensors: Vec<HashMap<String, bool>>,
    /// The structure parameters, whose fields are batched with them.
    structures: HashSet<String>,
    /// Variables assigned after their `let`: their flags are `mut`.
    assigned: HashSet<String>,
    /// The function returns a tuple of tensors.
    tuple_out: bool,
    /// Statements binding the operands of the statement being rewritten.
    pub(super) pending: Vec<TokenStream>,
    temps: usize,
    pub(super) errors: &'e mut Errors,
}

/// A rewritten expression: its tokens, and the tokens of its flag if it is a tensor.
pub(super) type Rewritten = (TokenStream, Option<TokenStream>);

/// The variables assigned (`x = ..`, `x += ..`) anywhere in `stmts`.
fn find_assigned(stmts: &[Stmt], out: &mut HashSet<String>) {
    struct Finder<'a>(&'a mut HashSet<String>);
    impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
        fn visit_expr_assign(&mut self, e: &'ast syn::ExprAssign) {
            if let Expr::Path(p) = &*e.left {
                if let Some(i) = p.path.get_ident() {
                    self.0.insert(i.to_string());
                }
            }
            syn::visit::visit_expr_assign(self, e);
        }
        fn visit_expr_binary(&mut self, e: &'ast syn::ExprBinary) {
            if compound(&e.op).is_some() {
                if let Expr::Path(p) = &*e.left {
                    if let Some(i) = p.path.get_ident() {
                        self.0.insert(i.to_string());
                    }
                }
            }
            syn::visit::visit_expr_binary(self, e);
        }
    }
    for s in stmts {
        syn::visit::Visit::visit_stmt(&mut Finder(out), s);
    }
}

/// The arithmetic operator of a compound assignment (`+=` → `+`).
pub(super) fn compound(op: &BinOp) -> Option<TokenStream> {
    Some(match op {
        BinOp::AddAssign(t) => quote_spanned!(t.span()=> +),
        BinOp::SubAssign(t) => quote_spanned!(t.span()=> -),
        BinOp::MulAssign(t) => quote_spanned!(t.span()=> *),
        BinOp::DivAssign(t) => quote_spanned!(t.span()=> /),
        _ => return None,
    })
}

/// `a || b` of two flags.
pub(super) fn either(flags: &[TokenStream]) -> TokenStream {
    if flags.is_empty() {
        quote!(false)
    } else {
        quote!((#(#flags)||*))
    }
}

impl Batcher<'_> {
    fn is_tensor(&self, name: &str) -> bool {
        self.tensors
            .iter()
            .rev()
            .find_map(|scope| scope.get(name).copied())
            .unwrap_or(false)
    }

    /// Records `name` bound in the innermost scope, as a tensor or not (shadowing).
    fn bind(&mut self, name: &str, tensor: bool) {
        let scope = self.tensors.last_mut().expect("a scope is open");
        scope.insert(name.to_string(), tensor);
    }

    /// Whether the tokens name a tensor variable in scope (for code passed through as written).
    fn names_tensor(&self, tokens: TokenStream) -> Option<proc_macro2::Ident> {
        for tt in tokens {
            match tt {
                TokenTree::Ident(i) if self.is_tensor(&i.to_string()) => return Some(i),
                TokenTree::Group(g) => {
                    if let Some(i) = self.names_tensor(g.stream()) {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    pub(super) fn temp(&mut self) -> syn::Ident {
        self.temps += 1;
        format_ident!("__vmap_t{}", self.temps)
    }

    /// The statements of a block; `result`: its tail (and every `return`) is the function's
    /// result, batched on the way out.
    fn block(&mut self, stmts: &[Stmt], result: bool) -> TokenStream {
        self.tensors.push(HashMap::new());
        let mut out = TokenStream::new();
        for (k, s) in stmts.iter().enumerate() {
            let tail = k + 1 == stmts.len();
            out.extend(self.stmt(s, tail && result));
        }
        self.tensors.pop();
        out
    }

    /// `value` leaving the function: broadcast along the batch axis unless it has one.
    fn output(&mut self, e: &Expr) -> TokenStream {
        if self.tuple_out {
            return self.tuple_output(e);
        }
        let (tokens, f) = self.expr(e);
        let pending = std::mem::take(&mut self.pending);
        let f = f.unwrap_or_else(|| quote!(false));
        quote! {
            #(#pending)*
            let __vmap_out = #tokens;
            __vmap_out.broadcast_to(&::rune_ad::__private::vmap_out_shape(
                __vmap_out.shape(), #f, __vmap_n))
        }
    }

    /// A tuple of tensors leaving the function, each as `output` batches one.
    fn tuple_output(&mut self, e: &Expr) -> TokenStream {
        let mut inner = e;
        while let Expr::Paren(p) = inner {
            inner = &p.expr;
        }
        let Expr::Tuple(t) = inner else {
            self.errors.at(
                e,
                "`vmap` of a function returning a tuple takes the tuple written out as its \
                 result: `(a, b)`",
            );
            return TokenStream::new();
        };
        let parts: Vec<Rewritten> = t.elems.iter().map(|e| self.expr(e)).collect();
        let pending = std::mem::take(&mut self.pending);
        let names: Vec<syn::Ident> = (0..parts.len())
            .map(|k| format_ident!("__vmap_out{}", k))
            .collect();
        let binds = parts.iter().zip(&names).map(|((tokens, f), name)| {
            let f = f.clone().unwrap_or_else(|| quote!(false));
            quote! {
                let #name = #tokens;
                let #name = #name.broadcast_to(&::rune_ad::__private::vmap_out_shape(
                    #name.shape(), #f, __vmap_n));
            }
        });
        quote! {
            #(#pending)*
            #(#binds)*
            (#(#names),*)
        }
    }

    fn stmt(&mut self, s: &Stmt, result: bool) -> TokenStream {
        let body = match s {
            Stmt::Local(local) => self.local(local),
            Stmt::Expr(e, None) if result => return self.output(e),
            Stmt::Expr(e, semi) => {
                let t = self.stmt_expr(e);
                quote!(#t #semi)
            }
            Stmt::Macro(m) => {
                if let Some(i) = self.names_tensor(m.mac.tokens.clone()) {
                    self.errors.at(
                        i,
                        "`vmap` cannot pass a batched tensor to a macro (it would see every \
                         example at once)",
                    );
                }
                m.to_token_stream()
            }
            Stmt::Item(i) => i.to_token_stream(),
        };
        let pending = std::mem::take(&mut self.pending);
        quote!(#(#pending)* #body)
    }

    fn local(&mut self, local: &syn::Local) -> TokenStream {
        let (ident, mutability, ty) = match &local.pat {
            Pat::Ident(p) if p.subpat.is_none() => (&p.ident, p.mutability, None),
            Pat::Type(t) => match &*t.pat {
                Pat::Ident(p) if p.subpat.is_none() => (&p.ident, p.mutability, Some(&t.ty)),
                _ => return self.constant_local(local),
            },
            _ => return self.constant_local(local),
        };
        let Some(init) = &local.init else {
            self.errors.at(
                local,
                "`vmap` needs a value in each `let` (`let x = ..;`), to know whether it is batched",
            );
            return TokenStream::new();
        };
        if let Some((_, diverge)) = &init.diverge {
            self.errors
                .at(diverge, "`vmap` does not batch `let .. else`");
        }
        let (tokens, f) = self.expr(&init.expr);
        let ty = ty.map(|t| quote!(: #t));
        self.bind(&ident.to_string(), f.is_some());
        if self.structure_root(&init.expr).is_some() {
            // A part of a structure (`let last = &model.layers[k];`): its fields and methods
            // are read as the structure's.
            self.structures.insert(ident.to_string());
        } else {
            // A name bound to anything else is no longer a part (shadowing).
            self.structures.remove(&ident.to_string());
        }
        let value = quote!(let #mutability #ident #ty = #tokens;);
        match f {
            Some(f) => {
                let fl = flag(ident);
                let m = self
                    .assigned
                    .contains(&ident.to_string())
                    .then(|| quote!(mut));
                quote!(#value let #m #fl: bool = #f;)
            }
            None => value,
        }
    }

    /// A `let` with another pattern: constant code only.
    fn constant_local(&mut self, local: &syn::Local) -> TokenStream {
        if let Some(i) = self.names_tensor(local.to_token_stream()) {
            self.errors.at(
                i,
                "`vmap` takes a tensor in a `let` of one name (`let x = ..;`); destructure \
                 tuples of tensors outside the batched function",
            );
        }
        local.to_token_stream()
    }

    /// Binds a tensor operand to a variable unless it is one, giving its name and flag.
    pub(super) fn place(
        &mut self,
        tokens: TokenStream,
        f: TokenStream,
    ) -> (TokenStream, TokenStream) {
        let stripped = strip_ref(&tokens);
        // A variable or a field of one: read in place, as often as needed.
        let simple = match syn::parse2::<Expr>(stripped.clone()) {
            Ok(mut e) => loop {
                match e {
                    Expr::Field(f) => e = *f.base,
                    Expr::Path(p) => break p.path.get_ident().is_some(),
                    _ => break false,
                }
            },
            Err(_) => false,
        };
        if simple {
            return (stripped, f);
        }
        let (t, tf) = (self.temp(), self.temp());
        self.pending
            .push(quote!(let #t = #stripped; let #tf: bool = #f;));
        (quote!(#t), quote!(#tf))
    }

    pub(super) fn expr(&mut self, e: &Expr) -> Rewritten {
        match e {
            Expr::Paren(p) => {
                let (t, f) = self.expr(&p.expr);
                (quote!((#t)), f)
            }
            Expr::Reference(r) => {
                let (t, f) = self.expr(&r.expr);
                (quote!(&#t), f)
            }
            Expr::Path(p) => {
                let f = p
                    .path
                    .get_ident()
                    .filter(|i| self.is_tensor(&i.to_string()))
                    .map(|i| flag(i).to_token_stream());
                (p.to_token_stream(), f)
            }
            Expr::Lit(_) => (e.to_token_stream(), None),
            Expr::Field(_) | Expr::Index(_) => {
                // A leaf (or a part) of a structure parameter: batched with it.
                match self.structure_root(e) {
                    Some(root) => (e.to_token_stream(), Some(flag(&root).to_token_stream())),
                    None => {
                        if let Some(i) = self.names_tensor(e.to_token_stream()) {
                            self.errors
                                .at(i, "`vmap` reads fields of structure parameters only");
                        }
                        (e.to_token_stream(), None)
                    }
                }
            }
            Expr::Binary(b) => self.binary(b),
            Expr::If(i) if i.else_branch.is_some() => {
                let outer = std::mem::take(&mut self.pending);
                let f = self.temp();
                let value = self.if_value(i, &f);
                self.pending = outer;
                self.pending.push(quote!(let mut #f: bool = false;));
                (value.0, value.1.then(|| quote!(#f)))
            }
            Expr::Block(b) if b.label.is_none() => {
                let outer = std::mem::take(&mut self.pending);
                let f = self.temp();
                let (value, tensor) = self.value_block(&b.block.stmts, &f);
                self.pending = outer;
                self.pending.push(quote!(let mut #f: bool = false;));
                (quote!({ #value }), tensor.then(|| quote!(#f)))
            }
            Expr::Range(r) => {
                let mut bound = |e: &Option<Box<Expr>>| {
                    e.as_ref().map(|e| {
                        let (t, f) = self.expr(e);
                        if f.is_some() {
                            self.errors
                                .at(e, "`vmap`: a range's bounds are numbers, not tensors");
                        }
                        t
                    })
                };
                let (start, end) = (bound(&r.start), bound(&r.end));
                let limits = &r.limits;
                (quote!(#start #limits #end), None)
            }
            Expr::Unary(u) => {
                let (t, f) = self.expr(&u.expr);
                if f.is_some() && !matches!(u.op, syn::UnOp::Neg(_)) {
                    self.errors
                        .at(u, "`vmap` takes `-` of a tensor, not other unary operators");
                }
                let op = &u.op;
                (quote!(#op #t), f)
            }
            Expr::Cast(c) => {
                let (t, f) = self.expr(&c.expr);
                if f.is_some() {
                    self.errors
                        .at(&c.expr, "`vmap` cannot cast a tensor with `as`; use `cast`");
                }
                let ty = &c.ty;
                (quote!(#t as #ty), None)
            }
            Expr::MethodCall(m) => self.method(m),
            Expr::Call(c) => self.call(c),
            other => {
                if let Some(i) = self.names_tensor(other.to_token_stream()) {
                    self.errors.at(
                        i,
                        "`vmap` does not batch this expression yet: it batches `let`, \
                         assignments, ops of the op table, operators, and loops and branches \
                         on constants",
                    );
                }
                (other.to_token_stream(), None)
            }
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Rewritten {
        let op = match b.op {
            BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_) | BinOp::Div(_) => b.op.to_token_stream(),
            _ => {
                let (l, lf) = self.expr(&b.left);
                let (r, rf) = self.expr(&b.right);
                if lf.is_some() || rf.is_some() {
                    self.errors.at(
                        b,
                        "`vmap` batches `+ - * /` on tensors; compare with `lt`, `gt`, .. and \
                         choose with `where_cond`",
                    );
                }
                let op = &b.op;
                return (quote!(#l #op #r), None);
            }
        };
        self.elementwise_operator(&b.left, op, &b.right)
    }

    /// `left op right` for an arithmetic operator.
    fn elementwise_operator(&mut self, left: &Expr, op: TokenStream, right: &Expr) -> Rewritten {
        let (l, lf) = self.expr(left);
        let (r, rf) = self.expr(right);
        match (lf, rf) {
            (Some(lf), Some(rf)) => {
                let aligned = self.align(vec![(l, lf.clone()), (r, rf.clone())], &[]);
                let (a, b) = (&aligned[0], &aligned[1]);
                (quote!((&#a #op &#b)), Some(either(&[lf, rf])))
            }
            // One operand batched, the other held as written: a tensor of more axes than the
            // batched operand's examples (a `#[nodiff]` structure's field) must line up with
            // them; a literal is a number.
            (Some(lf), None) if !is_literal(&r) => {
                let (local, shape) = self.shared_operand(r);
                let aligned = self.align(vec![(l, lf.clone())], &[shape]);
                let a = &aligned[0];
                (quote!((&#a #op #local)), Some(lf))
            }
            (None, Some(rf)) if !is_literal(&l) => {
                let (local, shape) = self.shared_operand(l);
                let aligned = self.align(vec![(r, rf.clone())], &[shape]);
                let b = &aligned[0];
                (quote!((#local #op &#b)), Some(rf))
            }
            (lf, rf) => (quote!((#l #op #r)), lf.or(rf)),
        }
    }

    /// An operand held as written (shared by every example) in a local of the type written,
    /// and the expression of its shape at run time (a number's is none).
    pub(super) fn shared_operand(&mut self, operand: TokenStream) -> (syn::Ident, TokenStream) {
        let local = self.temp();
        self.pending.push(quote!(let #local = #operand;));
        let rt = quote!(::rune_ad::__private);
        let shape = quote!({
            use #rt::VmapOperandShape as _;
            #local.vmap_operand_shape()
        });
        (local, shape)
    }

    /// The batched operands of an elementwise op (tokens, flag), each reshaped so that NumPy's
    /// broadcasting lines up its examples with the others' and with the `shared` operands'
    /// shapes (operands held as written, the same for every example): the variables holding
    /// them.
    pub(super) fn align(
        &mut self,
        operands: Vec<(TokenStream, TokenStream)>,
        shared: &[TokenStream],
    ) -> Vec<syn::Ident> {
        let placed: Vec<_> = operands
            .into_iter()
            .map(|(t, f)| self.place(t, f))
            .collect();
        let rt = quote!(::rune_ad::__private);
        let mut out = Vec::new();
        for (k, (name, f)) in placed.iter().enumerate() {
            let others = placed
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .map(|(_, (n, f))| quote!((#n.shape(), #f)))
                .chain(shared.iter().map(|s| quote!((#s, false))));
            let a = self.temp();
            self.pending.push(quote! {
                let #a = #name.reshape(&#rt::vmap_align(#name.shape(), #f, &[#(#others),*]));
            });
            out.push(a);
        }
        out
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> Rewritten {
        let name = m.method.to_string();
        let (recv, rf) = self.expr(&m.receiver);
        let args: Vec<Rewritten> = m.args.iter().map(|a| self.expr(a)).collect();
        let any = rf.is_some() || args.iter().any(|a| a.1.is_some());
        if !any {
            let a = args.iter().map(|a| &a.0);
            let (method, turbofish) = (&m.method, &m.turbofish);
            return (quote!(#recv.#method #turbofish(#(#a),*)), None);
        }
        if let Some(rf) = &rf {
            match name.as_str() {
                "shape" => {
                    return (
                        quote!(::rune_ad::__private::vmap_shape(#recv.shape(), #rf)),
                        None,
                    )
                }
                "ndim" => return (quote!((#recv.ndim() - #rf as usize)), None),
                // One example's number of elements, or the number of layers of a list.
                "len" if m.args.is_empty() => return (quote!(#recv.example_len(#rf)), None),
                "zeros_like" | "ones_like" => {
                    let method = &m.method;
                    return (quote!(#recv.#method()), Some(rf.clone()));
                }
                _ => {}
            }
        }
        if ops::CONCRETIZING.contains(&name.as_str()) || ops::is_metadata(&name) {
            self.errors.at(
                &m.method,
                format!(
                    "`vmap` cannot read a batched tensor with `{name}`: it would see every \
                     example at once"
                ),
            );
            return (TokenStream::new(), None);
        }
        let Some(op) = rune_ops::lookup(&name, Form::Method) else {
            if self.structure_path(&m.receiver) {
                // A method of a structure (a layer): its batched twin, with the flags.
                let method = format_ident!("__vmap_{}", m.method, span = m.method.span());
                let values = args.iter().map(|a| &a.0);
                let flags = std::iter::once(&rf)
                    .chain(args.iter().map(|a| &a.1))
                    .map(|f| f.clone().unwrap_or_else(|| quote!(false)));
                return (
                    quote!(#recv.#method(#(#values,)* #(#flags,)* __vmap_n)),
                    Some(quote!(true)),
                );
            }
            self.errors.at(
                &m.method,
                format!("`vmap` batches the ops of the op table; `{name}` is not one"),
            );
            return (TokenStream::new(), None);
        };
        let operands = std::iter::once((recv, rf)).chain(args).collect();
        let call = |operands: &[TokenStream]| {
            let (recv, args) = (&operands[0], &operands[1..]);
            let (method, turbofish) = (&m.method, &m.turbofish);
            quote!(#recv.#method #turbofish(#(#args),*))
        };
        self.apply(op, operands, &call, m.method.span())
    }

    fn call(&mut self, c: &syn::ExprCall) -> Rewritten {
        let name = match &*c.func {
            Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        if let Some(op) = name
            .as_deref()
            .and_then(|n| rune_ops::lookup(n, Form::Function))
            .filter(|op| op.takes_list())
        {
            return self.list_call(c, op);
        }
        let args: Vec<Rewritten> = c.args.iter().map(|a| self.expr(a)).collect();
        let any = args.iter().any(|a| a.1.is_some());
        let func = &c.func;
        let constructor = matches!(&*c.func, Expr::Path(p)
            if p.path.segments.len() == 2 && p.path.segments[0].ident == "Tensor");
        if !any {
            let a = args.iter().map(|a| &a.0);
            let f = constructor.then(|| quote!(false));
            return (quote!(#func(#(#a),*)), f);
        }
        let name = name.unwrap_or_default();
        let op = if name == "stop_gradient" {
            None
        } else {
            rune_ops::lookup(&name, Form::Function)
        };
        if name == "stop_gradient" {
            let (a, f) = &args[0];
            return (quote!(#func(#a)), f.clone());
        }
        let Some(op) = op else {
            return self.batched_call(c, &args);
        };
        let call = |operands: &[TokenStream]| quote!(#func(#(#operands),*));
        self.apply(op, args, &call, c.func.span())
    }

    /// A call of another function marked `#[differentiable(vmap)]`: of its batched twin, with
    /// the flag of each tensor argument; the twin's result is batched.
    fn batched_call(&mut self, c: &syn::ExprCall, args: &[Rewritten]) -> Rewritten {
        let Expr::Path(path) = &*c.func else {
            self.errors
                .at(&c.func, "`vmap` batches calls of functions named by a path");
            return (TokenStream::new(), None);
        };
        let callee = &path.path;
        self.pending
            .push(quote_spanned!(callee.span()=> ::rune_ad::__private::vmap_callee::<#callee>();));
        let mut path = path.clone();
        let last = path.path.segments.last_mut().expect("a path has a segment");
        last.ident = format_ident!("__vmap_{}", last.ident, span = last.ident.span());
        let values = args.iter().map(|a| &a.0);
        let flags = args
            .iter()
            .map(|a| a.1.clone().unwrap_or_else(|| quote!(false)));
        (
            quote!(#path(#(#values,)* #(#flags,)* __vmap_n)),
            Some(quote!(true)),
        )
    }
}

/// `tokens` without a leading `&`.
fn strip_ref(tokens: &TokenStream) -> TokenStream {
    let mut it = tokens.clone().into_iter().peekable();
    match it.peek() {
        Some(TokenTree::Punct(p)) if p.as_char() == '&' => {
            it.next();
            it.collect()
        }
        _ => tokens.clone(),
    }
}

/// Whether an operand is a literal (`2.0`, `-1.0`, `&0.5`), whose type its use decides.
pub(super) fn is_literal(tokens: &TokenStream) -> bool {
    let mut e = match syn::parse2::<syn::Expr>(tokens.clone()) {
        Ok(e) => e,
        Err(_) => return false,
    };
    loop {
        e = match e {
            syn::Expr::Lit(_) => return true,
            syn::Expr::Reference(r) => *r.expr,
            syn::Expr::Paren(p) => *p.expr,
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => *u.expr,
            _ => return false,
        }
    }
}
