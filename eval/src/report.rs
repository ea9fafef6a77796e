//! Results as JSON and Markdown, with the machine and the command that produced them.

use std::path::Path;

use serde::Serialize;

use crate::error::{io_err, Result};
use crate::metrics::Summary;

/// A metrics table: one row per group of queries.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Heading, e.g. `hybrid — turn level`.
    pub title: String,
    /// Cut-offs shown.
    pub ks: Vec<usize>,
    /// Show nDCG columns.
    pub ndcg: bool,
    /// (group label, averages).
    pub rows: Vec<(String, Summary)>,
}

/// A free-form table (headline comparisons, sweeps, latencies).
#[derive(Clone, Debug, Serialize)]
pub struct Grid {
    /// Heading.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}

/// The machine a run happened on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Logical CPUs available.
    pub cpus: usize,
    /// CPU model from /proc/cpuinfo (or "unknown").
    pub cpu_model: String,
}

/// Describe this machine.
pub fn machine() -> Machine {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
    }
}

/// Everything one run produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Benchmark name.
    pub benchmark: String,
    /// The command line.
    pub command: String,
    /// UTC time the run finished.
    pub finished_at: String,
    /// Where it ran.
    pub machine: Machine,
    /// Settings in force (modes, text styles, weights...).
    pub settings: serde_json::Value,
    /// What was measured from the data.
    pub dataset: serde_json::Value,
    /// Headline and sweep tables.
    pub grids: Vec<Grid>,
    /// Full metric tables.
    pub tables: Vec<Table>,
    /// Caveats worth printing beside the numbers.
    pub notes: Vec<String>,
}

impl Report {
    /// A report for `benchmark` stamped with the current command line, time and machine.
    pub fn new(benchmark: &str, settings: serde_json::Value, dataset: serde_json::Value) -> Report {
        Report {
            benchmark: benchmark.into(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            machine: machine(),
            settings,
            dataset,
            grids: Vec::new(),
            tables: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "## {}\n\n`{}`\n\n{} — {} CPUs, {}\n\n",
            self.benchmark,
            self.command,
            self.finished_at,
            self.machine.cpus,
            self.machine.cpu_model
        );
        for n in &self.notes {
            s.push_str(&format!("- {n}\n"));
        }
        if !self.notes.is_empty() {
            s.push('\n');
        }
        for g in &self.grids {
            s.push_str(&grid_markdown(g));
        }
        for t in &self.tables {
            s.push_str(&table_markdown(t));
        }
        s
    }

    /// Write JSON and/or Markdown files.
    pub fn write(&self, json: Option<&Path>, markdown: Option<&Path>) -> Result<()> {
        if let Some(p) = json {
            let text = serde_json::to_string_pretty(self).map_err(|e| {
                crate::EvalError::InvalidInput(format!("cannot encode the report as JSON: {e}"))
            })?;
            std::fs::write(p, text).map_err(io_err(p))?;
        }
        if let Some(p) = markdown {
            std::fs::write(p, self.to_markdown()).map_err(io_err(p))?;
        }
        Ok(())
    }
}

/// Three decimals.
pub fn f3(x: f64) -> String {
    format!("{x:.3}")
}

/// A grid as a Markdown table.
pub fn grid_markdown(g: &Grid) -> String {
    let mut s = format!(
        "### {}\n\n| {} |\n|{}\n",
        g.title,
        g.header.join(" | "),
        "---|".repeat(g.header.len())
    );
    for r in &g.rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s.push('\n');
    s
}

/// A metrics table as Markdown.
pub fn table_markdown(t: &Table) -> String {
    let mut header = vec!["group".to_string(), "n".to_string()];
    for k in &t.ks {
        header.push(format!("R_any@{k}"));
    }
    for k in &t.ks {
        header.push(format!("R_all@{k}"));
    }
    if t.ndcg {
        for k in &t.ks {
            header.push(format!("nDCG@{k}"));
        }
    }
    header.push("MRR".into());
    let rows = t
        .rows
        .iter()
        .map(|(label, s)| {
            let mut r = vec![label.clone(), s.n.to_string()];
            let get = |m: &std::collections::BTreeMap<usize, f64>, k: &usize| {
                m.get(k).map_or("-".into(), |x| f3(*x))
            };
            r.extend(t.ks.iter().map(|k| get(&s.recall_any, k)));
            r.extend(t.ks.iter().map(|k| get(&s.recall_all, k)));
            if t.ndcg {
                r.extend(t.ks.iter().map(|k| get(&s.ndcg_any, k)));
            }
            r.push(f3(s.mrr));
            r
        })
        .collect();
    grid_markdown(&Grid {
        title: t.title.clone(),
        header,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{score_ranking, Accumulator};

    #[test]
    fn markdown_has_every_column() {
        let mut acc = Accumulator::new(&[1, 5]);
        let gold = ["a".to_string()].into_iter().collect();
        acc.add(
            &["all"],
            &score_ranking(&["b".to_string(), "a".to_string()], &gold, &[1, 5]),
        );
        let t = Table {
            title: "bm25 — turn".into(),
            ks: vec![1, 5],
            ndcg: true,
            rows: acc.summaries(),
        };
        let md = table_markdown(&t);
        assert!(md.contains(
            "| group | n | R_any@1 | R_any@5 | R_all@1 | R_all@5 | nDCG@1 | nDCG@5 | MRR |"
        ));
        assert!(
            md.contains("| all | 1 | 0.000 | 1.000 | 0.000 | 1.000 | 0.000 | 1.000 | 0.500 |"),
            "{md}"
        );
        let mut r = Report::new("test", serde_json::json!({}), serde_json::json!({}));
        r.tables.push(t);
        r.notes.push("a caveat".into());
        let dir = tempfile::tempdir().unwrap();
        let (j, m) = (dir.path().join("r.json"), dir.path().join("r.md"));
        r.write(Some(&j), Some(&m)).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        assert_eq!(back["tables"][0]["rows"][0][1]["n"], 1);
        assert!(std::fs::read_to_string(&m).unwrap().contains("- a caveat"));
    }
}
