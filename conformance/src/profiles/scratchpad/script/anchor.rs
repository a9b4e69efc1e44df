//! No hollow absence checks. An absence check passes against an implementation that stores
//! nothing at all, or that keeps its files somewhere the check does not look, so a scenario must
//! first show the thing existed, in the same terms:
//!
//! - `disk absent P` needs an earlier `disk exists Q`, or an earlier `disk mkdir|write|symlink Q`
//!   (the harness made it), with `Q` at `P` or below it;
//! - an empty listing (`=> []`) needs an earlier listing of the same path, by a member of the
//!   same session, that expected entries.
//!
//! The loader refuses an unanchored check with its line.

use super::{Action, Call, DiskAction, Expect, PathTemplate, SessionKey, Step};

pub(super) fn check(steps: &[Step]) -> Result<(), (usize, String)> {
    for (i, step) in steps.iter().enumerate() {
        let earlier = &steps[..i];
        match &step.action {
            Action::Disk(DiskAction::Absent(p)) if !earlier.iter().any(|s| shows_on_disk(s, p)) => {
                return Err((
                        step.line,
                        format!(
                            "'disk absent {p}' is not anchored: an earlier 'disk exists' (or a disk step \
                             that made it) must show {p} or something below it existed, or the check \
                             passes against an implementation that never wrote there"
                        ),
                ));
            }
            Action::Call {
                call: call @ Call::List { .. },
                expect: Expect::Listing(entries),
            } if entries.is_empty() && !earlier.iter().any(|s| lists_entries(s, call)) => {
                return Err((
                    step.line,
                    "this empty listing is not anchored: an earlier listing of the same path by a \
                     member of the same session must expect entries, or the check passes against an \
                     implementation that stores nothing"
                        .into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `step` showed that something at or below `absent` existed.
fn shows_on_disk(step: &Step, absent: &PathTemplate) -> bool {
    match &step.action {
        Action::Disk(DiskAction::Exists(q) | DiskAction::Mkdir(q) | DiskAction::Write(q, _)) => {
            absent.contains(q)
        }
        Action::Disk(DiskAction::Symlink { link, .. }) => absent.contains(link),
        _ => false,
    }
}

/// Whether `step` is a listing like `empty` (same session, same path) that expected entries.
fn lists_entries(step: &Step, empty: &Call) -> bool {
    let Action::Call {
        call: call @ Call::List { path, .. },
        expect: Expect::Listing(entries),
    } = &step.action
    else {
        return false;
    };
    let Call::List {
        path: empty_path, ..
    } = empty
    else {
        return false;
    };
    !entries.is_empty()
        && SessionKey::of(call.caller()) == SessionKey::of(empty.caller())
        && path == empty_path
}
