//! `GET /turn?session=S&turn=T`: one paused turn. Each call: its tool, which rules asked and why,
//! the input as formatted JSON (the model's input beside it when a rule rewrote it), its digest,
//! its history (every approval, who decided, the reason); while it waits, the forms the policy
//! lets this person use: approve, decline with a reason, edit the input field by field. A
//! refused form comes back here with the refusal next to the field it is about.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use toolgate_core::approval::PendingTurn;
use toolgate_core::approval::inbox::{
    Action, CallState, EditProblem, Inbox, InboxTurn, PublishedTools, ToolSchema, TurnCall,
};

use super::{blocking, call_key, esc, esc_block, html, layout, left, store_failed, when};
use crate::app::App;
use crate::auth::{Signed, random_hex};
use crate::guard::{field, pairs, signed_page, text};

/// What a refused form brings back to its call: the sentence, the edit's problems, and what the
/// person had typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Notice {
    pub(crate) tool_use_id: String,
    /// The form it came from: `approve`, `decline` or `edit`.
    pub(crate) choice: String,
    pub(crate) message: String,
    pub(crate) problems: Vec<EditProblem>,
    /// The decline's reason was missing.
    pub(crate) reason_missing: bool,
    /// The form's fields as sent.
    pub(crate) sent: Vec<(String, String)>,
}

/// A turn with what its page shows beside the store's rows.
pub(crate) struct Loaded {
    pub(crate) turn: InboxTurn,
    /// The paused turn as kept (the model's inputs), while it waits.
    pub(crate) kept: Option<PendingTurn>,
    /// The tools of the dispatcher that paused it, when published.
    pub(crate) tools: Option<PublishedTools>,
}

/// Reads the turn (`None`: no such turn), the paused turn as kept and its published tools.
///
/// # Errors
/// The store's error.
pub(crate) async fn load(
    inbox: &Arc<Inbox>,
    session_id: &str,
    turn_id: &str,
) -> Result<Option<Loaded>, String> {
    let (inbox, session_id, turn_id) =
        (Arc::clone(inbox), session_id.to_owned(), turn_id.to_owned());
    blocking(move || {
        toolgate_core::block_on(async {
            let Some(turn) = inbox
                .turn(&session_id, &turn_id)
                .await
                .map_err(|e| e.to_string())?
            else {
                return Ok(None);
            };
            let store = inbox.store();
            let kept = store
                .waiting(&session_id)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .find(|t| t.turn_id == turn_id);
            let tools = store
                .published_tools(&turn.fingerprint)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(Loaded { turn, kept, tools }))
        })
    })
    .await?
}

/// `GET /turn`.
pub(crate) async fn page(State(app): State<Arc<App>>, req: Request) -> Response {
    let who = match signed_page(&app, &req) {
        Ok(w) => w,
        Err(refused) => return *refused,
    };
    let q = pairs(req.uri().query().unwrap_or("").as_bytes());
    let (Some(session_id), Some(turn_id)) = (field(&q, "session"), field(&q, "turn")) else {
        return text(
            StatusCode::BAD_REQUEST,
            "a turn's page needs ?session=SESSION_ID&turn=TURN_ID",
        );
    };
    render(&app, &who, session_id, turn_id, None, StatusCode::OK).await
}

/// The turn's page for `who`, with `notice` at its call, answered with `status`.
pub(crate) async fn render(
    app: &App,
    who: &Signed,
    session_id: &str,
    turn_id: &str,
    notice: Option<&Notice>,
    status: StatusCode,
) -> Response {
    let loaded = match load(&app.inbox, session_id, turn_id).await {
        Ok(Some(l)) => l,
        Ok(None) => {
            let main = format!(
                "<h1>No such turn</h1>\n<p class=\"refused\" role=\"alert\">No paused turn {} of \
                 session {} is kept in the store.</p>\n<p><a href=\"/\">Back to the waiting \
                 calls</a></p>\n",
                esc(turn_id),
                esc(session_id)
            );
            return html(
                StatusCode::NOT_FOUND,
                layout("No such turn", Some(who), None, &main),
            );
        }
        Err(e) => return store_failed(Some(who), &e),
    };
    let now = SystemTime::now();
    let turn = &loaded.turn;
    let mut main = format!(
        "<p class=\"back\"><a href=\"/\">← The waiting calls</a></p>\n\
         <h1>Turn {} <span class=\"sub\">of session {}</span></h1>\n\
         <dl class=\"facts\"><dt>User</dt><dd>{}</dd><dt>Calls waiting for a person</dt><dd>{}</dd>\
         </dl>\n",
        esc(&turn.turn_id),
        esc(&turn.session_id),
        esc(&turn.user_id),
        turn.calls.len()
    );
    for call in &turn.calls {
        let here = notice.filter(|n| n.tool_use_id == call.call.tool_use_id);
        main.push_str(&section(app, who, &loaded, call, here, now));
    }
    let events = format!(
        "/events?session={}&turn={}",
        super::url_value(&turn.session_id),
        super::url_value(&turn.turn_id)
    );
    let title = format!("Turn {}", turn.turn_id);
    html(status, layout(&title, Some(who), Some(&events), &main))
}

/// The anchor of a call's section: `call-` and its id's letters, digits, `-` and `_`.
pub(crate) fn anchor(tool_use_id: &str) -> String {
    let id: String = tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("call-{id}")
}

/// What a decided or expired call says instead of its forms: `approved by ann at …`.
pub(crate) fn outcome(call: &TurnCall) -> String {
    let c = &call.call;
    match (&c.decided, c.state) {
        (Some(mark), state) if state.is_decided() => {
            format!("{} by {} at {}", state, mark.by, when(mark.at))
        }
        (_, CallState::Expired) => {
            format!("expired at {}: nobody decided in time", when(c.expires_at))
        }
        (_, state) => state.to_string(),
    }
}

fn section(
    app: &App,
    who: &Signed,
    loaded: &Loaded,
    call: &TurnCall,
    notice: Option<&Notice>,
    now: SystemTime,
) -> String {
    let c = &call.call;
    let a = anchor(&c.tool_use_id);
    let key = call_key(&c.session_id, &c.turn_id, &c.tool_use_id);
    let waiting = c.state == CallState::Waiting;
    let mut out = format!(
        "<section class=\"call{}\" id=\"{a}\" data-key=\"{}\" data-digest=\"{}\" \
         aria-labelledby=\"{a}-title\">\n<h2 id=\"{a}-title\">{} <span class=\"state\">{}</span></h2>\n",
        if waiting { "" } else { " closed" },
        esc(&key),
        esc(&c.input_digest),
        esc(&c.name),
        esc(&if waiting {
            format!("waiting · {}", left(c.expires_at, now))
        } else {
            outcome(call)
        }),
    );
    out.push_str("<dl class=\"facts\">");
    for asked in &c.asked_by {
        out.push_str(&format!(
            "<dt>Asked by <span class=\"rule\">{}</span></dt><dd>{}</dd>",
            esc(&asked.hook),
            esc(&asked.reason)
        ));
    }
    out.push_str(&format!(
        "<dt>Call</dt><dd><code>{}</code></dd><dt>Input digest</dt><dd><code title=\"{}\">{}…</code></dd>\
         <dt>Kept</dt><dd>{}</dd><dt>Expires</dt><dd>{}</dd></dl>\n",
        esc(&c.tool_use_id),
        esc(&c.input_digest),
        esc(c.input_digest.get(..12).unwrap_or(&c.input_digest)),
        when(c.created_at),
        when(c.expires_at),
    ));
    out.push_str(&inputs(loaded, call));
    out.push_str(&history(call));
    if let Some(n) = notice {
        out.push_str(&format!(
            "<p class=\"refused\" role=\"alert\" id=\"{a}-notice\">{}</p>\n",
            esc(&n.message)
        ));
    }
    if waiting {
        out.push_str(&actions(app, who, loaded, call, notice));
    }
    out.push_str("</section>\n");
    out
}

/// The input as formatted JSON; the model's beside it when a rule rewrote it; the edit.
fn inputs(loaded: &Loaded, call: &TurnCall) -> String {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let model = loaded.kept.as_ref().and_then(|k| {
        k.awaiting()
            .find(|a| a.tool_use_id == call.call.tool_use_id)
    });
    let mut out = String::new();
    match model {
        Some(m) if m.input != call.input => {
            let by = if m.rewritten_by.is_empty() {
                "a PreToolUse hook".to_owned()
            } else {
                m.rewritten_by.join(", ")
            };
            out.push_str(&format!(
                "<div class=\"inputs\"><figure><figcaption>The model's input</figcaption>\
                 <pre>{}</pre></figure><figure><figcaption>What runs (rewritten by {})</figcaption>\
                 <pre>{}</pre></figure></div>\n",
                esc_block(&pretty(&m.input)),
                esc(&by),
                esc_block(&pretty(&call.input)),
            ));
        }
        _ => out.push_str(&format!(
            "<figure><figcaption>Input</figcaption><pre>{}</pre></figure>\n",
            esc_block(&pretty(&call.input))
        )),
    }
    if let Some(edit) = &call.edit {
        out.push_str(&format!(
            "<figure><figcaption>Edited input (what runs once approved)</figcaption><pre>{}</pre>\
             </figure>\n",
            esc_block(&pretty(edit))
        ));
    }
    out
}

/// Every approval so far, who decided, the reason.
fn history(call: &TurnCall) -> String {
    let c = &call.call;
    let mut items = Vec::new();
    for m in &c.approvals {
        let what = if call.edit.is_some() && items.is_empty() {
            "edited and approved"
        } else {
            "approved"
        };
        items.push(format!(
            "<li>{} {what} at {}{}</li>",
            esc(&m.by),
            when(m.at),
            m.comment
                .as_ref()
                .map_or(String::new(), |t| format!(": “{}”", esc(t)))
        ));
    }
    if let (Some(m), CallState::Declined) = (&c.decided, c.state) {
        items.push(format!(
            "<li>{} declined at {}: “{}”{}</li>",
            esc(&m.by),
            when(m.at),
            esc(c.reason.as_deref().unwrap_or("")),
            m.comment
                .as_ref()
                .map_or(String::new(), |t| format!(" (comment: “{}”)", esc(t)))
        ));
    }
    if c.state == CallState::Expired {
        items.push(format!("<li>expired at {}</li>", when(c.expires_at)));
    }
    if items.is_empty() {
        return "<p class=\"history\">No decision yet.</p>\n".to_owned();
    }
    format!(
        "<h3 class=\"history-title\">Decisions</h3><ol class=\"history\">{}</ol>\n",
        items.join("")
    )
}

/// The forms `who` may use on `call`, or why they may not decide it.
fn actions(
    app: &App,
    who: &Signed,
    loaded: &Loaded,
    call: &TurnCall,
    notice: Option<&Notice>,
) -> String {
    let c = &call.call;
    let allowed = app.inbox.allowed(&who.identity, c);
    if allowed.is_empty() {
        let why = app
            .inbox
            .policy()
            .check(&who.identity, Action::Approve, c)
            .err()
            .map_or_else(String::new, |w| w.to_string());
        return format!(
            "<p class=\"not-allowed\">You may not decide this call: {}.</p>\n",
            esc(&why)
        );
    }
    let a = anchor(&c.tool_use_id);
    let hidden = |choice: &str| -> String {
        format!(
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <input type=\"hidden\" name=\"session_id\" value=\"{}\">\
             <input type=\"hidden\" name=\"turn_id\" value=\"{}\">\
             <input type=\"hidden\" name=\"tool_use_id\" value=\"{}\">\
             <input type=\"hidden\" name=\"input_digest\" value=\"{}\">\
             <input type=\"hidden\" name=\"idempotency_key\" value=\"{}\">\
             <input type=\"hidden\" name=\"choice\" value=\"{choice}\">",
            esc(&who.csrf),
            esc(&c.session_id),
            esc(&c.turn_id),
            esc(&c.tool_use_id),
            esc(&c.input_digest),
            random_hex().unwrap_or_default(),
        )
    };
    let sent = |name: &str, choice: &str| -> String {
        notice
            .filter(|n| n.choice == choice)
            .and_then(|n| field(&n.sent, name))
            .unwrap_or("")
            .to_owned()
    };
    let comment = |choice: &str| {
        format!(
            "<div class=\"field\"><label for=\"{a}-{choice}-comment\">Comment (for the audit \
             trail; optional)</label><input id=\"{a}-{choice}-comment\" name=\"comment\" \
             value=\"{}\" maxlength=\"2000\"></div>",
            esc(&sent("comment", choice))
        )
    };
    let mut out = format!("<div class=\"actions\" id=\"{a}-actions\">\n");
    if allowed.contains(&Action::Approve) {
        let needs = app.inbox.policy().approvals_needed(&c.name);
        let label = if needs > 1 && c.approvals.is_empty() {
            "Approve (first of two people)"
        } else {
            "Approve"
        };
        out.push_str(&format!(
            "<form method=\"post\" action=\"/decide\" class=\"decide approve\" \
             aria-label=\"Approve {tool}\">{}{}<button type=\"submit\" \
             class=\"primary\">{label}</button></form>\n",
            hidden("approve"),
            comment("approve"),
            tool = esc(&c.name),
        ));
    }
    if allowed.contains(&Action::Decline) {
        let missing = notice.is_some_and(|n| n.reason_missing);
        let (invalid, problem) = if missing {
            (
                format!(" aria-invalid=\"true\" aria-describedby=\"{a}-reason-problem\" autofocus"),
                format!(
                    "<p class=\"problem\" id=\"{a}-reason-problem\">A decline needs a reason: \
                     the model reads it.</p>"
                ),
            )
        } else {
            (String::new(), String::new())
        };
        out.push_str(&format!(
            "<form method=\"post\" action=\"/decide\" class=\"decide decline\" \
             aria-label=\"Decline {tool}\">{}<div class=\"field\"><label for=\"{a}-reason\">Reason \
             (the model reads it)</label><textarea id=\"{a}-reason\" name=\"reason\" rows=\"2\" \
             maxlength=\"2000\" aria-required=\"true\"{invalid}>{}</textarea>{problem}</div>{}\
             <button type=\"submit\">Decline</button></form>\n",
            hidden("decline"),
            esc_block(&sent("reason", "decline")),
            comment("decline"),
            tool = esc(&c.name),
        ));
    }
    let schema_known = loaded
        .tools
        .as_ref()
        .is_some_and(|t| t.tool(&c.name).is_some());
    if allowed.contains(&Action::Edit) && !schema_known {
        out.push_str(
            "<p class=\"not-allowed\">An edit is checked against the tool's input schema, which \
             the agent's workers publish when they start; none has for this version of the \
             agent yet, so this call can be approved or declined as it is.</p>\n",
        );
    } else if allowed.contains(&Action::Edit) {
        out.push_str(&edit_form(
            loaded,
            call,
            notice,
            &hidden("edit"),
            &comment("edit"),
        ));
    }
    out.push_str("</div>\n");
    out
}

/// How a form field's text becomes a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The schema says a string: the text as it is.
    Text,
    /// Anything else: the text read as JSON (a number stays a number; text that is not JSON is
    /// taken as a string, which the schema check then names).
    Json,
}

/// The kind of the member `name` by `tool`'s schema.
pub(crate) fn kind(tool: Option<&ToolSchema>, name: &str) -> Kind {
    let ty = tool
        .and_then(|t| t.input_schema.get("properties"))
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("type"));
    match ty {
        Some(Value::String(t)) if t == "string" => Kind::Text,
        _ => Kind::Json,
    }
}

/// The members an edit form shows: the current input's, then the schema's others, in order.
fn members(tool: Option<&ToolSchema>, input: &Value) -> Vec<String> {
    let mut names: Vec<String> = input
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(props) = tool
        .and_then(|t| t.input_schema.get("properties"))
        .and_then(Value::as_object)
    {
        for name in props.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// The text a form field shows for `value` once the browser has read the page: its
/// [`field_text`], each line as [`esc`] shows it (`\u{9}`, `\u{202e}` for the characters the
/// page escapes). A field sent back as this text was left as shown.
pub(crate) fn shown_text(kind: Kind, value: Option<&Value>) -> String {
    field_text(kind, value)
        .split('\n')
        .map(|line| toolgate_core::audit::printable(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A member's text in its field.
fn field_text(kind: Kind, value: Option<&Value>) -> String {
    match (kind, value) {
        (_, None) => String::new(),
        (Kind::Text, Some(Value::String(s))) => s.clone(),
        (_, Some(v)) => v.to_string(),
    }
}

/// The top-level member a problem's path is about (`items[0].name` → `items`).
fn member_of(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or("")
}

fn edit_form(
    loaded: &Loaded,
    call: &TurnCall,
    notice: Option<&Notice>,
    hidden: &str,
    comment: &str,
) -> String {
    let c = &call.call;
    let a = anchor(&c.tool_use_id);
    let tool = loaded.tools.as_ref().and_then(|t| t.tool(&c.name));
    let current = call.edit.as_ref().unwrap_or(&call.input);
    let notice = notice.filter(|n| n.choice == "edit");
    let problems: &[EditProblem] = notice.map_or(&[], |n| &n.problems);
    let mut fields = String::new();
    let whole: Vec<&EditProblem> = problems
        .iter()
        .filter(|p| {
            let m = member_of(&p.path);
            m.is_empty() || !members(tool, current).iter().any(|n| n == m)
        })
        .collect();
    if !whole.is_empty() {
        fields.push_str(&format!(
            "<ul class=\"problem\" id=\"{a}-edit-problems\">{}</ul>",
            whole
                .iter()
                .map(|p| format!("<li>{}</li>", esc(&problem_text(p))))
                .collect::<String>()
        ));
    }
    let mut first_invalid = true;
    for (i, name) in members(tool, current).iter().enumerate() {
        let k = kind(tool, name);
        let id = format!("{a}-edit-{i}");
        let value = match notice.and_then(|n| field(&n.sent, &format!("input.{name}"))) {
            Some(sent) => sent.to_owned(),
            None => field_text(k, current.get(name)),
        };
        let mine: Vec<&EditProblem> = problems
            .iter()
            .filter(|p| member_of(&p.path) == name && !p.path.is_empty())
            .collect();
        let (attrs, after) = if mine.is_empty() {
            (String::new(), String::new())
        } else {
            let focus = if first_invalid { " autofocus" } else { "" };
            first_invalid = false;
            (
                format!(" aria-invalid=\"true\" aria-describedby=\"{id}-problem\"{focus}"),
                format!(
                    "<p class=\"problem\" id=\"{id}-problem\">{}</p>",
                    esc(&mine
                        .iter()
                        .map(|p| problem_text(p))
                        .collect::<Vec<_>>()
                        .join("; "))
                ),
            )
        };
        let hint = match k {
            Kind::Text => "text",
            Kind::Json => "JSON: a number, true/false, \"text\", [..] or {..}",
        };
        let big = value.len() > 60 || value.contains('\n');
        let control = if big {
            format!(
                // The line break after the tag is the one HTML drops: a value's own first line
                // break stays.
                "<textarea id=\"{id}\" name=\"input.{n}\" rows=\"3\"{attrs}>\n{}</textarea>",
                esc_block(&value),
                n = esc(name)
            )
        } else {
            format!(
                "<input id=\"{id}\" name=\"input.{n}\" value=\"{}\" autocomplete=\"off\"{attrs}>",
                esc(&value),
                n = esc(name)
            )
        };
        fields.push_str(&format!(
            "<div class=\"field\"><label for=\"{id}\"><code>{}</code> <span class=\"hint\">({hint})\
             </span></label>{control}{after}</div>",
            esc(name)
        ));
    }
    let open = if notice.is_some() { " open" } else { "" };
    format!(
        "<details class=\"edit\"{open}><summary>Edit the input</summary>\
         <form method=\"post\" action=\"/decide\" class=\"decide edit\" aria-label=\"Edit {t}\">\
         {hidden}<p class=\"hint\">An empty field leaves the member out. The tool stays {t}; its \
         rules decide on the edited input again when the turn resumes.</p>{fields}{comment}\
         <button type=\"submit\">Approve with this input</button></form></details>\n",
        t = esc(&c.name),
    )
}

/// `amount_cents: expected an integer ≥ 0, found the string "x"`.
fn problem_text(p: &EditProblem) -> String {
    if p.path.is_empty() {
        p.message.clone()
    } else {
        format!("{}: {}", p.path, p.message)
    }
}
