//! Queries on syntax alone, which need no lowering state: what an expression assigns and reads,
//! whether a statement may leave early, the elements of a new `Vec`, the names format strings
//! capture; and small helpers (`strip`, `split_tail`, `paren`).

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;
use syn::{BinOp, Block, Expr, Ident, Local, Pat, Stmt as SynStmt};

use crate::ops;
use crate::parse::Signature;

use super::Lowerer;

/// The statements before the returned expression, and that expression (a tail expression or a
/// final `return e;`).
pub(super) fn split_tail(stmts: &[SynStmt]) -> (&[SynStmt], Option<&Expr>) {
    match stmts.split_last() {
        Some((SynStmt::Expr(e, None), init)) => (init, Some(e)),
        Some((SynStmt::Expr(Expr::Return(r), Some(_)), init)) => (init, r.expr.as_deref()),
        _ => (stmts, None),
    }
}

/// `e` without parentheses and invisible groups.
pub(super) fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// `+= -= *= /= %= ^= &= |= <<= >>=`.
pub(super) fn is_compound_assignment(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// `(tokens)`: a constant sub-expression embedded in a larger one keeps its grouping.
pub(super) fn paren(tokens: TokenStream) -> TokenStream {
    quote!((#tokens))
}

/// Names captured inline by format strings among `tokens` (`{x}`, `{x:?}`, `{x:.3}`), once
/// each, that no explicit `name = value` argument gives.
pub(super) fn format_captures(tokens: &TokenStream) -> Vec<Ident> {
    let mut names: Vec<String> = Vec::new();
    let mut explicit: Vec<String> = Vec::new();
    let list: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (k, tt) in list.iter().enumerate() {
        match tt {
            TokenTree::Literal(lit) => {
                let Ok(syn::Lit::Str(s)) = syn::parse_str::<syn::Lit>(&lit.to_string()) else {
                    continue;
                };
                let text = s.value();
                let mut chars = text.char_indices().peekable();
                while let Some((i, c)) = chars.next() {
                    if c != '{' {
                        continue;
                    }
                    if chars.peek().map(|(_, c)| *c) == Some('{') {
                        chars.next();
                        continue;
                    }
                    let rest = &text[i + 1..];
                    let end = rest.find(['}', ':']).unwrap_or(rest.len());
                    let name = rest[..end].trim();
                    let is_ident = name
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphabetic() || c == '_')
                        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
                    if is_ident && !names.iter().any(|n| n == name) {
                        names.push(name.to_owned());
                    }
                }
            }
            TokenTree::Ident(i) => {
                let assigns = matches!(list.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=')
                    && !matches!(list.get(k + 2), Some(TokenTree::Punct(p)) if p.as_char() == '=');
                if assigns {
                    explicit.push(i.to_string());
                }
            }
            _ => {}
        }
    }
    names
        .into_iter()
        .filter(|n| !explicit.contains(n))
        .map(|n| Ident::new(&n, Span::call_site()))
        .collect()
}

/// The type and function a call of an associated function names: `("Vec", "new")` for
/// `Vec::new()` or `std::vec::Vec::new()`.
pub(super) fn associated_fn(c: &syn::ExprCall) -> Option<(String, String)> {
    let Expr::Path(p) = strip(&c.func) else {
        return None;
    };
    let mut segs = p.path.segments.iter().rev();
    let f = segs.next()?.ident.to_string();
    let ty = segs.next()?.ident.to_string();
    Some((ty, f))
}

/// The elements of a new `Vec` (`Vec::new()`, `Vec::with_capacity(n)`, `vec![]`, `vec![a, b]`).
/// `vec![value; len]`: the value and the length.
pub(super) fn vec_repeat(mac: &syn::Macro) -> Option<(Expr, Expr)> {
    if !mac.path.is_ident("vec") {
        return None;
    }
    mac.parse_body_with(|input: syn::parse::ParseStream| {
        let value: Expr = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        let len: Expr = input.parse()?;
        Ok((value, len))
    })
    .ok()
}

pub(super) fn new_vec(e: &Expr) -> Option<Vec<Expr>> {
    match strip(e) {
        // An array written out, or one of copies of a value (`[0.0; 2]`, which `define_list`
        // fills from the value).
        Expr::Array(a) => Some(a.elems.iter().cloned().collect()),
        Expr::Repeat(_) => Some(Vec::new()),
        Expr::Call(c) => {
            let (ty, f) = associated_fn(c)?;
            (ty == "Vec" && (f == "new" || f == "with_capacity")).then(Vec::new)
        }
        Expr::Macro(m) if vec_repeat(&m.mac).is_some() => Some(Vec::new()),
        Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            let elems = m
                .mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()?;
            Some(elems.into_iter().collect())
        }
        _ => None,
    }
}

/// Names of local `Vec`s that may receive differentiated tensors: those a `push` or a `vec![..]`
/// gives a value computed from a differentiated parameter, followed through every binding form
/// of the body to a fixed point.
pub(super) fn tensor_lists(sig: &Signature, block: &Block) -> Vec<String> {
    let body = Expr::Block(syn::ExprBlock {
        attrs: Vec::new(),
        label: None,
        block: block.clone(),
    });
    let mut flows = assignments(&body);
    // `v.push(x)` and `v[i] = x` (or `v[i] += x`) give `v` a value computed from `x`.
    struct Pushes(Vec<(String, Vec<Expr>)>);
    impl<'a> syn::visit::Visit<'a> for Pushes {
        fn visit_expr(&mut self, e: &'a Expr) {
            let written = match e {
                Expr::Assign(a) => Some((&*a.left, &*a.right)),
                Expr::Binary(b) if is_compound_assignment(&b.op) => Some((&*b.left, &*b.right)),
                _ => None,
            };
            if let Some((Expr::Index(ix), value)) = written.map(|(l, r)| (strip(l), r)) {
                if let Expr::Path(p) = strip(&ix.expr) {
                    if let Some(i) = p.path.get_ident() {
                        self.0.push((i.to_string(), vec![value.clone()]));
                    }
                }
            }
            syn::visit::visit_expr(self, e);
        }
        fn visit_expr_method_call(&mut self, mc: &'a syn::ExprMethodCall) {
            if mc.method == "push" {
                if let Expr::Path(p) = strip(&mc.receiver) {
                    if let Some(i) = p.path.get_ident() {
                        self.0
                            .push((i.to_string(), mc.args.iter().cloned().collect()));
                    }
                }
            }
            syn::visit::visit_expr_method_call(self, mc);
        }
    }
    let mut pushes = Pushes(Vec::new());
    syn::visit::Visit::visit_expr(&mut pushes, &body);
    flows.extend(pushes.0);
    reached_by(
        sig.active().map(|(p, _)| p.ident.to_string()).collect(),
        &flows,
        sig.scalar_out,
    )
}

/// `names` and every name some flow gives a value read from one of them, to a fixed point.
/// `item_reads`: in a function of numbers `t.item()` reads `t` as a differentiated number
/// (see [`mentions`]).
pub(super) fn reached_by(
    mut names: Vec<String>,
    flows: &[(String, Vec<Expr>)],
    item_reads: bool,
) -> Vec<String> {
    loop {
        let before = names.len();
        for (name, sources) in flows {
            if !names.contains(name)
                && sources
                    .iter()
                    .any(|r| mentions(r, &|n| names.iter().any(|m| m == n), item_reads))
            {
                names.push(name.clone());
            }
        }
        if names.len() == before {
            return names;
        }
    }
}

/// Where a statement stands, for [`exits`]: in a loop's body, `break` and `continue` leave it too.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Within {
    /// A loop's body.
    Loop,
    /// The function's body (or a closure's) outside any loop.
    Function,
}

/// Whether `stmt` may leave the function (`return`) or, `within` a loop's body, that body
/// (`break`, `continue`).
pub(super) fn exits(stmt: &SynStmt, within: Within) -> bool {
    struct Finder {
        loop_depth: usize,
        in_loop: bool,
        found: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Return(_) => self.found = true,
                Expr::Break(_) | Expr::Continue(_) if self.in_loop && self.loop_depth == 0 => {
                    self.found = true
                }
                Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                    self.loop_depth += 1;
                    syn::visit::visit_expr(self, e);
                    self.loop_depth -= 1;
                }
                Expr::Closure(_) => {}
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Finder {
        loop_depth: 0,
        in_loop: within == Within::Loop,
        found: false,
    };
    syn::visit::Visit::visit_stmt(&mut f, stmt);
    f.found
}

/// Whether `e` uses the `?` operator outside nested closures.
pub(super) fn contains_try(e: &Expr) -> bool {
    struct Finder(bool);
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Try(_) => self.0 = true,
                Expr::Closure(_) => {}
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_expr(&mut f, e);
    f.0
}

/// Whether `e` contains `break`, `continue` or `return` (control flow it must lower itself).
pub(super) fn contains_exit(e: &Expr) -> bool {
    exits(&SynStmt::Expr(e.clone(), None), Within::Loop)
}

/// Every way `e` gives a name a value, by name: `name = rhs`, `name op= rhs` (which reads
/// `name` too), the names a `let`, a `for` loop, a `match` arm or an `if let` binds (from the
/// expression they destructure).
pub(super) fn assignments(e: &Expr) -> Vec<(String, Vec<Expr>)> {
    struct Finder(Vec<(String, Vec<Expr>)>);
    impl Finder {
        fn add(&mut self, name: String, rhs: Expr) {
            match self.0.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(rhs),
                None => self.0.push((name, vec![rhs])),
            }
        }
        fn bind(&mut self, pat: &Pat, source: &Expr) {
            let mut idents = Vec::new();
            collect_pattern_idents(pat, &mut idents);
            for i in idents {
                self.add(i.to_string(), source.clone());
            }
        }
    }
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a Expr) {
            let target = match e {
                Expr::Assign(a) => Some((&*a.left, &*a.right)),
                Expr::Binary(b) if is_compound_assignment(&b.op) => Some((&*b.left, &*b.right)),
                Expr::ForLoop(f) => {
                    self.bind(&f.pat, &f.expr);
                    None
                }
                Expr::Match(m) => {
                    for arm in &m.arms {
                        self.bind(&arm.pat, &m.expr);
                    }
                    None
                }
                Expr::Let(l) => {
                    self.bind(&l.pat, &l.expr);
                    None
                }
                _ => None,
            };
            if let Some((lhs, rhs)) = target {
                if let Expr::Path(p) = strip(lhs) {
                    if let Some(i) = p.path.get_ident() {
                        // `x op= rhs` reads `x` too.
                        let mut value = rhs.clone();
                        if matches!(e, Expr::Binary(_)) {
                            value = syn::parse_quote!((#i, #rhs));
                        }
                        self.add(i.to_string(), value);
                    }
                }
            }
            syn::visit::visit_expr(self, e);
        }
        fn visit_local(&mut self, l: &'a Local) {
            if let Some(init) = &l.init {
                self.bind(&l.pat, &init.expr);
            }
            syn::visit::visit_local(self, l);
        }
    }
    let mut f = Finder(Vec::new());
    syn::visit::Visit::visit_expr(&mut f, e);
    f.0
}

/// The names `e` assigns to (`name = ..`, `name op= ..`), as opposed to those it binds anew
/// (`let`, `for`, `match` arms), which shadow a binding outside rather than change it.
pub(super) fn assigned_names(e: &Expr) -> Vec<String> {
    struct Finder(Vec<String>);
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a Expr) {
            let lhs = match e {
                Expr::Assign(a) => Some(&*a.left),
                Expr::Binary(b) if is_compound_assignment(&b.op) => Some(&*b.left),
                _ => None,
            };
            if let Some(Expr::Path(p)) = lhs.map(strip) {
                if let Some(i) = p.path.get_ident() {
                    self.0.push(i.to_string());
                }
            }
            syn::visit::visit_expr(self, e);
        }
    }
    let mut f = Finder(Vec::new());
    syn::visit::Visit::visit_expr(&mut f, e);
    f.0
}

/// Whether a call constructs a value (`Some(x)`, `Wrapper(x)`): its path's last segment is
/// capitalised, as enum variants and tuple structs are.
pub(super) fn is_constructor(c: &syn::ExprCall) -> bool {
    matches!(strip(&c.func), Expr::Path(p) if p.path.segments.last().is_some_and(|s| {
        s.ident.to_string().starts_with(|ch: char| ch.is_ascii_uppercase())
    }))
}

/// Whether `e` is the path `name` (`Ok`, `Err`).
pub(super) fn is_path(e: &Expr, name: &str) -> bool {
    matches!(strip(e), Expr::Path(p) if p.path.is_ident(name))
}

/// Whether a method call reads no numbers of its receiver as a value that carries a gradient:
/// shape metadata, masks, and concretizing reads (reported apart). `map` on an iterator is
/// none of these.
fn reads_no_numbers(mc: &syn::ExprMethodCall) -> bool {
    let method = mc.method.to_string();
    let method = method.as_str();
    ops::is_metadata(method)
        || ops::NONDIFF.contains(&method)
        || (ops::CONCRETIZING.contains(&method) && !Lowerer::is_iterator(&mc.receiver))
}

/// Whether `e` reads one of `names` as a value (reading only its shape metadata or a
/// comparison does not count).
/// `item_reads`: `t.item()` reads `t`'s number as a differentiated one (in a function of
/// numbers); otherwise it is a concretization, which reads no value that carries a gradient.
pub(super) fn mentions(e: &Expr, is_name: &dyn Fn(&str) -> bool, item_reads: bool) -> bool {
    struct Finder<'n> {
        is_name: &'n dyn Fn(&str) -> bool,
        item_reads: bool,
        found: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Path(p) => {
                    if let Some(i) = p.path.get_ident() {
                        if (self.is_name)(&i.to_string()) {
                            self.found = true;
                        }
                    }
                }
                Expr::MethodCall(mc)
                    if reads_no_numbers(mc) && !(self.item_reads && mc.method == "item") =>
                {
                    for a in &mc.args {
                        self.visit_expr(a);
                    }
                }
                Expr::Macro(m) => {
                    for tt in m.mac.tokens.clone() {
                        if let TokenTree::Ident(i) = tt {
                            if (self.is_name)(&i.to_string()) {
                                self.found = true;
                            }
                        }
                    }
                }
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Finder {
        is_name,
        item_reads,
        found: false,
    };
    syn::visit::Visit::visit_expr(&mut f, e);
    f.found
}

pub(super) fn collect_pattern_idents(p: &Pat, out: &mut Vec<Ident>) {
    struct Finder<'o>(&'o mut Vec<Ident>);
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    syn::visit::Visit::visit_pat(&mut Finder(out), p);
}

/// Whether an argument names a whole parameter (`model`) rather than a part (`model.enc`), whose
/// type is then what the callee takes.
pub(super) fn path_is_param(e: &Expr) -> bool {
    matches!(strip(e), Expr::Path(_))
}
