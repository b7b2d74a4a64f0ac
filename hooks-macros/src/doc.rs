//! Doc comments: `///` lines are `#[doc = "…"]` attributes.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the doc comments among `attrs`: one leading space stripped from each line,
/// lines joined with `\n`, trimmed. A block comment (`/** … */`) whose lines all start with
/// `*` loses those markers, as rustdoc shows it. (The runtime unwraps single line breaks when it
/// builds the schema, so a wrapped comment reads as one paragraph.) A `#[doc = …]` whose value
/// is not a string literal (`concat!`, `include_str!`) is not read: see [`non_literal_doc`].
pub(crate) fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Some(value) = literal_doc(attr) {
            let value = strip_block_stars(&value);
            for line in value.split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// The value of a `#[doc = "…"]` attribute (a `///` line or a `/** */` block).
fn literal_doc(attr: &Attribute) -> Option<String> {
    if !attr.path().is_ident("doc") {
        return None;
    }
    match &attr.meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// The first `#[doc = …]` among `attrs` whose value is not a string literal (`concat!(…)`,
/// `include_str!(…)`): the macro cannot read it.
pub(crate) fn non_literal_doc(attrs: &[Attribute]) -> Option<&Attribute> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("doc") && literal_doc(a).is_none())
}

/// `/**\n * a\n * b\n */` → `\n a\n b\n`: when every line after the first that is not blank
/// starts (after indentation) with `*`, that `*` and the indentation before it go.
fn strip_block_stars(value: &str) -> String {
    let mut lines = value.split('\n');
    let first = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.collect();
    let starred = rest.iter().any(|l| !l.trim().is_empty())
        && rest
            .iter()
            .filter(|l| !l.trim().is_empty())
            .all(|l| l.trim_start().starts_with('*'));
    if !starred {
        return value.to_owned();
    }
    let mut out = first.to_owned();
    for line in rest {
        out.push('\n');
        let trimmed = line.trim_start();
        out.push_str(trimmed.strip_prefix('*').unwrap_or(trimmed));
    }
    out
}

/// Whether `attr` is a doc comment.
pub(crate) fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident("doc")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_comments_lose_their_stars() {
        let attr: Attribute = syn::parse_quote!(#[doc = "\n * Adds one.\n * Really.\n "]);
        assert_eq!(doc_text(&[attr]), "Adds one.\nReally.");
        let attr: Attribute = syn::parse_quote!(#[doc = " Plain.\n   indented line"]);
        assert_eq!(doc_text(&[attr]), "Plain.\n  indented line");
        let lines: [Attribute; 2] = [
            syn::parse_quote!(#[doc = " * a bullet"]),
            syn::parse_quote!(#[doc = " * another"]),
        ];
        assert_eq!(doc_text(&lines), "* a bullet\n* another");
    }

    #[test]
    fn non_literal_docs_are_found() {
        let attrs: [Attribute; 2] = [
            syn::parse_quote!(#[doc = "read"]),
            syn::parse_quote!(#[doc = concat!("a", "b")]),
        ];
        assert!(non_literal_doc(&attrs[..1]).is_none());
        assert_eq!(
            non_literal_doc(&attrs).map(|a| quote::quote!(#a).to_string()),
            Some("# [doc = concat ! (\"a\" , \"b\")]".to_owned())
        );
    }
}
