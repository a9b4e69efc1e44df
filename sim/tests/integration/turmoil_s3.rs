//! The in-memory S3 store served inside a turmoil host, reached by the same S3 client the real
//! tier uses, over turmoil's simulated network.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tidemark_reference::clock::{ManualClock, Timestamp};
use tidemark_reference::s3_client::{ListRequest, S3Client, S3Error, S3ErrorKind};
use tidemark_sim::turmoil_s3::{endpoint, memory_service, serve, sim_s3_client, S3_PORT};

const STORE: &str = "s3";
const CLIENT: &str = "client";
const BUCKET: &str = "tidemark";

fn world(seed: u64) -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .epoch(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        .rng_seed(seed)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(20))
        .simulation_duration(Duration::from_secs(60))
        .build()
}

fn add_store(sim: &mut turmoil::Sim<'static>) -> tidemark_sim::real_tier::MemoryHandle {
    let clock = Arc::new(ManualClock::starting_at(Timestamp(1_700_000_000_000)));
    let (service, handle) = memory_service(clock);
    sim.host(STORE, move || serve(service.clone(), S3_PORT));
    handle
}

fn client() -> S3Client {
    sim_s3_client(&endpoint(STORE, S3_PORT), Duration::from_secs(2))
}

async fn put(c: &S3Client, key: &str, body: &str) -> Result<(), String> {
    c.put_object(BUCKET, key, body.as_bytes().to_vec(), &[])
        .await
        .map(|_| ())
        .map_err(|e| kind(&e))
}

async fn list(c: &S3Client, prefix: &str) -> Vec<String> {
    let request = ListRequest {
        prefix: Some(prefix),
        ..ListRequest::default()
    };
    c.list_objects_v2(BUCKET, &request)
        .await
        .expect("list")
        .objects
        .into_iter()
        .map(|o| o.key)
        .collect()
}

/// How far the request got, without the error's (run-dependent) details.
fn kind(e: &S3Error) -> String {
    match e.kind {
        S3ErrorKind::Refused => "refused before sending",
        S3ErrorKind::Timeout => "timeout",
        S3ErrorKind::Transport => "no answer",
        S3ErrorKind::Response => "error response",
    }
    .to_string()
}

#[test]
fn the_same_s3_client_reaches_the_in_memory_store_over_the_simulated_network() {
    let mut sim = world(1);
    let store = add_store(&mut sim);
    let seen = store.clone();
    sim.client(CLIENT, async move {
        let c = client();
        c.create_bucket(BUCKET).await?;
        put(&c, "a/1", "one").await?;
        put(&c, "a/2", "two").await?;
        put(&c, "b/1", "three").await?;

        let got = c.get_object(BUCKET, "a/2").await?;
        assert_eq!(&got.body[..], b"two");

        assert_eq!(list(&c, "a/").await, vec!["a/1", "a/2"]);
        assert_eq!(list(&c, "").await, vec!["a/1", "a/2", "b/1"]);

        c.delete_object(BUCKET, "a/1").await?;
        assert_eq!(list(&c, "").await, vec!["a/2", "b/1"]);
        assert_eq!(seen.keys(BUCKET, ""), vec!["a/2", "b/1"]);

        let missing = c.get_object(BUCKET, "a/1").await;
        let err = missing.expect_err("a deleted key is gone");
        assert!(
            err.status == Some(404) && err.code() == Some("NoSuchKey"),
            "expected NoSuchKey, got {err:?}"
        );
        Ok(())
    });
    sim.run().expect("simulation");
    assert_eq!(store.object_count(BUCKET), 2);
}

#[test]
fn a_partition_between_client_and_store_is_a_typed_error_and_repair_restores_service() {
    let mut sim = world(2);
    let store = add_store(&mut sim);
    sim.client(CLIENT, async move {
        let c = client();
        c.create_bucket(BUCKET).await?;
        put(&c, "before", "x").await?;

        turmoil::partition(CLIENT, STORE);
        let started = turmoil::elapsed();
        let err = c
            .put_object(BUCKET, "during", b"y".to_vec(), &[])
            .await
            .expect_err("a partitioned store cannot be reached");
        assert!(
            matches!(err.kind, S3ErrorKind::Timeout | S3ErrorKind::Transport),
            "expected a timeout or no answer, got {err:?}"
        );
        assert_eq!(err.status, None, "no answer has no status");
        // Bounded by the operation timeout (simulated time), not a hang.
        assert!(turmoil::elapsed() - started <= Duration::from_secs(3));

        turmoil::repair(CLIENT, STORE);
        put(&c, "after", "z").await?;
        assert_eq!(list(&c, "").await, vec!["after", "before"]);
        Ok(())
    });
    sim.run().expect("simulation");
    assert_eq!(store.keys(BUCKET, ""), vec!["after", "before"]);
}

#[test]
fn a_link_that_holds_messages_times_out_within_the_operation_timeout_instead_of_hanging() {
    let mut sim = world(3);
    add_store(&mut sim);
    sim.client(CLIENT, async move {
        let c = client();
        c.create_bucket(BUCKET).await?;

        turmoil::hold(CLIENT, STORE);
        let started = turmoil::elapsed();
        let err = put(&c, "held", "x")
            .await
            .expect_err("a held link never answers");
        assert_eq!(err, "timeout");
        let waited = turmoil::elapsed() - started;
        assert!(
            waited >= Duration::from_secs(2) && waited < Duration::from_secs(3),
            "waited {waited:?}"
        );

        turmoil::release(CLIENT, STORE);
        put(&c, "released", "y").await?;
        assert!(list(&c, "").await.contains(&"released".to_string()));
        Ok(())
    });
    sim.run().expect("simulation");
}

/// A small workload with a partition in the middle; every outcome and the simulated time it
/// was observed at.
fn workload(seed: u64) -> Vec<String> {
    let mut sim = world(seed);
    add_store(&mut sim);
    let trace = Arc::new(Mutex::new(Vec::new()));
    let out = trace.clone();
    sim.client(CLIENT, async move {
        let c = client();
        let note = |s: String| {
            out.lock()
                .unwrap()
                .push(format!("{:>6}ms {s}", turmoil::elapsed().as_millis()))
        };
        c.create_bucket(BUCKET).await?;
        note("create bucket: ok".into());
        for i in 0..6 {
            if i == 3 {
                turmoil::partition(CLIENT, STORE);
                note("partition".into());
            }
            if i == 4 {
                turmoil::repair(CLIENT, STORE);
                note("repair".into());
            }
            let key = format!("k/{i}");
            let r = put(&c, &key, &format!("v{i}")).await;
            note(format!("put {key}: {r:?}"));
        }
        note(format!("list: {:?}", list(&c, "k/").await));
        Ok(())
    });
    sim.run().expect("simulation");
    let t = trace.lock().unwrap().clone();
    t
}

#[test]
fn a_world_seeded_the_same_way_replays_the_same_trace() {
    let first = workload(7);
    let second = workload(7);
    assert_eq!(first, second, "same seed, different trace");
    // The seed matters: message latencies, and so the times outcomes are seen at, differ.
    assert_ne!(first, workload(8), "different seeds, same trace");
    assert!(
        first.iter().any(|l| l.contains("put k/3: Err")),
        "the partitioned put fails: {first:#?}"
    );
    assert!(
        first
            .last()
            .unwrap()
            .contains(r#"["k/0", "k/1", "k/2", "k/4", "k/5"]"#),
        "{first:#?}"
    );
}
