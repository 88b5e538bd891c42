//! The attribute's arguments: `#[tool(name = "add", read_only, crate = ::duomcp)]`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{LitBool, LitStr, Path};

/// What an argument's value must be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `key = "text"`.
    Str,
    /// `key` (true) or `key = true|false`.
    Flag,
    /// `key = some::path`.
    Path,
    /// `key = ["a", "b"]`.
    StrList,
}

/// One parsed value.
pub(crate) enum Value {
    Str(LitStr),
    Bool(LitBool),
    Path(Path),
    StrList(Vec<LitStr>, Span),
}

/// The arguments of one attribute, checked against the keys its macro knows.
pub(crate) struct Attrs {
    entries: Vec<(String, Value)>,
}

impl Attrs {
    /// Parses `attr` against `known` (key, shape); every problem goes to `errors`, and parsing
    /// goes on so that all of them are reported at once.
    pub(crate) fn parse(
        attr: proc_macro2::TokenStream,
        known: &[(&str, Shape)],
        errors: &mut Vec<syn::Error>,
    ) -> Attrs {
        let mut entries: Vec<(String, Value)> = Vec::new();
        let parser = syn::meta::parser(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let Some(&(_, shape)) = known.iter().find(|(k, _)| *k == key) else {
                let expected: Vec<&str> = known.iter().map(|(k, _)| *k).collect();
                errors.push(syn::Error::new_spanned(
                    &meta.path,
                    format!(
                        "unknown argument `{}`; expected one of: {}",
                        path_text(&meta.path),
                        expected.join(", ")
                    ),
                ));
                return skip_value(&meta);
            };
            if entries.iter().any(|(k, _)| *k == key) {
                errors.push(syn::Error::new_spanned(
                    &meta.path,
                    format!("`{key}` is given twice"),
                ));
                return skip_value(&meta);
            }
            match parse_value(&meta, shape) {
                Ok(value) => entries.push((key, value)),
                Err(e) => errors.push(e),
            }
            Ok(())
        });
        if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
            errors.push(e);
        }
        Attrs { entries }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// A string argument.
    pub(crate) fn str(&self, key: &str) -> Option<&LitStr> {
        match self.get(key) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// A flag: `Some(true)` for `key` or `key = true`, `Some(false)` for `key = false`.
    pub(crate) fn flag(&self, key: &str) -> Option<bool> {
        match self.get(key) {
            Some(Value::Bool(b)) => Some(b.value),
            _ => None,
        }
    }

    /// A list-of-strings argument.
    pub(crate) fn str_list(&self, key: &str) -> Option<&[LitStr]> {
        match self.get(key) {
            Some(Value::StrList(l, _)) => Some(l),
            _ => None,
        }
    }

    /// A path argument.
    pub(crate) fn path(&self, key: &str) -> Option<&Path> {
        match self.get(key) {
            Some(Value::Path(p)) => Some(p),
            _ => None,
        }
    }

    /// Whether `key` was given at all.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The span of `key`'s value, for errors about it.
    pub(crate) fn span(&self, key: &str) -> Option<Span> {
        self.get(key).map(|v| match v {
            Value::Str(s) => s.span(),
            Value::Bool(b) => b.span(),
            Value::Path(p) => p.span(),
            Value::StrList(_, span) => *span,
        })
    }
}

fn parse_value(meta: &ParseNestedMeta<'_>, shape: Shape) -> syn::Result<Value> {
    let key = path_text(&meta.path);
    match shape {
        Shape::Flag => {
            if meta.input.peek(syn::Token![=]) {
                let lit: LitBool = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        format!("`{key}` takes `true` or `false`, or no value (true)"),
                    )
                })?;
                Ok(Value::Bool(lit))
            } else {
                Ok(Value::Bool(LitBool::new(true, meta.path.span())))
            }
        }
        Shape::Str => {
            if !meta.input.peek(syn::Token![=]) {
                return Err(syn::Error::new_spanned(
                    &meta.path,
                    format!("`{key}` needs a value: `{key} = \"…\"`"),
                ));
            }
            let value = meta.value()?;
            let lit: LitStr = value.parse().map_err(|e| {
                syn::Error::new(e.span(), format!("`{key}` takes a string literal"))
            })?;
            Ok(Value::Str(lit))
        }
        Shape::Path => {
            if !meta.input.peek(syn::Token![=]) {
                return Err(syn::Error::new_spanned(
                    &meta.path,
                    format!("`{key}` needs a value: `{key} = ::path::to::duomcp`"),
                ));
            }
            let path: Path = meta.value()?.parse()?;
            Ok(Value::Path(path))
        }
        Shape::StrList => {
            let hint = format!("`{key}` takes a list of string literals: `{key} = [\"a\", \"b\"]`");
            if !meta.input.peek(syn::Token![=]) {
                return Err(syn::Error::new_spanned(&meta.path, hint));
            }
            // The whole value is consumed, so parsing goes on after a wrong one.
            let array = match meta.value()?.parse::<syn::Expr>()? {
                syn::Expr::Array(a) => a,
                other => return Err(syn::Error::new_spanned(other, &hint)),
            };
            let mut items = Vec::with_capacity(array.elems.len());
            for elem in &array.elems {
                match elem {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => items.push(s.clone()),
                    other => return Err(syn::Error::new_spanned(other, &hint)),
                }
            }
            Ok(Value::StrList(items, array.span()))
        }
    }
}

/// Consumes `= value` after a key that was rejected, so parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}
