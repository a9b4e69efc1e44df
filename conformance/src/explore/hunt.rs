//! `tidemark explore --hunt`: each mutant searched for by random seeds until one diverges, over
//! several independent searches, and the lines and median that report it. Apart from `engine.rs`
//! because it is its own command, built on the engine's one run of a seed.

use std::fmt::Write;
use std::time::Instant;

use futures::StreamExt;

use super::engine::{run_seed, throughput, Explorer, Outcome, Seeds};

/// One mutant hunted by random search.
pub struct HuntLine<M> {
    pub mutant: M,
    /// Each search's find: the seed that diverged and how many seeds it took.
    pub searches: Vec<Option<(u64, u64)>>,
    /// A seed that could not be set up ends the mutant's hunt as a failure.
    pub setup_error: Option<String>,
    /// Seeds run for this mutant, over every search.
    pub tried: u64,
    /// Why the generator cannot reach it: not searched, never counted as found.
    pub out_of_reach: Option<&'static str>,
}

impl<M> HuntLine<M> {
    /// The median number of seeds a search needed, if more than half the searches found it.
    pub fn median(&self) -> Option<u64> {
        let mut finite: Vec<u64> = self.searches.iter().flatten().map(|f| f.1).collect();
        finite.sort();
        (self.setup_error.is_none() && finite.len() * 2 > self.searches.len())
            .then(|| finite[(self.searches.len() - 1) / 2])
    }

    /// The first seed any search found it with.
    pub fn first_found(&self) -> Option<u64> {
        self.searches.iter().flatten().map(|f| f.0).next()
    }
}

/// For each mutant (or only `only`): `trials` independent searches, the k-th from
/// `first_seed + k * 1,000,000`, each running up to `limit` seeds of the shard until one
/// diverges. Mutants side by side up to [`Explorer::jobs`].
pub async fn hunt<E: Explorer + ?Sized>(
    e: &E,
    seeds: &Seeds,
    only: Option<E::Mutant>,
    trials: u64,
) -> Vec<HuntLine<E::Mutant>> {
    let mutants: Vec<E::Mutant> = e
        .mutants()
        .into_iter()
        .filter(|m| only.is_none_or(|o| o == *m))
        .collect();
    futures::stream::iter(mutants)
        .map(|m| async move {
            let mut line = HuntLine {
                mutant: m,
                searches: Vec::new(),
                setup_error: None,
                tried: 0,
                out_of_reach: e.out_of_reach(m),
            };
            if line.out_of_reach.is_some() {
                return line;
            }
            'searches: for trial in 0..trials.max(1) {
                let start = seeds.first_seed + trial * 1_000_000;
                let mut found = None;
                for (i, seed) in seeds.shard.seeds(start, seeds.seeds).enumerate() {
                    line.tried += 1;
                    match run_seed(e, seed, Some(m)).await.1 {
                        Outcome::Passed(_) => {}
                        Outcome::Diverged(_) => {
                            found = Some((seed, i as u64 + 1));
                            break;
                        }
                        Outcome::Setup(why) => {
                            line.setup_error = Some(format!("seed {seed}: {why}"));
                            break 'searches;
                        }
                    }
                }
                line.searches.push(found);
            }
            line
        })
        .buffered(e.jobs(seeds.jobs).max(1))
        .collect()
        .await
}

/// The hunt's lines (`FOUND`, `NOT FOUND`, `ERROR`, `SKIPPED` with the reason) and its
/// `N passed, M failed[, K skipped]`.
pub fn hunt_report<E: Explorer + ?Sized>(
    e: &E,
    lines: &[HuntLine<E::Mutant>],
    limit: u64,
) -> String {
    let mut s = String::new();
    let width = lines
        .iter()
        .map(|l| e.mutant_id(l.mutant).len())
        .max()
        .unwrap_or(0);
    for l in lines {
        let id = e.mutant_id(l.mutant);
        let per_search = if l.searches.len() > 1 {
            let shown: Vec<String> = l
                .searches
                .iter()
                .map(|f| f.map_or("-".into(), |f| f.1.to_string()))
                .collect();
            format!(" (per search: {})", shown.join(" "))
        } else {
            String::new()
        };
        if let Some(why) = l.out_of_reach {
            let _ = writeln!(s, "SKIPPED    {id:<width$}  {why}");
        } else if let Some(why) = &l.setup_error {
            let _ = writeln!(s, "ERROR      {id:<width$}  {why}");
        } else if let (Some(median), Some(seed)) = (l.median(), l.first_found()) {
            let _ = writeln!(
                s,
                "FOUND      {id:<width$}  after {median} seed(s){per_search}; replay: {}",
                e.replay_command(seed, Some(l.mutant))
            );
        } else {
            let _ = writeln!(
                s,
                "NOT FOUND  {id:<width$}  in {} seed(s) of random search (limit {limit}){per_search}",
                l.tried
            );
        }
    }
    let found = lines.iter().filter(|l| l.median().is_some()).count();
    let skipped = lines.iter().filter(|l| l.out_of_reach.is_some()).count();
    let failed = lines.len() - found - skipped;
    if skipped == 0 {
        let _ = writeln!(s, "{found} passed, {failed} failed");
    } else {
        let _ = writeln!(s, "{found} passed, {failed} failed, {skipped} skipped");
    }
    s
}

/// `tidemark explore --hunt`: the hunt, its lines, its throughput and its summary. True if
/// every mutant in reach was found.
pub async fn hunt_command<E: Explorer + ?Sized>(
    e: &E,
    seeds: &Seeds,
    only: Option<E::Mutant>,
    trials: Option<u64>,
) -> Result<bool, String> {
    let start = Instant::now();
    let lines = hunt(e, seeds, only, trials.unwrap_or(E::HUNT_TRIALS)).await;
    let tried: u64 = lines.iter().map(|l| l.tried).sum();
    let report = hunt_report(e, &lines, seeds.seeds);
    let (body, summary) = report
        .trim_end()
        .rsplit_once('\n')
        .unwrap_or(("", report.trim_end()));
    if !body.is_empty() {
        println!("{body}");
    }
    println!("{}", throughput(tried, tried, start.elapsed(), None));
    println!("{summary}");
    Ok(lines
        .iter()
        .all(|l| l.median().is_some() || l.out_of_reach.is_some()))
}
