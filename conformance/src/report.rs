//! Reports a person reads: the per-scenario table and the closing `N passed, M failed` line.

use crate::runner::ScenarioResult;
use std::fmt::Write;

/// The human table. Each line: status, test name, rules; a failure adds where and what.
pub fn table(results: &[ScenarioResult]) -> String {
    let mut s = String::new();
    let width = results.iter().map(|r| r.test_name.len()).max().unwrap_or(0);
    for r in results {
        let status = if r.passed() { "PASS" } else { "FAIL" };
        let _ = writeln!(s, "{status}  {:<width$}  {}", r.test_name, r.rules.join(", "));
        if let Some(f) = &r.failure {
            let _ = writeln!(s, "      {}:{}: {}", r.file.display(), f.line, f.step);
            let _ = writeln!(s, "      expected: {}", f.expected);
            let _ = writeln!(s, "      actual:   {}", f.actual);
        }
    }
    let _ = writeln!(s, "{}", summary_line(results));
    s
}

pub fn summary_line(results: &[ScenarioResult]) -> String {
    let passed = results.iter().filter(|r| r.passed()).count();
    format!("{} passed, {} failed", passed, results.len() - passed)
}
