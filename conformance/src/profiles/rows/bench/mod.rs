//! The rows profile's `tidemark bench` figure.

pub mod scale;

/// The rows profile's reap at scale: `rows` streamed events, half of them expired, reaped beside
/// a writer in batches of 1,000 and then in one unbounded delete for comparison (SPEC SR-7.3,
/// SR-8.1). Each on its own fresh database.
pub fn rows(rows: i64) -> Result<String, String> {
    use scale::measure_reap;
    use std::fmt::Write;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime: {e}"))?;
    rt.block_on(async {
        let pg = super::postgres().await?;
        let source = pg.kind();
        let mut s = String::new();
        let _ = writeln!(s, "rows: the reap of {rows} streamed events, half expired, beside a writer (PostgreSQL from {source})");
        for batch in [1_000, rows] {
            let f = measure_reap(&pg, rows, batch).await?;
            let _ = writeln!(s, "  {f}");
        }
        Ok(s)
    })
}
