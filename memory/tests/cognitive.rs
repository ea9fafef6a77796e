//! The cognitive layer acting through `AgentMemory::save` / `search` and surviving close + reopen.

use std::path::Path;

use clawhdf5_memory::cognitive::multimodal::Modality;
use clawhdf5_memory::cognitive::strategy::{ExchangeParts, SaveStrategy};
use clawhdf5_memory::cognitive::{
    AgentMemory, CognitiveConfig, EXT_GRAPH, EXT_SESSIONS, EXT_STATE,
};
use clawhdf5_memory::{
    Durability, Filter, NewMemory, SearchMode, SearchQuery, Store, StoreOptions, Tier,
};

const DAY: i64 = 86_400_000;
/// 2023-05-18T00:00:00Z, a Thursday.
const T0: i64 = 1_684_368_000_000;

fn open(p: &Path) -> AgentMemory {
    AgentMemory::open(p, StoreOptions::default(), CognitiveConfig::default()).unwrap()
}

fn open_with(p: &Path, cfg: CognitiveConfig) -> AgentMemory {
    AgentMemory::open(p, StoreOptions::default(), cfg).unwrap()
}

fn kw(q: &str, k: usize) -> SearchQuery {
    let mut q = SearchQuery::new(q, k);
    q.mode = SearchMode::Keyword;
    q
}

fn at(text: &str, t: i64) -> NewMemory {
    NewMemory {
        text: text.into(),
        event_time: Some(t),
        ..Default::default()
    }
}

#[test]
fn gate_and_strategies_through_observe_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    assert!(m
        .observe_exchange("thanks!", "You're welcome!", "s1", T0)
        .unwrap()
        .is_empty());
    let saved = m
        .observe_exchange(
            "My sister Ana lives in Lisbon",
            "Noted, Ana in Lisbon.",
            "s1",
            T0,
        )
        .unwrap();
    assert_eq!(saved.len(), 1);
    let fix = m
        .observe_exchange(
            "Actually, Ana lives in Porto now",
            "Updated.",
            "s1",
            T0 + DAY,
        )
        .unwrap();
    let rec = m.store().get(fix[0].id).unwrap();
    assert_eq!(rec.source.as_str(), "user_correction");
    assert_eq!(rec.session, "s1");
    assert_eq!(m.strategy_state().seen, 3);
    assert_eq!(m.strategy_state().skipped, 1);
    m.close().unwrap();

    // Strategy state and the semantic-shift window survive reopen.
    let cfg = CognitiveConfig {
        strategy: SaveStrategy::OnSemanticShift {
            parts: ExchangeParts::UserTurn,
            max_similarity: 0.8,
            window: 8,
        },
        ..Default::default()
    };
    let mut m = open_with(&p, cfg.clone());
    assert_eq!(m.strategy_state().seen, 3);
    assert_eq!(
        m.observe_exchange("I collect vintage cameras", "", "s2", T0)
            .unwrap()
            .len(),
        1
    );
    m.close().unwrap();
    let mut m = open_with(&p, cfg);
    assert!(
        m.observe_exchange("I collect vintage cameras!", "", "s2", T0)
            .unwrap()
            .is_empty(),
        "repeat skipped"
    );
    let only = CognitiveConfig {
        strategy: SaveStrategy::OnUserCorrection,
        ..Default::default()
    };
    m.set_config(only);
    assert!(m
        .observe_exchange("I like tea", "ok", "s2", T0)
        .unwrap()
        .is_empty());
    assert_eq!(
        m.observe_exchange("No, I meant green tea", "ok", "s2", T0)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn knowledge_updates_supersede_and_keep_history() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    let paris = m.save(at("I live in Paris", T0)).unwrap().id;
    let berlin = m.save(at("I moved to Berlin", T0 + 30 * DAY)).unwrap().id;
    m.save(at("I love the museums in Paris", T0)).unwrap();
    m.close().unwrap();

    let m = open(&p);
    assert_eq!(m.store().get(paris).unwrap().superseded_by, Some(berlin));
    let r = m.search(&kw("where do I live", 5), T0 + 40 * DAY).unwrap();
    assert_eq!(r.hits[0].record.id, berlin);
    assert!(
        r.hits.iter().all(|h| h.record.id != paris),
        "superseded hidden by default"
    );
    let mut q = kw("where do I live", 5);
    q.filter.include_superseded = true;
    let r = m.search(&q, T0 + 40 * DAY).unwrap();
    let ids: Vec<u64> = r.hits.iter().map(|h| h.record.id).collect();
    assert!(ids.contains(&paris) && ids.contains(&berlin));
    // A huge k asks for everything that matches, not for memory to hold that many.
    let all = m.search(&kw("where do I live", usize::MAX), T0 + 40 * DAY);
    assert!(all.unwrap().hits.iter().any(|h| h.record.id == berlin));
    let sessions = m.search_sessions("Paris", usize::MAX).unwrap();
    assert!(sessions.len() <= 3);
    let h = m.history(berlin);
    assert_eq!(
        h.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![paris, berlin]
    );
    assert_eq!(h[0].event_time, Some(T0));
    assert_eq!(h[1].event_time, Some(T0 + 30 * DAY));
}

#[test]
fn reranker_prefers_newer_and_corrections_on_near_ties() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let cfg = CognitiveConfig {
        knowledge_updates: false,
        ..Default::default()
    };
    let mut m = open_with(&p, cfg.clone());
    let old = m.save(at("the team meeting is on Monday", T0)).unwrap().id;
    let new = m
        .save(at("the team meeting is on Tuesday", T0 + 20 * DAY))
        .unwrap()
        .id;
    m.close().unwrap();
    let m = open_with(&p, cfg.clone());
    let r = m.search(&kw("team meeting", 5), T0 + 21 * DAY).unwrap();
    assert_eq!(r.hits[0].record.id, new);
    assert_eq!(r.hits[1].record.id, old);
    let mut off = cfg.clone();
    off.rerank.enabled = false;
    drop(m);
    let m = open_with(&p, off);
    let r = m.search(&kw("team meeting", 5), T0 + 21 * DAY).unwrap();
    assert_eq!(
        r.hits[0].record.id, old,
        "without re-ranking the tie stays in id order"
    );
    drop(m);

    let mut m = open_with(&p, cfg);
    let corr = m
        .save(NewMemory {
            source: Some("user_correction".into()),
            ..at("the team meeting is on Wednesday", T0 + 20 * DAY)
        })
        .unwrap()
        .id;
    // Said at the same time as the Tuesday record: the correction's authority breaks the tie.
    let r = m.search(&kw("team meeting", 5), T0 + 21 * DAY).unwrap();
    assert_eq!(r.hits[0].record.id, corr);
}

#[test]
fn confidence_rejection_says_i_dont_know() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(&dir.path().join("m.h5"));
    m.save(at("Bob adopted a greyhound named Pixel", T0))
        .unwrap();
    for i in 0..20 {
        m.save(at(&format!("note {i} about groceries and errands"), T0))
            .unwrap();
    }
    let r = m
        .search(&kw("quantum chromodynamics lecture", 5), T0)
        .unwrap();
    assert!(r.hits.is_empty());
    let r = m.search(&kw("greyhound", 5), T0).unwrap();
    assert_eq!(r.hits.len(), 1);
}

#[test]
fn temporal_hints_filter_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    let first = m
        .save(at("went hiking on Mount Tam", T0 - 60 * DAY))
        .unwrap()
        .id;
    let last_week = m
        .save(at("went hiking near the lake", T0 - 7 * DAY))
        .unwrap()
        .id;
    let recent = m.save(at("went hiking in the rain", T0 - DAY)).unwrap().id;
    // Relative time in the text is resolved against the session date.
    let y = m.save(at("I baked bread yesterday", T0)).unwrap().id;
    m.close().unwrap();

    let m = open(&p);
    assert_eq!(m.store().get(y).unwrap().event_time, Some(T0 - DAY));
    assert_eq!(m.timeline().len(), 4, "rebuilt on open");
    assert_eq!(m.timeline().earliest(1), vec![first]);
    let r = m.search(&kw("hiking last week", 5), T0).unwrap();
    assert!(r.time_filter_applied);
    assert_eq!(r.hits.len(), 1);
    assert_eq!(r.hits[0].record.id, last_week);
    let r = m
        .search(&kw("the first time I went hiking", 5), T0)
        .unwrap();
    assert_eq!(r.hits[0].record.id, first);
    let r = m
        .search(&kw("where did I go hiking most recently", 5), T0)
        .unwrap();
    assert_eq!(r.hits[0].record.id, recent);
    let r = m.search(&kw("hiking in May 2023", 5), T0).unwrap();
    assert_eq!(r.hits.len(), 2, "the hikes of 11 and 17 May, not March's");
    assert!(r.hits.iter().all(|h| h.record.id != first));
    // A range that matches nothing is relaxed rather than answering nothing.
    let r = m.search(&kw("hiking in 1999", 5), T0).unwrap();
    assert!(!r.time_filter_applied);
    assert_eq!(r.hits.len(), 3);
}

#[test]
fn a_dated_question_with_only_weak_matches_in_its_range_is_not_left_empty() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    // The day the question names holds one weak match; a strong one lies a week later.
    let weak = m.save(at("Sam had lunch with his sister", T0)).unwrap().id;
    let strong = m
        .save(at("Sam booked a flight ticket to Boston", T0 + 7 * DAY))
        .unwrap()
        .id;
    m.save(at("Gardening tips for the spring", T0 + 9 * DAY))
        .unwrap();
    let scores = m.search(&kw("Sam flight ticket Boston", 5), T0).unwrap();
    let kw_of = |id: u64| {
        scores
            .hits
            .iter()
            .find(|h| h.record.id == id)
            .and_then(|h| h.keyword_score)
            .unwrap()
    };
    let (weak_kw, strong_kw) = (kw_of(weak), kw_of(strong));
    assert!(weak_kw < strong_kw);
    m.close().unwrap();

    // Keyword floor between the two: only the flight is confident on its own.
    let mut cfg = CognitiveConfig::default();
    cfg.confidence.min_keyword_score = Some((weak_kw + strong_kw) / 2.0);
    let m = open_with(&p, cfg);
    let q = kw("Sam flight ticket Boston on 18 May 2023", 5);
    let r = m.search(&q, T0 + 30 * DAY).unwrap();
    let ids: Vec<u64> = r.hits.iter().map(|h| h.record.id).collect();
    assert_eq!(
        ids,
        vec![weak, strong],
        "the named day first, then the rest"
    );
    assert!(!r.time_filter_applied);
    // A confident match inside the range still answers alone.
    let r = m
        .search(
            &kw("Sam flight ticket Boston on 25 May 2023", 5),
            T0 + 30 * DAY,
        )
        .unwrap();
    assert!(r.time_filter_applied);
    assert_eq!(
        r.hits.iter().map(|h| h.record.id).collect::<Vec<_>>(),
        vec![strong]
    );
}

/// Two linked facts: Alice works at Acme Corp, and Acme Corp builds with Kubernetes and Rust.
fn save_alice_at_acme(m: &mut AgentMemory) {
    m.save(at("Then Alice joined Acme Corp as an engineer", T0))
        .unwrap();
    m.save(at(
        "Acme Corp builds its backend with Kubernetes and Rust",
        T0,
    ))
    .unwrap();
}

#[test]
fn graph_is_built_persisted_and_expands_queries() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    save_alice_at_acme(&mut m);
    m.save(at("Later Alicee moved to Berlin", T0)).unwrap();
    m.close().unwrap();

    let store = Store::open_read_only(&p).unwrap();
    assert!(
        store.extension(EXT_GRAPH).is_some(),
        "persisted in the file"
    );
    drop(store);
    let m = open(&p);
    let g = m.graph();
    let alice = g.find("alice").unwrap();
    assert_eq!(g.find("alicee"), Some(alice), "resolved by edit distance");
    let acme = g.find("acme corp").unwrap();
    let k8s = g.find("kubernetes").unwrap();
    let reach = g.bfs(alice, 2);
    assert!(reach.contains(&(acme, 1)));
    assert!(reach.contains(&(k8s, 2)));
    // "What does Alice work with?" reaches the Kubernetes record only through the graph.
    let r = m
        .search(&kw("what tools does Alice work with", 5), T0)
        .unwrap();
    assert!(
        r.expanded_with.iter().any(|n| n == "Acme Corp"),
        "{:?}",
        r.expanded_with
    );
    assert!(r.hits.iter().any(|h| h.record.text.contains("Kubernetes")));
}

/// A toy embedder (hashed words) that records every text it embeds.
struct RecordingEmbedder(std::sync::Mutex<Vec<String>>);

impl clawhdf5_memory::embed::Embedder for RecordingEmbedder {
    fn model_id(&self) -> &str {
        "recording"
    }
    fn dim(&self) -> usize {
        16
    }
    fn embed_batch(
        &self,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, clawhdf5_memory::embed::EmbedError> {
        let mut seen = self.0.lock().unwrap();
        Ok(texts
            .iter()
            .map(|t| {
                seen.push(t.to_string());
                let mut v = vec![0.01f32; 16];
                for w in t.to_lowercase().split_whitespace() {
                    let h = w
                        .bytes()
                        .fold(7u32, |a, b| a.wrapping_mul(31) ^ u32::from(b));
                    v[(h % 16) as usize] += 1.0;
                }
                v
            })
            .collect())
    }
}

#[test]
fn a_hybrid_search_embeds_only_its_query_and_expands_by_keywords() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let embedder = std::sync::Arc::new(RecordingEmbedder(Default::default()));
    let opts = || StoreOptions {
        embedder: Some(embedder.clone()),
        ..StoreOptions::default()
    };
    let mut m = AgentMemory::open(&p, opts(), CognitiveConfig::default()).unwrap();
    save_alice_at_acme(&mut m);
    m.close().unwrap();
    let m = AgentMemory::open(&p, opts(), CognitiveConfig::default()).unwrap();
    embedder.0.lock().unwrap().clear();
    let r = m
        .search(&SearchQuery::new("what tools does Alice work with", 5), T0)
        .unwrap();
    assert!(r.expanded_with.iter().any(|n| n == "Acme Corp"));
    assert!(r.hits.iter().any(|h| h.record.text.contains("Kubernetes")));
    assert_eq!(
        *embedder.0.lock().unwrap(),
        vec!["what tools does Alice work with".to_string()],
        "one text, one forward pass"
    );
}

#[test]
fn graph_catches_up_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    {
        let mut m = open(&p);
        m.save(at("So Carol visited Tokyo", T0)).unwrap();
        // Dropped without close: the graph was never persisted, the records are in the log.
    }
    let m = open(&p);
    assert!(m.graph().find("tokyo").is_some());
    assert_eq!(m.graph().covered_id(), 1);
}

#[test]
fn consolidation_moves_tiers_and_archives_without_destroying() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(
            m.save(at(&format!("weekly chore {i}: water the plants"), T0))
                .unwrap()
                .id,
        );
    }
    let key = m
        .save(NewMemory {
            importance: Some(0.9),
            ..at("my passport expires in 2031", T0)
        })
        .unwrap()
        .id;
    // Created now (wall clock): consolidate with a clock a day ahead, then far ahead.
    let now = clawhdf5_memory::now_ms();
    let rep = m.consolidate(now + 2 * DAY).unwrap();
    assert_eq!(rep.to_episodic, 11, "{rep:?}");
    m.close().unwrap();

    let mut m = open(&p);
    assert_eq!(m.store().get(key).unwrap().tier, Tier::Episodic);
    assert!(m.consolidation_state().cycles >= 1, "progress persisted");
    let rep = m.consolidate(now + 400 * DAY).unwrap();
    assert!(rep.archived >= 10, "{rep:?}");
    assert_eq!(m.store().get(key).unwrap().tier, Tier::Semantic);
    m.close().unwrap();

    let m = open(&p);
    assert_eq!(m.store().get(ids[0]).unwrap().tier, Tier::Archived);
    assert!(
        !m.store().get(ids[0]).unwrap().tombstone,
        "archived, not destroyed"
    );
    assert!(m
        .search(&kw("water the plants", 5), now)
        .unwrap()
        .hits
        .is_empty());
    let cfg = CognitiveConfig {
        search_archived: true,
        ..Default::default()
    };
    drop(m);
    let m = open_with(&p, cfg);
    assert!(!m
        .search(&kw("water the plants", 5), now)
        .unwrap()
        .hits
        .is_empty());
}

#[test]
fn sessions_are_summarised_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    m.observe_exchange(
        "Let's plan the camping trip to Yosemite",
        "Sure, tents and permits.",
        "trip",
        T0,
    )
    .unwrap();
    m.observe_exchange(
        "We need bear canisters for Yosemite",
        "Added to the list.",
        "trip",
        T0 + 1000,
    )
    .unwrap();
    m.observe_exchange(
        "How do I file my tax return?",
        "Start with form 1040.",
        "tax",
        T0 + DAY,
    )
    .unwrap();
    m.set_session_summary("tax", "Filing the 2022 tax return")
        .unwrap();
    m.close().unwrap();

    let store = Store::open_read_only(&p).unwrap();
    assert!(store.extension(EXT_SESSIONS).is_some());
    assert!(store.extension(EXT_STATE).is_some());
    drop(store);
    let m = open(&p);
    let info = m.sessions().get("trip").unwrap();
    assert_eq!(info.records, 2);
    assert_eq!((info.first_time, info.last_time), (T0, T0 + 1000));
    let hits = m
        .search_sessions("which conversation was about camping?", 3)
        .unwrap();
    assert_eq!(hits[0].session, "trip");
    let hits = m.search_sessions("taxes", 3).unwrap();
    assert_eq!(hits[0].session, "tax");
    assert_eq!(hits[0].summary, "Filing the 2022 tax return");
}

#[test]
fn ephemeral_entries_promote_into_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    m.ephemeral().put(
        "scratch",
        "the wifi password is hunter2",
        Some(&[1.0, 0.0]),
        None,
        T0,
    );
    m.ephemeral()
        .put("other", "temporary", Some(&[0.0, 1.0]), Some(10), T0);
    assert_eq!(m.ephemeral().search(&[0.9, 0.1], 1, T0)[0].0, "scratch");
    assert!(m.ephemeral().get("other", T0 + 20).is_none(), "expired");
    let out = m
        .promote_ephemeral(
            "scratch",
            T0 + 30,
            NewMemory {
                session: Some("s".into()),
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
    assert!(m.ephemeral().get("scratch", T0 + 40).is_none());
    assert!(m
        .promote_ephemeral("missing", T0, NewMemory::default())
        .unwrap()
        .is_none());
    m.close().unwrap();
    let m = open(&p);
    let r = m.search(&kw("wifi password", 3), T0).unwrap();
    assert_eq!(r.hits[0].record.id, out.id);
    assert_eq!(r.hits[0].record.event_time, Some(T0));
}

#[test]
fn media_memories_are_indexed_and_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    let photo = m
        .save_media(
            at("photo of the sunset over the bay", T0),
            Modality::Image,
            "file:///photos/sunset.jpg",
            Some("image/jpeg"),
            vec![
                (Modality::Image, vec![1.0, 0.0, 0.0]),
                (Modality::Text, vec![0.2, 0.9]),
            ],
        )
        .unwrap()
        .id;
    let song = m
        .save_media(
            at("recording of the street band", T0),
            Modality::Audio,
            "file:///audio/band.ogg",
            None,
            vec![(Modality::Audio, vec![0.0, 1.0, 0.0])],
        )
        .unwrap()
        .id;
    let bad = m.save_media(
        at("broken", T0),
        Modality::Image,
        "x",
        None,
        vec![(Modality::Image, vec![1.0])],
    );
    assert!(bad.is_err(), "dimension mismatch refused");
    m.close().unwrap();

    let store = Store::open_read_only(&p).unwrap();
    for name in [
        "cognitive_media_0000",
        "cognitive_media_graph_image",
        "cognitive_media_graph_audio",
        "cognitive_media_graph_text",
    ] {
        assert!(store.extension(name).is_some(), "{name} in the file");
    }
    drop(store);
    let m = open(&p);
    assert_eq!(m.media().len(), 2);
    assert!(
        m.media().graph_loaded(Modality::Image),
        "the HNSW graph is read from the file, not rebuilt"
    );
    assert_eq!(m.media().indexed(Modality::Image), 1);
    let hits = m
        .search_media(Some(Modality::Image), &[0.9, 0.1, 0.0], 1)
        .unwrap();
    assert_eq!(hits[0].0.record_id, photo);
    assert_eq!(hits[0].1.tags, vec!["media:image".to_string()]);
    let hits = m.search_media(None, &[0.1, 0.9, 0.0], 1).unwrap();
    assert_eq!(hits[0].0.record_id, song);
    // The caption is searchable by keyword too.
    let r = m.search(&kw("sunset", 3), T0).unwrap();
    assert_eq!(r.hits[0].record.id, photo);
}

#[test]
fn corrupt_extension_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    s.put_extension(EXT_GRAPH, vec![0xff, 0xff, 0xff]).unwrap();
    s.close().unwrap();
    let err =
        AgentMemory::open(&p, StoreOptions::default(), CognitiveConfig::default()).unwrap_err();
    assert!(err.to_string().contains("cognitive_graph"), "{err}");
}

#[test]
fn filters_still_apply() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(&dir.path().join("m.h5"));
    m.save(NewMemory {
        session: Some("a".into()),
        ..at("coffee order is a flat white", T0)
    })
    .unwrap();
    m.save(NewMemory {
        session: Some("b".into()),
        ..at("coffee order is an espresso", T0)
    })
    .unwrap();
    let mut q = kw("coffee order", 5);
    q.filter = Filter {
        session: Some("b".into()),
        ..Default::default()
    };
    let r = m.search(&q, T0).unwrap();
    assert_eq!(r.hits.len(), 1);
    assert!(r.hits[0].record.text.contains("espresso"));
}

#[test]
fn min_score_is_absolute_not_relative_to_the_best_hit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    for i in 0..30 {
        m.save(at(
            &format!("Meeting note {i}: the quarterly budget review moved to room {i}"),
            T0,
        ))
        .unwrap();
    }
    m.save(at("I adopted a grey kitten named Miso", T0))
        .unwrap();
    m.save(at("The bakery on Rua Augusta sells pastel de nata", T0))
        .unwrap();
    let best = |q: &str| {
        let r = m.search(&kw(q, 5), T0).unwrap();
        r.hits.first().map_or(0.0, |h| h.retrieval_score)
    };
    // A query matching three rare words scores higher, in absolute terms, than one matching a single word;
    // both are the best hit of their own query (a relative score would give both 1.0).
    let strong = best("grey kitten Miso");
    let weak = best("bakery");
    assert!(strong > weak && weak > 0.0, "{strong} vs {weak}");
    assert!(strong < 1.0);
    let threshold = (strong + weak) / 2.0;
    let mut q = kw("grey kitten Miso", 5);
    q.min_score = Some(threshold);
    assert_eq!(m.search(&q, T0).unwrap().hits.len(), 1);
    let mut q = kw("bakery", 5);
    q.min_score = Some(threshold);
    assert!(m.search(&q, T0).unwrap().hits.is_empty(), "I don't know");
}

#[test]
fn media_saved_after_the_last_flush_are_indexed_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let emb = |i: usize| {
        let a = i as f32 * 0.21;
        vec![a.cos(), a.sin(), 0.05 * (i % 5) as f32, 1.0]
    };
    let mut ids = Vec::new();
    let mut m = open(&p);
    for i in 0..40 {
        ids.push(
            m.save_media(
                at(&format!("photo number {i} of the garden"), T0),
                Modality::Image,
                &format!("file:///photos/{i}.jpg"),
                Some("image/jpeg"),
                vec![(Modality::Image, emb(i))],
            )
            .unwrap()
            .id,
        );
    }
    m.close().unwrap();
    let mut m = open(&p);
    assert!(m.media().graph_loaded(Modality::Image));
    let late = m
        .save_media(
            at("photo of the new greenhouse", T0 + DAY),
            Modality::Image,
            "file:///photos/greenhouse.jpg",
            None,
            vec![(Modality::Image, vec![0.0, 0.0, -1.0, 0.2])],
        )
        .unwrap()
        .id;
    // Dropped without close: the entry chunk is in the log, the graph in the file is one medium behind.
    drop(m);
    let m = open(&p);
    assert_eq!(m.media().len(), 41);
    assert!(
        !m.media().graph_loaded(Modality::Image),
        "stale graph rebuilt"
    );
    assert_eq!(m.media().indexed(Modality::Image), 41);
    let hits = m
        .search_media(Some(Modality::Image), &[0.0, 0.0, -1.0, 0.2], 1)
        .unwrap();
    assert_eq!(hits[0].0.record_id, late);
    let hits = m.search_media(None, &emb(17), 3).unwrap();
    assert_eq!(hits[0].0.record_id, ids[17]);
    assert!(hits[0].0.score > 0.99);
    m.close().unwrap();
    // The rebuilt graph was persisted on close.
    let m = open(&p);
    assert!(m.media().graph_loaded(Modality::Image));
}

#[test]
fn graph_reads_accented_and_cjk_text_through_save_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    m.save(at("Then José Álvarez moved to Zürich", T0)).unwrap();
    m.save(at("Zürich has a great Rust meetup every month", T0))
        .unwrap();
    let cjk = m
        .save(at(
            "我在2023年5月18日开始用Python和Kubernetes，和Alice一起搬到了东京。",
            T0,
        ))
        .unwrap()
        .id;
    m.save(at("東京でRustの勉強会に参加した", T0)).unwrap();
    m.close().unwrap();

    let m = open(&p);
    let g = m.graph();
    let jose = g.find("José Álvarez").unwrap();
    assert_eq!(g.find("jose alvarez"), Some(jose), "accents folded");
    let zurich = g.find("Zurich").unwrap();
    assert!(g.bfs(jose, 1).contains(&(zurich, 1)));
    for name in [
        "2023年5月18日",
        "Python",
        "Kubernetes",
        "Alice",
        "东京",
        "東京",
    ] {
        assert!(g.find(name).is_some(), "{name} extracted and persisted");
    }
    let python = g.find("python").unwrap();
    assert!(g.entity(python).unwrap().mentions.contains(&cjk));
    // An unaccented query names the accented entity; the graph expands it to Zürich and its meetup (kept
    // here with confidence rejection off: found only through the graph, it scores far below the direct hit).
    drop(m);
    let mut cfg = CognitiveConfig::default();
    cfg.confidence.min_relative = 0.0;
    let m = open_with(&p, cfg);
    let r = m
        .search(&kw("what does Jose Alvarez do in the evenings", 5), T0)
        .unwrap();
    assert!(
        r.expanded_with.iter().any(|n| n == "Zürich"),
        "{:?}",
        r.expanded_with
    );
    assert!(
        r.hits.iter().any(|h| h.record.text.contains("meetup")),
        "{:#?} rejected {}",
        r.hits
            .iter()
            .map(|h| (&h.record.text, h.score))
            .collect::<Vec<_>>(),
        r.rejected
    );
    // A CJK query finds the CJK place by substring.
    let r = m.search(&kw("东京 Python", 5), T0).unwrap();
    assert_eq!(r.hits[0].record.id, cjk);
}

#[test]
fn recall_for_turn_skips_content_free_turns() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    let id = m
        .save(at("My dentist appointment is on Friday at 9", T0))
        .unwrap()
        .id;
    m.close().unwrap();
    let m = open(&p);
    for turn in ["ok", "Thanks!", "👍", "yes please"] {
        assert!(
            m.recall_for_turn(&kw(turn, 3), T0).unwrap().is_none(),
            "{turn:?} is not searched"
        );
    }
    let r = m
        .recall_for_turn(&kw("when is my dentist appointment?", 3), T0)
        .unwrap()
        .expect("a real question is searched");
    assert_eq!(r.hits[0].record.id, id);
}

#[test]
fn any_script_goes_through_save_search_and_reopen() {
    let texts = [
        "Álvarez moved to Zürich",
        "Ömer lives in İstanbul since İlkbahar",
        "Éloïse works at Société Générale",
        "ÇA VA? Ñandú joined Ålesund Fotball",
        "我在2023年5月18日开始用Python，和Alice一起搬到了东京。",
        "昨日、田中さんは東京でRustの勉強会に参加した。先週も行った。",
        "어제 서울에서 2023년 5월에 김민준을 만났다",
        "Моя сестра Анна живёт в Москве с прошлой недели",
        "صديقي أحمد يعيش في القاهرة",
        "🙂🙂 ẞ straße 𠜎𠜱",
        "my 名前 is 太郎",
        "I'm 34 years old — 私は34歳です",
    ];
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    for (i, t) in texts.iter().enumerate() {
        m.save(at(t, T0 + i as i64 * DAY)).unwrap();
        m.observe_exchange(t, t, "intl", T0 + i as i64 * DAY)
            .unwrap();
    }
    m.close().unwrap();
    let m = open(&p);
    for t in texts {
        let r = m.search(&kw(t, 3), T0 + 30 * DAY).unwrap();
        assert!(!r.hits.is_empty(), "{t} finds itself");
        m.search_sessions(t, 2).unwrap();
    }
    assert!(m.graph().find("zurich").is_some());
    assert!(m.graph().find("2023年5月18日").is_some());
}

#[test]
fn hybrid_search_reranks_with_relevance_first_and_newer_conflicts_first() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let cfg = CognitiveConfig {
        knowledge_updates: false,
        ..Default::default()
    };
    // Toy 4-d "embeddings": axis 0 = favourite colour, axis 1 = pets, axis 2 = travel.
    let save = |m: &mut AgentMemory, text: &str, t: i64, e: [f32; 4]| {
        m.save(NewMemory {
            embedding: Some(e.to_vec()),
            ..at(text, t)
        })
        .unwrap()
        .id
    };
    let mut m = open_with(&p, cfg.clone());
    let old = save(
        &mut m,
        "Dana's favourite colour is teal",
        T0,
        [1.0, 0.0, 0.1, 0.0],
    );
    let new = save(
        &mut m,
        "Dana's favourite colour is amber",
        T0 + 20 * DAY,
        [1.0, 0.0, 0.12, 0.0],
    );
    let pet = save(
        &mut m,
        "Dana adopted a greyhound called Pixel",
        T0 + 40 * DAY,
        [0.0, 1.0, 0.0, 0.1],
    );
    save(
        &mut m,
        "Dana flew to Lisbon for a conference",
        T0 + 39 * DAY,
        [0.0, 0.1, 1.0, 0.0],
    );
    m.close().unwrap();

    let m = open_with(&p, cfg);
    let hybrid = |text: &str, e: [f32; 4]| {
        let mut q = SearchQuery::new(text, 4);
        q.mode = SearchMode::Hybrid;
        q.embedding = Some(e.to_vec());
        m.search(&q, T0 + 41 * DAY).unwrap()
    };
    let r = hybrid("What is Dana's favourite colour?", [1.0, 0.0, 0.1, 0.0]);
    assert_eq!(
        r.hits[0].record.id, new,
        "the newer of two conflicting facts first"
    );
    assert_eq!(r.hits[1].record.id, old, "the older one still retrievable");
    assert!(r.hits[0].vector_score.is_some() && r.hits[0].keyword_score.is_some());
    // The most recent record does not overtake a more relevant one.
    let r = hybrid("Which dog did Dana adopt?", [0.0, 1.0, 0.0, 0.1]);
    assert_eq!(r.hits[0].record.id, pet);
    let r = hybrid("Dana's colour", [1.0, 0.0, 0.1, 0.0]);
    assert_ne!(r.hits[0].record.id, pet);
}

#[test]
fn forgetting_removes_a_record_everywhere_and_restores_the_version_it_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = open(&p);
    let paris = m.save(at("I live in Paris", T0)).unwrap().id;
    let berlin = m
        .save(at("I moved to Berlin with Alice", T0 + 30 * DAY))
        .unwrap()
        .id;
    assert_eq!(m.store().get(paris).unwrap().superseded_by, Some(berlin));
    // Archived by consolidation: still there, until explicitly forgotten.
    let chore = m.save(at("water the ferns weekly", T0)).unwrap().id;
    let now = clawhdf5_memory::now_ms();
    m.consolidate(now + 2 * DAY).unwrap();
    m.consolidate(now + 400 * DAY).unwrap();
    assert_eq!(m.store().get(chore).unwrap().tier, Tier::Archived);
    assert!(m.forget(chore).unwrap());
    assert!(m.forget(berlin).unwrap());
    assert!(!m.forget(berlin).unwrap(), "already forgotten");
    let alice = m.graph().find("alice").unwrap();
    assert!(!m.graph().entity(alice).unwrap().mentions.contains(&berlin));
    assert!(!m.timeline().range(T0, T0 + 60 * DAY).contains(&berlin));
    m.close().unwrap();

    let cfg = CognitiveConfig {
        search_archived: true,
        ..Default::default()
    };
    let mut m = open_with(&p, cfg);
    assert!(m.store().get(chore).is_none_or(|r| r.tombstone));
    assert!(m
        .search(&kw("water the ferns", 5), T0)
        .unwrap()
        .hits
        .is_empty());
    // The Paris record is current again, and the next move supersedes it.
    let r = m.search(&kw("where do I live", 5), T0 + 40 * DAY).unwrap();
    assert_eq!(r.hits[0].record.id, paris);
    assert!(r.hits.iter().all(|h| h.record.id != berlin));
    let rome = m.save(at("I moved to Rome", T0 + 50 * DAY)).unwrap().id;
    assert_eq!(m.store().get(paris).unwrap().superseded_by, Some(rome));
    let r = m.search(&kw("where do I live", 5), T0 + 60 * DAY).unwrap();
    assert_eq!(r.hits[0].record.id, rome);
    assert!(r.hits.iter().all(|h| h.record.id != paris));
}

/// A made-up capitalised name for `i`: eight letters drawn from `i` (names this far apart are never merged
/// as misspellings of one another).
fn name(i: u64) -> String {
    let mut x = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..8)
        .map(|k| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let c = (b'a' + (x % 26) as u8) as char;
            if k == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

#[test]
fn a_growing_graph_is_not_logged_whole_every_few_saves_and_catches_up_after_a_crash() {
    let run = |persist_every: u32| -> (u64, usize, usize) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.h5");
        let cfg = CognitiveConfig {
            persist_every,
            ..CognitiveConfig::default()
        };
        let opts = || StoreOptions {
            durability: Durability::None,
            ..StoreOptions::default()
        };
        {
            let mut m = AgentMemory::open(&p, opts(), cfg.clone()).unwrap();
            for i in 0..1500u64 {
                let text = format!(
                    "We met {} and {} in {}",
                    name(3 * i),
                    name(3 * i + 1),
                    name(3 * i + 2)
                );
                m.save(at(&text, T0 + i as i64)).unwrap();
            }
            // Dropped without close, as in a crash: what was not logged is rebuilt from the records.
        }
        let wal = std::fs::metadata(dir.path().join("m.h5.wal"))
            .unwrap()
            .len();
        let m = AgentMemory::open(&p, opts(), cfg).unwrap();
        (wal, m.graph().entities().len(), m.graph().to_bytes().len())
    };
    let (every_64, entities, graph) = run(64);
    let (never, all, _) = run(u32::MAX);
    assert!(entities >= 4000, "{entities} entities");
    assert_eq!(entities, all);
    // The graph is logged whole each time the saves since could pay 64 bytes each for it: as it grows faster
    // than that, the copies grow geometrically and add up to about 1.5 final graphs. Logging it every 64 saves
    // took 3.3 MB here.
    let graph = graph as u64;
    assert!(
        every_64 <= never + 2 * graph,
        "{every_64} bytes against {never} without the graph, which takes {graph}"
    );
}
