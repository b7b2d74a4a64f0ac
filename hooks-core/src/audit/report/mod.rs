//! Reading an audit trail back (feature `audit-report`): its lines ([`Trail`]), what they add
//! up to ([`Figures`]: counts, the people in the loop, latency distributions), and three ways to
//! show them: the self-contained HTML report ([`render_html`]), counts as text or JSON
//! ([`stats_text`], [`stats_json`]) and one readable line per call ([`tail_line`]), with the
//! chain check in words ([`ChainSummary`]).
//!
//! You need it to look at an audit trail from your own code; the `toolgate` command
//! (`toolgate audit verify|report|tail|stats`) is built on it.
//!
//! ```no_run
//! use toolgate_core::audit::report::{Figures, ReportOptions, Trail, render_html};
//!
//! let trail = Trail::read_dir("data/audit")?;
//! let figures = Figures::of(&trail, &ReportOptions::default());
//! std::fs::write("report.html", render_html("data/audit", &figures, None))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | file | what it holds |
//! |---|---|
//! | `read.rs` | [`Trail`], [`TrailError`], [`read_call_lines`], [`parse_call_line`], [`chain_files`]: the lines of a folder or a stream |
//! | `figures.rs` | [`Figures`] and its parts, [`ReportOptions`], [`Distribution`] |
//! | `chain.rs` | [`ChainSummary`]: the chain check in words |
//! | `html.rs` | [`render_html`]: the page |
//! | `escape.rs` | text made safe for the page: [`printable`](crate::audit::printable), then HTML's special characters |
//! | `svg.rs` | the page's charts |
//! | `stats.rs` | [`stats_text`], [`stats_json`] |
//! | `tail.rs` | [`tail_line`], [`TailFilter`] |

mod chain;
mod escape;
mod figures;
mod html;
mod read;
mod stats;
mod svg;
mod tail;

pub use chain::{ChainSummary, KEEP_LAST_HASHES};
pub use figures::{
    Decided, Distribution, Figures, ReportOptions, Resolution, RuleFigures, ToolFigures,
    UserFigures, Waiting,
};
pub use html::render_html;
pub use read::{Trail, TrailError, chain_files, parse_call_line, read_call_lines};
pub use stats::{stats_json, stats_text};
pub use tail::{TailFilter, tail_line};
