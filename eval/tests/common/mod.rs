//! Helpers shared by the smoke tests: running the binary, schema-faithful fixtures, and the CI rule for
//! missing external requirements (fail under CI=true, skip with a printed reason elsewhere).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

/// The shared read-only material beside the repository.
pub fn shared() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared"))
}

/// True when running under CI.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Returns false (skip) when `ok` is false outside CI; panics under CI.
pub fn require(ok: bool, what: &str) -> bool {
    if !ok {
        if in_ci() {
            panic!("{what} is missing (CI=true: the set-up scripts must provide it)");
        }
        eprintln!("skipping: {what} is missing");
    }
    ok
}

/// True when the MiniLM model files are installed where the embed crate looks.
pub fn model_available() -> bool {
    clawhdf5_embed::resolve_model_dir(None).is_ok()
}

/// Run `clawhdf5-eval ARGS`, returning stdout; panics with stderr on failure.
pub fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_clawhdf5-eval"))
        .args(args)
        .output()
        .expect("run clawhdf5-eval");
    assert!(
        out.status.success(),
        "clawhdf5-eval {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run `clawhdf5-eval ARGS` expecting failure; returns stderr.
pub fn run_err(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_clawhdf5-eval"))
        .args(args)
        .output()
        .expect("run clawhdf5-eval");
    assert!(
        !out.status.success(),
        "clawhdf5-eval {args:?} should have failed"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Read a JSON report.
pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("report written"))
        .expect("report is JSON")
}

/// Cell `col` of the headline row for `mode` in the report's first grid.
pub fn headline(report: &Value, mode: &str, col: &str) -> f64 {
    let g = &report["grids"][0];
    let header: Vec<&str> = g["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let c = header
        .iter()
        .position(|h| *h == col)
        .unwrap_or_else(|| panic!("no column {col}: {header:?}"));
    let row = g["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == mode)
        .unwrap_or_else(|| panic!("no row {mode}"));
    row[c].as_str().unwrap().parse().unwrap()
}

/// A LongMemEval file in the published schema: `n` questions, each with a haystack of `sessions` sessions of
/// four turns, evidence sessions marked by `answer_` ids and `has_answer` turns. Question types cycle through
/// the six published ones; every fifth question is an abstention (`_abs`) question; single-session-assistant
/// questions carry their evidence on the assistant's side.
pub fn longmemeval_fixture(n: usize, sessions: usize) -> Value {
    let types = [
        "single-session-user",
        "single-session-assistant",
        "single-session-preference",
        "multi-session",
        "temporal-reasoning",
        "knowledge-update",
    ];
    let topics = [
        (
            "hiking boots",
            "I bought new hiking boots from a shop in Boulder",
            "Which shop sold my hiking boots?",
        ),
        (
            "sourdough",
            "My sourdough starter is named Clint and lives in the fridge",
            "What is my sourdough starter called?",
        ),
        (
            "violin",
            "I practise violin every morning for twenty minutes",
            "How long do I practise violin?",
        ),
        (
            "garden",
            "We planted tomatoes and basil in the raised garden bed",
            "What did we plant in the garden bed?",
        ),
        (
            "commute",
            "My commute is forty minutes by train to the office",
            "How long is my commute?",
        ),
        (
            "aquarium",
            "The aquarium has six neon tetras and a snail",
            "What fish live in my aquarium?",
        ),
    ];
    let filler = [
        "Can you help me plan a budget for next month?",
        "What are some good stretches after running?",
        "Recommend a few podcasts about history.",
        "How do I remove a wine stain from a carpet?",
        "Write a short poem about autumn leaves.",
        "Explain how compound interest works.",
    ];
    let mut out = Vec::new();
    for q in 0..n {
        let qtype = types[q % types.len()];
        let abs = q % 5 == 4;
        let (topic, fact, question) = topics[q % topics.len()];
        let evidence = if qtype == "multi-session" {
            vec![1, sessions - 2]
        } else {
            vec![sessions / 2]
        };
        let mut ids = Vec::new();
        let mut dates = Vec::new();
        let mut hay = Vec::new();
        let mut answer_ids = Vec::new();
        for s in 0..sessions {
            let is_ev = evidence.contains(&s);
            let id = if is_ev {
                format!("answer_{q:04x}_{s}")
            } else {
                format!("sharegpt_{q}_{s}")
            };
            dates.push(format!(
                "2023/05/{:02} (Mon) {:02}:{:02}",
                1 + s % 28,
                8 + s % 12,
                (7 * s) % 60
            ));
            let f1 = filler[(q + s) % filler.len()];
            let f2 = filler[(q + 2 * s + 1) % filler.len()];
            let turns = if is_ev && !abs {
                answer_ids.push(id.clone());
                let (user_ev, asst_ev) = if qtype == "single-session-assistant" {
                    (false, true)
                } else {
                    (true, false)
                };
                let (u, a) = if asst_ev {
                    (
                        format!("Tell me something about {topic}."),
                        format!("Noted: {fact}."),
                    )
                } else {
                    (format!("{fact}."), "That sounds lovely!".to_string())
                };
                json!([
                    {"role": "user", "content": f1, "has_answer": false},
                    {"role": "assistant", "content": "Sure, here are some ideas.", "has_answer": false},
                    {"role": "user", "content": u, "has_answer": user_ev},
                    {"role": "assistant", "content": a, "has_answer": asst_ev}
                ])
            } else {
                json!([
                    {"role": "user", "content": f1},
                    {"role": "assistant", "content": "Here is what I suggest."},
                    {"role": "user", "content": f2},
                    {"role": "assistant", "content": "Happy to help with that."}
                ])
            };
            ids.push(json!(id));
            hay.push(turns);
        }
        if abs {
            // Abstention: the haystack mentions the topic, but never the asked fact.
            answer_ids.push(ids[sessions / 2].as_str().unwrap().to_string());
        }
        out.push(json!({
            "question_id": if abs { format!("{q:08x}_abs") } else { format!("{q:08x}") },
            "question_type": qtype,
            "question": question,
            "answer": if q % 3 == 0 { json!(3) } else { json!("an answer") },
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ids,
            "haystack_dates": dates,
            "haystack_sessions": hay,
            "answer_session_ids": answer_ids,
        }));
    }
    Value::Array(out)
}

/// A LoCoMo conversation in the layout of `shared/datasets/locomo/` (top-level keys, `qa` list).
pub fn locomo_fixture() -> Value {
    json!({
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to an LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That's wonderful, how was it?"},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "Really moving, the stories inspired me."},
            {"speaker": "Melanie", "dia_id": "D1:4", "text": "I painted a sunrise last week!",
             "img_url": ["https://example.invalid/x.jpg"], "blip_caption": "a photo of a painting of a sunrise", "query": "sunrise painting"}
        ],
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "We went camping at the beach with the kids."},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "I am researching adoption agencies."},
            {"speaker": "Melanie", "dia_id": "D2:3", "text": "Good luck with the adoption!"}
        ],
        "qa": [
            {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
            {"question": "What did Melanie paint?", "answer": "a sunrise", "evidence": ["D1:4"], "category": 4},
            {"question": "Where did Melanie camp?", "answer": "the beach", "evidence": ["D2:1"], "category": 4},
            {"question": "What is Caroline researching, and what moved her?", "answer": "adoption agencies", "evidence": ["D2:2", "D1:3"], "category": 1},
            {"question": "Would Caroline adopt?", "answer": "likely yes", "evidence": ["D2:2"], "category": 3},
            {"question": "What did Melanie realize after the race?", "adversarial_answer": "self-care", "evidence": ["D2:3"], "category": 5}
        ]
    })
}
