//! Who is signed in: the identity sources a deployment configures ([`Auth`]), the tokens file
//! ([`Tokens`], [`Person`]), the server-side sessions a sign-in makes, and the CSRF token of each
//! identity. `decided_by` is always the identity found here, never a form field.
//!
//! Tokens are 256-bit random values (`tgi_` and 64 hex digits, [`new_token`]), kept in the tokens
//! file as their SHA-256 only. A plain SHA-256 is enough for a random token of that length (OWASP's
//! Password Storage Cheat Sheet asks for a slow, salted hash for passwords because people pick
//! guessable ones; a value drawn from 2^256 cannot be guessed or looked up in a table, so a fast
//! hash of it reveals nothing a slow one would protect); it is compared in constant time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use toolgate_core::approval::inbox::Identity;

use crate::PageError;

/// How long a session made by a sign-in lasts: 12 hours, then the person signs in again.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);

/// The most sessions kept at once (the oldest is dropped past it).
const MAX_SESSIONS: usize = 10_000;

/// Where the signed-in identity comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Auth {
    /// Per-person tokens ([`Tokens`]): the sign-in page turns one into a session cookie.
    Tokens(Tokens),
    /// The header a trusted reverse proxy (oauth2-proxy and the like) sets, accepted only from
    /// the proxy's addresses.
    Proxy(ProxyAuth),
    /// No authentication: every request is this one person. [`serve`](crate::serve) then listens
    /// on a loopback address only and refuses any other.
    Local(Identity),
}

impl Auth {
    /// Whether an authentication is configured (tokens or a proxy), so the page may listen on
    /// any address.
    pub fn authenticates(&self) -> bool {
        !matches!(self, Auth::Local(_))
    }
}

/// A trusted reverse proxy's identity headers.
///
/// oauth2-proxy (`--set-xauthrequest` / `--pass-user-headers`) sets `X-Forwarded-Email` and
/// `X-Forwarded-Groups` (comma-separated); any proxy that sets headers of its own names them
/// here. A request from any other peer address is refused (403), so nobody reaching the page
/// directly can set the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyAuth {
    /// The header holding the person's id (default `X-Forwarded-Email`).
    pub identity_header: String,
    /// The header holding their groups, comma-separated (default `X-Forwarded-Groups`).
    pub groups_header: String,
    /// The proxy's addresses: requests from any other peer are refused.
    pub peers: Vec<IpAddr>,
}

impl ProxyAuth {
    /// oauth2-proxy's headers, accepted from `peers`.
    pub fn new(peers: Vec<IpAddr>) -> ProxyAuth {
        ProxyAuth {
            identity_header: "x-forwarded-email".to_owned(),
            groups_header: "x-forwarded-groups".to_owned(),
            peers,
        }
    }

    /// The identity the proxy set on a request from `peer` with `headers`.
    ///
    /// # Errors
    /// The sentence the page answers with: the peer is not the proxy (403), or the header is
    /// missing, not printable text, or sent more than once, as is the groups header (401).
    pub(crate) fn identity(
        &self,
        peer: Option<IpAddr>,
        headers: &axum::http::HeaderMap,
    ) -> Result<Identity, (u16, &'static str)> {
        match peer {
            Some(ip) if self.peers.contains(&ip) => {}
            _ => return Err((403, "this inbox takes requests from its proxy only")),
        }
        // A header sent twice (a client's own ahead of the one a proxy appended) is refused:
        // which one the proxy set cannot be told.
        let once = |name: &str, why: &'static str| match headers.get_all(name).iter().count() {
            0 | 1 => Ok(headers
                .get(name)
                .map(|v| v.to_str().map(str::trim).map_err(|_| ()))),
            _ => Err((401, why)),
        };
        let id = match once(
            &self.identity_header,
            "the proxy sent its identity header more than once",
        )? {
            Some(Ok(id)) if !id.is_empty() => id.to_owned(),
            _ => return Err((401, "the proxy sent no identity")),
        };
        let groups = once(
            &self.groups_header,
            "the proxy sent its groups header more than once",
        )?;
        let mut who = Identity::new(id);
        if let Some(Ok(groups)) = groups {
            for g in groups.split(',').map(str::trim).filter(|g| !g.is_empty()) {
                who = who.in_group(g);
            }
        }
        Ok(who)
    }
}

/// One person of the tokens file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Person {
    /// Their id: what a decision records as who decided (compared exactly with a call's user
    /// id for the rule that nobody decides their own calls).
    pub id: String,
    /// Their groups (`group:NAME` in the policy).
    #[serde(default)]
    pub groups: Vec<String>,
    /// The SHA-256 of their token, 64 lowercase hex digits.
    pub token_sha256: String,
}

impl Person {
    fn identity(&self) -> Identity {
        self.groups
            .iter()
            .fold(Identity::new(&self.id), |who, g| who.in_group(g))
    }
}

/// The tokens file: one `[[person]]` per person who may sign in (TOML, unknown keys refused):
///
/// ```toml
/// [[person]]
/// id = "lead@example.com"
/// groups = ["support-leads"]
/// token_sha256 = "2c4d…(64 hex)"
/// ```
///
/// `toolgate inbox --new-token ID` prints a token and the entry to add.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    /// The people.
    #[serde(default, rename = "person")]
    pub people: Vec<Person>,
}

impl Tokens {
    /// Reads and checks the tokens file at `path`.
    ///
    /// # Errors
    /// [`PageError::Config`] naming the file and the problem (not TOML, an unknown key, an
    /// empty id, a hash that is not 64 lowercase hex digits, one hash given twice, no person).
    pub fn read(path: &Path) -> Result<Tokens, PageError> {
        let named = |e: String| PageError::Config(format!("{}: {e}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| named(e.to_string()))?;
        Tokens::parse(&text).map_err(named)
    }

    /// Reads and checks a tokens file's text.
    ///
    /// # Errors
    /// The problem, as [`read`](Self::read) names it.
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let tokens: Tokens = toml::from_str(text).map_err(|e| e.to_string())?;
        if tokens.people.is_empty() {
            return Err("no [[person]]: nobody could sign in".to_owned());
        }
        let mut seen = std::collections::BTreeSet::new();
        for (n, p) in tokens.people.iter().enumerate() {
            let n = n + 1;
            if p.id.trim().is_empty() || p.id.chars().any(char::is_control) {
                return Err(format!(
                    "person {n}: `id` must be printable, non-empty text"
                ));
            }
            let hex = p.token_sha256.len() == 64
                && p.token_sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(format!(
                    "person {n} ({}): `token_sha256` must be the token's SHA-256, 64 lowercase \
                     hex digits",
                    p.id
                ));
            }
            if !seen.insert(p.token_sha256.as_str()) {
                return Err(format!(
                    "person {n} ({}): the same token hash is given twice",
                    p.id
                ));
            }
        }
        Ok(tokens)
    }

    /// The person whose token is `token`, comparing its SHA-256 with every entry in constant
    /// time.
    fn find(&self, token: &str) -> Option<&Person> {
        let digest = sha256_hex(token.as_bytes());
        let mut found = None;
        for p in &self.people {
            if equal(p.token_sha256.as_bytes(), digest.as_bytes()) {
                found = Some(p);
            }
        }
        found
    }
}

/// A new sign-in token: `tgi_` and 64 hex digits (256 random bits from the operating system),
/// and its SHA-256 for the tokens file.
///
/// # Errors
/// [`PageError::Random`] when the operating system gives no random numbers.
pub fn new_token() -> Result<(String, String), PageError> {
    let token = format!("tgi_{}", random_hex()?);
    let hash = sha256_hex(token.as_bytes());
    Ok((token, hash))
}

/// 32 random bytes as 64 hex digits.
pub(crate) fn random_hex() -> Result<String, PageError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| PageError::Random(e.to_string()))?;
    Ok(hex(&bytes))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `a == b` in time that depends on their lengths only.
pub(crate) fn equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A signed-in person and the CSRF token their forms carry.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    pub(crate) identity: Identity,
    pub(crate) csrf: String,
    /// Whether the identity came from a sign-in (a session to sign out of).
    pub(crate) session: bool,
}

struct Session {
    identity: Identity,
    csrf: String,
    made: Instant,
}

/// The sessions sign-ins made, kept in this process's memory by the SHA-256 of their id (a
/// restart signs everyone out; the ids never sit in memory as they are in the cookie).
#[derive(Default)]
pub(crate) struct Sessions {
    by_hash: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// A session for the person whose token is `token`: its id (for the cookie), or `None` when
    /// no person has that token.
    pub(crate) fn sign_in(
        &self,
        tokens: &Tokens,
        token: &str,
    ) -> Result<Option<String>, PageError> {
        let Some(person) = tokens.find(token) else {
            return Ok(None);
        };
        let id = random_hex()?;
        let session = Session {
            identity: person.identity(),
            csrf: random_hex()?,
            made: Instant::now(),
        };
        let mut all = self.by_hash.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|_, s| s.made.elapsed() < SESSION_TTL);
        if all.len() >= MAX_SESSIONS
            && let Some(oldest) = all
                .iter()
                .min_by_key(|(_, s)| s.made)
                .map(|(k, _)| k.clone())
        {
            all.remove(&oldest);
        }
        all.insert(sha256_hex(id.as_bytes()), session);
        Ok(Some(id))
    }

    /// The session of the cookie value `id`, while it lasts.
    pub(crate) fn find(&self, id: &str) -> Option<Signed> {
        let all = self.by_hash.lock().unwrap_or_else(PoisonError::into_inner);
        let s = all.get(&sha256_hex(id.as_bytes()))?;
        (s.made.elapsed() < SESSION_TTL).then(|| Signed {
            identity: s.identity.clone(),
            csrf: s.csrf.clone(),
            session: true,
        })
    }

    /// Ends the session of the cookie value `id`.
    pub(crate) fn sign_out(&self, id: &str) {
        let mut all = self.by_hash.lock().unwrap_or_else(PoisonError::into_inner);
        all.remove(&sha256_hex(id.as_bytes()));
    }
}

/// The CSRF token of an identity that has no session (a proxy's or the local one): the SHA-256
/// of this process's random secret and the identity, so it is the same on every page of the
/// process and no other site can compute it.
pub(crate) fn derived_csrf(secret: &str, who: &Identity) -> String {
    let mut text = format!("{secret}\n{}", who.id());
    for g in who.groups() {
        text.push('\n');
        text.push_str(g);
    }
    sha256_hex(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokens_file_with_a_mistake_is_refused_naming_it() {
        let h = "a".repeat(64);
        assert!(
            Tokens::parse(&format!("[[person]]\nid = \"x\"\ntoken_sha256 = \"{h}\"\n")).is_ok()
        );
        let err = Tokens::parse(&format!(
            "[[person]]\nid = \"x\"\ntoken = \"{h}\"\ntoken_sha256 = \"{h}\"\n"
        ))
        .unwrap_err();
        assert!(err.contains("unknown field `token`"), "{err}");
        assert_eq!(
            Tokens::parse("[[person]]\nid = \"x\"\ntoken_sha256 = \"ABC\"\n").unwrap_err(),
            "person 1 (x): `token_sha256` must be the token's SHA-256, 64 lowercase hex digits"
        );
        assert_eq!(
            Tokens::parse(&format!(
                "[[person]]\nid = \"x\"\ntoken_sha256 = \"{h}\"\n[[person]]\nid = \"y\"\ntoken_sha256 = \"{h}\"\n"
            ))
            .unwrap_err(),
            "person 2 (y): the same token hash is given twice"
        );
        assert_eq!(
            Tokens::parse("").unwrap_err(),
            "no [[person]]: nobody could sign in"
        );
    }

    #[test]
    fn a_proxy_header_sent_twice_is_refused_not_read_first_come() {
        use axum::http::{HeaderMap, HeaderValue};
        let proxy = ProxyAuth::new(vec!["10.0.0.1".parse().unwrap()]);
        let peer = Some("10.0.0.1".parse().unwrap());
        let mut h = HeaderMap::new();
        h.append("x-forwarded-email", HeaderValue::from_static("ann"));
        h.append("x-forwarded-groups", HeaderValue::from_static("leads"));
        assert_eq!(
            proxy.identity(peer, &h),
            Ok(Identity::new("ann").in_group("leads"))
        );
        // A client's own header ahead of the one the proxy appended: neither is taken.
        let mut twice = h.clone();
        twice.insert("x-forwarded-email", HeaderValue::from_static("mallory"));
        twice.append("x-forwarded-email", HeaderValue::from_static("ann"));
        assert_eq!(
            proxy.identity(peer, &twice),
            Err((401, "the proxy sent its identity header more than once"))
        );
        let mut groups = h.clone();
        groups.append("x-forwarded-groups", HeaderValue::from_static("admins"));
        assert_eq!(
            proxy.identity(peer, &groups),
            Err((401, "the proxy sent its groups header more than once"))
        );
    }

    #[test]
    fn a_token_signs_in_its_person_and_nothing_else_does() {
        let (token, hash) = new_token().unwrap();
        assert!(token.starts_with("tgi_") && token.len() == 68, "{token}");
        let tokens = Tokens::parse(&format!(
            "[[person]]\nid = \"lead\"\ngroups = [\"leads\"]\ntoken_sha256 = \"{hash}\"\n"
        ))
        .unwrap();
        let sessions = Sessions::default();
        let id = sessions.sign_in(&tokens, &token).unwrap().unwrap();
        let signed = sessions.find(&id).unwrap();
        assert_eq!(signed.identity, Identity::new("lead").in_group("leads"));
        assert_eq!(signed.csrf.len(), 64);
        assert_eq!(sessions.sign_in(&tokens, &hash).unwrap(), None);
        assert_eq!(sessions.sign_in(&tokens, "").unwrap(), None);
        assert!(sessions.find(&hash).is_none());
        sessions.sign_out(&id);
        assert!(sessions.find(&id).is_none());
    }
}
