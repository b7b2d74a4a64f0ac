//! Text made safe for the page: HTML's five special characters, and the characters
//! [`printable`] escapes.

use toolgate_core::audit::printable;

/// `text` through [`printable`] (control characters, line separators and bidirectional
/// formatting characters written as `\u{1b}`, as `toolgate audit tail` writes them: a hostile
/// name stays visible and inert), then with `& < > " '` escaped for HTML.
pub(crate) fn esc(text: &str) -> String {
    let text = printable(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
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
