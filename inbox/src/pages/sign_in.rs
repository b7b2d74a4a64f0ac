//! Signing in with a token (`GET`/`POST /sign-in`) and out (`POST /sign-out`). A sign-in makes a
//! server-side session whose random id is the `HttpOnly; SameSite=Strict` cookie (`Secure` over
//! https); the sign-in form carries a random value of its own cookie, so no other site can sign a
//! browser in. A wrong token gets one sentence, whatever was wrong.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::Response;

use super::{esc, html, layout};
use crate::app::App;
use crate::auth::{Auth, random_hex};
use crate::guard::{
    body, cookie, csrf_ok, field, pairs, see_other, session_cookie, set_cookie, sign_in_cookie,
    signed, text,
};

/// The sign-in page and its form's random value (`None`: the system gave no random numbers).
fn form(problem: Option<&str>) -> Option<(String, String)> {
    let value = random_hex().ok()?;
    let (invalid, after) = match problem {
        Some(p) => (
            " aria-invalid=\"true\" aria-describedby=\"token-problem\" autofocus",
            format!(
                "<p class=\"problem\" id=\"token-problem\" role=\"alert\">{}</p>",
                esc(p)
            ),
        ),
        None => (" autofocus", String::new()),
    };
    let main = format!(
        "<h1>Sign in</h1>\n<form method=\"post\" action=\"/sign-in\" class=\"sign-in\">\
         <input type=\"hidden\" name=\"sign_in\" value=\"{value}\">\
         <div class=\"field\"><label for=\"token\">Your token</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" \
         required{invalid}>{after}</div>\
         <button type=\"submit\" class=\"primary\">Sign in</button></form>\n\
         <p class=\"hint\">Your token was given to you with your place in this inbox's tokens \
         file. It is never shown again, here or anywhere.</p>\n"
    );
    Some((layout("Sign in", None, None, &main), value))
}

fn with_form_cookie(app: &App, status: StatusCode, problem: Option<&str>) -> Response {
    let Some((page, value)) = form(problem) else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "no random numbers from the system: try again",
        );
    };
    let mut r = html(status, page);
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            sign_in_cookie(app.secure_cookies),
            &value,
            app.secure_cookies,
            false,
        ),
    );
    r
}

/// `GET /sign-in`.
pub(crate) async fn page(State(app): State<Arc<App>>, req: Request) -> Response {
    if !matches!(app.auth, Auth::Tokens(_)) {
        return see_other("/");
    }
    if signed(&app, &req).is_ok() {
        return see_other("/");
    }
    with_form_cookie(&app, StatusCode::OK, None)
}

/// `POST /sign-in`: the token's person signed in, or the form again.
pub(crate) async fn submit(State(app): State<Arc<App>>, req: Request) -> Response {
    let Auth::Tokens(tokens) = &app.auth else {
        return text(
            StatusCode::NOT_FOUND,
            "this inbox has no sign-in: its proxy signs people in",
        );
    };
    let form_cookie = cookie(req.headers(), sign_in_cookie(app.secure_cookies)).map(str::to_owned);
    let bytes = match body(req, app.body_limit).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let fields = pairs(&bytes);
    let same = match (form_cookie.as_deref(), field(&fields, "sign_in")) {
        (Some(c), Some(f)) => crate::auth::equal(c.as_bytes(), f.as_bytes()),
        _ => false,
    };
    if !same {
        return with_form_cookie(
            &app,
            StatusCode::FORBIDDEN,
            Some("This sign-in form expired: sign in again."),
        );
    }
    let token = field(&fields, "token").unwrap_or("").trim();
    match app.sessions.sign_in(tokens, token) {
        Ok(Some(id)) => {
            let mut r = see_other("/");
            let h = r.headers_mut();
            h.append(
                header::SET_COOKIE,
                set_cookie(
                    session_cookie(app.secure_cookies),
                    &id,
                    app.secure_cookies,
                    false,
                ),
            );
            h.append(
                header::SET_COOKIE,
                set_cookie(
                    sign_in_cookie(app.secure_cookies),
                    "",
                    app.secure_cookies,
                    true,
                ),
            );
            r
        }
        Ok(None) => with_form_cookie(
            &app,
            StatusCode::UNAUTHORIZED,
            Some("That token is not one of this inbox's."),
        ),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "no random numbers from the system: try again",
        ),
    }
}

/// `POST /sign-out` (with the session's CSRF token).
pub(crate) async fn sign_out(State(app): State<Arc<App>>, req: Request) -> Response {
    let who = match signed(&app, &req) {
        Ok(w) if w.session => w,
        _ => return see_other("/sign-in"),
    };
    let id = cookie(req.headers(), session_cookie(app.secure_cookies)).map(str::to_owned);
    let bytes = match body(req, app.body_limit).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    if !csrf_ok(&who, field(&pairs(&bytes), "csrf")) {
        return text(
            StatusCode::FORBIDDEN,
            "refused: the form's CSRF token is missing or wrong: reload the page",
        );
    }
    if let Some(id) = id {
        app.sessions.sign_out(&id);
    }
    let mut r = see_other("/sign-in");
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            session_cookie(app.secure_cookies),
            "",
            app.secure_cookies,
            true,
        ),
    );
    r
}
