//! A read-only connection to a fleet's PostgreSQL database (feature `postgres`).

use toolgate_core::store::postgres::PostgresStore;

use crate::source::shown;

/// Connects to `url` read-only (every transaction read-only, nothing migrated): a database
/// that holds no toolgate tables, or another schema version, is named and left as it is.
///
/// # Errors
/// The sentence to print, the URL's password hidden.
pub(crate) fn connect(url: &str) -> Result<PostgresStore, String> {
    PostgresStore::builder(url)
        .connections(1)
        .read_only(true)
        .connect()
        .map_err(|e| format!("{}: {e}", shown(url)))
}
