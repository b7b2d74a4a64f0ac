//! The Messages API over HTTP for `--live`: one blocking `POST /v1/messages` with bounded
//! retries (ureq 3, rustls on ring, the webpki roots).
//!
//! Every request carries `x-api-key` (the key is held in [`ApiKey`], which never prints),
//! `anthropic-version: 2023-06-01` and `content-type: application/json`. A 429, a 529 or
//! another 5xx is tried again, at most [`MAX_ATTEMPTS`] attempts in all, after the seconds the
//! API's `retry-after` header gives (capped at [`RETRY_AFTER_CAP`]) or, without one, after 1 s,
//! 2 s, 4 s, … (capped at [`BACKOFF_CAP`]); any other status (a 4xx but 429) ends at once with
//! the API's own error message. A request that cannot reach the API (connection refused, DNS,
//! TLS, timeout) is not tried again: it names the URL and the transport's error. Source: the
//! Messages API's "Errors" page (429 `rate_limit_error` with `retry-after`, 529
//! `overloaded_error`, the `{"type": "error", "error": {"type", "message"}, "request_id"}` body).

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use toolgate::Message;
use toolgate::audit::printable;

/// The public endpoint (`--base-url` changes it for a proxy or a test server).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header every request sends.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Attempts per request, the first included: a 429, 529 or 5xx is tried again at most 4 times.
pub const MAX_ATTEMPTS: u32 = 5;

/// The longest wait a `retry-after` header is honoured for; a longer one is cut to this.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// The longest wait of the doubling backoff used when the API gives no `retry-after`.
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// The most bytes of a response body read (a Messages API response is far smaller).
const BODY_LIMIT: u64 = 16 * 1024 * 1024;

/// An API key: its `Debug` and `Display` never show it, so neither a log line nor an error
/// message can carry it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key, when `value` is not empty.
    pub fn new(value: String) -> Option<ApiKey> {
        (!value.is_empty()).then_some(ApiKey(value))
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

/// Why a request got no assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The API answered with an error status (after the retries, for 429, 529 and 5xx).
    Status {
        /// The HTTP status.
        status: u16,
        /// The body's `error.type` (`invalid_request_error`, `rate_limit_error`, …).
        error_type: Option<String>,
        /// The body's `error.message`, or the body itself (at most 300 characters) when it is
        /// not the API's error shape.
        message: String,
        /// The body's `request_id`, when given.
        request_id: Option<String>,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The request did not reach the API, or its answer could not be read.
    Transport {
        /// The URL posted to.
        url: String,
        /// The transport's error.
        error: String,
    },
    /// A 2xx answer that is not an assistant message.
    BadResponse {
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Status {
                status,
                error_type,
                message,
                request_id,
                attempts,
            } => {
                write!(f, "the Messages API answered {status}")?;
                if let Some(t) = error_type {
                    write!(f, " {t}")?;
                }
                write!(f, ": {message}")?;
                if let Some(id) = request_id {
                    write!(f, " (request_id {id})")?;
                }
                if *attempts > 1 {
                    write!(f, " after {attempts} attempts")?;
                }
                Ok(())
            }
            ApiError::Transport { url, error } => {
                write!(f, "cannot reach the Messages API at {url}: {error}")
            }
            ApiError::BadResponse { problem } => {
                write!(
                    f,
                    "the Messages API's answer is not an assistant message: {problem}"
                )
            }
        }
    }
}

/// A Messages API client: the endpoint, the key, and how it waits between attempts.
pub struct Client<'a> {
    agent: ureq::Agent,
    url: String,
    key: ApiKey,
    /// Waits between attempts (`std::thread::sleep`; tests record the durations instead).
    sleep: &'a mut dyn FnMut(Duration),
}

impl<'a> Client<'a> {
    /// A client posting to `{base_url}/v1/messages`. No proxy is used for a loopback host
    /// (`localhost`, `127.0.0.1`, `[::1]`); for any other host ureq reads the usual proxy
    /// variables (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`).
    pub fn new(base_url: &str, key: ApiKey, sleep: &'a mut dyn FnMut(Duration)) -> Self {
        let base = base_url.trim_end_matches('/');
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15)))
            // A non-streaming request with a large `max_tokens` can take minutes.
            .timeout_global(Some(Duration::from_secs(600)))
            .user_agent(concat!(
                "toolgate-support-agent/",
                env!("CARGO_PKG_VERSION")
            ));
        if is_loopback(base) {
            config = config.proxy(None);
        }
        Client {
            agent: config.build().into(),
            url: format!("{base}/v1/messages"),
            key,
            sleep,
        }
    }

    /// Posts `body` (a Messages API request) and returns the assistant message, trying a 429,
    /// 529 or 5xx again as the module says; `notes` gets one line per retry (`note: the Messages
    /// API answered 429 rate_limit_error; trying again in 3 s (attempt 2 of 5)`).
    pub fn create(
        &mut self,
        body: &Value,
        notes: &mut dyn std::io::Write,
    ) -> Result<Message, ApiError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ApiError::BadResponse {
            problem: format!("the request cannot be written: {e}"),
        })?;
        let mut attempt = 1;
        loop {
            let (status, retry_after, text) = self.post(&bytes)?;
            if (200..300).contains(&status) {
                return read_message(&text);
            }
            let error = status_error(status, &text, attempt);
            let retryable = status == 429 || status == 529 || (500..600).contains(&status);
            if !retryable || attempt >= MAX_ATTEMPTS {
                return Err(error);
            }
            let wait = match retry_after {
                Some(wait) => wait.min(RETRY_AFTER_CAP),
                None => backoff(attempt),
            };
            let error_type = match &error {
                ApiError::Status {
                    error_type: Some(t),
                    ..
                } => format!(" {t}"),
                _ => String::new(),
            };
            let _ = writeln!(
                notes,
                "note: the Messages API answered {status}{error_type}; trying again in {} \
                 (attempt {} of {MAX_ATTEMPTS})",
                seconds(wait),
                attempt + 1
            );
            (self.sleep)(wait);
            attempt += 1;
        }
    }

    /// One attempt: the status, the `retry-after` wait, the body's text.
    fn post(&self, bytes: &[u8]) -> Result<(u16, Option<Duration>, String), ApiError> {
        let transport = |e: ureq::Error| ApiError::Transport {
            url: self.url.clone(),
            error: match e {
                ureq::Error::Io(io) => io.to_string(),
                other => other.to_string(),
            },
        };
        let mut response = self
            .agent
            .post(&self.url)
            .header("x-api-key", &self.key.0)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("content-type", "application/json")
            .send(bytes)
            .map_err(transport)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = response
            .body_mut()
            .with_config()
            .limit(BODY_LIMIT)
            .read_to_string()
            .map_err(transport)?;
        Ok((status, retry_after, text))
    }
}

/// Whether `base` (`scheme://host[:port]…`) names a loopback host.
fn is_loopback(base: &str) -> bool {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `retry-after` as the API sends it: a number of seconds (`"3"`, or a fraction). The HTTP-date
/// form is not used by the API; it reads as absent (the backoff applies).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// The wait after failed attempt `attempt` (1-based) without `retry-after`: 1 s, 2 s, 4 s, …,
/// at most [`BACKOFF_CAP`].
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.saturating_sub(1).min(16)).min(BACKOFF_CAP)
}

/// `3 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

/// The error for a non-2xx answer: the API's `error.type`, `error.message` and `request_id`
/// when the body has them, else the body's first 300 characters.
fn status_error(status: u16, text: &str, attempts: u32) -> ApiError {
    let body: Option<Value> = serde_json::from_str(text).ok();
    let field = |path: &[&str]| -> Option<String> {
        let mut v = body.as_ref()?;
        for key in path {
            v = v.get(key)?;
        }
        v.as_str().map(|s| printable(s).into_owned())
    };
    let message = field(&["error", "message"]).unwrap_or_else(|| {
        let flat = printable(text.trim());
        match flat.char_indices().nth(300) {
            Some((end, _)) => format!("{}…", &flat[..end]),
            None if flat.is_empty() => "(empty body)".to_owned(),
            None => flat.into_owned(),
        }
    });
    ApiError::Status {
        status,
        error_type: field(&["error", "type"]),
        message,
        request_id: field(&["request_id"]),
        attempts,
    }
}

/// Reads a 2xx body as an assistant message.
fn read_message(text: &str) -> Result<Message, ApiError> {
    let bad = |problem: String| ApiError::BadResponse { problem };
    let value: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON ({e})")))?;
    let message: Message =
        serde_json::from_value(value).map_err(|e| bad(printable(&e.to_string()).into_owned()))?;
    if message.role != toolgate::content::Role::Assistant {
        return Err(bad("its role is `user`".to_owned()));
    }
    Ok(message)
}
