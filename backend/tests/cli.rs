//! The `clawhdf5` command line: save, search, stats, and clear errors for bad invocations.

mod common;

use common::{clawhdf5, stderr, stdout};

#[test]
fn save_then_search_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("m.h5");
    let s = store.to_str().unwrap();
    let o = clawhdf5(&[
        "save",
        "--store",
        s,
        "--session",
        "s1",
        "The user's cat is called Miso",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let saved: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let id = saved["id"].as_u64().unwrap();
    let o = clawhdf5(&[
        "save",
        "--store",
        s,
        "--source",
        "user_correction",
        "The user prefers tea over coffee",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = clawhdf5(&[
        "search",
        "--store",
        s,
        "--json",
        "-k",
        "3",
        "what is the cat called",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hits: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let hits = hits.as_array().unwrap();
    // With the embedding model installed the search is hybrid and may list the other memory below it.
    assert!(!hits.is_empty() && hits.len() <= 2, "{hits:?}");
    assert_eq!(hits[0]["id"].as_u64(), Some(id));
    assert_eq!(hits[0]["session"], "s1");
    assert_eq!(hits[0]["source"], "conversation");
    for key in ["score", "text", "created_at"] {
        assert!(hits[0].get(key).is_some(), "missing {key}");
    }

    let o = clawhdf5(&["stats", "--store", s]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.contains("records:        2"), "{out}");
    assert!(out.contains("schema version: 1"), "{out}");
}

#[test]
fn keyword_mode_returns_only_matching_memories() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let s = s.to_str().unwrap();
    clawhdf5(&[
        "save",
        "--store",
        s,
        "--no-embed",
        "The user's cat is called Miso",
    ]);
    clawhdf5(&[
        "save",
        "--store",
        s,
        "--no-embed",
        "The user prefers tea over coffee",
    ]);
    let o = clawhdf5(&["search", "--store", s, "--mode", "keyword", "--json", "cat"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hits: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 1);
    let o = clawhdf5(&["search", "--store", s, "--mode", "sideways", "cat"]);
    assert_one_line_error(&o, "--mode");
}

#[test]
fn search_filters_by_source_tags_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let s = s.to_str().unwrap();
    let save = |args: &[&str]| {
        let mut all = vec!["save", "--store", s, "--no-embed"];
        all.extend_from_slice(args);
        let o = clawhdf5(&all);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(stdout(&o).trim()).unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let old = save(&[
        "--event-time",
        "2024-03-01",
        "--tags",
        "pets, home",
        "The cat sleeps on the sofa",
    ]);
    let new = save(&[
        "--event-time",
        "2025-06-01",
        "--tag",
        "pets",
        "The cat now sleeps in the garden",
    ]);
    let fix = save(&[
        "--source",
        "user_correction",
        "--tag",
        "work",
        "The cat is not allowed at work",
    ]);
    let ids = |extra: &[&str]| -> Vec<u64> {
        let mut all = vec![
            "search", "--store", s, "--mode", "keyword", "--json", "-k", "10",
        ];
        all.extend_from_slice(extra);
        all.push("cat");
        let o = clawhdf5(&all);
        assert!(o.status.success(), "{}", stderr(&o));
        let hits: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let mut ids: Vec<u64> = hits
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_u64().unwrap())
            .collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ids(&[]), vec![old, new, fix]);
    assert_eq!(ids(&["--tag", "pets"]), vec![old, new]);
    assert_eq!(
        ids(&["--tags", "pets,home"]),
        vec![old],
        "all the tags are required"
    );
    assert_eq!(ids(&["--source", "user_correction"]), vec![fix]);
    assert_eq!(
        ids(&["--source", "user_correction", "--source", "conversation"]).len(),
        3
    );
    assert_eq!(
        ids(&[
            "--from",
            "2025-01-01",
            "--to",
            "2025-12-31",
            "--tag",
            "pets"
        ]),
        vec![new]
    );
    assert_eq!(ids(&["--to", "2025-01-01"]), vec![old]);
    assert!(ids(&["--min-score", "1.01"]).is_empty());
    // Each saved tag is stored trimmed, and a search's JSON lists them.
    let o = clawhdf5(&[
        "search", "--store", s, "--mode", "keyword", "--json", "--tag", "home", "sofa",
    ]);
    let hits: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(hits[0]["tags"], serde_json::json!(["pets", "home"]));

    let o = clawhdf5(&[
        "search",
        "--store",
        s,
        "--from",
        "2025-01-01",
        "--to",
        "2024-01-01",
        "cat",
    ]);
    assert_one_line_error(&o, "--from");
    let o = clawhdf5(&["search", "--store", s, "--to", "next tuesday", "cat"]);
    assert_one_line_error(&o, "next tuesday");
}

#[test]
fn an_import_stopped_by_a_bad_line_keeps_every_line_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let s = s.to_str().unwrap();
    let lines = dir.path().join("in.jsonl");
    // Line 300 (past the first batch of 256) has a fractional event time; line 301 is fine. A line whose
    // memory the store would refuse is named too, not its batch.
    for (bad, says) in [
        ("{\"text\": \"x\", \"importance\": 5}", "importance 5"),
        ("{\"text\": \"x\", \"tags\": [\"\"]}", "tag"),
        (
            "{\"text\": \"x\", \"embedding\": [0.5]}",
            "1 dimensions where 2 are expected",
        ),
    ] {
        let text: String = (1..300)
            .map(|i| format!("{{\"text\": \"other {i}\", \"embedding\": [0.6, 0.8]}}\n"))
            .collect();
        std::fs::write(&lines, format!("{text}{bad}\n")).unwrap();
        let o = clawhdf5(&[
            "import",
            "--store",
            s,
            "--no-embed",
            "--quiet",
            lines.to_str().unwrap(),
        ]);
        let e = stderr(&o);
        assert!(
            !o.status.success() && e.contains("line 300") && e.contains(says),
            "{e}"
        );
    }
    std::fs::remove_file(&lines).unwrap();
    for f in [s.to_string(), format!("{s}.wal"), format!("{s}.lock")] {
        let _ = std::fs::remove_file(f);
    }
    let good = |i: usize| format!("{{\"text\": \"note number {i} of the import\"}}\n");
    let mut text: String = (1..300).map(good).collect();
    text.push_str("{\"text\": \"the bad one\", \"event_time\": 1.5}\n");
    text.push_str(&good(301));
    std::fs::write(&lines, &text).unwrap();
    let l = lines.to_str().unwrap();
    let o = clawhdf5(&["import", "--store", s, "--no-embed", "--quiet", l]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("line 300")
            && e.contains("before it are imported")
            && e.contains("event_time 1.5"),
        "{e}"
    );
    let o = clawhdf5(&["stats", "--store", s, "--json"]);
    let stats: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(stats["records"], 299, "{stats}");
    // Mended, the file imports again: what went in before is deduplicated.
    std::fs::write(
        &lines,
        text.replace("\"event_time\": 1.5", "\"event_time\": 1500"),
    )
    .unwrap();
    let o = clawhdf5(&["import", "--store", s, "--no-embed", "--quiet", l]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "imported 2 memories (299 duplicates, 0 forgotten skipped)"
    );
}

#[test]
fn import_reports_its_summary_as_text_or_json() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let s = s.to_str().unwrap();
    let lines = dir.path().join("in.jsonl");
    std::fs::write(
        &lines,
        "{\"text\": \"The boat is called Nautilus\", \"tags\": [\"boat\"]}\n{\"text\": \"The boat is called Nautilus\"}\n{\"text\": \"Mooring fee is due in May\"}\n",
    )
    .unwrap();
    let l = lines.to_str().unwrap();
    let o = clawhdf5(&["import", "--store", s, "--no-embed", "--quiet", l]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "imported 2 memories (1 duplicates, 0 forgotten skipped)"
    );
    let o = clawhdf5(&["import", "--store", s, "--no-embed", "--quiet", "--json", l]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        summary,
        serde_json::json!({"imported": 0, "duplicates": 3, "forgotten_skipped": 0})
    );
}

#[test]
fn h5_ls_lists_a_store_one_group_or_all_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("m.h5");
    let s = store.to_str().unwrap();
    let o = clawhdf5(&["save", "--store", s, "--no-embed", "a memory to list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first_words = |o: &std::process::Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    };
    let o = clawhdf5(&["h5", "ls", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        first_words(&o).contains(&"records".to_string()),
        "{}",
        stdout(&o)
    );
    let o = clawhdf5(&["h5", "ls", s, "/records"]);
    assert!(
        first_words(&o).contains(&"text".to_string()),
        "{}",
        stdout(&o)
    );
    let o = clawhdf5(&["h5", "ls", "-r", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    let all = first_words(&o);
    assert_eq!(all[0], "/");
    for p in ["/records", "/records/text", "/records/id"] {
        assert!(all.contains(&p.to_string()), "{p} missing: {}", stdout(&o));
    }
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("/records/text"))
        .unwrap();
    assert!(line.contains("Dataset {1/Inf} vlen-str"), "{line}");
    let o = clawhdf5(&["h5", "ls", "--recursive", s, "/nope"]);
    assert_one_line_error(&o, "/nope");
}

#[test]
fn identical_save_is_deduplicated() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let s = s.to_str().unwrap();
    let a = clawhdf5(&["save", "--store", s, "same text"]);
    let b = clawhdf5(&["save", "--store", s, "same text"]);
    let a: serde_json::Value = serde_json::from_str(stdout(&a).trim()).unwrap();
    let b: serde_json::Value = serde_json::from_str(stdout(&b).trim()).unwrap();
    assert_eq!(a["id"], b["id"]);
    assert_eq!(b["deduplicated"], true);
}

fn assert_one_line_error(o: &std::process::Output, needle: &str) {
    assert!(!o.status.success());
    let err = stderr(o);
    assert_eq!(
        err.trim().lines().count(),
        1,
        "error is not one line: {err:?}"
    );
    assert!(err.contains(needle), "{err:?} lacks {needle:?}");
}

#[test]
fn unknown_flag_is_a_one_line_error() {
    let o = clawhdf5(&["search", "--store", "x.h5", "--frobnicate", "q"]);
    assert_one_line_error(&o, "--frobnicate");
}

#[test]
fn missing_store_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("absent.h5");
    let o = clawhdf5(&["search", "--store", s.to_str().unwrap(), "anything"]);
    assert_one_line_error(&o, "store not found");
    let o = clawhdf5(&["stats", "--store", s.to_str().unwrap()]);
    assert_one_line_error(&o, "store not found");
}

#[test]
fn non_hdf5_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("notes.txt");
    std::fs::write(&s, "just some text, definitely not HDF5\n").unwrap();
    for args in [
        vec!["search", "--store", s.to_str().unwrap(), "q"],
        vec!["save", "--store", s.to_str().unwrap(), "hello"],
        vec!["stats", "--store", s.to_str().unwrap()],
    ] {
        let o = clawhdf5(&args);
        assert_one_line_error(&o, "not a clawhdf5 store");
    }
    // The file is untouched.
    assert_eq!(
        std::fs::read_to_string(&s).unwrap(),
        "just some text, definitely not HDF5\n"
    );
}

#[test]
fn empty_text_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let o = clawhdf5(&["save", "--store", s.to_str().unwrap(), "   "]);
    assert_one_line_error(&o, "must not be empty");
}

#[test]
fn a_search_for_no_results_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let store = s.to_str().unwrap();
    assert!(clawhdf5(&["save", "--store", store, "hello"])
        .status
        .success());
    for limit in [["--limit", "0"], ["-k", "0"]] {
        let o = clawhdf5(&["search", "--store", store, limit[0], limit[1], "hello"]);
        assert_one_line_error(&o, "at least 1");
    }
}

#[test]
fn bad_event_time_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("m.h5");
    let o = clawhdf5(&[
        "save",
        "--store",
        s.to_str().unwrap(),
        "--event-time",
        "someday",
        "x",
    ]);
    assert_one_line_error(&o, "someday");
    // A number of milliseconds no date can be written back as (years 1 to 9999 only).
    let o = clawhdf5(&[
        "save",
        "--store",
        s.to_str().unwrap(),
        "--event-time=-99999999999999999",
        "x",
    ]);
    assert_one_line_error(&o, "outside years 1 to 9999");
}

#[test]
fn embed_backends_give_the_same_vectors_and_a_bad_name_is_an_error() {
    let o = clawhdf5(&["embed", "--backend", "bogus", "x"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unknown embedding backend"),
        "{}",
        stderr(&o)
    );
    if !common::model_installed() {
        return;
    }
    let vectors = |backend: &str| -> Vec<Vec<f64>> {
        let o = clawhdf5(&[
            "embed",
            "--json",
            "--backend",
            backend,
            "hello world",
            "Zürich 2023年5月",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        out.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                e["vector"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    for (a, b) in vectors("native").iter().zip(vectors("candle")) {
        let cos: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(cos >= 0.9999, "cosine {cos}");
    }
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("m.h5");
    let s = store.to_str().unwrap();
    let lines = dir.path().join("in.jsonl");
    let mut f = std::fs::File::create(&lines).unwrap();
    for i in 0..3000 {
        writeln!(
            f,
            r#"{{"text": "memory {i} about a long and winding road to somewhere"}}"#
        )
        .unwrap();
    }
    drop(f);
    let o = clawhdf5(&[
        "import",
        "--store",
        s,
        "--no-embed",
        lines.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Each command writes far more than a pipe holds, into a pipe whose reader has already gone (as
    // `clawhdf5 export | head -1` does once head exits).
    for args in [
        vec!["export", "--store", s],
        vec![
            "search",
            "--store",
            s,
            "--no-embed",
            "-k",
            "1000",
            "memory road",
        ],
        vec!["h5", "dump", s, "/records/text", "--json"],
        vec!["h5", "ls", "-r", s],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clawhdf5"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}
