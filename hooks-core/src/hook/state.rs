//! Application state handed to tools and hooks: [`State<T>`], and [`Env`], everything a tool or
//! hook can ask for besides the model's input.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::hook::context::HookContext;

/// Application state registered on the dispatcher builder with
/// [`DispatcherBuilder::state`](crate::dispatch::DispatcherBuilder::state) (a database handle, a
/// ledger): shared by every session, `Send + Sync`, and in charge of its own synchronization.
///
/// A tool or hook asks for it by taking a `State<T>` parameter; the macros inject it and leave it
/// out of the schema. `build()` fails when an item asks for a `State<T>` the builder was not
/// given, so a missing state is found at start-up, not at the first call. Cloning is one atomic
/// increment.
pub struct State<T: ?Sized>(Arc<T>);

impl<T: ?Sized> State<T> {
    /// Wraps an `Arc`.
    pub fn from_arc(value: Arc<T>) -> Self {
        State(value)
    }

    /// The shared `Arc`.
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// Names a `State<T>` an item needs, so `build()` can check it was given.
#[derive(Clone, Copy)]
pub struct StateKey {
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
}

impl StateKey {
    /// The key of `State<T>`.
    pub fn of<T: Send + Sync + 'static>() -> Self {
        StateKey {
            type_id: TypeId::of::<T>,
            type_name: std::any::type_name::<T>,
        }
    }

    /// The type's id.
    pub fn type_id(&self) -> TypeId {
        (self.type_id)()
    }

    /// The type's name, as `std::any::type_name` writes it.
    pub fn type_name(&self) -> &'static str {
        (self.type_name)()
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "State<{}>", self.type_name())
    }
}

/// The states given to one dispatcher, by type.
#[derive(Default, Clone)]
pub(crate) struct StateMap {
    entries: Vec<(TypeId, &'static str, Arc<dyn Any + Send + Sync>)>,
}

impl StateMap {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        let id = TypeId::of::<T>();
        self.entries.retain(|(t, _, _)| *t != id);
        self.entries.push((
            id,
            std::any::type_name::<T>(),
            value as Arc<dyn Any + Send + Sync>,
        ));
    }

    pub(crate) fn contains(&self, key: &StateKey) -> bool {
        let id = key.type_id();
        self.entries.iter().any(|(t, _, _)| *t == id)
    }

    fn get<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let id = TypeId::of::<T>();
        let (_, _, any) = self.entries.iter().find(|(t, _, _)| *t == id)?;
        Arc::clone(any).downcast::<T>().ok().map(State)
    }
}

/// A `State<T>` was asked for at a call but the dispatcher was not given one. `build()` checks
/// every declared need, so this only happens for a need an item did not declare.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no State<{type_name}> was given to the dispatcher builder (add it with .state(…))")]
pub struct MissingState {
    /// The missing type's name.
    pub type_name: &'static str,
}

/// Everything a tool or hook can ask for besides the model's input: the session's
/// [`HookContext`] and the dispatcher's [`State`]s. Handed to hand-registered tools and hooks;
/// the macros unpack it into the parameters a function declares.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    context: &'a HookContext,
    states: &'a StateMap,
}

impl<'a> Env<'a> {
    pub(crate) fn new(context: &'a HookContext, states: &'a StateMap) -> Self {
        Env { context, states }
    }

    /// The session's trusted context.
    pub fn context(&self) -> &'a HookContext {
        self.context
    }

    /// The `State<T>` given to the dispatcher builder.
    ///
    /// # Errors
    /// [`MissingState`] when the builder was not given a `T`.
    pub fn state<T: Send + Sync + 'static>(&self) -> Result<State<T>, MissingState> {
        self.states.get::<T>().ok_or(MissingState {
            type_name: std::any::type_name::<T>(),
        })
    }
}

impl fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.states.entries.iter().map(|(_, n, _)| *n).collect();
        f.debug_struct("Env")
            .field("context", self.context)
            .field("states", &names)
            .finish()
    }
}
