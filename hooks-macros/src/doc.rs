//! Doc comments: `///` lines are `#[doc = "…"]` attributes.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the doc comments among `attrs`: one leading space stripped from each line,
/// lines joined with `\n`, trimmed. (The runtime unwraps single line breaks when it builds the
/// schema, so a wrapped comment reads as one paragraph.)
pub(crate) fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            let value = s.value();
            for line in value.split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// Whether `attr` is a doc comment.
pub(crate) fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident("doc")
}
