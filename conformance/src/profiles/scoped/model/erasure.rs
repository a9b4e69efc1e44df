//! SL-4's erasure obligations in a model sequence (generator 7): erasures requested with
//! deadlines past, at and after `now`, swept before and after their deadline, by a sweeper that
//! crashes between a batch and its record, whose keys fail, or that was down while the
//! lifecycle backstop took the subject's session files; turns writing into a subject being
//! erased and after, and the subject created again while its erasure is pending and after.
//!
//! The subjects are their own ([`SUBJECTS`]: two agents of the model's workspace and a workspace
//! beside it, each with one session), so an erasure never takes the sessions the rest of the
//! sequence works in and the other operations keep their reach.
//!
//! What the model predicts, read back as a harness reads it (SL-4.7: the reference's rows as
//! its declared queries yield them, `ErasureLedger::of_metadata`, on both tiers):
//! - a request with a deadline before `now` is `invalid_policy` and changes nothing; one at or
//!   after it deletes the subject's rows at once: a turn in it is `unknown_entity`, and creating
//!   it again is `erasure_pending` until the obligation is met, `Ok` (a new, empty subject)
//!   after (SL-1.4, SL-4.1, SL-4.6);
//! - the obligation is met by the first sweep that completes (every sweep of the sequence ends
//!   healed, so the sweep operation that follows the request), at that sweep's `now`: `met` on
//!   or before its deadline, `missed` by `done - deadline` after it, and `pending` or `overdue`
//!   by `now - deadline` until then, backstop or not (SL-4.4, SL-4.5);
//! - its proof names each key that was under the subject when it was requested, once, except
//!   those the backstop took before the sweeper came (SL-4.3, SL-4.5): the model writes down
//!   the bucket's keys under the subject's prefixes at the request (nothing can land there after
//!   it: the rows are gone) and those the backstop's rule removed;
//! - after a sweep the store left incomplete under faults, a key the proof names is gone from
//!   the bucket and was under the subject, and an obligation read done holds no key (SL-4.2,
//!   SL-4.3); then the store heals and sweeps again, which must meet it.

use std::collections::BTreeSet;
use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tidemark_reference::clock::{Clock, Timestamp, DAY_MS, HOUR_MS};
use tidemark_reference::scoped::{ScopeSettings, ScopedError, TurnSpace};

use super::ops::{ModelOp, SKILL_FILES, WORKSPACE};
use super::{diverged, harness, Runner, Step, BUCKET};
use crate::profiles::scoped::erasure::{state_text, subject_text, ErasureLedger};

/// An erasure's subject by its short names: the workspace it is in (or is), its agent and that
/// agent's one session.
pub(super) struct Subject {
    workspace: &'static str,
    agent: &'static str,
    session: &'static str,
    /// The subject is the workspace (else the agent).
    whole_workspace: bool,
}

/// The subjects an erasure draws from: two agents of the model's workspace, and a workspace of
/// its own (with an agent, a session and the model's skill version).
pub(super) const SUBJECTS: [Subject; 3] = [
    Subject {
        workspace: WORKSPACE,
        agent: "e1",
        session: "e1/s1",
        whole_workspace: false,
    },
    Subject {
        workspace: WORKSPACE,
        agent: "e2",
        session: "e2/s1",
        whole_workspace: false,
    },
    Subject {
        workspace: "x1",
        agent: "x1a",
        session: "x1a/s1",
        whole_workspace: true,
    },
];

/// An erasure's deadline from its request's `now`, and how it reads: two before `now` (refused,
/// the second by a millisecond), `now` itself (accepted, SL-4.4), near and far.
pub(super) const DEADLINES: [(i64, &str); 7] = [
    (-HOUR_MS, "an hour ago"),
    (-1, "a millisecond ago"),
    (0, "now"),
    (HOUR_MS, "1h"),
    (12 * HOUR_MS, "12h"),
    (2 * DAY_MS, "2d"),
    (20 * DAY_MS, "20d"),
];

/// What an erasure's operation does right after an accepted request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Then {
    /// Nothing: the sequence's later operations sweep, fault and move the clock.
    Nothing,
    /// A sweep at once that crashes after the erasure's DeleteObjects and before its record; a
    /// new process sweeps at startup (`ModelOp::CrashSweep`).
    Crash,
    /// The sweeper down a day past the deadline (the obligation read overdue), then a sweep
    /// in which the store fails a share of the keys, a heal and a sweep
    /// (`ModelOp::FaultySweep`).
    DownKeysFailing,
    /// The sweeper down two days past the deadline, the backstop's rule taking the subject's
    /// session files meanwhile (the obligation read overdue, proving nothing), then a sweep.
    DownBackstop,
}

impl Then {
    fn of(then: u8) -> Then {
        match then % 7 {
            4 => Then::Crash,
            5 => Then::DownKeysFailing,
            6 => Then::DownBackstop,
            _ => Then::Nothing,
        }
    }
}

/// Where a subject stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Standing {
    /// Never created.
    #[default]
    Absent,
    /// Created (again), its rows in place.
    Live,
    /// Erased, under the model's obligation of this index (met or pending).
    Erased(usize),
}

/// What the model expects of one accepted erasure.
#[derive(Clone, Debug)]
struct Expected {
    subject: usize,
    deadline: i64,
    /// The keys under the subject's prefixes when it was requested.
    keys: BTreeSet<String>,
    /// Those of them the backstop took before a sweep could.
    taken: BTreeSet<String>,
    /// When the model knows it met: the sweep that completed it.
    done_at: Option<i64>,
}

impl Expected {
    /// The keys its proof names once met: the sweeps deleted every key but the backstop's.
    fn proof(&self) -> BTreeSet<String> {
        self.keys.difference(&self.taken).cloned().collect()
    }
}

/// SL-4's state in the model.
#[derive(Clone, Debug, Default)]
pub(super) struct ErasureModel {
    standing: [Standing; 3],
    /// Every accepted erasure, in request order (the reference's id order).
    expected: Vec<Expected>,
}

impl ErasureModel {
    /// The erasures no sweep has met yet that have keys for a sweep to delete (SL-4): one
    /// whose keys the backstop took sends no DeleteObjects when it is met.
    pub(super) fn pending_with_keys(&self) -> usize {
        self.expected
            .iter()
            .filter(|e| e.done_at.is_none() && !e.proof().is_empty())
            .count()
    }

    /// Whether any erasure was accepted: the ledger checks run from then on, so a sequence of
    /// an older generator reads nothing more.
    pub(super) fn active(&self) -> bool {
        !self.expected.is_empty()
    }

    fn pending(&self, s: usize) -> bool {
        matches!(self.standing[s], Standing::Erased(k) if self.expected[k].done_at.is_none())
    }

    pub(super) fn state_lines(&self, now: i64) -> Vec<String> {
        let mut out = Vec::new();
        for (s, standing) in self.standing.iter().enumerate() {
            if *standing != Standing::Absent {
                out.push(format!("erasure subject {}: {standing:?}", name(s)));
            }
        }
        for (k, e) in self.expected.iter().enumerate() {
            out.push(format!(
                "erasure {k} of {}: {} ({} keys, {} taken by the backstop)",
                name(e.subject),
                state_text(e.deadline, e.done_at, now),
                e.keys.len(),
                e.taken.len()
            ));
        }
        out
    }
}

/// One erasure operation.
pub(super) fn one(rng: &mut ChaCha8Rng) -> ModelOp {
    let subject = rng.gen_range(0..SUBJECTS.len() as u8);
    if rng.gen_bool(0.45) {
        ModelOp::Erase {
            subject,
            deadline: rng.gen_range(0..DEADLINES.len() as u8),
            then: rng.gen_range(0..7),
        }
    } else {
        ModelOp::ErasureTouch {
            subject,
            action: rng.gen_range(0..3),
        }
    }
}

fn subject(s: u8) -> usize {
    s as usize % SUBJECTS.len()
}

fn name(s: usize) -> String {
    let n = &SUBJECTS[s];
    if n.whole_workspace {
        format!("workspace {}", n.workspace)
    } else {
        format!("agent {}/{}", n.workspace, n.agent)
    }
}

/// How `ModelOp`'s `Display` writes the erasure operations.
pub(super) fn describe(op: &ModelOp, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match *op {
        ModelOp::Erase {
            subject: s,
            deadline,
            then,
        } => {
            let (_, within) = DEADLINES[deadline as usize % DEADLINES.len()];
            write!(f, "erase {} by {within}", name(subject(s)))?;
            match Then::of(then) {
                Then::Nothing => Ok(()),
                Then::Crash => write!(
                    f,
                    ", then a sweep crashing between its batch and its record, restart, sweep"
                ),
                Then::DownKeysFailing => write!(
                    f,
                    ", then the sweeper down past the deadline, a sweep with keys failing, heal, sweep"
                ),
                Then::DownBackstop => write!(
                    f,
                    ", then the sweeper down past the deadline while the backstop takes the session files, sweep"
                ),
            }
        }
        ModelOp::ErasureTouch { subject: s, action } => match action % 3 {
            0 => write!(f, "a turn writes into {}'s session", name(subject(s))),
            1 => write!(f, "create {} again", name(subject(s))),
            _ => write!(f, "read the erasures and proofs of {}", name(subject(s))),
        },
        _ => unreachable!("not an erasure operation: {op:?}"),
    }
}

/// When the ledger is read, which says what it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reading {
    /// With no sweep since the model last knew: an obligation stands as the model has it.
    Audit,
    /// After a sweep the store may have left incomplete (faults): a pending obligation may
    /// have been met by it, at its `now`.
    Interim,
    /// After a sweep operation that completed: every obligation met.
    Swept,
}

impl Runner<'_> {
    /// Performs an erasure operation.
    pub(super) async fn erasure_op(&mut self, step: usize, op: &ModelOp, now: i64) -> Step {
        match *op {
            ModelOp::Erase {
                subject: s,
                deadline,
                then,
            } => {
                let (offset, _) = DEADLINES[deadline as usize % DEADLINES.len()];
                self.erase(step, subject(s), now + offset, Then::of(then), now)
                    .await
            }
            ModelOp::ErasureTouch { subject: s, action } => {
                let s = subject(s);
                match action % 3 {
                    0 => self.write_into_subject(s, step).await,
                    1 => self.create_subject_again(s).await,
                    _ => self.check_erasures(now, Reading::Audit).await,
                }
            }
            _ => unreachable!("not an erasure operation: {op:?}"),
        }
    }

    fn subject_ids(&self, s: usize) -> (String, String, String) {
        let n = &SUBJECTS[s];
        (
            self.ids.id(n.workspace),
            self.ids.id(n.agent),
            self.ids.id(n.session),
        )
    }

    fn subject_turn(&self, s: usize) -> TurnSpace {
        let (ws, agent, session) = self.subject_ids(s);
        TurnSpace::new(&ws, &agent, &session).expect("fixed valid names")
    }

    /// The subject as SL-4.7 spells it.
    fn subject_text(&self, s: usize) -> String {
        let (ws, agent, _) = self.subject_ids(s);
        subject_text(
            &ws,
            (!SUBJECTS[s].whole_workspace).then_some(agent.as_str()),
        )
    }

    /// SL-4.2's prefixes of the subject.
    fn subject_prefixes(&self, s: usize) -> Vec<String> {
        let (ws, agent, _) = self.subject_ids(s);
        if SUBJECTS[s].whole_workspace {
            ["workspaces", "skills", "agents", "sessions"]
                .iter()
                .map(|c| format!("{c}/{ws}/"))
                .collect()
        } else {
            vec![
                format!("agents/{ws}/{agent}/"),
                format!("sessions/{ws}/{agent}/"),
            ]
        }
    }

    /// Every key under the subject's prefixes now.
    fn subject_keys(&self, s: usize) -> BTreeSet<String> {
        self.subject_prefixes(s)
            .iter()
            .flat_map(|p| self.mem.keys(BUCKET, p))
            .collect()
    }

    /// The keys in the bucket under the subjects standing live (set up, or created again, and
    /// not erased since): the model follows their sessions only for their erasures.
    pub(super) fn live_subject_keys(&self) -> BTreeSet<String> {
        (0..SUBJECTS.len())
            .filter(|&s| self.model.erasure.standing[s] == Standing::Live)
            .flat_map(|s| self.subject_keys(s))
            .collect()
    }

    /// Whether `prefix` (a recorded deletion's) is under a subject created again after its
    /// erasure was met: the new subject's files are there by right (SL-4.6).
    pub(super) fn reused_by_a_subject(&self, prefix: &str) -> bool {
        (0..SUBJECTS.len()).any(|s| {
            self.model.erasure.standing[s] == Standing::Live
                && self
                    .subject_prefixes(s)
                    .iter()
                    .any(|p| prefix.starts_with(p.as_str()))
        })
    }

    /// Creates the subject's workspace (for a workspace subject), agent and session; the first
    /// refusal is the answer.
    async fn create_subject(&self, s: usize) -> Result<(), ScopedError> {
        let (ws, agent, _) = self.subject_ids(s);
        if SUBJECTS[s].whole_workspace {
            self.store
                .create_workspace(&ws, ScopeSettings::default())
                .await?;
        }
        self.store
            .create_agent(&ws, &agent, ScopeSettings::default())
            .await?;
        self.store.create_session(&self.subject_turn(s)).await
    }

    /// Creating the subject (again): `erasure_pending` while its erasure is pending, else `Ok`
    /// (a subject never created, one that exists, or a new, empty one once its erasure is met).
    async fn create_subject_again(&mut self, s: usize) -> Step {
        let r = self.create_subject(s).await;
        let pending = self.model.erasure.pending(s);
        match r {
            Err(e) if pending && e.kind() == "erasure_pending" => Ok(()),
            Ok(()) if !pending => {
                self.model.erasure.standing[s] = Standing::Live;
                Ok(())
            }
            r => diverged(
                format!(
                    "create {}: {}",
                    name(s),
                    if pending {
                        "refused erasure_pending (SL-4.6)"
                    } else {
                        "Ok"
                    }
                ),
                format!("create {}: {:?}", name(s), r.map_err(|e| e.kind())),
            ),
        }
    }

    /// A turn's write into the subject's session: `Ok` while it lives (a failed write under
    /// faults is no write), `unknown_entity` once erased, its rows gone (SL-4.6).
    async fn write_into_subject(&mut self, s: usize, step: usize) -> Step {
        let r = self
            .store
            .write(
                &self.subject_turn(s),
                "session/notes.md",
                format!("v{step}").into_bytes(),
            )
            .await;
        let live = self.model.erasure.standing[s] == Standing::Live;
        match r {
            Ok(_) if live => Ok(()),
            Err(ScopedError::Storage { .. }) if live && self.faulty() => {
                self.note("failed: storage");
                Ok(())
            }
            Err(e) if !live && e.kind() == "unknown_entity" => Ok(()),
            r => diverged(
                format!(
                    "write into {}: {}",
                    name(s),
                    if live {
                        "Ok"
                    } else {
                        "refused unknown_entity (its rows are gone, SL-4.6)"
                    }
                ),
                format!("write into {}: {:?}", name(s), r.map_err(|e| e.kind())),
            ),
        }
    }

    /// Sets a subject up with files, on a healed store (what faults do to writes is the other
    /// operations' to explore): its session's two files, an agent file, and for a workspace
    /// the model's skill version.
    async fn set_up_subject(&mut self, s: usize, step: usize) -> Step {
        if self.faulty() {
            self.server.faults().heal();
        }
        let result = async {
            if let Err(e) = self.create_subject(s).await {
                return diverged(
                    format!("create {}: Ok", name(s)),
                    format!("create {}: {e}", name(s)),
                );
            }
            let turn = self.subject_turn(s);
            for guest in [
                "session/notes.md",
                "session/dir/data.csv",
                "agent/upload.pdf",
            ] {
                if let Err(e) = self
                    .store
                    .write(&turn, guest, format!("v{step} {guest}").into_bytes())
                    .await
                {
                    return diverged(
                        format!("{} writes {guest}: Ok", name(s)),
                        format!("{} writes {guest}: {e}", name(s)),
                    );
                }
            }
            if SUBJECTS[s].whole_workspace {
                let skill = SKILL_FILES
                    .iter()
                    .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                    .collect();
                if let Err(e) = self
                    .store
                    .publish_skill_version(turn.workspace.as_str(), &skill)
                    .await
                {
                    return diverged("publish skill: Ok", format!("publish skill: {e}"));
                }
            }
            Ok(())
        }
        .await;
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        result?;
        self.model.erasure.standing[s] = Standing::Live;
        Ok(())
    }

    /// SL-4.1 and SL-1.4: the request, on a subject set up first unless it lives (creating
    /// one whose erasure is pending is refused, SL-4.6), then what `then` stages.
    async fn erase(&mut self, step: usize, s: usize, deadline: i64, then: Then, now: i64) -> Step {
        if self.model.erasure.standing[s] != Standing::Live {
            if self.model.erasure.pending(s) {
                self.create_subject_again(s).await?;
            } else {
                self.set_up_subject(s, step).await?;
            }
        }
        let (ws, agent, _) = self.subject_ids(s);
        let agent = (!SUBJECTS[s].whole_workspace).then_some(agent);
        let r = self
            .store
            .request_erasure(&ws, agent.as_deref(), deadline)
            .await;
        let live = self.model.erasure.standing[s] == Standing::Live;
        let past = deadline < now;
        match r {
            Ok(()) if live && !past => {}
            Err(e) if past && e.kind() == "invalid_policy" => return Ok(()),
            // Absurd and of a subject that does not exist: either reason (SL-1.4).
            Err(e) if !live && e.kind() == "unknown_entity" => return Ok(()),
            r => {
                let want = match (live, past) {
                    (true, false) => "Ok",
                    (_, true) => "refused invalid_policy (a deadline before now, SL-1.4)",
                    (false, false) => "refused unknown_entity (its rows are gone)",
                };
                return diverged(
                    format!("erase {}: {want}", name(s)),
                    format!("erase {}: {:?}", name(s), r.map_err(|e| e.kind())),
                );
            }
        }
        let keys = self.subject_keys(s);
        self.note(format!("{} keys under {}", keys.len(), name(s)));
        self.model.erasure.expected.push(Expected {
            subject: s,
            deadline,
            keys,
            taken: BTreeSet::new(),
            done_at: None,
        });
        self.model.erasure.standing[s] = Standing::Erased(self.model.erasure.expected.len() - 1);
        match then {
            Then::Nothing => Ok(()),
            Then::Crash => {
                Box::pin(self.perform(step, &ModelOp::CrashSweep { obligations: true }, now)).await
            }
            Then::DownKeysFailing => {
                let now = self.down_past(deadline, DAY_MS).await?;
                Box::pin(self.perform(step, &ModelOp::FaultySweep { percent: 60 }, now)).await
            }
            Then::DownBackstop => {
                let now = self.down_past(deadline, 2 * DAY_MS).await?;
                self.backstop(s, now).await?;
                self.check_erasures(now, Reading::Audit).await?;
                Box::pin(self.perform(step, &ModelOp::Sweep, now)).await
            }
        }
    }

    /// The sweeper down until `by` past `deadline`: the clock moves there and the obligation
    /// reads overdue (SL-4.4). Answers the new `now`.
    async fn down_past(&mut self, deadline: i64, by: i64) -> Result<i64, super::Stop> {
        let now = self.clock.now().0;
        self.clock.advance_ms((deadline + by - now).max(0));
        let now = self.clock.now().0;
        self.note(format!(
            "the sweeper is down until {} past the deadline",
            crate::profiles::scoped::erasure::duration_text(now - deadline)
        ));
        self.check_erasures(now, Reading::Audit).await?;
        Ok(now)
    }

    /// The lifecycle backstop's rule for the session class, come due while the sweeper was
    /// down: an age-only rule (one day, AWS's semantics, `process::harness::run_age_rule`) over the
    /// erased subject's session files, on a healed store. What it takes no proof may name
    /// (SL-4.5). Run on the subject only: what the backstop does to live sessions is SC-7's.
    async fn backstop(&mut self, s: usize, now: i64) -> Step {
        let Standing::Erased(k) = self.model.erasure.standing[s] else {
            return Ok(());
        };
        let prefix = self
            .subject_prefixes(s)
            .into_iter()
            .find(|p| p.starts_with("sessions/"))
            .expect("a subject has a sessions prefix");
        if self.faulty() {
            self.server.faults().heal();
        }
        let taken = crate::profiles::scoped::process::harness::run_age_rule(
            &self.client,
            BUCKET,
            &prefix,
            1,
            Timestamp(now),
        )
        .await;
        if let Some(plan) = &self.faults {
            self.server.faults().set_plan(plan.clone());
        }
        let taken = taken.map_err(harness)?;
        self.note(format!("the backstop took {} keys", taken.len()));
        self.model.erasure.expected[k].taken.extend(taken);
        Ok(())
    }

    /// Whether an erasure is still pending in the store: a sweep under faults that left one
    /// says nothing of it in its report (SL-4's obligations are the erasure's, not SC-6's), so
    /// the model reads the rows.
    pub(super) async fn erasure_left_pending(&self) -> Result<bool, super::Stop> {
        if !self.model.erasure.active() {
            return Ok(false);
        }
        let rows = self.meta.erasures().await.map_err(harness)?;
        Ok(rows.iter().any(|e| e.done_at_ms.is_none()))
    }

    /// Reads the obligations and proofs as a harness does and judges them against the model
    /// (see the module's note): after a completed sweep every obligation met at its `now`.
    pub(super) async fn check_erasures(&mut self, now: i64, reading: Reading) -> Step {
        if !self.model.erasure.active() {
            return Ok(());
        }
        let ledger = ErasureLedger::of_metadata(self.meta.as_ref())
            .await
            .map_err(harness)?;
        let expected = &self.model.erasure.expected;
        if ledger.obligations.len() != expected.len() {
            return diverged(
                format!(
                    "{} erasure obligation(s), one per accepted request",
                    expected.len()
                ),
                format!("{} erasure obligation(s)", ledger.obligations.len()),
            );
        }
        let mut learnt = Vec::new();
        for (k, (o, e)) in ledger.obligations.iter().zip(expected).enumerate() {
            let what = format!("erasure {k} of {}", name(e.subject));
            let subject = self.subject_text(e.subject);
            if o.subject != subject || o.deadline_ms != e.deadline {
                return diverged(
                    format!("{what}: subject {subject:?}, deadline {} ms", e.deadline),
                    format!(
                        "{what}: subject {:?}, deadline {} ms",
                        o.subject, o.deadline_ms
                    ),
                );
            }
            let mut proof: Vec<&str> = ledger
                .proofs
                .iter()
                .filter(|p| p.obligation == o.obligation)
                .map(|p| p.key.as_str())
                .collect();
            proof.sort_unstable();
            // The proof names only keys that were under the subject, each once, each gone.
            for pair in proof.windows(2) {
                if pair[0] == pair[1] {
                    return diverged(
                        format!("{what}: each deleted key recorded once (SL-4.3)"),
                        format!("{what}: {:?} recorded twice", pair[0]),
                    );
                }
            }
            for key in &proof {
                if !e.keys.contains(*key) {
                    return diverged(
                        format!("{what}: a proof naming keys that were under its subject (SL-4.3)"),
                        format!("{what}: the proof names {key:?}"),
                    );
                }
                // A subject created again may hold a key of the same name by right (SL-4.6).
                let erased = self.model.erasure.standing[e.subject] == Standing::Erased(k);
                if erased && self.mem.keys(BUCKET, key).iter().any(|k| k == key) {
                    return diverged(
                        format!("{what}: every key the proof names deleted (SL-4.3)"),
                        format!("{what}: the proof names {key:?}, still in the bucket"),
                    );
                }
            }
            let done_at = match (o.done_at_ms, e.done_at, reading) {
                (Some(d), Some(m), _) if d == m => Some(d),
                (Some(d), None, Reading::Interim | Reading::Swept) if d == now => Some(d),
                (None, None, Reading::Audit | Reading::Interim) => None,
                (got, want, _) => {
                    let want = match (want, reading) {
                        (Some(m), _) => format!("met at {m} ms"),
                        (None, Reading::Swept) => {
                            format!("met at {now} ms, by the sweep that just completed (SL-4.2)")
                        }
                        (None, Reading::Interim) => {
                            format!("pending, or met at {now} ms by the sweep")
                        }
                        (None, Reading::Audit) => "pending: no sweep since its request".into(),
                    };
                    return diverged(
                        format!("{what}: {want}"),
                        format!(
                            "{what}: {}",
                            match got {
                                Some(d) => format!("met at {d} ms"),
                                None => "pending".into(),
                            }
                        ),
                    );
                }
            };
            // SL-4.4's reading, as a person reads it now.
            let want = state_text(e.deadline, done_at, now);
            let got = state_text(o.deadline_ms, o.done_at_ms, now);
            if want != got {
                return diverged(
                    format!("{what} reads {want}"),
                    format!("{what} reads {got}"),
                );
            }
            if done_at.is_some() {
                // Met means nothing left under the subject (SL-4.2), unless created again.
                if self.model.erasure.standing[e.subject] == Standing::Erased(k) {
                    let left = self.subject_keys(e.subject);
                    if !left.is_empty() {
                        return diverged(
                            format!("{what} met: nothing under its subject (SL-4.2)"),
                            format!("{what} met with {} key(s) left: {left:?}", left.len()),
                        );
                    }
                }
                let want_keys = e.proof();
                let want: Vec<&str> = want_keys.iter().map(String::as_str).collect();
                if proof != want {
                    return diverged(
                        format!(
                            "{what}: a proof of the {} key(s) its sweeps deleted (SL-4.3, SL-4.5): {want:?}",
                            want.len()
                        ),
                        format!("{what}: a proof of {proof:?}"),
                    );
                }
            }
            learnt.push(done_at);
        }
        let mut met = 0;
        for (e, done_at) in self.model.erasure.expected.iter_mut().zip(learnt) {
            if e.done_at.is_none() && done_at.is_some() {
                met += 1;
            }
            e.done_at = done_at;
        }
        if met > 0 {
            self.note(format!("{met} erasure(s) met"));
        }
        Ok(())
    }
}
