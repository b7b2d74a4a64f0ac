//! Text made safe for the page: HTML's five special characters, and control characters.

use std::fmt::Write as _;

/// `text` with `& < > " '` escaped for HTML, and every control character written as `\u{1b}`
/// (as `toolgate audit tail` writes them: a hostile name stays visible and inert).
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
