//! Prints the whole trace of one scoped world seed (the CLI shows only a failure's tail), for
//! reading a run step by step or diffing two runs of one seed:
//!
//! ```sh
//! cargo run -p tidemark-conformance --example world_trace -- 27
//! ```

fn main() {
    let Some(seed) = std::env::args().nth(1).and_then(|s| s.parse::<u64>().ok()) else {
        eprintln!("usage: world_trace SEED");
        std::process::exit(2);
    };
    let run = tidemark_conformance::profiles::scoped::world::run_scoped_world(seed, None);
    for line in run.trace.lines() {
        println!("{line}");
    }
    if let Some(f) = run.failure {
        println!("FAIL  {f}");
    }
}
