//! The in-memory S3 earns trust by a differential check: the same requests through the same
//! client give the same answers from the disk store and from memory.

use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use tidemark_reference::clock::ManualClock;
use tidemark_sim::clock::EPOCH;
use tidemark_sim::real_tier::S3Server;

/// Everything observable from a fixed request sequence, as text.
async fn transcript(c: &aws_sdk_s3::Client) -> Vec<String> {
    let mut t = Vec::new();
    c.create_bucket().bucket("diff").send().await.unwrap();
    let keys = [
        "sessions/w/a/s1/a.txt",
        "sessions/w/a/s1/dir/b.txt",
        "sessions/w/a/s2/c.txt",
        "sessions/w/b/s3/d.txt",
        "agents/w/a/e.txt",
        "workspaces/w/f.txt",
    ];
    for (i, k) in keys.iter().enumerate() {
        c.put_object()
            .bucket("diff")
            .key(*k)
            .metadata("n", i.to_string())
            .body(ByteStream::from(vec![b'x'; i + 1]))
            .send()
            .await
            .unwrap();
    }
    // Pages of two, with and without a delimiter.
    for delimiter in [None, Some("/")] {
        for prefix in ["", "sessions/", "sessions/w/a/", "nothing/"] {
            let mut token = None;
            loop {
                let page = c
                    .list_objects_v2()
                    .bucket("diff")
                    .prefix(prefix)
                    .set_delimiter(delimiter.map(str::to_string))
                    .max_keys(2)
                    .set_continuation_token(token.take())
                    .send()
                    .await
                    .unwrap();
                let objs: Vec<String> = page
                    .contents()
                    .iter()
                    .map(|o| format!("{}:{}", o.key().unwrap(), o.size().unwrap()))
                    .collect();
                let cps: Vec<&str> = page
                    .common_prefixes()
                    .iter()
                    .filter_map(|p| p.prefix())
                    .collect();
                t.push(format!("list {prefix:?} {delimiter:?}: {objs:?} {cps:?}"));
                match page.next_continuation_token() {
                    Some(n) if page.is_truncated() == Some(true) => token = Some(n.to_string()),
                    _ => break,
                }
            }
        }
    }
    let head = c
        .head_object()
        .bucket("diff")
        .key("agents/w/a/e.txt")
        .send()
        .await
        .unwrap();
    t.push(format!(
        "head {:?} {:?}",
        head.content_length(),
        head.metadata().and_then(|m| m.get("n"))
    ));
    let missing = c.get_object().bucket("diff").key("nope").send().await;
    t.push(format!(
        "get missing: {:?}",
        missing
            .err()
            .and_then(|e| e.into_service_error().meta().code().map(str::to_string))
    ));
    let del = Delete::builder()
        .set_objects(Some(
            keys[..3]
                .iter()
                .map(|k| ObjectIdentifier::builder().key(*k).build().unwrap())
                .collect(),
        ))
        .quiet(true)
        .build()
        .unwrap();
    let out = c
        .delete_objects()
        .bucket("diff")
        .delete(del)
        .send()
        .await
        .unwrap();
    t.push(format!("delete errors {}", out.errors().len()));
    let left = c.list_objects_v2().bucket("diff").send().await.unwrap();
    t.push(format!(
        "left {:?}",
        left.contents()
            .iter()
            .filter_map(|o| o.key())
            .collect::<Vec<_>>()
    ));
    let nb = c.list_objects_v2().bucket("no-such").send().await;
    t.push(format!(
        "no bucket: {:?}",
        nb.err()
            .and_then(|e| e.into_service_error().meta().code().map(str::to_string))
    ));
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
