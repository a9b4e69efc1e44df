//! The in-memory S3 earns trust by a differential check: the same requests through the same
//! client give the same answers from the disk store and from memory.

use std::sync::Arc;

use tidemark_reference::clock::ManualClock;
use tidemark_reference::s3_client::{ListRequest, S3Client};
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::S3Server;

use super::support::page_entries;

/// Everything observable from a fixed request sequence, as text.
async fn transcript(c: &S3Client) -> Vec<String> {
    let mut t = Vec::new();
    c.create_bucket("diff").await.unwrap();
    let keys = [
        "sessions/w/a/s1/a.txt",
        "sessions/w/a/s1/dir/b.txt",
        "sessions/w/a/s2/c.txt",
        "sessions/w/b/s3/d.txt",
        "agents/w/a/e.txt",
        "workspaces/w/f.txt",
    ];
    for (i, k) in keys.iter().enumerate() {
        c.put_object("diff", k, vec![b'x'; i + 1], &[("n", &i.to_string())])
            .await
            .unwrap();
    }
    // Pages of two, with and without a delimiter.
    for delimiter in [None, Some("/")] {
        for prefix in ["", "sessions/", "sessions/w/a/", "nothing/"] {
            let mut token: Option<String> = None;
            loop {
                let request = ListRequest {
                    prefix: Some(prefix),
                    delimiter,
                    max_keys: Some(2),
                    continuation_token: token.as_deref(),
                    ..ListRequest::default()
                };
                let page = c.list_objects_v2("diff", &request).await.unwrap();
                let (objs, cps) = page_entries(&page);
                t.push(format!("list {prefix:?} {delimiter:?}: {objs:?} {cps:?}"));
                match &page.next_continuation_token {
                    Some(n) if page.is_truncated => token = Some(n.clone()),
                    _ => break,
                }
            }
        }
    }
    let head = c.head_object("diff", "agents/w/a/e.txt").await.unwrap();
    t.push(format!(
        "head {:?} {:?}",
        head.content_length,
        head.metadata.get("n")
    ));
    let missing = c.get_object("diff", "nope").await;
    t.push(format!(
        "get missing: {:?}",
        missing.err().and_then(|e| e.code)
    ));
    let out = c.delete_objects("diff", &keys[..3], true).await.unwrap();
    t.push(format!("delete errors {}", out.errors.len()));
    let left = c
        .list_objects_v2("diff", &ListRequest::default())
        .await
        .unwrap();
    t.push(format!(
        "left {:?}",
        left.objects
            .iter()
            .map(|o| o.key.as_str())
            .collect::<Vec<_>>()
    ));
    let nb = c.list_objects_v2("no-such", &ListRequest::default()).await;
    t.push(format!("no bucket: {:?}", nb.err().and_then(|e| e.code)));
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_store_answers_exactly_as_the_disk_store_does() {
    let dir = tempfile::tempdir().unwrap();
    let fs = S3Server::start(dir.path(), 1).await.unwrap();
    let (mem, _) = S3Server::start_memory(Arc::new(ManualClock::starting_at(EPOCH)), 1)
        .await
        .unwrap();
    let a = transcript(&fs.client()).await;
    let b = transcript(&mem.client()).await;
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }
    assert_eq!(a.len(), b.len());
}

/// Keys chosen to meet every edge the two stores must agree on: a key that is another's
/// prefix, byte order against code-point and case order (`B.md` < `a.md`, U+FF0E < U+1F600 in
/// UTF-8), a key ending in `/` (another tool's directory marker), spaces, deep and shallow.
const KEYS: [&str; 12] = [
    "a",
    "a/b",
    "a/b/c.txt",
    "a.md",
    "B.md",
    "notes\u{ff0e}md",
    "notes\u{1f600}.md",
    "sessions/w/a/s1/x",
    "sessions/w/a/s10/y",
    "sessions/w/a/s1/dir/z",
    "sp ace/f",
    "marker/",
];
const PREFIXES: [&str; 7] = [
    "",
    "a",
    "a/",
    "sessions/w/a/s1",
    "sessions/",
    "notes",
    "zzz",
];

/// A seeded workload's answers from one store: puts and overwrites (with metadata), gets
/// (body and metadata), heads, single and batch deletes (of missing keys too), and paged
/// listings with and without a delimiter and a start-after. Times are left out: the disk store
/// stamps the wall clock, the memory store the simulated one.
async fn random_transcript(c: &S3Client, seed: u64) -> Vec<String> {
    use rand::Rng;
    let mut rng = tidemark_sim::seed::MasterSeed(seed).stream("s3-differential");
    let mut t = Vec::new();
    c.create_bucket("rand").await.unwrap();
    let code = |e: Option<String>| e.unwrap_or_else(|| "ok".into());
    for step in 0..150 {
        let key = KEYS[rng.gen_range(0..KEYS.len())];
        match rng.gen_range(0..10) {
            0..=2 => {
                let body = vec![b'a' + (step % 26) as u8; rng.gen_range(0..40)];
                let out = c
                    .put_object("rand", key, body, &[("step", &step.to_string())])
                    .await;
                t.push(format!(
                    "put {key:?}: {}",
                    code(out.err().and_then(|e| e.code))
                ));
            }
            3 => match c.get_object("rand", key).await {
                Ok(o) => {
                    let meta = &o.head.metadata;
                    t.push(format!(
                        "get {key:?}: {:?} {meta:?}",
                        String::from_utf8_lossy(&o.body)
                    ));
                }
                Err(e) => t.push(format!("get {key:?}: {:?}", e.code())),
            },
            4 => match c.head_object("rand", key).await {
                Ok(o) => t.push(format!(
                    "head {key:?}: {:?} {:?}",
                    o.content_length, o.metadata
                )),
                Err(e) => t.push(format!("head {key:?}: {e}")),
            },
            5 => {
                let out = c.delete_object("rand", key).await;
                t.push(format!("delete {key:?}: {}", out.is_ok()));
            }
            6 => {
                let n = rng.gen_range(1..4);
                let keys: Vec<&str> = (0..n).map(|_| KEYS[rng.gen_range(0..KEYS.len())]).collect();
                let quiet = rng.gen_bool(0.5);
                let out = c.delete_objects("rand", &keys, quiet).await.unwrap();
                let mut deleted = out.deleted;
                deleted.sort();
                t.push(format!(
                    "delete {keys:?} quiet {quiet}: deleted {deleted:?}, {} errors",
                    out.errors.len()
                ));
            }
            _ => {
                let prefix = PREFIXES[rng.gen_range(0..PREFIXES.len())];
                let delimiter = rng.gen_bool(0.5).then_some("/");
                let after = rng
                    .gen_bool(0.3)
                    .then(|| KEYS[rng.gen_range(0..KEYS.len())]);
                // An i32 draw, as when this workload was first written: the same stream.
                let max_keys: i32 = rng.gen_range(1..5);
                let mut token: Option<String> = None;
                let mut pages = Vec::new();
                loop {
                    let request = ListRequest {
                        prefix: Some(prefix),
                        delimiter,
                        start_after: after,
                        max_keys: Some(max_keys as usize),
                        continuation_token: token.as_deref(),
                        ..ListRequest::default()
                    };
                    let page = c.list_objects_v2("rand", &request).await.unwrap();
                    let (objs, cps) = page_entries(&page);
                    pages.push(format!("{objs:?} {cps:?} {:?}", page.key_count));
                    match &page.next_continuation_token {
                        Some(n) if page.is_truncated => token = Some(n.clone()),
                        _ => break,
                    }
                }
                t.push(format!(
                    "list {prefix:?} {delimiter:?} after {after:?} by {max_keys}: {}",
                    pages.join(" | ")
                ));
            }
        }
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_store_answers_a_seeded_random_workload_exactly_as_the_disk_store_does() {
    for seed in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let fs = S3Server::start(dir.path(), 1).await.unwrap();
        let (mem, _) = S3Server::start_memory(Arc::new(ManualClock::starting_at(EPOCH)), 1)
            .await
            .unwrap();
        let a = random_transcript(&fs.client(), seed).await;
        let b = random_transcript(&mem.client(), seed).await;
        assert!(
            a.iter()
                .any(|l| l.starts_with("get") && !l.contains("NoSuchKey")),
            "seed {seed} read back nothing it wrote: a hollow comparison"
        );
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "seed {seed}, step {i}: disk store, then memory");
        }
        assert_eq!(a.len(), b.len());
    }
}
