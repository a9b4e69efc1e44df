//! The scoped turmoil world: the reference over the in-memory metadata store and the in-memory
//! S3 behind turmoil's network, concurrent clients, faults from the seed, a safety oracle in
//! every guest, then heal and a liveness check; and the same seed replays byte-identically.

use tidemark_conformance::profiles::scoped::world::run_scoped_world;
use tidemark_conformance::profiles::scoped::world::OUT_OF_REACH;
use tidemark_reference::scoped::ScopedMutant;

/// The mutants each test below hunts, by what catches them and within how many seeds. Together
/// with part SL's mutants in reach and those out of the world's reach, they are every scoped
/// mutant (`every_scoped_mutant_is_hunted_by_a_world_test_or_out_of_its_reach`), so these tests
/// are the world's whole hunt: `tidemark world --profile scoped --hunt` runs the same search for
/// a person at the command line.
const CAUGHT_BY_LIVENESS: [ScopedMutant; 3] = [
    ScopedMutant::AppRecordedDeletions,
    ScopedMutant::PartialBatchMarkedDone,
    ScopedMutant::DeletionBeforeRecord,
];
const CAUGHT_WITHIN_FOUR_SEEDS: [ScopedMutant; 10] = [
    ScopedMutant::AgeOnlyExpiry,
    ScopedMutant::WaitsIgnored,
    ScopedMutant::SkillsSwept,
    ScopedMutant::WorkspaceWritableByDefault,
    ScopedMutant::NoneStillReadable,
    ScopedMutant::ListingOwnScopeOnly,
    ScopedMutant::ScopeGuessed,
    ScopedMutant::ClampingResolution,
    ScopedMutant::EncodedTraversalAccepted,
    ScopedMutant::TextOutlivesFile,
];
const LAYOUT_LISTINGS_AND_DELETION_RIGHTS: [ScopedMutant; 6] = [
    ScopedMutant::SessionsUnderTheirAgent,
    ScopedMutant::TextKeyUncounted,
    ScopedMutant::FileBeforeText,
    ScopedMutant::ListingByScope,
    ScopedMutant::FailedWriteReportedWritten,
    ScopedMutant::DeleteNeedsOnlyRead,
];
const PATH_SHAPES: [ScopedMutant; 4] = [
    ScopedMutant::BackslashAccepted,
    ScopedMutant::LookalikeDotsAccepted,
    ScopedMutant::TrailingSlashTrimmed,
    ScopedMutant::PermissionBeforeShape,
];
const RACING_A_SWEEP: ScopedMutant = ScopedMutant::SweepUnlocked;
const SERVED_FROM_AN_INTERRUPTED_SWEEP: ScopedMutant = ScopedMutant::PersonSkipsUnfinishedSweep;
const CAUGHT_BY_THE_PEOPLES_ORACLE: [ScopedMutant; 15] = [
    ScopedMutant::UploadEchoesRawPath,
    ScopedMutant::PeopleListingRefuses,
    ScopedMutant::ForeignSessionServed,
    ScopedMutant::PersonWrongScopeAuthority,
    ScopedMutant::UrlDecodedTwice,
    ScopedMutant::UploadNotActivity,
    ScopedMutant::PersonDeleteNeedsOnlyRead,
    ScopedMutant::EncodedSlashSplits,
    ScopedMutant::UploadUnbounded,
    ScopedMutant::SessionBeforeCredentials,
    ScopedMutant::DownloadServedInline,
    ScopedMutant::PathRefusalIsServerError,
    ScopedMutant::LookalikeScopeAccepted,
    ScopedMutant::PersonCappedByAgentSettings,
    ScopedMutant::PlusAsSpace,
];

fn out_of_reach(m: ScopedMutant) -> bool {
    OUT_OF_REACH.iter().any(|(id, _)| *id == m.id())
}

/// Part SL's mutants the world can reach (promotion, overflow, the count and workspace rules).
fn part_sl_in_reach() -> impl Iterator<Item = ScopedMutant> {
    ScopedMutant::ALL
        .into_iter()
        .filter(|m| m.rules().iter().any(|r| r.starts_with("SL-")))
        .filter(|m| !out_of_reach(*m))
}

/// What the reference did on one world seed: its failure, if any, and its trace's lines.
struct ReferenceSeed {
    failure: Option<String>,
    lines: Vec<String>,
}

/// The reference on world seeds 0 to 3, played once for the tests that read them (each seed
/// costs a few tenths of a second of CPU, and three tests look at the same four).
fn reference_on_seeds_0_to_3() -> &'static [ReferenceSeed] {
    static SEEDS: std::sync::OnceLock<Vec<ReferenceSeed>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        (0..4)
            .map(|seed| {
                let r = run_scoped_world(seed, None);
                ReferenceSeed {
                    failure: r.failure,
                    lines: r.trace.lines().to_vec(),
                }
            })
            .collect()
    })
}

/// Every trace line of the reference on world seeds 0 to 3, each seed having passed.
fn passing_reference_lines_on_seeds_0_to_3() -> Vec<&'static str> {
    let seeds = reference_on_seeds_0_to_3();
    for (seed, r) in seeds.iter().enumerate() {
        assert!(r.failure.is_none(), "seed {seed}: {:?}", r.failure);
    }
    seeds
        .iter()
        .flat_map(|r| &r.lines)
        .map(String::as_str)
        .collect()
}

/// The first safety failure the world reports with `mutant` switched on, within `seeds` seeds
/// from seed 0.
fn first_safety_failure(mutant: ScopedMutant, seeds: u64) -> Option<String> {
    (0..seeds).find_map(|seed| {
        run_scoped_world(seed, Some(mutant))
            .failure
            .filter(|f| f.starts_with("safety: "))
    })
}

/// Each of `mutants` fails the safety oracle (`oracle` names it in the message) within `seeds`
/// seeds from seed 0.
fn assert_each_caught(mutants: &[ScopedMutant], seeds: u64, oracle: &str) {
    for &m in mutants {
        assert!(
            first_safety_failure(m, seeds).is_some(),
            "{} passes {oracle} on {seeds} world seeds",
            m.id()
        );
    }
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_reference_keeps_every_promise_of_the_safety_oracle_and_after_heal_nothing_expired_remains() {
    for (seed, r) in reference_on_seeds_0_to_3().iter().enumerate() {
        assert!(
            r.failure.is_none(),
            "seed {seed}: {}\n{}",
            r.failure.clone().unwrap_or_default(),
            r.lines[r.lines.len().saturating_sub(12)..].join("\n")
        );
        assert!(
            r.lines.iter().any(|l| l.contains("=> Written")),
            "seed {seed}: no write landed, so the world proved nothing"
        );
        // The oracle had something to hold the reference to: a file of a session with a wait,
        // read back at the end, and a refused write to the read-only workspace scope.
        assert!(
            r.lines
                .iter()
                .any(|l| l.contains("session/keep.md") && l.contains("=> Content")),
            "seed {seed}: no guest read its kept file back"
        );
        assert!(
            r.lines
                .iter()
                .any(|l| l.contains("workspace/ref.md") && l.contains("refused permission_denied")),
            "seed {seed}: no write to the read-only workspace scope was tried"
        );
    }
}

#[test]
fn a_scoped_world_seed_replays_to_the_same_trace_hash() {
    let a = run_scoped_world(11, None);
    let b = run_scoped_world(11, None);
    assert_eq!(a.trace.hash(), b.trace.hash());
    assert!(
        a.trace.lines().len() > 50,
        "{} lines",
        a.trace.lines().len()
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_liveness_check_catches_deletions_recorded_by_application_code_and_batches_marked_done_despite_errors_within_sixty_seeds(
) {
    for m in CAUGHT_BY_LIVENESS {
        assert!(
            (0..60).any(|seed| run_scoped_world(seed, Some(m)).failure.is_some()),
            "{} survives sixty world seeds",
            m.id()
        );
    }
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_safety_oracle_catches_expiry_waits_skills_permissions_listings_resolution_and_text_mutants_within_four_seeds(
) {
    assert_each_caught(&CAUGHT_WITHIN_FOUR_SEEDS, 4, "the safety oracle");
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_write_racing_a_sweep_that_does_not_lock_its_candidates_is_lost_and_the_safety_oracle_sees_it_within_thirty_seeds(
) {
    let caught = first_safety_failure(RACING_A_SWEEP, 30);
    assert!(
        caught.is_some(),
        "sweep-unlocked passes the safety oracle on thirty world seeds"
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn people_upload_download_list_and_are_refused_over_turmoil_http_beside_the_agents() {
    let lines = passing_reference_lines_on_seeds_0_to_3();
    let person = |l: &&&str| {
        l.split(' ')
            .any(|w| w.starts_with('p') && w[1..].parse::<u8>().is_ok())
    };
    // Something a person did landed and came back, and every kind of refusal SF decides was
    // asked for: a world whose people were all refused would prove nothing.
    for (what, needle) in [
        ("an upload stored", "=> Written"),
        ("a listing answered", "=> listing"),
        ("a download answered", "=> Content"),
        ("a request without credentials", "(anonymous)"),
        (
            "a request refused unauthenticated",
            "refused unauthenticated",
        ),
        ("another workspace's person refused", "(foreign)"),
        ("a session nobody has", "refused unknown_entity"),
        ("a body past the limit", "refused too_large"),
        ("an encoded traversal", "refused traversal"),
        ("a look-alike scope", "refused unknown_scope"),
        ("a removal", "DELETE"),
    ] {
        assert!(
            lines.iter().filter(person).any(|l| l.contains(needle)),
            "no person's request shows {what} in four seeds"
        );
    }
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_people_oracle_catches_every_mutant_of_the_people_api_it_reaches_within_five_seeds() {
    assert_each_caught(&CAUGHT_BY_THE_PEOPLES_ORACLE, 5, "the people's oracle");
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_persons_request_served_from_what_an_interrupted_sweep_left_is_caught_within_sixty_seeds() {
    let caught = first_safety_failure(SERVED_FROM_AN_INTERRUPTED_SWEEP, 60);
    assert!(
        caught.is_some(),
        "person-skips-unfinished-sweep passes the safety oracle on sixty world seeds"
    );
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn guests_promote_and_overflow_and_the_oracle_catches_every_mutant_of_part_sl_in_its_reach_within_eight_seeds(
) {
    let lines = passing_reference_lines_on_seeds_0_to_3();
    for (what, call) in [
        ("a promotion", "\"op\":\"promote\""),
        ("a tool result", "\"op\":\"tool_output\""),
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(call) && l.contains("=> Written")),
            "seeds 0 to 3: {what} never wrote a file, so the world proved nothing of it"
        );
    }
    for m in part_sl_in_reach() {
        assert!(
            (0..8).any(|seed| run_scoped_world(seed, Some(m)).failure.is_some()),
            "{} survives eight world seeds",
            m.id()
        );
    }
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn the_safety_oracle_catches_a_misplaced_layout_a_listing_out_of_order_and_deletion_with_read_access_within_four_seeds(
) {
    assert_each_caught(&LAYOUT_LISTINGS_AND_DELETION_RIGHTS, 4, "the safety oracle");
}

#[test]
#[ignore = "slow tier: run by cargo test --workspace -- --include-ignored, as CI does"]
fn a_path_is_refused_for_its_shape_before_its_permission_and_no_look_alike_slips_through_within_twenty_seeds(
) {
    assert_each_caught(&PATH_SHAPES, 20, "the safety oracle");
}

/// Every scoped mutant is hunted by one of the tests above or is out of the world's reach (each
/// with its reason, `world::every_mutant_out_of_the_worlds_reach_is_a_real_one_killed_by_a_scenario`),
/// never both: a mutant added to the reference and to none of these lists fails here.
#[test]
fn every_scoped_mutant_is_hunted_by_a_world_test_or_out_of_its_reach() {
    let hunted: Vec<ScopedMutant> = CAUGHT_BY_LIVENESS
        .into_iter()
        .chain(CAUGHT_WITHIN_FOUR_SEEDS)
        .chain(LAYOUT_LISTINGS_AND_DELETION_RIGHTS)
        .chain(PATH_SHAPES)
        .chain([RACING_A_SWEEP, SERVED_FROM_AN_INTERRUPTED_SWEEP])
        .chain(CAUGHT_BY_THE_PEOPLES_ORACLE)
        .chain(part_sl_in_reach())
        .collect();
    let mut ids: Vec<&str> = hunted.iter().map(|m| m.id()).collect();
    ids.sort_unstable();
    let before = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), before, "a mutant is hunted by two tests");
    for m in &hunted {
        assert!(!out_of_reach(*m), "{} is hunted but out of reach", m.id());
    }
    for m in ScopedMutant::ALL {
        assert!(
            out_of_reach(m) || ids.contains(&m.id()),
            "{} is neither hunted by a world test nor out of the world's reach",
            m.id()
        );
    }
}
