//! The scoped mutants the world cannot reach, each with its reason: the engine's hunt skips
//! them, and the scenarios kill each of them (`tidemark mutants --profile scoped`). A table of
//! its own because it changes with the mutants, not with the world's hosts or oracle.

/// Why the world never reaches the mutants of a session's close and of the policy sweep.
const NO_CLOSE_CALL: &str = "the world's host closes no session (SPEC SL-3); the scenarios kill it";

/// Why the world never reaches the mutants of SPEC SL-5 (retention per workspace).
const NO_WORKSPACE_RETENTION: &str = "the world never sets a workspace's retention nor puts a lifecycle configuration (SPEC SL-5); the scenarios kill it";

/// Scoped mutants the world cannot reach, and why; the scenarios kill each of them
/// (`tidemark mutants --profile scoped`).
pub const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "missing-bucket-unavailable",
        "the world's store never loses its bucket: a missing bucket is a deployment mistake, not a fault it injects",
    ),
    (
        "store-denied-as-permission",
        "the world's store never answers AccessDenied: credentials are not among its faults",
    ),
    (
        "throttle-not-retried",
        "the world's outages outlast any retry, so retrying a 503 or not gives the same answers",
    ),
    (
        "lifecycle-merged",
        "the world never puts a lifecycle configuration on its bucket",
    ),
    (
        "kept-classes-expire",
        "the world never puts a lifecycle configuration on its bucket",
    ),
    (
        "backstop-checked-against-default-ttl",
        "the world never puts a lifecycle configuration on its bucket",
    ),
    (
        "no-written-at-stamp",
        "the world never runs an age-only lifecycle rule, the one reader of the stamp",
    ),
    (
        "dotted-ids-accepted",
        "the world's identifiers are valid ones; an identifier's alphabet is the scenarios'",
    ),
    (
        "skills-writable",
        "the world's guests only read the skill version, never write to it, and a person's `skill/…` URL is refused unknown_scope before the store is reached (SF-1.1)",
    ),
    (
        "listing-string-prefix",
        "the world's guests list only with no prefix",
    ),
    (
        "failed-write-keeps-the-mark",
        "seldom in the world's reach: a write must fail after its text landed, in a session a sweep had already marked, which then stays idle until the heal; one seed in 300 stages it (132; seed 45 did before part SL's calls joined the world), none of the first 80; the exploration finds it within 80 seeds and the scenario kills it",
    ),
    (
        "refusal-is-activity",
        "seldom in the world's reach: it keeps a session alive longer and loses no file, which only the liveness check after the heal sees, and only when a refused operation came within a TTL of the heal and the last accepted one did not (the oracle's claims count every request, refused or not, before calling a session certainly idle); 80 seeds from seed 0 stage none",
    ),
    (
        "repeated-create-is-activity",
        "seldom in the world's reach: a repeated create keeps a session alive longer and loses no file, which only the liveness check after the heal sees, and only when the create came within a TTL of the heal and the last activity did not; 80 seeds from seed 0 stage none",
    ),
    (
        "workspace-deletion-spares-skills",
        "the world's one skill version is published in the home workspace its guests keep reading, which no one deletes; the workspace the admin deletes holds none",
    ),
    (
        "close-is-activity",
        NO_CLOSE_CALL,
    ),
    (
        "close-waits-for-ttl",
        NO_CLOSE_CALL,
    ),
    (
        "close-sweeps-waiting",
        NO_CLOSE_CALL,
    ),
    (
        "repeated-close-moves-time",
        NO_CLOSE_CALL,
    ),
    (
        "activity-keeps-close",
        NO_CLOSE_CALL,
    ),
    (
        "policy-deletes-per-session",
        "the world's oracle judges what its guests read and what the bucket holds after the heal, not how many DeleteObjects requests a sweep sent; the scenarios count them",
    ),
    (
        "policy-marks-before-deleting",
        "seldom in the world's reach: a policy sweep's deletion must fail under a fault while its count takes a busy session that still holds files; 80 seeds from seed 0 stage none, the exploration finds it within 80 seeds and the scenario kills it",
    ),
    (
        "policy-sweep-unclaimed",
        "the world runs one sweeper at a time (a restarted host's sweeper replaces the crashed one's), never two sweeps at once; and the mutant drops only the claim of closed sessions (retention/close.rs), which the world never closes; the scenarios stage two sweeps over a close",
    ),
    (
        "sweeper-drops-backstop",
        NO_CLOSE_CALL,
    ),
    (
        "erasure-overdue-closed",
        "seldom in the world's reach: the store must fail an erasure's keys in a sweep past its deadline and the sweep after the heal leave them (24 seeds staged none); the exploration stages it at once and the scenario kills it",
    ),
    (
        "erasure-proof-before-deletion",
        "seldom in the world's reach: a key recorded before its failed deletion is deleted by the next sweep, so only a reading between the two sees a proof naming a key still in the bucket, and the world reads its erasures after the heal (24 seeds staged none); the exploration reads between and the scenario kills it",
    ),
    (
        "erasure-without-write-ahead",
        "seldom in the world's reach: the app must crash between an erasure's DeleteObjects and its record, and the world crashes it at a random step (24 seeds staged none); the exploration stages that crash point and the scenario kills it",
    ),
    (
        "erasure-proof-counts-the-backstop",
        "the world never puts a lifecycle configuration on its bucket, so no backstop takes an erased subject's files; the exploration's backstop does and the scenario kills it",
    ),
    (
        "count-ranks-emptied-sessions",
        "the world's counted agents never hold an emptied session newer than one whose wait went after the count swept past it (its kept session's wait stays); the scenario kills it",
    ),
    (
        "unfinished-count-sweep-left",
        "seldom in the world's reach: a count's deletion must fail part-way and the session come back among the last N before the next sweep; 80 seeds from seed 0 stage none, the exploration finds it within 80 seeds and the scenario kills it",
    ),
    (
        "overflow-overwrites",
        "each of the world's tool results is its own (its call is in it), so none overflows twice onto a file the guest edited in between (SPEC SL-7.1); the scenarios kill it",
    ),
    ("workspace-retention-merged", NO_WORKSPACE_RETENTION),
    ("workspace-ttl-only-shortens", NO_WORKSPACE_RETENTION),
    ("workspace-ttl-at-backstop", NO_WORKSPACE_RETENTION),
    ("workspace-rule-at-default", NO_WORKSPACE_RETENTION),
    ("workspace-rules-over-budget", NO_WORKSPACE_RETENTION),
    ("workspace-rules-by-id", NO_WORKSPACE_RETENTION),
];
