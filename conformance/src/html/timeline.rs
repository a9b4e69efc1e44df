//! A failure's trace as a timeline: each line one event on the simulated clock, in the lane of
//! the actor that did it, with the stretches where nothing happened compressed into one labelled
//! row. Reads only what every trace line is by contract (`tidemark_sim::trace::Trace::record`:
//! the simulated milliseconds right-aligned, a space, the event) and the profiles' habit of
//! writing `request -> outcome`; a line without a time (the scoped exploration's) is an event
//! at an unknown time, an indented line a detail of the event before it.
//!
//! Which lane an event goes in is read from its first word ([`lane_of`]), in the three
//! profiles' vocabulary. A word it does not know puts the event in the `operations` lane: the
//! lane is what the page shows, never part of a verdict.

/// One event of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Simulated milliseconds since the epoch, when the line carries them.
    pub at_ms: Option<i64>,
    pub lane: String,
    pub request: String,
    pub outcome: Option<String>,
    /// Indented lines that followed it (`(sweep: swept 0 sessions)`, a state hash).
    pub details: Vec<String>,
}

/// What a timeline shows, row by row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    Event {
        event: Event,
        diverged: bool,
    },
    /// The simulated clock moved this far with no event in between.
    Idle {
        from_ms: i64,
        to_ms: i64,
    },
    /// Events before the shown ones, left out to keep the page small.
    Elided(usize),
    /// Events after the divergence (a world runs on past its first violation), left out.
    ElidedAfter(usize),
}

/// Events shown after the diverging one.
pub const AFTER_DIVERGENCE: usize = 3;

/// A gap between two events at least this long is an idle stretch, shown as one row.
pub const IDLE_MS: i64 = 60_000;

/// The lanes in order of first appearance, and the rows: up to `max_events` events of `trace`
/// ending a few events after the diverging one (the event holding line `diverged_line`, or the
/// last event when `None`), idle stretches between them, the diverging event marked.
pub fn timeline(
    trace: &[String],
    max_events: usize,
    diverged_line: Option<usize>,
) -> (Vec<String>, Vec<Row>) {
    let (events, starts) = parse_with_lines(trace);
    let diverged = match diverged_line {
        Some(line) => starts.iter().rposition(|s| *s <= line).unwrap_or(0),
        None => events.len().saturating_sub(1),
    };
    let end = (diverged + 1 + AFTER_DIVERGENCE).min(events.len());
    let skipped = end.saturating_sub(max_events);
    let shown = &events[skipped..end];
    let mut lanes: Vec<String> = Vec::new();
    for e in shown {
        if !lanes.contains(&e.lane) {
            lanes.push(e.lane.clone());
        }
    }
    let mut rows = Vec::new();
    if skipped > 0 {
        rows.push(Row::Elided(skipped));
    }
    let mut last_at: Option<i64> = None;
    for (i, e) in shown.iter().enumerate() {
        if let (Some(before), Some(at)) = (last_at, e.at_ms) {
            if at - before >= IDLE_MS {
                rows.push(Row::Idle {
                    from_ms: before,
                    to_ms: at,
                });
            }
        }
        last_at = e.at_ms.or(last_at);
        rows.push(Row::Event {
            event: e.clone(),
            diverged: skipped + i == diverged,
        });
    }
    if end < events.len() {
        rows.push(Row::ElidedAfter(events.len() - end));
    }
    (lanes, rows)
}

/// Lanes a timeline opens with when it has more: the rest, the quiet ones, start collapsed.
pub const OPEN_LANES: usize = 6;

/// For each of `lanes`, whether the page starts with it collapsed: none when there are at most
/// [`OPEN_LANES`]; else every lane but the diverging event's and the busiest others (most events
/// shown, the first to appear among equals), [`OPEN_LANES`] open in all.
pub fn quiet_lanes(lanes: &[String], rows: &[Row]) -> Vec<bool> {
    if lanes.len() <= OPEN_LANES {
        return vec![false; lanes.len()];
    }
    let mut events = vec![0usize; lanes.len()];
    let mut diverged = None;
    for row in rows {
        if let Row::Event { event, diverged: d } = row {
            if let Some(k) = lanes.iter().position(|l| *l == event.lane) {
                events[k] += 1;
                if *d {
                    diverged = Some(k);
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..lanes.len()).collect();
    // The diverging lane first, then by events, most first; `sort_by_key` is stable, so equals
    // keep their order of first appearance.
    order.sort_by_key(|k| (Some(*k) != diverged, std::cmp::Reverse(events[*k])));
    let mut quiet = vec![true; lanes.len()];
    for k in order.into_iter().take(OPEN_LANES) {
        quiet[k] = false;
    }
    quiet
}

/// The trace's lines as events.
pub fn parse(trace: &[String]) -> Vec<Event> {
    parse_with_lines(trace).0
}

/// The events, and the index of the line each starts at.
fn parse_with_lines(trace: &[String]) -> (Vec<Event>, Vec<usize>) {
    let mut events: Vec<Event> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    for (n, line) in trace.iter().enumerate() {
        let (at_ms, text) = split_time(line);
        // An indented line without a time continues the event before it.
        if at_ms.is_none() && line.starts_with(' ') && !events.is_empty() {
            let last = events.last_mut().expect("an event before");
            last.details.push(line.trim().to_string());
            continue;
        }
        if at_ms.is_some() && text.starts_with(' ') && !events.is_empty() {
            let last = events.last_mut().expect("an event before");
            last.details.push(text.trim().to_string());
            continue;
        }
        let (request, outcome) = match text.split_once(" -> ") {
            Some((r, o)) => (r.to_string(), Some(o.to_string())),
            None => (text.to_string(), None),
        };
        starts.push(n);
        events.push(Event {
            at_ms,
            lane: lane_of(&request),
            request,
            outcome,
            details: Vec::new(),
        });
    }
    (events, starts)
}

/// `(Some(ms), event)` for a line `Trace::record` wrote (at least one space-padded number,
/// then a space), else `(None, line)`.
fn split_time(line: &str) -> (Option<i64>, &str) {
    let trimmed = line.trim_start();
    let digits = trimmed
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
        .map(|(i, _)| i)
        .unwrap_or(trimmed.len());
    let number = &trimmed[..digits];
    match (number.parse::<i64>(), trimmed[digits..].strip_prefix(' ')) {
        (Ok(ms), Some(rest)) if line.len() >= 14 => (Some(ms), rest),
        _ => (None, line),
    }
}

/// The actor of an event, from its first word: a caller (`alice@#g/T1` → `alice`), a world's
/// client (`c1#2` → `c1`), a scoped caller (`a1/s2`), the sweeper or reaper (`sweep`, `tick`,
/// `reap`, a start that sweeps), the harness's own steps (clock moves, faults, crashes,
/// restarts, partitions, disk steps, the oracle's verdicts), else `operations`.
pub fn lane_of(event: &str) -> String {
    let mut words = event.split_whitespace();
    let first = words.next().unwrap_or("");
    let second = words.next().unwrap_or("");
    if let Some((caller, _)) = first.split_once('@') {
        if !caller.is_empty() {
            return caller.to_string();
        }
    }
    if let Some((client, n)) = first.split_once('#') {
        if !client.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            return client.to_string();
        }
    }
    let harness = [
        "advance",
        "clock",
        "jump",
        "crash",
        "crashed",
        "restart",
        "restarted",
        "stop",
        "kill",
        "partition",
        "heal",
        "fault",
        "faults",
        "store",
        "down",
        "up",
        "disk",
        "plant",
        "no",
        "VIOLATION",
        "liveness",
        "safety",
        "expected",
        "actual",
        "server",
        "state",
        "the",
        "names",
    ];
    let sweeper = [
        "sweep",
        "swept",
        "tick",
        "reap",
        "reaped",
        "reaper",
        "lifecycle",
    ];
    if sweeper.contains(&first) || (first == "start" && (second.is_empty() || second == "->")) {
        return "sweeper / reaper".into();
    }
    if harness.contains(&first) {
        return "harness".into();
    }
    if first.contains('/') && !first.starts_with('/') {
        return first.to_string();
    }
    if first.starts_with('g') && first[1..].bytes().all(|b| b.is_ascii_digit()) && first.len() > 1 {
        return first.to_string();
    }
    "operations".into()
}

/// Simulated milliseconds as a person reads them: `+5d 3h`, `+12m 4s`, `+243ms`.
pub fn clock(ms: i64) -> String {
    format!("+{}", duration(ms))
}

/// A duration: its two largest units (`4d 23h`, `3m 2s`, `980ms`).
pub fn duration(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let units = [
        (86_400_000u64, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
    ];
    let mut parts = Vec::new();
    let mut rest = ms;
    for (size, unit) in units {
        if rest >= size || !parts.is_empty() {
            parts.push(format!("{}{unit}", rest / size));
            rest %= size;
        }
        if parts.len() == 2 {
            break;
        }
    }
    if parts.is_empty() {
        return format!("{sign}{ms}ms");
    }
    format!("{sign}{}", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(ls: &[&str]) -> Vec<String> {
        ls.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn each_actor_gets_a_lane_and_a_quiet_week_is_one_idle_row() {
        let trace = lines(&[
            "             0 start -> swept []",
            "             0 alice@#g/T1 write notes.md 200B -> written a/notes.md",
            "     604800000 advance 7d",
            "     604800000 bob@#g/T1 read notes.md -> refused not_found",
        ]);
        let (lanes, rows) = timeline(&trace, 100, None);
        assert_eq!(lanes, ["sweeper / reaper", "alice", "harness", "bob"]);
        assert_eq!(rows.len(), 5, "{rows:?}");
        assert_eq!(
            rows[2],
            Row::Idle {
                from_ms: 0,
                to_ms: 604_800_000
            }
        );
        match &rows[4] {
            Row::Event { event, diverged } => {
                assert!(diverged);
                assert_eq!(event.outcome.as_deref(), Some("refused not_found"));
                assert_eq!(event.at_ms, Some(604_800_000));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lines_without_a_time_are_events_at_no_time_and_indented_ones_their_details() {
        let trace = lines(&[
            "a1/s2 write session/notes.md",
            "sweep",
            "  (sweep: swept 0 sessions)",
        ]);
        let events = parse(&trace);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].lane, "a1/s2");
        assert_eq!(events[1].details, ["(sweep: swept 0 sessions)"]);
        assert_eq!(events[1].at_ms, None);
    }

    #[test]
    fn only_the_last_events_are_kept_and_the_rest_counted() {
        let trace: Vec<String> = (0..50).map(|i| format!("{i:>14} c0#{i} read")).collect();
        let (_, rows) = timeline(&trace, 10, None);
        assert_eq!(rows[0], Row::Elided(40));
        assert_eq!(rows.len(), 11);
    }

    #[test]
    fn a_divergence_before_the_end_is_marked_and_what_follows_it_counted() {
        let trace: Vec<String> = (0..50).map(|i| format!("{i:>14} c0#{i} read")).collect();
        let (_, rows) = timeline(&trace, 10, Some(20));
        assert_eq!(rows[0], Row::Elided(14));
        assert_eq!(rows.last(), Some(&Row::ElidedAfter(26)));
        let marked: Vec<&Event> = rows
            .iter()
            .filter_map(|r| match r {
                Row::Event {
                    event,
                    diverged: true,
                } => Some(event),
                _ => None,
            })
            .collect();
        assert_eq!(marked.len(), 1);
        assert_eq!(marked[0].request, "c0#20 read");
    }

    #[test]
    fn a_timeline_of_many_actors_starts_with_its_quiet_lanes_collapsed_never_the_diverging_one() {
        let mut trace: Vec<String> = Vec::new();
        for (n, who) in ["a", "b", "c", "d", "e", "f", "g", "h"].iter().enumerate() {
            for i in 0..=n {
                trace.push(format!("{:>14} {who}@#g read x{i} -> ok", trace.len()));
            }
        }
        // The divergence is in the quietest lane, `a`, with one event before it.
        trace.push(format!(
            "{:>14} a@#g read y -> refused not_found",
            trace.len()
        ));
        let (lanes, rows) = timeline(&trace, 1_000, None);
        assert_eq!(lanes.len(), 8);
        let quiet = quiet_lanes(&lanes, &rows);
        let collapsed: Vec<&str> = lanes
            .iter()
            .zip(&quiet)
            .filter(|(_, q)| **q)
            .map(|(l, _)| l.as_str())
            .collect();
        // `a` diverged; `h`, `g`, `f`, `e`, `d` are the busiest others; `b` and `c` are quiet.
        assert_eq!(collapsed, ["b", "c"]);
        let (few, rows) = timeline(&trace[..10], 1_000, None);
        assert_eq!(quiet_lanes(&few, &rows), vec![false; few.len()]);
    }

    #[test]
    fn durations_read_in_their_two_largest_units() {
        assert_eq!(duration(243), "243ms");
        assert_eq!(duration(432_000_000), "5d 0h");
        assert_eq!(duration(90_061_000), "1d 1h");
        assert_eq!(duration(61_000), "1m 1s");
    }
}
