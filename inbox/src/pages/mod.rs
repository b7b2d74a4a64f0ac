//! The HTML pages, written by hand (no template engine): every text from the store or the model
//! goes through [`esc`], the report's rule (`toolgate audit report`): HTML's five special
//! characters escaped and every control character, line separator and bidirectional formatting
//! character written as `\u{1b}` ([`printable`]), so a hostile tool name or input stays
//! visible, inert and in its order. The layout every page shares, the times as a person reads
//! them, the style sheet and the script.
//!
//! | file | what |
//! |---|---|
//! | `list.rs` | `GET /`: the waiting calls, grouped by turn, and the filters |
//! | `turn.rs` | `GET /turn`: one turn, each call's input, decisions and forms |
//! | `sign_in.rs` | the sign-in page, signing in and out |

pub(crate) mod list;
pub(crate) mod sign_in;
pub(crate) mod turn;

use std::time::{Duration, SystemTime};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use toolgate_core::audit::{Rfc3339, printable};

use crate::auth::Signed;

/// `text` safe in HTML text and attribute values: `& < > " '` escaped, and every character
/// [`printable`] escapes (a control character, a line or paragraph separator, a bidirectional
/// formatting character) written as `\u{1b}`, `\u{2028}`, `\u{202e}`: an order id cannot read
/// backwards, a tool name cannot break its line.
pub(crate) fn esc(text: &str) -> String {
    let text = printable(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A block of text for `<pre>` or `<textarea>`: as [`esc`], line breaks kept.
pub(crate) fn esc_block(text: &str) -> String {
    text.split('\n').map(esc).collect::<Vec<_>>().join("\n")
}

/// `text` percent-encoded for a query string's value.
pub(crate) fn url_value(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The path of a turn's page.
pub(crate) fn turn_href(session_id: &str, turn_id: &str) -> String {
    format!(
        "/turn?session={}&turn={}",
        url_value(session_id),
        url_value(turn_id)
    )
}

/// A call's key on the page (the live updates find its row by it): the JSON array of its
/// session, turn and `tool_use` ids.
pub(crate) fn call_key(session_id: &str, turn_id: &str, tool_use_id: &str) -> String {
    serde_json::json!([session_id, turn_id, tool_use_id]).to_string()
}

/// An instant as RFC 3339, whole seconds (`2026-12-05T10:00:00Z`).
pub(crate) fn when(t: SystemTime) -> String {
    let text = Rfc3339(t).to_string();
    match (text.find('.'), text.ends_with('Z')) {
        (Some(dot), true) => format!("{}Z", &text[..dot]),
        _ => text,
    }
}

/// A span as a person reads it: `45 s`, `12 min`, `3 h 05 min`, `2 d 4 h`.
pub(crate) fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// How long ago `t` was, from `now`.
pub(crate) fn age(t: SystemTime, now: SystemTime) -> String {
    span(now.duration_since(t).unwrap_or_default())
}

/// The time left before `expires_at`, or `expired`.
pub(crate) fn left(expires_at: SystemTime, now: SystemTime) -> String {
    match expires_at.duration_since(now) {
        Ok(d) if !d.is_zero() => format!("{} left", span(d)),
        _ => "expired".to_owned(),
    }
}

/// A whole page: `title`, the signed-in person's bar, `main`, and where its live updates come
/// from (`events`: a path, or none).
pub(crate) fn layout(
    title: &str,
    who: Option<&Signed>,
    events: Option<&str>,
    main: &str,
) -> String {
    let events = events.map_or(String::new(), |e| format!(" data-events=\"{}\"", esc(e)));
    let bar = match who {
        Some(w) => {
            let out = if w.session {
                format!(
                    "<form method=\"post\" action=\"/sign-out\" class=\"inline\">\
                     <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
                     <button type=\"submit\" class=\"link\">Sign out</button></form>",
                    esc(&w.csrf)
                )
            } else {
                String::new()
            };
            format!(
                "<div class=\"who\">Signed in as <strong>{}</strong> {out}</div>",
                esc(w.identity.id())
            )
        }
        None => String::new(),
    };
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · toolgate inbox</title>\n\
         <link rel=\"stylesheet\" href=\"/static/inbox.css\">\n\
         <script src=\"/static/inbox.js\" defer></script>\n</head>\n\
         <body{events}>\n<a class=\"skip\" href=\"#main\">Skip to the calls</a>\n\
         <header class=\"top\"><p class=\"brand\"><a href=\"/\">toolgate inbox</a></p>{bar}</header>\n\
         <main id=\"main\" tabindex=\"-1\">\n{main}</main>\n\
         <div id=\"live\" class=\"visually-hidden\" role=\"status\" aria-live=\"polite\"></div>\n\
         </body>\n</html>\n",
        esc(title)
    )
}

/// An HTML answer.
pub(crate) fn html(status: StatusCode, page: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response()
}

/// `GET /static/inbox.css`.
pub(crate) async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        include_str!("../../assets/inbox.css"),
    )
        .into_response()
}

/// `GET /static/inbox.js`.
pub(crate) async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        include_str!("../../assets/inbox.js"),
    )
        .into_response()
}

/// Runs `work` (a store's future, blocked on) on tokio's blocking threads: the SQLite store
/// answers inside its future's first poll, which must not hold up the server's own threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the store's call failed: {e}"))
}

/// `503` with the store's error (which never holds the store's password: the stores name a
/// database by its settings with the password hidden).
pub(crate) fn store_failed(who: Option<&Signed>, error: &str) -> Response {
    let main = format!(
        "<h1>The store did not answer</h1>\n<p class=\"refused\" role=\"alert\">{}</p>\n\
         <p>Nothing was changed. Try again in a moment.</p>\n",
        esc(error)
    );
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        layout("The store did not answer", who, None, &main),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_inert_in_a_page() {
        assert_eq!(
            esc("<script>alert('x')</script>&\u{1b}[31m"),
            "&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;&amp;\\u{1b}[31m"
        );
        assert_eq!(esc_block("a\n<b>\u{7}"), "a\n&lt;b&gt;\\u{7}");
    }

    #[test]
    fn line_separators_and_bidi_controls_are_shown_escaped() {
        // A refund whose order id reads backwards past U+202E, a name that breaks its line.
        assert_eq!(
            esc("o_1\u{202e}001\u{2028}x\u{2029}\u{2066}y\u{2069}\u{200f}\u{61c}"),
            "o_1\\u{202e}001\\u{2028}x\\u{2029}\\u{2066}y\\u{2069}\\u{200f}\\u{61c}"
        );
        assert_eq!(esc_block("a\n\u{202e}<b>"), "a\n\\u{202e}&lt;b&gt;");
    }

    #[test]
    fn spans_read_as_a_person_says_them() {
        let s = |n| span(Duration::from_secs(n));
        assert_eq!(
            [s(0), s(59), s(60), s(3599), s(3600), s(3660 + 5), s(90_000)],
            [
                "0 s",
                "59 s",
                "1 min",
                "59 min",
                "1 h 00 min",
                "1 h 01 min",
                "1 d 1 h"
            ]
        );
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(left(now, now), "expired");
        assert_eq!(left(now + Duration::from_secs(120), now), "2 min left");
        assert_eq!(
            when(SystemTime::UNIX_EPOCH + Duration::from_millis(1_500)),
            "1970-01-01T00:00:01Z"
        );
    }
}
