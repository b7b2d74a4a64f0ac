//! Sealed inputs: the fields of a paused call's input that the audit log's
//! [`Redaction`](crate::audit::Redaction) hides, kept out of the [`PendingTurn`]'s clear text
//! and given back to the tool at resume (`SealKeys`, feature `seal`; why a resume cannot:
//! [`SealProblem`](crate::approval::SealProblem); ARCHITECTURE.md, "A person's approval").
//!
//! When a field rule of the audit log reaches into a paused call's `input` or
//! `effective_input`, the turn keeps both as the audit line shows them (each rule applied:
//! `"[redacted]"`, or the rule's own mask), and `sealed` holds the real ones, encrypted under a
//! key the host gives the dispatcher (`DispatcherBuilder::seal_keys`, feature `seal`):
//!
//! ```text
//! "sealed": "aes256-siv:<key id>:<hex of the SIV tag (16 bytes) and the ciphertext>"
//! ```
//!
//! The plaintext is `{"input": …, "effective_input": …}` (the real inputs, compact JSON); the
//! associated data binds it to the call and to what the turn shows: the session id, user id,
//! `tool_use` id, tool, key id and the shown `input` and `effective_input` (each one S2V
//! header). AES-SIV (RFC 5297, AES-256 in CTR mode with CMAC, two 256-bit keys: 64 bytes) is
//! deterministic: the same call paused again (a retried message) seals to the same bytes, so a
//! turn kept before and the one paused again show one digest; it needs no random source.
//!
//! Why in the turn, under the host's key, and not in the store only (a column the host never
//! reads): a host with no store keeps the `PendingTurn` value itself, so the secret must travel
//! in it; a database row a DBA reads holds ciphertext; any worker of a fleet that has the key
//! resumes; a new key seals from its first use while the retired ones still open
//! (`SealKeys::also_open`) until their turns have expired. A resume that cannot give the real
//! value back (no key, another key, a sealed value or a shown input changed since the pause, a
//! hidden field left without its sealed value) is refused before anything runs
//! ([`ResumeError::SealedInput`](crate::approval::ResumeError::SealedInput)): the tool never
//! runs with the placeholder as its input. A dispatcher that cannot seal (no key, or a build
//! without the feature) does not pause such a call: it is blocked, as where nobody can approve.
//!
//! What a person approves: the call's `input_digest`, which for a sealed call covers the shown
//! `effective_input` and the `sealed` string (SHA-256 of the first's compact JSON, `\n`, the
//! second), not the real input. A page shows what the turn holds, so the person sees the
//! masked input and approves a digest of it bound to one sealed value; that value opens only
//! for this call and these shown inputs, so the approval runs the real input sealed at the
//! pause or nothing. A digest of the real input would let anyone holding the turn test guesses
//! of a short secret against it (a 4-digit PIN: 10 000 hashes).
//!
//! [`PendingTurn`]: crate::approval::PendingTurn

use serde_json::Value;

use crate::approval::pending::{AwaitingCall, SealProblem};
use crate::audit::{REDACTED, Redaction};
use crate::base::panic::catch;

/// The scheme named first in a `sealed` value.
const SCHEME: &str = "aes256-siv";

/// The first S2V header: what the bytes are, and this layout's version.
#[cfg_attr(not(feature = "seal"), allow(dead_code))]
const DOMAIN: &[u8] = b"toolgate sealed input 1";

/// What a paused call's input becomes in a [`PendingTurn`](crate::approval::PendingTurn): the
/// audit log's field rules and the keys that seal and open what they hide. Built once with the
/// dispatcher; empty (nothing hidden, nothing sealed) without an audit log or its field rules.
#[derive(Default)]
pub(crate) struct Sealing {
    pub(crate) redaction: Redaction,
    #[cfg(feature = "seal")]
    pub(crate) keys: Option<SealKeys>,
}

/// The real inputs of a sealed call, as sealed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Opened {
    input: Value,
    effective_input: Value,
}

impl Sealing {
    /// Whether a field rule reaches into one of the call's inputs.
    fn hides(&self, call: &AwaitingCall) -> bool {
        let r = &self.redaction;
        r.reaches(&call.name, &call.input) || r.reaches(&call.name, &call.effective_input)
    }

    /// Makes `call` (made with the real inputs) fit to keep: when a field rule reaches into its
    /// inputs, they become what the audit line shows, the real ones are sealed into `sealed`,
    /// and `input_digest` covers both. A call no rule reaches is left as it is.
    ///
    /// # Errors
    /// Why the call cannot pause without keeping a hidden field in clear (no key, or a build
    /// without the `seal` feature): the operator's detail of the call, then blocked.
    pub(crate) fn seal(
        &self,
        call: &mut AwaitingCall,
        session_id: &str,
        user_id: &str,
    ) -> Result<(), String> {
        if !self.hides(call) {
            return Ok(());
        }
        // A rule's own mask is the host's code: a panic in it blocks the call.
        let (input, effective_input) = catch(|| {
            let mut input = call.input.clone();
            self.redaction.mask_input(&call.name, &mut input);
            let mut effective_input = call.effective_input.clone();
            self.redaction.mask_input(&call.name, &mut effective_input);
            (input, effective_input)
        })
        .map_err(|p| {
            format!(
                "the audit log's redaction panicked on the input of tool `{}`: {p}; it cannot \
                 pause for a person",
                call.name
            )
        })?;
        let shown = Shown {
            session_id,
            user_id,
            call,
            input: &input,
            effective_input: &effective_input,
        };
        let sealed = self.seal_text(&shown)?;
        call.input = input;
        call.effective_input = effective_input;
        call.sealed = Some(sealed);
        call.input_digest = call.digest();
        Ok(())
    }

    /// The call with its real inputs back (`None`: it has nothing sealed and needs nothing),
    /// for the session and user the turn names.
    ///
    /// # Errors
    /// [`SealProblem`]: the real inputs cannot be given back, and the call must not run.
    pub(crate) fn open(
        &self,
        call: &AwaitingCall,
        session_id: &str,
        user_id: &str,
    ) -> Result<Option<AwaitingCall>, SealProblem> {
        let Some(sealed) = &call.sealed else {
            return if self.hides(call) {
                Err(SealProblem::NotSealed)
            } else {
                Ok(None)
            };
        };
        let shown = Shown {
            session_id,
            user_id,
            call,
            input: &call.input,
            effective_input: &call.effective_input,
        };
        let opened = self.open_text(&shown, sealed)?;
        let mut real = call.clone();
        real.input = opened.input;
        real.effective_input = opened.effective_input;
        Ok(Some(real))
    }

    /// The JSON a Gemini `functionCall` part is kept as in a paused turn (its answer echoes
    /// the call's `name` and `id`): its `args` masked as the audit line masks the call's input.
    pub(crate) fn mask_call_item(&self, item: &mut Value) {
        let call = if item.get("functionCall").is_some() {
            &mut item["functionCall"]
        } else {
            item
        };
        let Some(tool) = call.get("name").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        if let Some(args) = call.get_mut("args") {
            let mut masked = args.clone();
            // A rule's own mask panicking leaves nothing of the arguments.
            *args = match catch(|| self.redaction.mask_input(&tool, &mut masked)) {
                Ok(()) => masked,
                Err(_) => Value::String(REDACTED.to_owned()),
            };
        }
    }

    #[cfg(feature = "seal")]
    fn seal_text(&self, shown: &Shown<'_>) -> Result<String, String> {
        let Some(keys) = &self.keys else {
            return Err(format!(
                "{}, and this dispatcher has no seal key to keep them out of the paused turn \
                 (DispatcherBuilder::seal_keys): it cannot pause for a person",
                shown.hidden()
            ));
        };
        let key = &keys.sealing;
        let opened = Opened {
            input: shown.call.input.clone(),
            effective_input: shown.call.effective_input.clone(),
        };
        let plaintext = serde_json::to_vec(&opened).unwrap_or_default();
        let sealed = key
            .cipher()
            .encrypt(shown.headers(&key.id).iter(), &plaintext)
            .map_err(|e| format!("{}, and sealing them failed: {e}", shown.hidden()))?;
        Ok(format!(
            "{SCHEME}:{}:{}",
            key.id,
            crate::base::hex::encode(&sealed)
        ))
    }

    #[cfg(not(feature = "seal"))]
    fn seal_text(&self, shown: &Shown<'_>) -> Result<String, String> {
        Err(format!(
            "{}, and this build cannot seal them (feature `seal`): it cannot pause for a person \
             without keeping them in clear",
            shown.hidden()
        ))
    }

    #[cfg(feature = "seal")]
    fn open_text(&self, shown: &Shown<'_>, sealed: &str) -> Result<Opened, SealProblem> {
        let (key_id, bytes) = parse(sealed)?;
        let keys = self.keys.as_ref().ok_or(SealProblem::NoKey)?;
        let key = keys.find(key_id).ok_or_else(|| SealProblem::UnknownKey {
            key_id: key_id.to_owned(),
        })?;
        let does_not_open = || SealProblem::DoesNotOpen {
            key_id: key_id.to_owned(),
        };
        let plaintext = key
            .cipher()
            .decrypt(shown.headers(key_id).iter(), &bytes)
            .map_err(|_| does_not_open())?;
        // Authenticated, so sealed by a holder of the key: not the two inputs, it is not a
        // call's sealed value.
        serde_json::from_slice(&plaintext).map_err(|e| SealProblem::Malformed {
            problem: format!("it opens, but not to the call's inputs: {e}"),
        })
    }

    #[cfg(not(feature = "seal"))]
    fn open_text(&self, _shown: &Shown<'_>, sealed: &str) -> Result<Opened, SealProblem> {
        parse(sealed)?;
        Err(SealProblem::NotBuilt)
    }
}

/// A call as a paused turn shows it: what its sealed value is bound to.
struct Shown<'s> {
    session_id: &'s str,
    user_id: &'s str,
    call: &'s AwaitingCall,
    input: &'s Value,
    effective_input: &'s Value,
}

impl Shown<'_> {
    /// The S2V headers (associated data) of a sealed value under `key_id`: each a separate
    /// header, so no two different calls make the same list.
    #[cfg_attr(not(feature = "seal"), allow(dead_code))]
    fn headers(&self, key_id: &str) -> [Vec<u8>; 8] {
        [
            DOMAIN.to_vec(),
            key_id.as_bytes().to_vec(),
            self.session_id.as_bytes().to_vec(),
            self.user_id.as_bytes().to_vec(),
            self.call.tool_use_id.as_bytes().to_vec(),
            self.call.name.as_bytes().to_vec(),
            serde_json::to_vec(self.input).unwrap_or_default(),
            serde_json::to_vec(self.effective_input).unwrap_or_default(),
        ]
    }

    /// The start of the operator's detail of a call that cannot pause.
    fn hidden(&self) -> String {
        format!(
            "the input of tool `{}` has fields the audit log's redaction hides",
            self.call.name
        )
    }
}

/// The key id and the bytes of a `sealed` value.
fn parse(sealed: &str) -> Result<(&str, Vec<u8>), SealProblem> {
    let malformed = |problem: &str| SealProblem::Malformed {
        problem: problem.to_owned(),
    };
    let rest = sealed
        .strip_prefix(SCHEME)
        .and_then(|r| r.strip_prefix(':'))
        .ok_or_else(|| malformed("it does not start with \"aes256-siv:\""))?;
    let (key_id, hex) = rest
        .split_once(':')
        .ok_or_else(|| malformed("it has no `:` after its key id"))?;
    let bytes = crate::base::hex::decode(hex)
        .ok_or_else(|| malformed("its bytes are not an even number of hex digits"))?;
    // The SIV tag alone is 16 bytes.
    if bytes.len() < 16 {
        return Err(malformed("it is shorter than its 16-byte tag"));
    }
    Ok((key_id, bytes))
}

/// An edited input at resume ([`Approval::Edit`](crate::approval::Approval::Edit)) of a call
/// whose fields were hidden: wherever the edit still holds what the turn showed (`shown`) and
/// the real input (`real`) differs there, the real value is put back (object members by name,
/// list items by position in a list of the length shown). The person edited what they saw; a
/// hidden field they left as shown runs with its real value, one they typed anew with theirs.
pub(crate) fn restore(edit: &mut Value, shown: &Value, real: &Value) {
    if edit == shown {
        edit.clone_from(real);
        return;
    }
    match (edit, shown, real) {
        (Value::Object(e), Value::Object(s), Value::Object(r)) => {
            for (k, v) in e.iter_mut() {
                if let (Some(sv), Some(rv)) = (s.get(k), r.get(k)) {
                    restore(v, sv, rv);
                }
            }
        }
        // By position, so only a list of the length shown: after an item removed or added, a
        // real value could land on another item.
        (Value::Array(e), Value::Array(s), Value::Array(r))
            if e.len() == s.len() && s.len() == r.len() =>
        {
            for ((v, sv), rv) in e.iter_mut().zip(s).zip(r) {
                restore(v, sv, rv);
            }
        }
        _ => {}
    }
}

#[cfg(feature = "seal")]
pub use keys::{InvalidSealKey, SealKey, SealKeys};

#[cfg(feature = "seal")]
mod keys {
    use std::fmt;

    use aes_siv::KeyInit;
    use aes_siv::siv::Aes256Siv;

    /// A key that seals paused calls' hidden fields (feature `seal`): an id, written in every
    /// value it seals, and 64 bytes (AES-SIV with two AES-256 keys, RFC 5297). Give the same
    /// key to every process that resumes the turns (a fleet's workers), from where the host
    /// keeps its secrets; `Debug` shows the id only.
    ///
    /// ```
    /// use toolgate_core::approval::{SealKey, SealKeys};
    ///
    /// // `openssl rand -hex 64`, kept where the host keeps its secrets.
    /// let hex = "00112233445566778899aabbccddeeff".repeat(4);
    /// let keys = SealKeys::new(SealKey::from_hex("2026-12", &hex)?);
    /// assert_eq!(format!("{:?}", SealKey::from_hex("2026-12", &hex)?),
    ///            r#"SealKey { id: "2026-12", bytes: "(64, not shown)" }"#);
    /// # let _ = keys;
    /// # Ok::<(), toolgate_core::approval::InvalidSealKey>(())
    /// ```
    #[derive(Clone)]
    pub struct SealKey {
        pub(super) id: String,
        bytes: Box<[u8; SealKey::LEN]>,
    }

    impl SealKey {
        /// The length of a key, in bytes.
        pub const LEN: usize = 64;

        /// A key named `id` (1 to 64 letters, digits, `.`, `_` or `-`) of exactly
        /// [`LEN`](Self::LEN) bytes.
        ///
        /// # Errors
        /// [`InvalidSealKey`] when the id or the length is not allowed.
        pub fn new(id: impl Into<String>, bytes: &[u8]) -> Result<SealKey, InvalidSealKey> {
            let id = id.into();
            let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
            if id.is_empty() || id.len() > 64 || !id.chars().all(fine) {
                return Err(InvalidSealKey::new(
                    id,
                    "its id must be 1 to 64 letters, digits, `.`, `_` or `-`".to_owned(),
                ));
            }
            let Ok(bytes) = <[u8; SealKey::LEN]>::try_from(bytes) else {
                let why = format!("it must be {} bytes, not {}", SealKey::LEN, bytes.len());
                return Err(InvalidSealKey::new(id, why));
            };
            Ok(SealKey {
                id,
                bytes: Box::new(bytes),
            })
        }

        /// [`new`](Self::new) of the bytes `hex` spells (128 hex digits, either case).
        ///
        /// # Errors
        /// [`InvalidSealKey`] when `hex` is not an even number of hex digits, or as
        /// [`new`](Self::new).
        pub fn from_hex(id: impl Into<String>, hex: &str) -> Result<SealKey, InvalidSealKey> {
            let id = id.into();
            match crate::base::hex::decode(hex.trim()) {
                Some(bytes) => SealKey::new(id, &bytes),
                None => Err(InvalidSealKey::new(
                    id,
                    "its text is not an even number of hex digits".to_owned(),
                )),
            }
        }

        /// The key's id.
        pub fn id(&self) -> &str {
            &self.id
        }

        pub(super) fn cipher(&self) -> Aes256Siv {
            // The length is checked at `new`.
            Aes256Siv::new((&*self.bytes).into())
        }
    }

    impl fmt::Debug for SealKey {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("SealKey")
                .field("id", &self.id)
                .field("bytes", &"(64, not shown)")
                .finish()
        }
    }

    /// The keys of a dispatcher (feature `seal`,
    /// [`DispatcherBuilder::seal_keys`](crate::dispatch::DispatcherBuilder::seal_keys)): the
    /// one that seals, and retired ones that still open what they sealed. To rotate: seal with
    /// the new key and keep the old one with [`also_open`](Self::also_open) at least as long as
    /// a paused turn lives ([`pending_ttl`](crate::dispatch::DispatcherBuilder::pending_ttl)),
    /// since an expired turn is opened too (its answer memory key is the real input).
    #[derive(Debug, Clone)]
    pub struct SealKeys {
        pub(super) sealing: SealKey,
        retired: Vec<SealKey>,
    }

    impl SealKeys {
        /// Seals (and opens) with `key`.
        pub fn new(key: SealKey) -> SealKeys {
            SealKeys {
                sealing: key,
                retired: Vec::new(),
            }
        }

        /// Opens, but no longer seals, with `key`.
        ///
        /// # Errors
        /// [`InvalidSealKey`] when a key of this set already has its id (a sealed value names
        /// its key by id: two keys of one id could not both open).
        pub fn also_open(mut self, key: SealKey) -> Result<SealKeys, InvalidSealKey> {
            if self.find(&key.id).is_some() {
                let why = "another key of these keys has its id".to_owned();
                return Err(InvalidSealKey::new(key.id, why));
            }
            self.retired.push(key);
            Ok(self)
        }

        /// The key of `id`.
        pub(super) fn find(&self, id: &str) -> Option<&SealKey> {
            std::iter::once(&self.sealing)
                .chain(&self.retired)
                .find(|k| k.id == id)
        }
    }

    /// A [`SealKey`] that cannot be made, or added to [`SealKeys`].
    ///
    /// `Display`: ``seal key "2026-12": it must be 64 bytes, not 32``.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[error("seal key {id:?}: {reason}")]
    pub struct InvalidSealKey {
        /// The key's id, as given.
        pub id: String,
        /// What is wrong.
        pub reason: String,
    }

    impl InvalidSealKey {
        fn new(id: String, reason: String) -> Self {
            InvalidSealKey { id, reason }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_edit_gets_the_real_value_only_where_it_left_what_was_shown() {
        let shown =
            json!({"a": 1, "card": {"pin": "[redacted]", "n": "**42"}, "l": ["[redacted]", 2]});
        let real = json!({"a": 1, "card": {"pin": "1234", "n": "4242"}, "l": ["s", 2]});
        // Untouched: the real input.
        let mut edit = shown.clone();
        restore(&mut edit, &shown, &real);
        assert_eq!(edit, real);
        // One field changed, one typed anew, one removed, one added, an array item kept.
        let mut edit = json!({"a": 2, "card": {"pin": "9999"}, "l": ["[redacted]", 3], "b": 0});
        restore(&mut edit, &shown, &real);
        assert_eq!(
            edit,
            json!({"a": 2, "card": {"pin": "9999"}, "l": ["s", 3], "b": 0})
        );
        // An array of another length is the person's, as typed.
        let mut edit = json!({"l": ["[redacted]"]});
        restore(&mut edit, &shown, &real);
        assert_eq!(edit, json!({"l": ["[redacted]"]}));
    }

    #[test]
    fn a_sealed_value_is_parsed_or_named_malformed() {
        let malformed = |s: &str| match parse(s) {
            Err(SealProblem::Malformed { problem }) => problem,
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(
            malformed("chacha:k1:00"),
            "it does not start with \"aes256-siv:\""
        );
        assert_eq!(malformed("aes256-siv:k1"), "it has no `:` after its key id");
        assert_eq!(
            malformed("aes256-siv:k1:0g"),
            "its bytes are not an even number of hex digits"
        );
        assert_eq!(
            malformed("aes256-siv:k1:00ff"),
            "it is shorter than its 16-byte tag"
        );
        let sealed = format!("aes256-siv:k.1:{}", "ab".repeat(17));
        let (id, bytes) = parse(&sealed).unwrap();
        assert_eq!((id, bytes.len()), ("k.1", 17));
    }
}
