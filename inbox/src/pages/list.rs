//! `GET /`: one row per waiting call, grouped by turn (tool, the input in one line, which rule
//! asked and why, user and session, age, time left), the filters, and the next page's link.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use toolgate_core::approval::inbox::{Cursor, InboxCall, Query};

use super::{age, blocking, call_key, esc, html, layout, left, store_failed, turn_href, url_value};
use crate::app::App;
use crate::guard::{field, pairs, signed_page, text};

/// The expiry windows the filter offers, in minutes.
const WINDOWS: [(u64, &str); 4] = [
    (15, "15 minutes"),
    (60, "1 hour"),
    (240, "4 hours"),
    (1440, "24 hours"),
];

/// The list's filters, as its query string gives them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters {
    pub(crate) tool: Option<String>,
    pub(crate) rule: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) session: Option<String>,
    pub(crate) within: Option<u64>,
    pub(crate) newest: bool,
    pub(crate) after: Option<Cursor>,
}

impl Filters {
    /// The filters of a query string's pairs.
    ///
    /// # Errors
    /// The sentence for a cursor or a window that is not one.
    pub(crate) fn of(pairs: &[(String, String)]) -> Result<Filters, &'static str> {
        let text = |name| {
            field(pairs, name)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let within = match text("within") {
            None => None,
            Some(w) => Some(
                w.parse::<u64>()
                    .ok()
                    .filter(|m| (1..=10_080).contains(m))
                    .ok_or("`within` is a number of minutes, 1 to 10080")?,
            ),
        };
        let after = match text("after") {
            None => None,
            Some(c) => Some(
                c.parse::<Cursor>()
                    .map_err(|_| "`after` is not a cursor of this list")?,
            ),
        };
        Ok(Filters {
            tool: text("tool"),
            rule: text("rule"),
            user: text("user"),
            session: text("session"),
            within,
            newest: text("order").as_deref() == Some("newest"),
            after,
        })
    }

    /// The store's query for these filters, `limit` a page.
    pub(crate) fn query(&self, limit: usize) -> Query {
        let mut q = Query::waiting().limit(limit);
        if let Some(t) = &self.tool {
            q = q.tool(t);
        }
        if let Some(r) = &self.rule {
            q = q.asked_by(r);
        }
        if let Some(u) = &self.user {
            q = q.user(u);
        }
        if let Some(s) = &self.session {
            q = q.session(s);
        }
        if let Some(m) = self.within {
            q = q.expires_within(Duration::from_secs(m * 60));
        }
        if self.newest {
            q = q.newest_first();
        }
        if let Some(c) = self.after {
            q = q.after(c);
        }
        q
    }

    /// The query string of these filters (without the cursor), `&`-joined, each value encoded.
    pub(crate) fn query_string(&self) -> String {
        let mut parts = Vec::new();
        for (name, value) in [
            ("tool", &self.tool),
            ("rule", &self.rule),
            ("user", &self.user),
            ("session", &self.session),
        ] {
            if let Some(v) = value {
                parts.push(format!("{name}={}", url_value(v)));
            }
        }
        if let Some(m) = self.within {
            parts.push(format!("within={m}"));
        }
        if self.newest {
            parts.push("order=newest".to_owned());
        }
        parts.join("&")
    }
}

/// `GET /`.
pub(crate) async fn page(State(app): State<Arc<App>>, req: Request) -> Response {
    let who = match signed_page(&app, &req) {
        Ok(w) => w,
        Err(refused) => return *refused,
    };
    let query_pairs = pairs(req.uri().query().unwrap_or("").as_bytes());
    let filters = match Filters::of(&query_pairs) {
        Ok(f) => f,
        Err(why) => return text(StatusCode::BAD_REQUEST, why),
    };
    let query = filters.query(app.page_size);
    let inbox = Arc::clone(&app.inbox);
    let listed = blocking(move || toolgate_core::block_on(inbox.list(&query))).await;
    let page = match listed {
        Ok(Ok(page)) => page,
        Ok(Err(e)) => return store_failed(Some(&who), &e.to_string()),
        Err(e) => return store_failed(Some(&who), &e),
    };
    let now = SystemTime::now();
    let mut main = String::from("<h1>Waiting calls</h1>\n");
    main.push_str(&filters_form(&filters));
    let shown = page.calls.len();
    main.push_str(&format!(
        "<p class=\"count\" id=\"count\">{}</p>\n",
        match shown {
            0 => "No call waits for a person.".to_owned(),
            1 => "1 call waits for a person.".to_owned(),
            n => format!("{n} calls wait for a person."),
        }
    ));
    main.push_str(
        "<table class=\"calls\" id=\"calls\">\n<caption class=\"visually-hidden\">The calls \
         waiting for a person, grouped by turn</caption>\n<thead><tr><th scope=\"col\">Tool</th>\
         <th scope=\"col\">Input</th><th scope=\"col\">Asked by</th><th scope=\"col\">User</th>\
         <th scope=\"col\">Session</th><th scope=\"col\">Age</th><th scope=\"col\">Time left</th>\
         <th scope=\"col\">Status</th></tr></thead>\n",
    );
    main.push_str(&rows(&page.calls, now));
    main.push_str("</table>\n");
    if let Some(next) = page.next {
        let base = filters.query_string();
        let sep = if base.is_empty() { "" } else { "&" };
        main.push_str(&format!(
            "<p class=\"next\"><a href=\"/?{}{sep}after={next}\">Next page</a></p>\n",
            esc(&base)
        ));
    }
    let mut events = format!("/events?{}", filters.query_string());
    if let Some(after) = filters.after {
        events.push_str(&format!("&after={after}"));
    }
    html(
        StatusCode::OK,
        layout("Waiting calls", Some(&who), Some(&events), &main),
    )
}

/// The filters' form (a GET: it works without a script).
fn filters_form(f: &Filters) -> String {
    let input = |name: &str, label: &str, value: &Option<String>, hint: &str| {
        format!(
            "<div class=\"field\"><label for=\"f-{name}\">{label}</label>\
             <input id=\"f-{name}\" name=\"{name}\" value=\"{}\" placeholder=\"{hint}\" \
             autocomplete=\"off\"></div>",
            esc(value.as_deref().unwrap_or(""))
        )
    };
    let mut windows = String::from("<option value=\"\">any time</option>");
    for (m, label) in WINDOWS {
        let selected = if f.within == Some(m) { " selected" } else { "" };
        windows.push_str(&format!(
            "<option value=\"{m}\"{selected}>within {label}</option>"
        ));
    }
    let newest = if f.newest { " selected" } else { "" };
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/\" role=\"search\" \
         aria-label=\"Filter the calls\">\n{}{}{}{}\
         <div class=\"field\"><label for=\"f-within\">Expires</label>\
         <select id=\"f-within\" name=\"within\">{windows}</select></div>\
         <div class=\"field\"><label for=\"f-order\">Order</label><select id=\"f-order\" \
         name=\"order\"><option value=\"oldest\">oldest first</option>\
         <option value=\"newest\"{newest}>newest first</option></select></div>\
         <div class=\"buttons\"><button type=\"submit\">Filter</button> \
         <a href=\"/\">Clear</a></div>\n</form>\n",
        input("tool", "Tool", &f.tool, "issue_refund"),
        input("rule", "Rule", &f.rule, "support::refund_limit"),
        input("user", "User", &f.user, "u_001"),
        input("session", "Session", &f.session, "sess_…"),
    )
}

/// The rows of `calls`, one `<tbody>` per turn (calls of one turn are listed next to each
/// other: the store orders by when it kept each turn, then the call's place in it).
pub(crate) fn rows(calls: &[InboxCall], now: SystemTime) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < calls.len() {
        let first = &calls[i];
        let end = calls[i..]
            .iter()
            .position(|c| c.session_id != first.session_id || c.turn_id != first.turn_id)
            .map_or(calls.len(), |n| i + n);
        let href = turn_href(&first.session_id, &first.turn_id);
        let n = end - i;
        out.push_str(&format!(
            "<tbody class=\"turn\" data-turn=\"{}\">\n<tr class=\"turn-head\"><th colspan=\"8\" \
             scope=\"rowgroup\"><a href=\"{}\">Turn {} of session {}</a> · {} · {n} call{} \
             waiting</th></tr>\n",
            esc(&serde_json::json!([first.session_id, first.turn_id]).to_string()),
            esc(&href),
            esc(&first.turn_id),
            esc(&first.session_id),
            esc(&first.user_id),
            if n == 1 { "" } else { "s" },
        ));
        for call in &calls[i..end] {
            out.push_str(&row(call, &href, now));
        }
        out.push_str("</tbody>\n");
        i = end;
    }
    out
}

fn row(call: &InboxCall, href: &str, now: SystemTime) -> String {
    let asked: Vec<String> = call
        .asked_by
        .iter()
        .map(|a| {
            format!(
                "<span class=\"rule\">{}</span>: {}",
                esc(&a.hook),
                esc(&a.reason)
            )
        })
        .collect();
    let status = if call.approvals.is_empty() {
        "waiting".to_owned()
    } else {
        format!(
            "waiting for a second person (approved by {})",
            esc(&call
                .approvals
                .iter()
                .map(|m| m.by.as_str())
                .collect::<Vec<_>>()
                .join(", "))
        )
    };
    format!(
        "<tr class=\"call\" data-key=\"{}\" data-digest=\"{}\">\
         <td data-label=\"Tool\"><span class=\"v\"><a href=\"{}#{}\">{}</a></span></td>\
         <td data-label=\"Input\" class=\"summary\"><span class=\"v\"><code>{}</code></span></td>\
         <td data-label=\"Asked by\"><span class=\"v\">{}</span></td>\
         <td data-label=\"User\"><span class=\"v\">{}</span></td>\
         <td data-label=\"Session\"><span class=\"v\">{}</span></td>\
         <td data-label=\"Age\"><span class=\"v\">{}</span></td>\
         <td data-label=\"Time left\"><span class=\"v\">{}</span></td>\
         <td data-label=\"Status\"><span class=\"v state\">{status}</span></td></tr>\n",
        esc(&call_key(
            &call.session_id,
            &call.turn_id,
            &call.tool_use_id
        )),
        esc(&call.input_digest),
        esc(href),
        esc(&super::turn::anchor(&call.tool_use_id)),
        esc(&call.name),
        esc(&call.summary),
        asked.join("<br>"),
        esc(&call.user_id),
        esc(&call.session_id),
        age(call.created_at, now),
        left(call.expires_at, now),
    )
}
