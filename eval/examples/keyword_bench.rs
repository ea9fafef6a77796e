//! Tokenizing and keyword indexing of real record texts, on one thread: what every save and every query
//! spends on its words. Records are two LoCoMo turns each, as in the store harness.
//!
//! ```text
//! cargo run --release -p clawhdf5-eval --example keyword_bench -- [--locomo DIR] [--records N] [--rounds R]
//! ```
//!
//! Prints, best of R rounds: tokenizing the N texts with the thread's stem cache warm, the same with the
//! cache as a fresh thread has it (first round on a new thread), indexing the N token lists into a fresh
//! BM25 index, and tokenizing plus searching the LoCoMo questions against that index.

use std::path::PathBuf;
use std::time::Instant;

use clawhdf5_eval::harness::corpus::Corpus;
use clawhdf5_memory::bm25::{Bm25Index, Bm25Params};
use clawhdf5_memory::tokenize::{Tokenizer, TokenizerConfig};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn best_of(rounds: usize, mut f: impl FnMut()) -> f64 {
    (0..rounds.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let locomo =
        PathBuf::from(arg("--locomo").unwrap_or_else(|| "../shared/datasets/locomo".into()));
    let n: usize = arg("--records")
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000);
    let rounds: usize = arg("--rounds")
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(15);
    let corpus = Corpus::load(&locomo)?;
    let texts: Vec<String> = corpus.records(n)?.into_iter().map(|r| r.text).collect();
    let questions: Vec<String> = (0..2_000).map(|i| corpus.question(i).to_string()).collect();
    let tk = Tokenizer::new(TokenizerConfig::default());
    let bytes: usize = texts.iter().map(String::len).sum();

    let mut terms = 0usize;
    let warm = best_of(rounds, || {
        terms = texts
            .iter()
            .map(|t| std::hint::black_box(tk.terms(t)).len())
            .sum();
    });
    // A fresh thread's stem cache is empty: its first pass stems every new word.
    let cold = (0..rounds.clamp(1, 5))
        .map(|_| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let t = Instant::now();
                    for text in &texts {
                        std::hint::black_box(tk.terms(text));
                    }
                    t.elapsed().as_secs_f64()
                })
                .join()
                .unwrap_or(f64::INFINITY)
            })
        })
        .fold(f64::INFINITY, f64::min);
    let lists: Vec<_> = texts.iter().map(|t| tk.terms(t)).collect();
    let mut index = Bm25Index::new(Bm25Params::default());
    let indexing = best_of(rounds, || {
        let mut ix = Bm25Index::new(Bm25Params::default());
        for (doc, terms) in lists.iter().enumerate() {
            ix.add(doc as u32, terms.iter());
        }
        index = ix;
    });
    let mut hits = 0usize;
    let search = best_of(rounds, || {
        hits = 0;
        for q in &questions {
            let toks = tk.tokens(q);
            hits += std::hint::black_box(index.search(&toks, 50, &|_| true)).len();
        }
    });
    println!(
        "{n} records ({bytes} bytes, {terms} terms, vocabulary {}), best of {rounds}:",
        index.vocabulary_size()
    );
    println!("| measure | ms | per record or query |");
    println!("|---|---:|---:|");
    let per = |s: f64, k: usize| format!("{:.0} ns", s * 1e9 / k.max(1) as f64);
    println!(
        "| tokenize, stem cache warm | {:.2} | {} |",
        warm * 1e3,
        per(warm, n)
    );
    println!(
        "| tokenize on a fresh thread (cache empty) | {:.2} | {} |",
        cold * 1e3,
        per(cold, n)
    );
    println!(
        "| index the token lists into a fresh BM25 index | {:.2} | {} |",
        indexing * 1e3,
        per(indexing, n)
    );
    println!(
        "| tokenize and search {} questions (top 50; {hits} hits) | {:.2} | {} |",
        questions.len(),
        search * 1e3,
        per(search, questions.len())
    );
    Ok(())
}
