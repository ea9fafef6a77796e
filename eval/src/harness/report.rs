//! What a harness writes: Markdown tables and the same figures as JSON, stamped with the command, time,
//! machine, load average and commit, into `OUT/NAME.md` and `OUT/NAME.json`.

use std::path::Path;

use serde::Serialize;

use super::error::{io_at, HarnessError, Result};
use super::measure::load_average;

/// One Markdown table.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Heading.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (what was measured, how).
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(title: impl Into<String>, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Append a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "### {}\n\n| {} |\n|{}\n",
            self.title,
            self.header.join(" | "),
            "---|".repeat(self.header.len())
        );
        for r in &self.rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        s.push('\n');
        for n in &self.notes {
            s.push_str(&format!("{n}\n"));
        }
        if !self.notes.is_empty() {
            s.push('\n');
        }
        s
    }
}

/// Where and when a run happened.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// The command line.
    pub command: String,
    /// UTC time the run finished.
    pub finished_at: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// CPU model from /proc/cpuinfo.
    pub cpu_model: String,
    /// Load average (1, 5, 15 min) when the run finished.
    pub load_average: String,
    /// `git describe` of the source tree, when it is a git checkout.
    pub commit: String,
    /// Build profile of this binary.
    pub profile: &'static str,
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn commit() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    std::process::Command::new("git")
        .args(["-C", dir, "describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

impl RunInfo {
    /// Describe this run now.
    pub fn now() -> RunInfo {
        RunInfo {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model: cpu_model(),
            load_average: load_average(),
            commit: commit(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }
}

/// Everything one harness run produced.
#[derive(Clone, Debug, Serialize)]
pub struct HarnessReport {
    /// Harness name (also the output file stem).
    pub name: String,
    /// Smoke size (figures not meaningful).
    pub smoke: bool,
    /// Where and when.
    pub run: RunInfo,
    /// Caveats printed above the tables.
    pub notes: Vec<String>,
    /// The tables.
    pub tables: Vec<Table>,
    /// The raw figures, for scripts.
    pub data: serde_json::Value,
}

impl HarnessReport {
    /// An empty report for harness `name`.
    pub fn new(name: &str, smoke: bool) -> HarnessReport {
        HarnessReport {
            name: name.into(),
            smoke,
            run: RunInfo::now(),
            notes: Vec::new(),
            tables: Vec::new(),
            data: serde_json::Value::Null,
        }
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let r = &self.run;
        let mut s = format!(
            "## {}{}\n\n`{}`\n\n{} · {} CPUs, {} · load average {} · commit {} · {} build\n\n",
            self.name,
            if self.smoke {
                " (smoke size: figures not meaningful)"
            } else {
                ""
            },
            r.command,
            r.finished_at,
            r.cpus,
            r.cpu_model,
            r.load_average,
            r.commit,
            r.profile
        );
        for n in &self.notes {
            s.push_str(&format!("- {n}\n"));
        }
        if !self.notes.is_empty() {
            s.push('\n');
        }
        for t in &self.tables {
            s.push_str(&t.to_markdown());
        }
        s
    }

    /// Stamp the finish time and load average, write `OUT/NAME.md` and `OUT/NAME.json`, print the Markdown.
    pub fn finish(mut self, out: &Path) -> Result<()> {
        self.run = RunInfo {
            command: self.run.command.clone(),
            ..RunInfo::now()
        };
        std::fs::create_dir_all(out).map_err(io_at(out))?;
        let md = self.to_markdown();
        let mp = out.join(format!("{}.md", self.name));
        std::fs::write(&mp, &md).map_err(io_at(&mp))?;
        let jp = out.join(format!("{}.json", self.name));
        let json = serde_json::to_string_pretty(&self)
            .map_err(|e| HarnessError::Input(format!("cannot encode the report as JSON: {e}")))?;
        std::fs::write(&jp, json).map_err(io_at(&jp))?;
        println!("{md}");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_markdown_and_json() {
        let mut r = HarnessReport::new("demo", true);
        let mut t = Table::new("figures", &["a", "b"]);
        t.row(vec!["1".into(), "2".into()]);
        t.notes.push("measured somehow".into());
        r.tables.push(t);
        r.notes.push("a caveat".into());
        r.data = serde_json::json!({"x": 1});
        let dir = tempfile::tempdir().unwrap();
        r.finish(dir.path()).unwrap();
        let md = std::fs::read_to_string(dir.path().join("demo.md")).unwrap();
        assert!(md.contains("| a | b |\n|---|---|\n| 1 | 2 |"), "{md}");
        assert!(md.contains("- a caveat") && md.contains("measured somehow"));
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("demo.json")).unwrap())
                .unwrap();
        assert_eq!(j["data"]["x"], 1);
        assert_eq!(j["tables"][0]["rows"][0][1], "2");
    }
}
