//! The report's charts as inline SVG: each scales to its box (`viewBox`, width 100 %), carries a
//! `<title>` and a `<desc>` that say in words what it draws (a screen reader's text, and the
//! chart's meaning without colour), and uses the Okabe–Ito palette, which readers with any
//! common colour-vision deficiency tell apart (Okabe and Ito, "Color Universal Design", 2008).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use toolgate_core::audit::report::Distribution;

use crate::report::escape::esc;

/// The fill colour of an outcome.
pub(crate) fn colour(outcome: &str) -> &'static str {
    match outcome {
        "ok" => "#009E73",
        "blocked" => "#E69F00",
        "hook_failed" | "hook_timeout" => "#D55E00",
        "invalid_input" => "#CC79A7",
        "unknown_tool" => "#0072B2",
        "tool_error" | "panicked" | "tool_timeout" => "#882255",
        _ => "#7F7F7F",
    }
}

/// Denials and asks in the per-rule charts.
pub(crate) const DENY: &str = "#D55E00";
pub(crate) const ASK: &str = "#0072B2";

/// The opening tag of a chart `width` × `height` user units wide, labelled by `title` and
/// described by `desc` (`id` makes both ids unique in the page).
fn open(svg: &mut String, id: &str, width: u64, height: u64, title: &str, desc: &str) {
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" \
         width=\"100%\" style=\"max-width:{width}px\" role=\"img\" \
         aria-labelledby=\"{id}-t {id}-d\"><title id=\"{id}-t\">{}</title>\
         <desc id=\"{id}-d\">{}</desc>",
        esc(title),
        esc(desc)
    );
}

/// The stacked bars of calls per outcome per day.
pub(crate) fn outcomes_per_day(per_day: &BTreeMap<String, BTreeMap<String, u64>>) -> String {
    let max = per_day
        .values()
        .map(|o| o.values().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let (bar, gap, height) = (48u64, 24u64, 160u64);
    let width = (bar + gap) * per_day.len().max(1) as u64 + gap;
    let mut desc = String::new();
    for (day, outcomes) in per_day {
        let parts: Vec<String> = outcomes.iter().map(|(o, n)| format!("{n} {o}")).collect();
        let _ = write!(desc, "{day}: {}. ", parts.join(", "));
    }
    let mut svg = String::new();
    open(
        &mut svg,
        "outcomes",
        width,
        height + 54,
        "Calls per outcome per day",
        desc.trim_end(),
    );
    for (i, (day, outcomes)) in per_day.iter().enumerate() {
        let x = gap + i as u64 * (bar + gap);
        // 24 above the tallest bar for its total.
        let mut y = height + 24;
        for (outcome, n) in outcomes {
            let h = n * height / max;
            y -= h;
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{bar}\" height=\"{h}\" fill=\"{}\">\
                 <title>{day} {outcome}: {n}</title></rect>",
                colour(outcome)
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x + bar / 2,
            height + 42,
            esc(day.get(5..).unwrap_or(day)),
            x + bar / 2,
            y.saturating_sub(4),
            outcomes.values().sum::<u64>()
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One rule's denials and asks per day, side by side (`id` unique in the page).
pub(crate) fn rule_per_day(id: &str, rule: &str, per_day: &BTreeMap<String, (u64, u64)>) -> String {
    let max = per_day
        .values()
        .map(|(d, a)| *d.max(a))
        .max()
        .unwrap_or(0)
        .max(1);
    let (bar, gap, height) = (18u64, 20u64, 60u64);
    let width = (2 * bar + gap) * per_day.len().max(1) as u64 + gap;
    let desc: Vec<String> = per_day
        .iter()
        .map(|(day, (d, a))| format!("{day}: {d} denied, {a} asked"))
        .collect();
    let mut svg = String::new();
    open(
        &mut svg,
        id,
        width,
        height + 36,
        &format!("Denials and asks of {rule} per day"),
        &desc.join("; "),
    );
    for (i, (day, (denied, asked))) in per_day.iter().enumerate() {
        let x = gap + i as u64 * (2 * bar + gap);
        for (j, (n, fill, what)) in [(denied, DENY, "denied"), (asked, ASK, "asked")]
            .into_iter()
            .enumerate()
        {
            let h = n * height / max;
            let _ = write!(
                svg,
                "<rect x=\"{}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"{fill}\">\
                 <title>{day}: {n} {what}</title></rect><text x=\"{}\" y=\"{}\" font-size=\"10\" \
                 text-anchor=\"middle\">{n}</text>",
                x + j as u64 * bar,
                height + 14 - h,
                x + j as u64 * bar + bar / 2,
                height + 12 - h,
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            x + bar,
            height + 30,
            esc(day.get(5..).unwrap_or(day))
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A hook's or tool's name as a chart's row label: whole when it fits in 38 characters, else
/// its last path segment (`…::weekly_refund_limit`), cut at 38; the whole name is in the row's
/// `<title>` and in the table below the chart.
fn short_name(name: &str) -> String {
    const FITS: usize = 38;
    if name.chars().count() <= FITS {
        return name.to_owned();
    }
    let last = name.rsplit("::").next().unwrap_or(name);
    let cut: String = last.chars().take(FITS - 3).collect();
    format!("…::{cut}")
}

/// A row's position on the latency chart's logarithmic axis: 1 µs at 0, `top` µs at `span`.
fn log_x(us: u64, top: u64, span: f64) -> f64 {
    let top = (top.max(10) as f64).log10();
    ((us.max(1) as f64).log10() / top * span).clamp(0.0, span)
}

/// Latency distributions, one row each: a thin line from the median to the maximum, a thick bar
/// from the median to the 90th percentile, a tick at the 99th, on a logarithmic axis in µs.
pub(crate) fn latency(id: &str, title: &str, rows: &[(&str, Distribution)]) -> String {
    let (label, span, row) = (250.0, 420.0, 26u64);
    let top = rows.iter().map(|(_, d)| d.max).max().unwrap_or(1);
    let height = row * rows.len().max(1) as u64 + 30;
    let width = (label + span + 20.0) as u64;
    let desc: Vec<String> = rows
        .iter()
        .map(|(name, d)| {
            format!(
                "{name}: median {} µs, p90 {} µs, p99 {} µs, max {} µs",
                d.p50, d.p90, d.p99, d.max
            )
        })
        .collect();
    let mut svg = String::new();
    open(&mut svg, id, width, height, title, &desc.join("; "));
    for (i, (name, d)) in rows.iter().enumerate() {
        let y = i as u64 * row + 14;
        let x = |us| label + log_x(us, top, span);
        let shown = short_name(name);
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}<title>{}</title>\
             </text><line x1=\"{:.1}\" y1=\"{y}\" x2=\"{:.1}\" y2=\"{y}\" stroke=\"#555\"/>\
             <rect x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"10\" fill=\"{ASK}\"/>\
             <line x1=\"{:.1}\" y1=\"{}\" x2=\"{:.1}\" y2=\"{}\" stroke=\"{DENY}\" \
             stroke-width=\"2\"/><circle cx=\"{:.1}\" cy=\"{y}\" r=\"3\" fill=\"#000\"/>",
            label - 6.0,
            y + 4,
            esc(&shown),
            esc(name),
            x(d.p50),
            x(d.max),
            x(d.p50),
            y - 5,
            (x(d.p90) - x(d.p50)).max(1.0),
            x(d.p99),
            y - 7,
            x(d.p99),
            y + 7,
            x(d.max),
        );
    }
    // The axis: powers of ten up to the largest sample.
    let axis_y = row * rows.len().max(1) as u64 + 8;
    let mut tick = 1u64;
    while tick <= top.max(10) {
        let x = label + log_x(tick, top, span);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{axis_y}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#999\"/>\
             <text x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            axis_y + 4,
            axis_y + 16,
            micros_label(tick)
        );
        tick = tick.saturating_mul(10);
        if tick == u64::MAX {
            break;
        }
    }
    svg.push_str("</svg>");
    svg
}

/// `1 µs`, `10 ms`, `1 s`: a power of ten of microseconds, for the axis.
fn micros_label(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} µs"),
        1_000..1_000_000 => format!("{} ms", us / 1_000),
        _ => format!("{} s", us / 1_000_000),
    }
}
