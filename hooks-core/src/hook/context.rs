//! The trusted facts of a session: [`HookContext`], its [`Clock`] and typed [`Extensions`].
//!
//! The host builds a `HookContext` at session start from what its server knows (the
//! authenticated user, the user's tier, the session id); nothing the model sends can reach it.
//! It is frozen: there is no `&mut self` method and nothing interior-mutable inside, and cloning
//! shares one allocation.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// Where [`HookContext::now`] reads the time.
///
/// `System` reads the operating system's clock at each call; `Fixed` always returns one instant
/// (tests and replays); `Custom` calls a function (a clock advanced by a test, a clock synced
/// from elsewhere).
#[derive(Clone, Default)]
pub enum Clock {
    /// `SystemTime::now()` at each call.
    #[default]
    System,
    /// Always this instant.
    Fixed(SystemTime),
    /// A function called at each read.
    Custom(Arc<dyn Fn() -> SystemTime + Send + Sync>),
}

impl Clock {
    /// A clock that always reads `at`.
    pub fn fixed(at: SystemTime) -> Self {
        Clock::Fixed(at)
    }

    /// Reads the clock.
    pub fn now(&self) -> SystemTime {
        match self {
            Clock::System => SystemTime::now(),
            Clock::Fixed(at) => *at,
            Clock::Custom(f) => f(),
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clock::System => f.write_str("Clock::System"),
            Clock::Fixed(at) => f
                .debug_tuple("Clock::Fixed")
                .field(&crate::base::time::Rfc3339(*at))
                .finish(),
            Clock::Custom(_) => f.write_str("Clock::Custom(..)"),
        }
    }
}

/// A map keyed by type for anything else the server knows (an account's flags, a request id, a
/// feature set), in the manner of `http::Extensions`: one word when empty, one value per type.
///
/// Filled through [`HookContextBuilder::extension`] and read-only afterwards.
#[derive(Default)]
pub struct Extensions {
    // Boxed so an empty map is one word, as in `http::Extensions`.
    #[allow(clippy::box_collection)]
    map: Option<Box<HashMap<TypeId, Box<dyn Any + Send + Sync>>>>,
}

impl Extensions {
    /// The value of type `T`, if one was inserted.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref::<T>())
    }

    /// How many values are held.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.map
            .get_or_insert_with(Default::default)
            .insert(TypeId::of::<T>(), Box::new(value));
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish()
    }
}

struct Inner {
    user_id: String,
    session_id: String,
    tier: Option<String>,
    clock: Clock,
    extensions: Extensions,
}

/// The trusted facts of one session, built by the host and handed to every hook and tool that
/// asks for `&HookContext`.
///
/// Frozen once built: no method takes `&mut self`, nothing inside is interior-mutable, and
/// `clone()` shares one `Arc` (it is `Send + Sync`). A security decision reads these facts,
/// never the model's input: a `user_id` field in a `tool_use` input is a claim, the context's
/// [`user_id`](Self::user_id) is the authenticated user.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use toolgate_core::dispatch::Clock;
/// use toolgate_core::HookContext;
///
/// #[derive(Debug, PartialEq)]
/// struct Region(&'static str);
///
/// let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_000_000);
/// let ctx = HookContext::builder("u_001", "sess_1")
///     .tier("premium")
///     .clock(Clock::fixed(at))
///     .extension(Region("eu"))
///     .build();
/// assert_eq!(ctx.user_id(), "u_001");
/// assert_eq!(ctx.tier(), Some("premium"));
/// assert_eq!(ctx.now(), at);
/// assert_eq!(ctx.extensions().get::<Region>(), Some(&Region("eu")));
/// ```
#[derive(Clone)]
pub struct HookContext {
    inner: Arc<Inner>,
}

impl HookContext {
    /// Starts a context for the authenticated `user_id` in session `session_id`.
    pub fn builder(
        user_id: impl Into<String>,
        session_id: impl Into<String>,
    ) -> HookContextBuilder {
        HookContextBuilder {
            inner: Inner {
                user_id: user_id.into(),
                session_id: session_id.into(),
                tier: None,
                clock: Clock::System,
                extensions: Extensions::default(),
            },
        }
    }

    /// The authenticated user's id, as the host's server knows it.
    pub fn user_id(&self) -> &str {
        &self.inner.user_id
    }

    /// The session's id (written on every audit line).
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// The user's tier (`"free"`, `"premium"`, …), when the host set one.
    pub fn tier(&self) -> Option<&str> {
        self.inner.tier.as_deref()
    }

    /// Reads the context's clock now (a fixed clock always returns its instant). Hooks that need
    /// weekdays or time zones convert it with a calendar crate (jiff) themselves.
    pub fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    /// The clock itself.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The typed extensions (read-only).
    pub fn extensions(&self) -> &Extensions {
        &self.inner.extensions
    }
}

impl fmt::Debug for HookContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookContext")
            .field("user_id", &self.inner.user_id)
            .field("session_id", &self.inner.session_id)
            .field("tier", &self.inner.tier)
            .field("clock", &self.inner.clock)
            .field("extensions", &self.inner.extensions)
            .finish()
    }
}

/// Builds a [`HookContext`]; the only place its facts can be set.
#[must_use = "call .build() to get the HookContext"]
pub struct HookContextBuilder {
    inner: Inner,
}

impl HookContextBuilder {
    /// Sets the user's tier.
    pub fn tier(mut self, tier: impl Into<String>) -> Self {
        self.inner.tier = Some(tier.into());
        self
    }

    /// Sets the clock (default: [`Clock::System`]).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.inner.clock = clock;
        self
    }

    /// Adds a typed value; a second value of the same type replaces the first.
    pub fn extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.inner.extensions.insert(value);
        self
    }

    /// Freezes the context.
    pub fn build(self) -> HookContext {
        HookContext {
            inner: Arc::new(self.inner),
        }
    }
}
