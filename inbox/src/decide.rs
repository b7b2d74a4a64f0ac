//! A person's decision: `POST /decide` (a form: the turn's page again, `303`, or with the refusal
//! next to its field) and `POST /api/decide` (JSON). Both check the signed-in identity's CSRF
//! token, build one [`DecisionRequest`] and hand it to [`Inbox::decide`] with that identity:
//! the store applies the policy and takes the decision in one atomic step.
//!
//! `POST /api/decide` takes `{"session_id", "turn_id", "tool_use_id", "input_digest",
//! "choice": "approve" | "decline" | "edit", "reason", "input", "comment"}` (unknown members
//! refused: a body naming who decides, or another tool, is refused whole), with the headers
//! `X-CSRF-Token` and, optionally, `Idempotency-Key`. It answers `200` with the
//! [`Decided`](toolgate_core::approval::inbox::Decided) as JSON, or the refusal as JSON
//! (`{"refused": "already_decided", "state", "by", "at", "detail": "already approved by …"}`)
//! with its status: `400` malformed, `403` not allowed, `404` unknown turn or call, `409`
//! already decided, expired, input changed, turn not waiting, approved already by this
//! person, key reused; `422` an edit that does not fit the tool's schema, or that cannot be
//! checked; `503` the store did not answer (send it again with its key).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate_core::approval::inbox::{
    Choice, DecideError, Decided, DecisionRequest, Inbox, Refusal,
};

use crate::app::App;
use crate::auth::Signed;
use crate::guard::{body, csrf_ok, field, pairs, see_other, signed, text};
use crate::pages::blocking;
use crate::pages::turn::{Kind, Notice, anchor, kind, load, render, shown_text};

/// The status a refusal is answered with.
pub(crate) fn status_of(refusal: &Refusal) -> StatusCode {
    match refusal {
        Refusal::BadRequest { .. } => StatusCode::BAD_REQUEST,
        Refusal::NotAllowed(_) => StatusCode::FORBIDDEN,
        Refusal::UnknownTurn { .. } | Refusal::UnknownCall { .. } => StatusCode::NOT_FOUND,
        Refusal::InvalidEdit { .. } | Refusal::EditUncheckable { .. } => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        _ => StatusCode::CONFLICT,
    }
}

/// Records `request` for `who` on the store's blocking threads.
async fn record(
    inbox: &Arc<Inbox>,
    who: &Signed,
    request: DecisionRequest,
) -> Result<Decided, DecideError> {
    let (inbox, identity) = (Arc::clone(inbox), who.identity.clone());
    blocking(move || toolgate_core::block_on(inbox.decide(&identity, request)))
        .await
        .unwrap_or_else(|e| {
            // The blocking thread did not finish: as a store that did not answer (503, "send it
            // again with the same key").
            let kind = toolgate_core::store::StoreErrorKind::Unavailable;
            Err(DecideError::Store(toolgate_core::store::StoreError::new(
                kind, e,
            )))
        })
}

/// `POST /decide`.
pub(crate) async fn form(State(app): State<Arc<App>>, req: Request) -> Response {
    let who = match signed(&app, &req) {
        Ok(w) => w,
        Err((status, why)) => return text(status, why),
    };
    let bytes = match body(req, app.body_limit).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let sent = pairs(&bytes);
    if !csrf_ok(&who, field(&sent, "csrf")) {
        return text(
            StatusCode::FORBIDDEN,
            "refused: the form's CSRF token is missing or wrong: reload the page",
        );
    }
    let value = |name| field(&sent, name).unwrap_or("").to_owned();
    let (session_id, turn_id, tool_use_id) =
        (value("session_id"), value("turn_id"), value("tool_use_id"));
    let choice_name = value("choice");
    let choice = match choice_name.as_str() {
        "approve" => Choice::Approve,
        "decline" => Choice::Decline {
            reason: value("reason"),
        },
        "edit" => match edited(&app, &session_id, &turn_id, &tool_use_id, &sent).await {
            Ok(input) => Choice::Edit { input },
            Err(r) => return r,
        },
        _ => {
            return text(
                StatusCode::BAD_REQUEST,
                "refused: `choice` is approve, decline or edit",
            );
        }
    };
    let mut request = DecisionRequest::new(
        &session_id,
        &turn_id,
        &tool_use_id,
        value("input_digest"),
        choice,
    );
    let comment = value("comment");
    if !comment.trim().is_empty() {
        request = request.comment(comment.trim());
    }
    let key = value("idempotency_key");
    if !key.is_empty() {
        request = request.idempotency_key(key);
    }
    let refusal = match record(&app.inbox, &who, request).await {
        Ok(_) => {
            let to = format!(
                "{}#{}",
                crate::pages::turn_href(&session_id, &turn_id),
                anchor(&tool_use_id)
            );
            return see_other(&to);
        }
        Err(DecideError::Refused(r)) => r,
        Err(DecideError::Unaudited { answer, error }) => {
            let outcome = match *answer {
                Ok(d) => format!("{} by {}", d.state, d.by),
                Err(r) => r.to_string(),
            };
            let message = format!(
                "The decision was recorded ({outcome}), and its audit line could not be written: \
                 {error}"
            );
            let notice = notice(&tool_use_id, &choice_name, message, sent);
            return render(
                &app,
                &who,
                &session_id,
                &turn_id,
                Some(&notice),
                StatusCode::INTERNAL_SERVER_ERROR,
            )
            .await;
        }
        Err(e) => return crate::pages::store_failed(Some(&who), &e.to_string()),
    };
    let status = status_of(&refusal);
    let mut n = notice(&tool_use_id, &choice_name, refused_text(&refusal), sent);
    match &refusal {
        Refusal::InvalidEdit { problems } => n.problems = problems.clone(),
        Refusal::BadRequest { problem }
            if choice_name == "decline" && problem.contains("reason") =>
        {
            n.reason_missing = true;
        }
        Refusal::UnknownTurn { .. } => {
            return text(
                StatusCode::NOT_FOUND,
                "refused: no such paused turn is kept in the store",
            );
        }
        _ => {}
    }
    render(&app, &who, &session_id, &turn_id, Some(&n), status).await
}

fn notice(tool_use_id: &str, choice: &str, message: String, sent: Vec<(String, String)>) -> Notice {
    Notice {
        tool_use_id: tool_use_id.to_owned(),
        choice: choice.to_owned(),
        message,
        problems: Vec::new(),
        reason_missing: false,
        sent,
    }
}

/// The sentence a refused form shows.
fn refused_text(r: &Refusal) -> String {
    match r {
        Refusal::InvalidEdit { problems } => format!(
            "Not accepted: the edited input does not fit the tool's input schema ({} problem{}; \
             see each field).",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        ),
        Refusal::BadRequest { problem } => format!("Not accepted: {problem}."),
        other => format!("Not accepted: {other}."),
    }
}

/// The edited input of a form: each `input.NAME` field as the tool's schema reads the member
/// (text for a string, else JSON; text that is not JSON stays a string, for the schema check
/// to name), an empty field left out.
async fn edited(
    app: &App,
    session_id: &str,
    turn_id: &str,
    tool_use_id: &str,
    sent: &[(String, String)],
) -> Result<Value, Response> {
    let loaded = load(&app.inbox, session_id, turn_id)
        .await
        .map_err(|e| crate::pages::store_failed(None, &e))?;
    let call = loaded.as_ref().and_then(|l| l.turn.call(tool_use_id));
    let tool = loaded.as_ref().and_then(|l| {
        let call = call?;
        l.tools.as_ref()?.tool(&call.call.name).cloned()
    });
    let current = call.map(|c| c.edit.as_ref().unwrap_or(&c.input));
    let mut input = Map::new();
    for (name, text) in sent {
        let Some(member) = name.strip_prefix("input.") else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        // A browser sends a textarea's line breaks as CR LF.
        let text = text.replace("\r\n", "\n");
        let k = kind(tool.as_ref(), member);
        // A field left as the form showed it keeps its value exactly: the form shows escapes
        // (`\u{9}`, `\u{202e}`) where the value holds the characters.
        if let Some(was) = current.and_then(|c| c.get(member))
            && shown_text(k, Some(was)) == text
        {
            input.insert(member.to_owned(), was.clone());
            continue;
        }
        let value = match k {
            Kind::Text => Value::String(text.clone()),
            Kind::Json => {
                serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::String(text.clone()))
            }
        };
        input.insert(member.to_owned(), value);
    }
    Ok(Value::Object(input))
}

/// The JSON body of `POST /api/decide`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiRequest {
    session_id: String,
    turn_id: String,
    tool_use_id: String,
    input_digest: String,
    choice: ApiChoice,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ApiChoice {
    Approve,
    Decline,
    Edit,
}

fn json_answer(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `{"error": why}` with `status`.
pub(crate) fn json_error(status: StatusCode, why: &str) -> Response {
    json_answer(status, json!({ "error": why }))
}

/// `POST /api/decide`.
pub(crate) async fn api(State(app): State<Arc<App>>, req: Request) -> Response {
    let who = match signed(&app, &req) {
        Ok(w) => w,
        Err((status, why)) => return json_error(status, why),
    };
    let headers = req.headers();
    let header_text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (csrf, content_type, key) = (
        header_text("x-csrf-token"),
        header_text("content-type"),
        header_text("idempotency-key"),
    );
    if !csrf_ok(&who, csrf.as_deref()) {
        return json_error(
            StatusCode::FORBIDDEN,
            "the X-CSRF-Token header is missing or wrong",
        );
    }
    let json_type = content_type.is_some_and(|t| {
        t.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
    });
    if !json_type {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be JSON (Content-Type: application/json)",
        );
    }
    let bytes = match body(req, app.body_limit).await {
        Ok(b) => b,
        Err(_) => {
            return json_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the body is over this inbox's bound of {} bytes",
                    app.body_limit
                ),
            );
        }
    };
    let sent: ApiRequest = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &format!("the body is not a decision: {e}"),
            );
        }
    };
    let choice = match sent.choice {
        ApiChoice::Approve => Choice::Approve,
        ApiChoice::Decline => Choice::Decline {
            reason: sent.reason.unwrap_or_default(),
        },
        ApiChoice::Edit => match sent.input {
            Some(input) => Choice::Edit { input },
            None => {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    "an edit needs `input`, the new input",
                );
            }
        },
    };
    let mut request = DecisionRequest::new(
        sent.session_id,
        sent.turn_id,
        sent.tool_use_id,
        sent.input_digest,
        choice,
    );
    if let Some(c) = sent.comment {
        request = request.comment(c);
    }
    if let Some(k) = key {
        request = request.idempotency_key(k);
    }
    match record(&app.inbox, &who, request).await {
        Ok(decided) => json_answer(
            StatusCode::OK,
            serde_json::to_value(decided).unwrap_or(Value::Null),
        ),
        Err(DecideError::Refused(r)) => {
            let mut body = serde_json::to_value(&r).unwrap_or_else(|_| json!({}));
            body["detail"] = Value::String(r.to_string());
            json_answer(status_of(&r), body)
        }
        Err(DecideError::Unaudited { answer, error }) => json_answer(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({
                "error": format!("the decision was recorded, and its audit line could not be written: {error}"),
                "recorded": match *answer {
                    Ok(d) => serde_json::to_value(d).unwrap_or(Value::Null),
                    Err(r) => serde_json::to_value(r).unwrap_or(Value::Null),
                },
            }),
        ),
        Err(e) => json_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}
