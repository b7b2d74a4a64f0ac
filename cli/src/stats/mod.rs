//! `toolgate audit stats DIR`: counts per outcome, rule, tool and user.

mod print;

use std::io::Write;

use clap::ArgMatches;
use toolgate_core::audit::report::{Figures, ReportOptions};
use toolgate_core::audit::{Trail, printable_json};

use crate::stats::print::{stats_json, stats_text};
use crate::tail::filter;
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail, source};

pub(crate) fn run(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let input = match source::input(m) {
        Ok(i) => i,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let mut trail = match Trail::read_dir(&input.dir) {
        Ok(t) => t,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let filter = filter(m);
    if filter != Default::default() {
        trail.calls.retain(|r| filter.matches(r));
        // A line of an outcome this build does not know is not read into a record, so no filter
        // can be checked against it: a filtered count leaves such lines out unseen.
        trail.unknown_outcomes = 0;
        // The sessions counted are those of the calls kept.
        let kept: std::collections::BTreeSet<&str> =
            trail.calls.iter().map(|r| r.session_id.as_str()).collect();
        trail.summaries.retain(|s| {
            s.get("session_id")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|id| kept.contains(id))
        });
    }
    let figures = Figures::of(&trail, &ReportOptions::default());
    let text = if m.get_flag("json") {
        format!("{}\n", printable_json(&stats_json(&figures).to_string()))
    } else {
        stats_text(&figures)
    };
    match out.write_all(text.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(e) => fail(err, format!("cannot write: {e}"), EXIT_FAILED),
    }
}
