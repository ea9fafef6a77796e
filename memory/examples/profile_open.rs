use clawhdf5_memory::{NewMemory, SearchQuery, Store, StoreConfig, StoreOptions};
use std::time::Instant;

fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s.rsplit(')').next().unwrap().split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::args().nth(2).unwrap_or("/tmp/lead/prof".into());
    std::fs::create_dir_all(&dir).unwrap();
    let p = std::path::Path::new(&dir).join(format!("s{n}.h5"));
    let dim = 384;
    let vec_of = |i: usize| -> Vec<f32> {
        let mut x = (i as u64).wrapping_mul(0x9E3779B97F4A7C15) | 1;
        (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    };
    let words = [
        "alice", "bob", "berlin", "kyoto", "coffee", "hiking", "music", "guitar", "paris", "dog",
        "cat", "project", "deadline", "meeting", "python", "rust", "garden", "marathon",
        "birthday", "concert",
    ];
    if !p.exists() {
        let t = Instant::now();
        let mut s = Store::open_with(
            &p,
            StoreOptions {
                durability: clawhdf5_memory::Durability::None,
                ..Default::default()
            },
        )
        .unwrap();
        let items: Vec<NewMemory> = (0..n)
            .map(|i| {
                let text = format!(
                    "memory {i}: {} and {} went to {} for {} on day {}",
                    words[i % 20],
                    words[(i / 20) % 20],
                    words[(i / 400) % 20],
                    words[(i * 7) % 20],
                    i % 365
                );
                NewMemory {
                    text,
                    embedding: Some(vec_of(i)),
                    ..Default::default()
                }
            })
            .collect();
        eprintln!("generate {:?}", t.elapsed());
        let t = Instant::now();
        let c0 = cpu();
        let mut it = items.into_iter();
        loop {
            let chunk: Vec<NewMemory> = it.by_ref().take(10_000).collect();
            if chunk.is_empty() {
                break;
            }
            s.save_batch(chunk).unwrap();
        }
        eprintln!(
            "ingest {:?} = {:.0}/s; cpu {:.2}s = {:.0}/cpu-s",
            t.elapsed(),
            n as f64 / t.elapsed().as_secs_f64(),
            cpu() - c0,
            n as f64 / (cpu() - c0)
        );
        if std::env::var("NO_BUILD").is_ok() {
            return;
        }
        let t = Instant::now();
        s.build_index().unwrap();
        eprintln!("build index {:?}", t.elapsed());
        let t = Instant::now();
        s.close().unwrap();
        eprintln!("close {:?}", t.elapsed());
    }
    for _ in 0..2 {
        let c0 = cpu();
        let t = Instant::now();
        let s = Store::open_read_only(&p).unwrap();
        eprintln!(
            "open {:?} cpu {:.2}s keywords_from_file={}",
            t.elapsed(),
            cpu() - c0,
            s.stats().keywords_from_file
        );
        let mut q = SearchQuery::new("alice berlin coffee", 10);
        q.embedding = Some(vec_of(5));
        let t = Instant::now();
        let h = s.search_candidates(&q).unwrap();
        eprintln!("first query {:?} ({} hits)", t.elapsed(), h.len());
        let t = Instant::now();
        for _ in 0..20 {
            s.search_candidates(&q).unwrap();
        }
        eprintln!("steady {:?}", t.elapsed() / 20);
        for mode in [
            clawhdf5_memory::SearchMode::Keyword,
            clawhdf5_memory::SearchMode::Vector,
        ] {
            let mut q2 = q.clone();
            q2.mode = mode;
            let t = Instant::now();
            for _ in 0..20 {
                s.search_candidates(&q2).unwrap();
            }
            eprintln!("{mode:?} {:?}", t.elapsed() / 20);
        }
        let mut q3 = q.clone();
        q3.text = "marathon birthday 17".into();
        let t = Instant::now();
        for _ in 0..20 {
            s.search_candidates(&q3).unwrap();
        }
        eprintln!("rarer words hybrid {:?}", t.elapsed() / 20);
    }
    let _ = StoreConfig::default();
}
