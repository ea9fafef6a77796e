//! all-MiniLM-L6-v2 against the sentence-transformers reference vectors in
//! `../shared/golden/minilm-l6-v2.json`: cosine ≥ 0.9999 and identical token counts for every text.
//!
//! Needs the model (scripts/setup/embed.sh installs it). Under CI=true a missing model fails the
//! test; elsewhere the test is skipped with a printed reason.

use std::path::PathBuf;

use clawhdf5_embed::{
    cosine, resolve_model_dir, sha256_file, Embedder, LocalBackend, LocalConfig, LocalMiniLm,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Golden {
    model_safetensors_sha256: String,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    tokens: usize,
    embedding: Vec<f32>,
}

fn golden() -> Golden {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/golden/minilm-l6-v2.json"
    ));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("golden file parses")
}

fn model(threads: Option<usize>) -> Option<LocalMiniLm> {
    model_on(LocalBackend::Native, threads)
}

fn model_on(backend: LocalBackend, threads: Option<usize>) -> Option<LocalMiniLm> {
    match resolve_model_dir(None) {
        Ok(_) => Some(
            LocalMiniLm::load_with(&LocalConfig {
                model_dir: None,
                threads,
                backend,
            })
            .expect("model loads"),
        ),
        Err(e) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true and the embedding model is missing: {e}");
            }
            eprintln!("SKIPPED: {e}");
            None
        }
    }
}

fn check_all(m: &LocalMiniLm, g: &Golden, vectors: &[Vec<f32>]) {
    let texts: Vec<&str> = g.items.iter().map(|i| i.text.as_str()).collect();
    let counts = m.token_counts(&texts).unwrap();
    let mut failures = Vec::new();
    let mut min_cos = f32::INFINITY;
    for ((item, v), n) in g.items.iter().zip(vectors).zip(&counts) {
        let c = cosine(v, &item.embedding);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        min_cos = min_cos.min(c);
        if c < 0.9999 || *n != item.tokens || v.len() != 384 || (norm - 1.0).abs() > 1e-4 {
            failures.push(format!(
                "{:?}: cosine {c:.6}, tokens {n} (want {}), norm {norm}",
                item.text, item.tokens
            ));
        }
    }
    eprintln!("{} golden texts, lowest cosine {min_cos:.7}", g.items.len());
    assert!(
        failures.is_empty(),
        "golden mismatches:\n{}",
        failures.join("\n")
    );
}

#[test]
fn golden_vectors_in_one_batch_and_one_by_one() {
    golden_on(LocalBackend::Native);
}

#[test]
fn candle_golden_vectors_in_one_batch_and_one_by_one() {
    golden_on(LocalBackend::Candle);
}

fn golden_on(backend: LocalBackend) {
    let g = golden();
    let Some(m) = model_on(backend, Some(2)) else {
        return;
    };
    assert_eq!(m.backend(), backend);
    assert_eq!(m.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(m.dim(), 384);
    assert_eq!(
        sha256_file(&m.model_dir().join("model.safetensors")).unwrap(),
        g.model_safetensors_sha256,
        "the installed model is not the one the golden vectors were made with"
    );
    let texts: Vec<&str> = g.items.iter().map(|i| i.text.as_str()).collect();
    let batch = m.embed_batch(&texts).unwrap();
    check_all(&m, &g, &batch);
    let single: Vec<Vec<f32>> = texts.iter().map(|t| m.embed_one(t).unwrap()).collect();
    check_all(&m, &g, &single);
}

#[test]
fn thread_count_does_not_change_vectors() {
    let g = golden();
    let Some(one) = model(Some(1)) else { return };
    let Some(three) = model(Some(3)) else { return };
    let texts: Vec<&str> = g.items.iter().map(|i| i.text.as_str()).collect();
    let a = one.embed_batch(&texts).unwrap();
    let b = three.embed_batch(&texts).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert!(cosine(x, y) > 0.99999);
    }
    assert!(one.embed_batch(&[]).unwrap().is_empty());
}

#[test]
fn zero_threads_is_rejected() {
    let Some(_) = model(Some(1)) else { return };
    assert!(LocalMiniLm::load(None, Some(0)).is_err());
}

#[test]
fn candle_thread_count_and_batching_do_not_change_vectors() {
    let g = golden();
    let Some(native) = model(Some(2)) else { return };
    let Some(candle) = model_on(LocalBackend::Candle, Some(1)) else {
        return;
    };
    let texts: Vec<&str> = g.items.iter().map(|i| i.text.as_str()).collect();
    let a = native.embed_batch(&texts).unwrap();
    let b = candle.embed_batch(&texts).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert!(cosine(x, y) > 0.99999);
    }
    assert!(candle.embed_batch(&[]).unwrap().is_empty());
}

#[test]
fn candle_cuda_without_a_gpu_is_a_clear_error() {
    let Some(_) = model(Some(1)) else { return };
    match LocalMiniLm::load_with(&LocalConfig {
        model_dir: None,
        threads: Some(1),
        backend: LocalBackend::CandleCuda,
    }) {
        // Built with `cuda` on a machine with a GPU: it must then match the golden vectors too.
        Ok(_) => golden_on(LocalBackend::CandleCuda),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.to_lowercase().contains("cuda"), "{msg}");
        }
    }
}
