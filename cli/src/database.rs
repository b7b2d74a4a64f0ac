//! A fleet's PostgreSQL database as a `SOURCE`: its URL as it may be shown, and a read-only
//! connection to it (feature `postgres`; without it, the sentence that says so).

#[cfg(feature = "postgres")]
use toolgate_core::store::postgres::PostgresStore;

/// Connects to `url` read-only (every transaction read-only, nothing migrated): a database
/// that holds no toolgate tables, or another schema version, is named and left as it is.
///
/// # Errors
/// The sentence to print, the URL's password hidden.
#[cfg(feature = "postgres")]
pub(crate) fn connect(url: &str) -> Result<PostgresStore, String> {
    PostgresStore::builder(url)
        .connections(1)
        .read_only(true)
        .connect()
        .map_err(|e| format!("{}: {e}", shown(url)))
}

/// `url` as it may be shown: its password, if any, as `***` (`postgres://agent:***@db/agent`).
pub(crate) fn shown(url: &str) -> String {
    #[cfg(feature = "postgres")]
    return toolgate_core::store::postgres::shown_settings(url);
    // Without the feature a URL is only ever named in the refusal: hide the password there too.
    #[cfg(not(feature = "postgres"))]
    match url
        .split_once("://")
        .map(|(scheme, rest)| (scheme, rest.split_once('@')))
    {
        Some((scheme, Some((user_info, host)))) if user_info.contains(':') => {
            let user = user_info.split_once(':').map_or(user_info, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

/// The sentence for a database URL given to a build without PostgreSQL.
#[cfg_attr(feature = "postgres", allow(dead_code))]
pub(crate) fn without_postgres(url: &str) -> String {
    format!(
        "{}: this toolgate was built without PostgreSQL (cargo install --path cli --features \
         postgres)",
        shown(url)
    )
}
