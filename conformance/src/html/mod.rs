//! One self-contained HTML report (`--html FILE` on `run`, `explore`, `replay` and `world`, and
//! `tidemark merge`): no script, no network, no external asset; it opens from disk. A summary
//! per profile, then each failure with the divergence first (expected beside actual, the SPEC
//! rules involved with their text, the command that replays it) and its timeline (`timeline.rs`),
//! then the SPEC coverage table when one was computed (`crate::coverage`).
//!
//! Written with maud, which escapes every value it interpolates: a file name, a refusal message
//! or a program's stderr is text on the page, never markup. Bounded: the first
//! [`FULL_FAILURES`] failures in full, each timeline its last [`TIMELINE_EVENTS`] events, the
//! rest of the failures listed by name and replay command; every quoted field is cut by the
//! shared rule (`tidemark_sim::clip`). Nothing here reads a clock or a path: the same run
//! renders the same page.

pub mod bench;
pub mod run;
pub mod timeline;

#[cfg(test)]
mod model_state_tests;

use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::collections::BTreeMap;
use std::path::Path;
use tidemark_sim::clip::{clip, clip_field};

use crate::coverage::Coverage;
use timeline::Row;

/// Failures shown in full; the others are listed.
pub const FULL_FAILURES: usize = 25;
/// Events of a failure's timeline shown; earlier ones are counted.
pub const TIMELINE_EVENTS: usize = 400;

/// What a report page shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// `tidemark run`, `tidemark explore`, `tidemark world`, `tidemark replay`, `tidemark merge`.
    pub title: String,
    /// The command that reproduces the whole run.
    pub command: String,
    /// `reference`, a mutant, or the program's command.
    pub implementation: String,
    pub harness_version: String,
    /// The seeds run (`0..100, shard 0/1`), for exploration and worlds.
    pub seeds: Option<String>,
    pub profiles: Vec<ProfileSummary>,
    pub failures: Vec<FailureView>,
    /// Lines the summary adds (known differences gone past, seeds not set up, …).
    pub notes: Vec<String>,
    pub coverage: Option<Coverage>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileSummary {
    pub name: String,
    pub passed: usize,
    pub failed: usize,
    /// Failures an expectations file lists as they happened.
    pub known: usize,
    /// What was skipped and why: `(what, reason)`.
    pub skipped: Vec<(String, String)>,
}

/// One failure as the page shows it (and as an exploration's JSON report keeps it).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FailureView {
    /// `scratchpad::own_path_wins`, `seed 3 against the mutant x`.
    pub title: String,
    pub profile: String,
    /// The scenario's sentence, or the difference's signature.
    pub what: String,
    /// Where it diverged: `scenarios/x.tdm:12: alice write a`, `operation 6 (reap)`.
    pub at: String,
    pub expected: String,
    pub actual: String,
    /// The SPEC rules involved, by id.
    pub rules: Vec<String>,
    pub replay: String,
    /// Other seeds that showed the same difference, as a list.
    pub seeds: Option<String>,
    /// The (shrunk) operations, when the failure is a generated sequence.
    pub operations: Vec<String>,
    /// The trace lines, oldest first; the timeline is drawn from them.
    pub trace: Vec<String>,
    /// The trace is only its last lines (a scenario's report keeps a tail).
    pub trace_is_tail: bool,
    /// An expectations file lists it: where and why.
    pub known: Option<String>,
    /// The trace line where it diverged, when not the last (a world runs on past its first
    /// violation).
    #[serde(default)]
    pub diverged_line: Option<usize>,
    /// The model's state at the divergence, as a few lines ([`bounded_lines`]): what it held of
    /// the files, sessions or rows the diverging step touched, once its prediction was applied.
    /// Empty where no model ran beside the implementation (a scenario's expectations are
    /// written in its file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_state: Vec<String>,
}

/// Lines of a model's state kept at a divergence; the rest are counted.
pub const MODEL_STATE_LINES: usize = 12;
/// Bytes of one line of a model's state (a path may be a kilobyte long).
pub const MODEL_STATE_LINE_BYTES: usize = 300;

/// `lines` cut to [`MODEL_STATE_LINES`], the rest counted in a last line (`and 7 more`), each
/// line cut to [`MODEL_STATE_LINE_BYTES`] by the shared rule.
pub fn bounded_lines(lines: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for l in lines {
        if out.len() < MODEL_STATE_LINES {
            out.push(tidemark_sim::clip::clip_to(&l, MODEL_STATE_LINE_BYTES).into_owned());
        } else {
            more += 1;
        }
    }
    if more > 0 {
        out.push(format!("and {more} more"));
    }
    out
}

/// The page as one HTML document. `rules` holds SPEC.md's rule texts by id
/// (`crate::spec::rule_texts`).
pub fn render(page: &Page, rules: &BTreeMap<String, String>) -> String {
    let failed: usize = page.profiles.iter().map(|p| p.failed).sum();
    let verdict = if failed == 0 { "passed" } else { "failed" };
    let timelines: Vec<(Vec<String>, Vec<Row>)> = page
        .failures
        .iter()
        .take(FULL_FAILURES)
        .map(|f| timeline::timeline(&f.trace, TIMELINE_EVENTS, f.diverged_line))
        .collect();
    let most_lanes = timelines.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let doc = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (clip(&page.title)) " — " (verdict) }
                style { (PreEscaped(CSS)) (PreEscaped(lane_css(most_lanes))) }
            }
            body {
                header.(verdict) {
                    h1 { (clip(&page.title)) ": " (verdict) }
                    @if let Some(first) = page.failures.first() {
                        (divergence(first, "first-divergence"))
                    }
                    (summary(page))
                }
                @if !page.failures.is_empty() {
                    h2 { "Failures" }
                    @for (i, (f, t)) in page.failures.iter().zip(&timelines).enumerate() {
                        (failure(i, f, t, rules))
                    }
                    @if page.failures.len() > FULL_FAILURES {
                        h3 { (page.failures.len() - FULL_FAILURES) " more failures, listed" }
                        table.listed {
                            tr { th { "failure" } th { "where" } th { "replay" } }
                            @for f in &page.failures[FULL_FAILURES..] {
                                tr {
                                    td { (clip(&f.title)) }
                                    td { (clip(&f.at)) }
                                    td { code { (clip(&f.replay)) } }
                                }
                            }
                        }
                    }
                }
                @if let Some(c) = &page.coverage {
                    (coverage(c))
                }
            }
        }
    };
    doc.into_string()
}

/// Renders `page` and writes it to `path`.
pub fn write(path: &Path, page: &Page, rules: &BTreeMap<String, String>) -> Result<(), String> {
    std::fs::write(path, render(page, rules))
        .map_err(|e| format!("cannot write the HTML report {}: {e}", path.display()))
}

/// SPEC.md's rule texts, or none when it cannot be read (the page then shows ids alone).
pub fn rule_texts(spec: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(spec)
        .map(|s| crate::spec::rule_texts(&s))
        .unwrap_or_default()
}

fn summary(page: &Page) -> Markup {
    html! {
        dl.meta {
            dt { "implementation" } dd { code { (clip(&page.implementation)) } }
            dt { "harness" } dd { "tidemark " (page.harness_version) }
            @if let Some(s) = &page.seeds { dt { "seeds" } dd { (s) } }
            dt { "reproduce" } dd { code.cmd { (clip(&page.command)) } }
        }
        table.summary {
            tr { th { "profile" } th { "passed" } th { "failed" } th { "known" } th { "skipped" } }
            @for p in &page.profiles {
                tr {
                    td { (p.name) }
                    td { (p.passed) }
                    td.(if p.failed > 0 { "bad" } else { "" }) { (p.failed) }
                    td { (p.known) }
                    td { (p.skipped.len()) }
                }
            }
        }
        @for p in page.profiles.iter().filter(|p| !p.skipped.is_empty()) {
            details.skipped {
                summary { (p.name) ": " (p.skipped.len()) " skipped, with reasons" }
                ul {
                    @for (what, why) in p.skipped.iter().take(500) {
                        li { (clip(what)) ": " (clip_field(why)) }
                    }
                    @if p.skipped.len() > 500 { li { (p.skipped.len() - 500) " more" } }
                }
            }
        }
        @if !page.notes.is_empty() {
            ul.notes { @for n in &page.notes { li { (clip_field(n)) } } }
        }
    }
}

/// Where a failure diverged, expected beside actual, and how to replay it.
fn divergence(f: &FailureView, id: &str) -> Markup {
    html! {
        section.divergence id=(id) {
            p.at { strong { (clip(&f.title)) } " diverged at " (clip(&f.at)) }
            @if let Some(k) = &f.known { p.known { "known failure: " (clip_field(k)) } }
            div.pair.with-model[!f.model_state.is_empty()] {
                div.expected { h4 { "expected" } pre { (clip_field(&f.expected)) } }
                div.actual { h4 { "actual" } pre { (clip_field(&f.actual)) } }
                @if !f.model_state.is_empty() {
                    div.model {
                        h4 { "the model's state there" }
                        pre { @for l in &f.model_state { (clip(l)) "\n" } }
                    }
                }
            }
            p { "replay: " code.cmd { (clip(&f.replay)) } }
        }
    }
}

/// A SPEC paragraph as SPEC.md shows it: its Markdown `**bold**` and `` `code` `` spans
/// rendered rather than printed as asterisks and backticks; everything else is escaped text.
fn spec_text(text: &str) -> Markup {
    html! {
        @for (i, bold) in text.split("**").enumerate() {
            @let spans = html! {
                @for (j, span) in bold.split('`').enumerate() {
                    @if j % 2 == 1 { code { (span) } } @else { (span) }
                }
            };
            @if i % 2 == 1 { b { (spans) } } @else { (spans) }
        }
    }
}

fn failure(
    i: usize,
    f: &FailureView,
    (lanes, rows): &(Vec<String>, Vec<Row>),
    rules: &BTreeMap<String, String>,
) -> Markup {
    let quiet = timeline::quiet_lanes(lanes, rows);
    let lane_id = |k: usize| format!("f{}-lane-{}", i + 1, k + 1);
    html! {
        details.failure open[i == 0] id=(format!("failure-{}", i + 1)) {
            summary { span.n { (i + 1) } " " (clip(&f.title)) " — " (clip(&f.what)) }
            (divergence(f, &format!("divergence-{}", i + 1)))
            @if let Some(s) = &f.seeds { p { (clip(s)) } }
            @if !f.rules.is_empty() {
                div.rules {
                    h4 { "SPEC rules involved" }
                    @for r in &f.rules {
                        p { @match rules.get(r) {
                            Some(text) => { (spec_text(&clip(text))) }
                            None => { b { (clip(r)) } " (its text is not in SPEC.md)" }
                        } }
                    }
                }
            }
            @if !f.operations.is_empty() {
                details.ops {
                    summary { (f.operations.len()) " operations" }
                    ol start="0" { @for op in &f.operations { li { code { (clip(op)) } } } }
                }
            }
            h4 {
                "timeline"
                @if f.trace_is_tail { " (the trace's last " (f.trace.len()) " events)" }
            }
            @if rows.is_empty() {
                p { "no trace was recorded" }
            } @else {
                // A lane collapses with no script: its header is the label of a hidden checkbox
                // before the scroll box, and the page's CSS narrows that column while it is
                // checked (`lane_css`). Quiet lanes of a crowded timeline start checked.
                @for (k, _) in lanes.iter().enumerate() {
                    input.lane.(format!("l{}", k + 1)) type="checkbox" id=(lane_id(k)) checked[quiet[k]];
                }
                div.scroll {
                    table.timeline {
                        tr {
                            th { "simulated clock" }
                            @for (k, l) in lanes.iter().enumerate() {
                                th title=(format!("{}: click to collapse or expand", clip(l))) {
                                    label for=(lane_id(k)) { (clip(l)) }
                                }
                            }
                        }
                        @for row in rows { (timeline_row(row, lanes, f)) }
                    }
                }
            }
        }
    }
}

fn timeline_row(row: &Row, lanes: &[String], f: &FailureView) -> Markup {
    let span = lanes.len() + 1;
    match row {
        Row::Elided(n) => html! {
            tr.elided { td colspan=(span) { (n) " earlier events not shown (the replay command runs them)" } }
        },
        Row::ElidedAfter(n) => html! {
            tr.elided { td colspan=(span) { (n) " later events, after the divergence, not shown" } }
        },
        Row::Idle { from_ms, to_ms } => html! {
            tr.idle { td colspan=(span) { "⋯ " (timeline::duration(to_ms - from_ms)) " idle ⋯" } }
        },
        Row::Event { event, diverged } => html! {
            tr.diverged[*diverged] {
                td.t { @match event.at_ms { Some(ms) => (timeline::clock(ms)), None => "" } }
                @for l in lanes {
                    td {
                        @if *l == event.lane {
                            span.req { (clip(&event.request)) }
                            @if let Some(o) = &event.outcome {
                                " → " span.out { (clip(o)) }
                            }
                            @for d in &event.details { br; small { (clip(d)) } }
                            @if *diverged {
                                div.pair {
                                    div.expected { b { "expected " } (clip_field(&f.expected)) }
                                    div.actual { b { "actual " } (clip_field(&f.actual)) }
                                }
                            }
                        }
                    }
                }
            }
        },
    }
}

fn coverage(c: &Coverage) -> Markup {
    html! {
        h2 id="coverage" { "SPEC coverage" }
        p { (c.summary_line()) }
        p.small { (c.counting) }
        table.coverage {
            tr { th { "rule" } th { "scenarios citing it" } th { "exploration" } th { "unjudged" } }
            @for r in &c.rules {
                tr.(r.class()) {
                    td { (r.rule) }
                    td { (r.scenarios.len()) @if !r.scenarios.is_empty() { details { summary { "names" } (r.scenarios.join(", ")) } } }
                    td { @match r.explored { Some(n) => (n), None => "not explored" } }
                    td { @if let Some(why) = &r.unjudged { (clip(why)) } }
                }
            }
        }
    }
}

/// The rules that narrow lane `k`'s column while its checkbox (`input.lane.l<k>`) is checked,
/// for lanes 1 to `lanes`: its header shows a letter or two, its cells nothing.
fn lane_css(lanes: usize) -> String {
    let mut css = String::new();
    for k in 1..=lanes {
        let column = format!("input.l{k}:checked~.scroll tr>:nth-child({})", k + 1);
        css.push_str(&format!(
            "{column}{{min-width:0;width:14px;max-width:14px;padding:0 1px;font-size:0;overflow:hidden}}{column}>*{{display:none}}{column}>label{{display:block;font-size:11px;width:14px;overflow:hidden;white-space:nowrap}}\n"
        ));
    }
    css
}

const CSS: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#222}
header{padding:.5em 0;border-bottom:2px solid #ccc}
header.failed h1{color:#a00}header.passed h1{color:#060}
h1{font-size:1.3em;margin:.3em 0}
code,pre{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all}
pre{margin:0}
.cmd{background:#f3f3f3;padding:1px 4px;user-select:all}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:0 1em;margin:.3em 0}
dl.meta dt{color:#666}dl.meta dd{margin:0}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;vertical-align:top;text-align:left}
td.bad{color:#a00;font-weight:bold}
.divergence{border-left:4px solid #a00;padding:.2em .8em;margin:.5em 0;background:#fff6f6}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:.5em}.pair.with-model{grid-template-columns:1fr 1fr 1.3fr}
.model{background:#eef2fb;padding:2px 4px}.model pre{max-height:14em;overflow:auto}
.expected{background:#eef8ee;padding:2px 4px}.actual{background:#fbeaea;padding:2px 4px}
h4{margin:.4em 0 .2em;font-size:1em}
.rules p{margin:.2em 0;padding:.2em .5em;background:#f7f7ff}
.scroll{max-height:70vh;overflow:auto;display:flex;flex-direction:column-reverse;border:1px solid #ccc}
table.timeline th{position:sticky;top:0;background:#eee}
input.lane{display:none}table.timeline th label{cursor:pointer;text-decoration:underline dotted}
table.timeline td{min-width:8em;font-family:ui-monospace,monospace;font-size:12px}
table.timeline td.t{white-space:nowrap;color:#555}
tr.idle td,tr.elided td{text-align:center;color:#777;background:#fafafa;font-style:italic}
tr.diverged td{background:#fdd}
details.failure{border:1px solid #ccc;margin:.6em 0;padding:.3em .6em}
details.failure>summary{font-weight:bold;cursor:pointer}
.n{background:#a00;color:#fff;border-radius:3px;padding:0 5px}
tr.neither td:first-child{color:#a00;font-weight:bold}tr.gap td:first-child{color:#b60}
";

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "<script>alert(1)</script>";

    fn page_with(text: &str) -> Page {
        Page {
            title: "tidemark run".into(),
            command: format!("tidemark run --impl '{text}'"),
            implementation: text.into(),
            harness_version: "0.1.0".into(),
            seeds: None,
            profiles: vec![ProfileSummary {
                name: "scratchpad".into(),
                passed: 1,
                failed: 1,
                known: 0,
                skipped: vec![(text.into(), text.into())],
            }],
            failures: vec![FailureView {
                title: format!("scratchpad::{text}"),
                profile: "scratchpad".into(),
                what: text.into(),
                at: format!("scenarios/{text}.tdm:3: alice@#g write {text}"),
                expected: "written a".into(),
                actual: text.into(),
                rules: vec!["SP-2.1".into(), text.into()],
                replay: format!("tidemark run --only scratchpad::{text}"),
                seeds: None,
                operations: vec![text.into()],
                trace: vec![
                    format!("{:>14} alice@#g write {text} -> {text}", 0),
                    format!("{:>14} advance 1d", 86_400_000),
                    format!("{:>14} bob@#g read a -> refused {text}", 86_400_000),
                ],
                trace_is_tail: true,
                known: None,
                diverged_line: None,
                model_state: vec![format!("session t-1: {text} 200 B, +0ms")],
            }],
            notes: vec![text.into()],
            coverage: None,
        }
    }

    #[test]
    fn content_from_the_implementation_is_escaped_everywhere_it_appears() {
        let rules = BTreeMap::from([("SP-2.1".to_string(), format!("**SP-2.1** {HOSTILE}"))]);
        let html = render(&page_with(HOSTILE), &rules);
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        // The page has no script of its own, so any `<script` would be the input's.
        assert!(!html.to_ascii_lowercase().contains("<script"), "{html}");
        let count = html.matches("&lt;script&gt;").count();
        assert!(
            count >= 12,
            "the hostile text appears escaped in every field: {count}"
        );
    }

    #[test]
    fn a_small_failing_run_renders_as_its_snapshot() {
        let rules = BTreeMap::from([(
            "SP-2.1".to_string(),
            "**SP-2.1** An empty path is refused: `empty_path`.".to_string(),
        )]);
        insta::assert_snapshot!(render(&page_with("notes.md"), &rules));
    }

    #[test]
    fn thousands_of_failures_make_a_page_of_bounded_size() {
        let one = page_with("x").failures[0].clone();
        let mut page = page_with("x");
        page.failures = vec![one; 5_000];
        let html = render(&page, &BTreeMap::new());
        assert!(html.contains("4975 more failures, listed"));
        assert!(html.len() < 2_000_000, "{} bytes", html.len());
    }
}
