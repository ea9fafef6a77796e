use super::*;
use crate::exact::exact_top_k;
use crate::filter::{Filter, IdSet};
use crate::store::FlatVectors;
use crate::synth::Clustered;
use crate::topk::Neighbor;

/// An index over `s` with default parameters, with or without the int8 copy.
fn built(s: &FlatVectors, quantize: bool) -> Hnsw {
    Hnsw::build(
        s,
        HnswParams {
            quantize,
            ..Default::default()
        },
    )
    .unwrap()
}

fn data(n: usize, dim: usize) -> (FlatVectors, FlatVectors) {
    let g = Clustered::new(dim, 20, 1.0, 11);
    (g.sample(n, 1), g.sample(50, 2))
}

fn recall(
    h: &Hnsw,
    s: &FlatVectors,
    qs: &FlatVectors,
    ef: usize,
    filter: Option<Filter<'_>>,
) -> f64 {
    let mut hit = 0;
    let mut total = 0;
    for i in 0..qs.len() as u32 {
        let q = qs.vector(i);
        let truth = exact_top_k(s, q, 10, h.params().metric, filter).unwrap();
        let got = h.search(s, q, 10, ef, filter).unwrap();
        if let Some(f) = filter {
            assert!(
                got.iter().all(|n| f.allows(n.id)),
                "result outside the filter"
            );
        }
        total += truth.len();
        hit += truth
            .iter()
            .filter(|t| got.iter().any(|g| g.id == t.id))
            .count();
    }
    hit as f64 / total.max(1) as f64
}

#[test]
fn build_has_high_recall_for_every_metric() {
    let (s, qs) = data(3000, 24);
    for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
        let h = Hnsw::build(
            &s,
            HnswParams {
                metric,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(h.len(), 3000);
        let r = recall(&h, &s, &qs, 64, None);
        assert!(r >= 0.97, "{metric:?} recall {r}");
    }
}

#[test]
fn incremental_insert_matches_build_quality() {
    let (s, qs) = data(2000, 16);
    let mut h = Hnsw::new(16, HnswParams::default()).unwrap();
    for id in 0..2000 {
        assert!(h.insert(id, &s).unwrap());
    }
    assert!(!h.insert(5, &s).unwrap());
    assert!(recall(&h, &s, &qs, 64, None) >= 0.97);
    assert!(h.insert(2000, &s).is_err());
    let other = FlatVectors::new(3);
    assert!(matches!(
        h.insert(0, &other),
        Err(AnnError::DimensionMismatch { .. })
    ));
}

#[test]
fn build_is_deterministic_for_any_thread_count() {
    let (s, _) = data(2500, 16);
    let p = HnswParams {
        seed: 9,
        quantize: true,
        ..Default::default()
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let a = one.install(|| Hnsw::build(&s, p).unwrap());
    let b = three.install(|| Hnsw::build(&s, p).unwrap());
    assert!(
        a.to_bytes(1) == b.to_bytes(1),
        "thread count changed the graph"
    );
    let c = Hnsw::build(&s, HnswParams { seed: 10, ..p }).unwrap();
    assert!(a.to_bytes(1) != c.to_bytes(1));
}

#[test]
fn quantized_traversal_rescores_to_full_recall() {
    let (s, qs) = data(3000, 32);
    let f = Hnsw::build(&s, HnswParams::default()).unwrap();
    let q = built(&s, true);
    let (rf, rq) = (recall(&f, &s, &qs, 64, None), recall(&q, &s, &qs, 64, None));
    assert!(rq >= rf - 0.02, "int8 {rq} vs f32 {rf}");
    // Distances returned are exact f32 ones.
    let res = q.search(&s, qs.vector(0), 5, 32, None).unwrap();
    for n in res {
        assert_eq!(
            n.distance,
            Metric::Cosine.distance(&Metric::Cosine.prepare_query(qs.vector(0)), s.vector(n.id))
        );
    }
    assert!(q.memory_bytes() > f.memory_bytes());
}

#[test]
fn filtered_search_is_exact_enough_at_every_selectivity() {
    let (s, qs) = data(4000, 16);
    let h = Hnsw::build(&s, HnswParams::default()).unwrap();
    for modulo in [2u32, 10, 100] {
        let set: IdSet = (0..4000u32).filter(|i| i % modulo == 0).collect();
        let r = recall(&h, &s, &qs, 64, Some(Filter::Ids(&set)));
        assert!(r >= 0.97, "1/{modulo} ids: recall {r}");
        let pred = move |i: u32| i % modulo == 1;
        let r = recall(&h, &s, &qs, 64, Some(Filter::Predicate(&pred)));
        assert!(r >= 0.97, "1/{modulo} predicate: recall {r}");
    }
    // 1% of rows: answered by an exact scan.
    let set: IdSet = (0..4000u32).filter(|i| i % 100 == 0).collect();
    let (_, plan) = h
        .search_with_plan(&s, qs.vector(0), 10, 32, Some(Filter::Ids(&set)))
        .unwrap();
    assert_eq!(plan, search::SearchPlan::ExactScan);
    // A filter excluding the query's whole neighbourhood still returns the true filtered top-10.
    let q = qs.vector(3);
    let near: Vec<u32> = exact_top_k(&s, q, 400, Metric::Cosine, None)
        .unwrap()
        .iter()
        .map(|n| n.id)
        .collect();
    let excluded: IdSet = near.iter().copied().collect();
    let pred = |i: u32| !excluded.contains(i);
    let truth = exact_top_k(&s, q, 10, Metric::Cosine, Some(Filter::Predicate(&pred))).unwrap();
    let got = h
        .search(&s, q, 10, 64, Some(Filter::Predicate(&pred)))
        .unwrap();
    let hits = truth
        .iter()
        .filter(|t| got.iter().any(|g| g.id == t.id))
        .count();
    assert!(hits >= 9, "excluded-neighbourhood hits {hits}");
    // Empty filter: nothing comes back.
    let none = IdSet::default();
    assert!(h
        .search(&s, q, 10, 64, Some(Filter::Ids(&none)))
        .unwrap()
        .is_empty());
}

#[test]
fn delete_hides_rows_and_compact_repairs() {
    let (s, qs) = data(3000, 16);
    let mut h = Hnsw::build(&s, HnswParams::default()).unwrap();
    let gone: Vec<u32> = (0..3000).filter(|i| i % 3 == 0).collect();
    for &id in &gone {
        assert!(h.delete(id));
    }
    assert!(!h.delete(0));
    assert_eq!(h.len(), 2000);
    let alive = |i: u32| !i.is_multiple_of(3);
    let check = |h: &Hnsw| {
        let mut hit = 0;
        for i in 0..qs.len() as u32 {
            let truth = exact_top_k(
                &s,
                qs.vector(i),
                10,
                Metric::Cosine,
                Some(Filter::Predicate(&alive)),
            )
            .unwrap();
            let got = h.search(&s, qs.vector(i), 10, 64, None).unwrap();
            assert!(got.iter().all(|n| alive(n.id)), "deleted row returned");
            hit += truth
                .iter()
                .filter(|t| got.iter().any(|g| g.id == t.id))
                .count();
        }
        hit as f64 / (10 * qs.len()) as f64
    };
    assert!(check(&h) >= 0.95);
    h.compact(&s).unwrap();
    assert_eq!(h.deleted_count(), 0);
    assert_eq!(h.len(), 2000);
    for id in 0..3000u32 {
        if h.is_present(id) {
            assert!(alive(id));
            for l in 0..=h.levels[id as usize] as usize {
                assert!(h.links(id, l).iter().all(|&n| alive(n)));
            }
        }
    }
    assert!(check(&h) >= 0.95);
    // Removed rows can come back.
    assert!(h.insert(3, &s).unwrap());
    assert!(h.search(&s, s.vector(3), 1, 32, None).unwrap()[0].id == 3);
    // Deleting everything leaves an empty, searchable index.
    for id in 0..3000 {
        h.delete(id);
    }
    h.compact(&s).unwrap();
    assert!(h.is_empty());
    assert!(h.search(&s, qs.vector(0), 10, 32, None).unwrap().is_empty());
}

#[test]
fn persistence_round_trips_and_rejects_bad_bytes() {
    let (s, qs) = data(1500, 16);
    for quantize in [false, true] {
        let mut h = built(&s, quantize);
        h.delete(7);
        let bytes = h.to_bytes(42);
        let back = Hnsw::from_bytes(&bytes, 42).unwrap();
        assert!(back == sorted_lists(&h), "round trip changed the index");
        assert_eq!(
            back.search(&s, qs.vector(1), 10, 50, None).unwrap(),
            h.search(&s, qs.vector(1), 10, 50, None).unwrap()
        );
        assert_eq!(
            Hnsw::from_bytes(&bytes, 43),
            Err(AnnError::StaleIndex {
                expected: 43,
                found: 42
            })
        );
        for cut in [0, 5, 20, 100, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                matches!(
                    Hnsw::from_bytes(&bytes[..cut], 42),
                    Err(AnnError::Corrupt(_))
                ),
                "cut {cut}"
            );
        }
        for pos in [0, 9, 30, 70, bytes.len() / 3, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x40;
            assert!(Hnsw::from_bytes(&bad, 42).is_err(), "flip at {pos}");
        }
    }
    // Structurally bad content with a valid checksum is caught by validation: an entry point that is not
    // at the top level, and a neighbour list longer than a row may hold.
    let h = Hnsw::build(&s, HnswParams::default()).unwrap();
    let resealed = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = h.to_bytes(1);
        bytes.truncate(bytes.len() - 4);
        edit(&mut bytes);
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        Hnsw::from_bytes(&bytes, 1)
    };
    let entry_at = 8 + 4 + 8 + 4 + 12 + 8 + 4;
    let low = (0..1500u32).find(|&i| h.levels[i as usize] == 0).unwrap();
    assert!(matches!(
        resealed(&|b| b[entry_at..entry_at + 4].copy_from_slice(&low.to_le_bytes())),
        Err(AnnError::Corrupt(_))
    ));
    let links_at = entry_at + 4 + 4 + 8 + 1500 + 1500usize.div_ceil(64) * 8 + 8;
    assert!(matches!(
        resealed(&|b| b[links_at] = 100),
        Err(AnnError::Corrupt(_))
    ));
}

/// The graph with every neighbour list in ascending order, as a saved and loaded graph holds it.
fn sorted_lists(h: &Hnsw) -> Hnsw {
    let mut out = h.clone();
    for id in 0..out.levels.len() as u32 {
        let l = out.levels[id as usize];
        if l == super::ABSENT {
            continue;
        }
        for lv in 0..=l as usize {
            let mut ids = out.links(id, lv).to_vec();
            ids.sort_unstable();
            out.set_links(id, lv, &ids);
        }
    }
    out
}

#[test]
fn version_one_and_two_files_still_load() {
    let (s, qs) = data(800, 16);
    for quantize in [false, true] {
        let mut h = built(&s, quantize);
        h.delete(11);
        let old = h.to_bytes_fixed_width(5);
        let back = Hnsw::from_bytes(&old, 5).unwrap();
        assert!(back == h, "version 1 bytes load unchanged");
        let leb = h.to_bytes_leb128(5);
        assert!(
            Hnsw::from_bytes(&leb, 5).unwrap() == sorted_lists(&h),
            "version 2 bytes load unchanged"
        );
        let packed = h.to_bytes(5);
        assert!(packed.len() < leb.len() && leb.len() < old.len());
        assert_eq!(
            Hnsw::from_bytes(&packed, 5)
                .unwrap()
                .search(&s, qs.vector(2), 10, 64, None),
            h.search(&s, qs.vector(2), 10, 64, None)
        );
    }
}

#[test]
fn graph_bytes_leave_the_int8_copy_out() {
    let (s, _) = data(500, 16);
    let h = built(&s, true);
    let full = h.to_bytes(3);
    let graph = h.graph_bytes(3);
    assert!(graph.len() + 500 * 16 <= full.len());
    let back = Hnsw::from_bytes(&graph, 3).unwrap();
    assert!(back.quantized().is_none());
}

#[test]
fn bad_inputs_are_errors() {
    let (s, _) = data(100, 8);
    let h = Hnsw::build(&s, HnswParams::default()).unwrap();
    assert!(matches!(
        h.search(&s, &[0.0; 3], 5, 10, None),
        Err(AnnError::DimensionMismatch { .. })
    ));
    let small = FlatVectors::from_vec(8, vec![0.0; 8]).unwrap();
    assert!(matches!(
        h.search(&small, &[0.0; 8], 5, 10, None),
        Err(AnnError::StoreTooSmall { .. })
    ));
    assert!(Hnsw::new(
        8,
        HnswParams {
            m: 1,
            ..Default::default()
        }
    )
    .is_err());
    assert!(Hnsw::new(0, HnswParams::default()).is_err());
    assert!(h.search(&s, s.vector(0), 0, 10, None).unwrap().is_empty());
    let empty = Hnsw::new(8, HnswParams::default()).unwrap();
    assert!(empty
        .search(&s, s.vector(0), 5, 10, None)
        .unwrap()
        .is_empty());
}

#[test]
fn selective_filters_walk_with_two_hop_routing() {
    let (s, qs) = data(6000, 16);
    let h = Hnsw::build(&s, HnswParams::default()).unwrap();
    // 20 % of the rows: too many to scan at this ef, so the two-hop walk answers.
    let set: IdSet = (0..6000u32).filter(|i| i % 5 == 2).collect();
    let mut hit = 0;
    for i in 0..qs.len() as u32 {
        let q = qs.vector(i);
        let (got, _) = h
            .search_with_plan(&s, q, 10, 16, Some(Filter::Ids(&set)))
            .unwrap();
        assert!(got.iter().all(|n| set.contains(n.id)));
        let truth = exact_top_k(&s, q, 10, Metric::Cosine, Some(Filter::Ids(&set))).unwrap();
        hit += truth
            .iter()
            .filter(|t| got.iter().any(|g| g.id == t.id))
            .count();
    }
    let r = hit as f64 / (10 * qs.len()) as f64;
    assert!(r >= 0.9, "two-hop recall {r}");
    let (_, plan) = h
        .search_with_plan(&s, qs.vector(0), 10, 16, Some(Filter::Ids(&set)))
        .unwrap();
    assert_eq!(plan, search::SearchPlan::Graph);
}

#[test]
fn int8_indexes_scan_filters_of_a_fifth_where_two_hop_walks_cost_more() {
    // 2,000 allowed rows of 10,000 at ef 24: an int8 scan (about half an evaluation a row) costs less
    // than a two-hop walk at this selectivity (about twice an unfiltered walk), and is exact.
    let (s, qs) = data(10_000, 16);
    let params = HnswParams {
        m: 8,
        ef_construction: 32,
        quantize: true,
        ..Default::default()
    };
    let h = Hnsw::build(&s, params).unwrap();
    let set: IdSet = (0..10_000u32).filter(|i| i % 5 == 1).collect();
    for i in 0..5u32 {
        let q = qs.vector(i);
        let (got, plan) = h
            .search_with_plan(&s, q, 10, 24, Some(Filter::Ids(&set)))
            .unwrap();
        assert_eq!(plan, search::SearchPlan::ExactScan, "query {i}");
        assert_eq!(
            got.iter().map(|n| n.id).collect::<Vec<_>>(),
            exact_ids(&s, q, 10, Filter::Ids(&set)),
            "query {i}"
        );
    }
}

#[test]
fn mutated_bytes_with_valid_checksum_never_panic() {
    let (s, qs) = data(300, 8);
    let mut rng = crate::rng::SplitMix64::new(77);
    for quantize in [false, true] {
        let mut h = built(&s, quantize);
        h.delete(3);
        let good = h.to_bytes(9);
        let body_len = good.len() - 4;
        for _ in 0..1500 {
            let mut bad = good[..body_len].to_vec();
            for _ in 0..1 + rng.below(3) {
                let pos = rng.below(body_len as u64) as usize;
                bad[pos] = rng.next_u64() as u8;
            }
            let crc = crc32fast::hash(&bad);
            bad.extend_from_slice(&crc.to_le_bytes());
            // Either a typed error, or an index that searches without panicking.
            if let Ok(loaded) = Hnsw::from_bytes(&bad, 9) {
                let _ = loaded.search(&s, qs.vector(0), 5, 20, None);
                let set: IdSet = (0..300u32).step_by(7).collect();
                let _ = loaded.search(&s, qs.vector(1), 5, 20, Some(Filter::Ids(&set)));
            }
        }
    }
}

#[test]
fn rescore_returns_exact_distances_sorted() {
    let (s, qs) = data(500, 40);
    let q = Metric::Cosine.prepare_query(qs.vector(0));
    // Pools of every size around the prefetch distance, with made-up approximate distances.
    for len in [0usize, 1, 3, 4, 5, 9, 40] {
        let mut pool: Vec<Neighbor> = (0..len as u32)
            .map(|i| Neighbor {
                id: i * 11 % 500,
                distance: -(i as f32),
            })
            .collect();
        let ids: Vec<u32> = pool.iter().map(|n| n.id).collect();
        search::rescore(&s, &q, Metric::Cosine, &mut pool);
        assert_eq!(pool.len(), len);
        for n in &pool {
            assert!(ids.contains(&n.id));
            assert_eq!(n.distance, Metric::Cosine.distance(&q, s.vector(n.id)));
        }
        assert!(pool.windows(2).all(|w| w[0] <= w[1]));
    }
}

/// Filtered recall of `h` against the exact filtered top-10, checking every result is allowed and
/// carries its exact f32 distance (int8 indexes re-score).
fn filtered_recall(
    h: &Hnsw,
    s: &FlatVectors,
    qs: &FlatVectors,
    ef: usize,
    filter_for: &dyn Fn(u32) -> Box<dyn Fn(u32) -> bool + Sync>,
) -> f64 {
    let (mut hit, mut total) = (0, 0);
    for i in 0..qs.len() as u32 {
        let q = qs.vector(i);
        let f = filter_for(i);
        let filter = Filter::Predicate(&*f);
        let truth = exact_top_k(s, q, 10, Metric::Cosine, Some(filter)).unwrap();
        let got = h.search(s, q, 10, ef, Some(filter)).unwrap();
        let pq = Metric::Cosine.prepare_query(q);
        for n in &got {
            assert!(f(n.id), "result {} outside the filter", n.id);
            assert_eq!(n.distance, Metric::Cosine.distance(&pq, s.vector(n.id)));
        }
        assert!(got.windows(2).all(|w| w[0] <= w[1]));
        total += truth.len();
        hit += truth
            .iter()
            .filter(|t| got.iter().any(|g| g.id == t.id))
            .count();
    }
    hit as f64 / total.max(1) as f64
}

#[test]
fn filters_rejecting_the_nearest_rows_return_the_filtered_top_k() {
    // The walk shrinks its list as rejected near rows pile up (down to 3/4 of ef); results must
    // still be the exact filtered top-10 for f32 and int8 traversal alike.
    let (s, qs) = data(5000, 24);
    for quantize in [false, true] {
        let h = built(&s, quantize);
        let unfiltered = recall(&h, &s, &qs, 64, None);
        for excluded in [10usize, 50, 100] {
            let near_of = |i: u32| -> IdSet {
                exact_top_k(&s, qs.vector(i), excluded, Metric::Cosine, None)
                    .unwrap()
                    .iter()
                    .map(|n| n.id)
                    .collect()
            };
            let r = filtered_recall(&h, &s, &qs, 64, &|i| {
                let near = near_of(i);
                Box::new(move |id| !near.contains(id))
            });
            assert!(
                r >= unfiltered - 0.03,
                "quantize={quantize} exclude top-{excluded}: recall {r} vs unfiltered {unfiltered}"
            );
        }
    }
}

#[test]
fn int8_filtered_search_is_exact_at_every_selectivity() {
    let (s, qs) = data(6000, 24);
    let h = built(&s, true);
    // 50 % (plain walk), 20 % and 5 % (two-hop walk), 0.5 % (exact scan).
    for modulo in [2u32, 5, 20, 200] {
        let set: IdSet = (0..6000u32).filter(|i| i % modulo == 1).collect();
        let r = recall(&h, &s, &qs, 64, Some(Filter::Ids(&set)));
        assert!(r >= 0.97, "1/{modulo} ids: recall {r}");
        let res = h
            .search(&s, qs.vector(2), 10, 64, Some(Filter::Ids(&set)))
            .unwrap();
        let pq = Metric::Cosine.prepare_query(qs.vector(2));
        for n in res {
            assert!(set.contains(n.id));
            assert_eq!(n.distance, Metric::Cosine.distance(&pq, s.vector(n.id)));
        }
    }
}

#[test]
fn scans_that_miss_the_cache_cost_twice_as_much() {
    let h = Hnsw::new(384, HnswParams::default()).unwrap();
    // 1,000 rows of 1.5 KB (1.5 MB) stay in cache; 10,000 (15 MB) do not.
    assert_eq!(h.scan_rows_cost(1000), 1000);
    assert_eq!(h.scan_rows_cost(10_000), 20_000);
    assert_eq!(h.scan_rows_cost(usize::MAX), usize::MAX);
}

/// Ids of the exact filtered top-`k` of every query (the reference the tests below compare to).
fn exact_ids(s: &FlatVectors, q: &[f32], k: usize, filter: Filter<'_>) -> Vec<u32> {
    exact_top_k(s, q, k, Metric::Cosine, Some(filter))
        .unwrap()
        .iter()
        .map(|n| n.id)
        .collect()
}

#[test]
fn int8_exact_scan_returns_the_exact_filtered_top_k() {
    // A 10 % filter on an int8 index is answered by the int8 scan of the allowed rows (then an f32
    // re-score of the best int8 candidates): ids and distances equal the exact filtered top-10.
    let (s, qs) = data(5000, 64);
    let mut h = built(&s, true);
    let set: IdSet = (0..5000u32).filter(|i| i % 10 == 7).collect();
    assert!(h.int8_scan_cost(set.len(), 10, 32).unwrap() < h.scan_rows_cost(set.len()));
    let odd = |id: u32| id % 2 == 1;
    for i in 0..qs.len() as u32 {
        let q = qs.vector(i);
        let (got, plan) = h
            .search_with_plan(&s, q, 10, 32, Some(Filter::Ids(&set)))
            .unwrap();
        assert_eq!(plan, SearchPlan::ExactScan);
        let truth = exact_top_k(&s, q, 10, Metric::Cosine, Some(Filter::Ids(&set))).unwrap();
        assert_eq!(got, truth, "query {i}");
        // Every path of the scan (id sets, predicates over all slots) gives the exact answer.
        let scanned = h.exact_allowed(&s, &Metric::Cosine.prepare_query(q), 10, 32, 5000, None);
        assert_eq!(
            scanned,
            exact_top_k(&s, q, 10, Metric::Cosine, None).unwrap()
        );
        let scanned = h.exact_allowed(
            &s,
            &Metric::Cosine.prepare_query(q),
            10,
            32,
            2500,
            Some(Filter::Predicate(&odd)),
        );
        assert_eq!(
            scanned.iter().map(|n| n.id).collect::<Vec<_>>(),
            exact_ids(&s, q, 10, Filter::Predicate(&odd))
        );
    }
    // Sets that are not a multiple of the scan's four-row groups: the last, short group counts
    // only its own rows.
    let q = qs.vector(1);
    for n in [397usize, 398, 399, 400, 401] {
        let part: IdSet = set.iter().take(n).collect();
        assert!(h.int8_scan_cost(n, 10, 32).unwrap() < h.scan_rows_cost(n));
        let scanned = h.exact_allowed(
            &s,
            &Metric::Cosine.prepare_query(q),
            10,
            32,
            n,
            Some(Filter::Ids(&part)),
        );
        assert_eq!(
            scanned,
            exact_top_k(&s, q, 10, Metric::Cosine, Some(Filter::Ids(&part))).unwrap(),
            "{n} rows"
        );
    }
    // Deleted rows never come back from the scan.
    let gone: Vec<u32> = set.iter().step_by(2).collect();
    for &id in &gone {
        assert!(h.delete(id));
    }
    let q = qs.vector(0);
    let got = h.search(&s, q, 10, 32, Some(Filter::Ids(&set))).unwrap();
    let alive = |id: u32| set.contains(id) && !gone.contains(&id);
    assert_eq!(
        got.iter().map(|n| n.id).collect::<Vec<_>>(),
        exact_ids(&s, q, 10, Filter::Predicate(&alive))
    );
    // Fewer allowed rows than k: all of them, exactly.
    let few: IdSet = [3u32, 4000].into_iter().collect();
    let got = h.search(&s, q, 10, 32, Some(Filter::Ids(&few))).unwrap();
    assert_eq!(
        got,
        exact_top_k(&s, q, 10, Metric::Cosine, Some(Filter::Ids(&few))).unwrap()
    );
}

#[test]
fn sign_code_scans_return_the_exact_top_k() {
    // With sign codes (built here although the copy is below their size threshold), a scan of
    // 5,000 rows of 384 dimensions estimates them by sign code first, scores the best estimates in
    // f32, the rows whose bounds reach below those in int8 and the best of those in f32: the exact
    // top-10 all the same. Smaller sets (4,000 rows here) are cheaper to score in int8 without the
    // sign pass: exact too.
    let (s, qs) = data(5000, 384);
    let mut h = built(&s, true);
    h.quant.as_mut().unwrap().build_signs();
    assert_eq!(h.int8_sign_pool(5000, 10), Some(400));
    assert_eq!(h.int8_sign_pool(4000, 10), Some(400));
    assert_eq!(h.int8_sign_pool(1000, 10), None);
    let most: IdSet = (0..5000u32).filter(|i| i % 5 != 0).collect();
    for i in 0..qs.len() as u32 {
        let q = qs.vector(i);
        let prepared = Metric::Cosine.prepare_query(q);
        let scanned = h.exact_allowed(&s, &prepared, 10, 32, 5000, None);
        assert_eq!(
            scanned,
            exact_top_k(&s, q, 10, Metric::Cosine, None).unwrap(),
            "query {i}"
        );
        let scanned = h.exact_allowed(&s, &prepared, 10, 32, 4000, Some(Filter::Ids(&most)));
        assert_eq!(
            scanned,
            exact_top_k(&s, q, 10, Metric::Cosine, Some(Filter::Ids(&most))).unwrap(),
            "query {i}, four fifths of the rows"
        );
    }
    // An index without an int8 copy builds sign codes from the store's f32 rows (only once it has
    // 32K slots: not this one), and scores the rows its bounds leave in f32: exact as well.
    let mut f = built(&s, false);
    assert_eq!(f.f32_sign_pool(5000, 10), None, "below the size threshold");
    assert_eq!(
        f.f32_signs.memory_bytes(),
        0,
        "built only when a scan needs them"
    );
    let signs = f.f32_signs.get_or_build(&s, f.slots());
    for i in 0..qs.len() as u32 {
        let q = Metric::Cosine.prepare_query(qs.vector(i));
        let pass = f.sign_pass(&s, signs, &q, 10, (0..5000).collect());
        assert_eq!(pass.seeds.len(), 40);
        assert!(pass.candidates.len() < 2500, "{}", pass.candidates.len());
        assert!(pass.candidates.windows(2).all(|w| w[0] < w[1]));
        assert!(!pass.seeds.iter().any(|n| pass.candidates.contains(&n.id)));
        let mut got =
            crate::exact::scan_ids(&s, &q, 10, Metric::Cosine, pass.candidates.into_iter());
        got.extend(pass.seeds);
        got.sort();
        got.truncate(10);
        let truth = exact_top_k(&s, qs.vector(i), 10, Metric::Cosine, None).unwrap();
        assert_eq!(got, truth, "query {i}");
    }
    assert!(f.f32_signs.memory_bytes() > 5000 * 48);
    // Inserting rows re-encodes them in the built codes; switching to int8 drops them.
    assert!(f.delete(3));
    f.insert_many(&[3], &s).unwrap();
    f.set_quantized(&s, true).unwrap();
    assert_eq!(f.f32_signs.memory_bytes(), 0);
    // Fewer dimensions: no sign-code pass (its estimate is too coarse); between 256 and 384, more
    // rows are expected to be left.
    assert_eq!(super::search::sign_pool(10, 64), None);
    assert_eq!(super::search::sign_pool(10, 300), Some(800));
    assert_eq!(super::search::sign_pool(10, 1536), Some(400));
}

#[test]
fn int8_scans_are_costed_in_int8_walk_evaluations() {
    let f32_index = Hnsw::new(384, HnswParams::default()).unwrap();
    let mut int8_index = f32_index.clone();
    let store = FlatVectors::from_vec(384, vec![0.5; 384]).unwrap();
    int8_index.set_quantized(&store, true).unwrap();
    // f32: one evaluation a row (two beyond the cache). int8: a fraction of an int8 evaluation
    // a row plus the f32 re-score of the pool, so 1,000 allowed rows cost far less than 1,000.
    assert_eq!(f32_index.scan_cost(1000, 10, 24), 1000);
    let small = int8_index.scan_cost(1000, 10, 24);
    assert!((100..1000).contains(&small), "{small}");
    // Beyond the cache a row costs twice as much; huge counts saturate instead of overflowing.
    let big = int8_index.scan_cost(100_000, 10, 24);
    assert!(big > 100 * (small - 60), "{big} vs {small}");
    // With sign codes (kept by copies of 32K rows and more), large sets take the sign-code pass
    // first (a sixth of the bytes a row, then int8 for the rows it leaves): 0.27 of an evaluation a
    // row where the kernels sum bit planes, 0.3 elsewhere, not the int8 scan's 0.5.
    int8_index.quant.as_mut().unwrap().build_signs();
    let signed = int8_index.scan_cost(100_000, 10, 24);
    let per_row = if crate::kernels::active().sign_planes {
        27
    } else {
        30
    };
    assert!(
        (per_row * 1000..per_row * 1000 + 5000).contains(&signed),
        "{signed}"
    );
    assert_eq!(int8_index.scan_cost(1000, 10, 24), small);
    assert!(int8_index.scan_cost(usize::MAX, 10, 24) >= usize::MAX / 100);
    // A handful of rows is cheaper to score in f32 directly (no quantised query, no re-score).
    assert_eq!(int8_index.scan_cost(100, 10, 24), 100);
    assert!(int8_index.int8_scan_cost(100, 10, 24).unwrap() > 100);
    assert_eq!(f32_index.int8_scan_cost(100, 10, 24), None);
}

#[test]
fn excluding_the_query_neighbourhood_returns_the_exact_filtered_top_k() {
    // Each query's 100 nearest rows are rejected: the walk routes through them (they are scored
    // but never returned) and returns the next ten, which equal the exact filtered top-10 for
    // f32 and int8 traversal alike (ef 96: the walk, not the exact scan, answers).
    let (s, qs) = data(6000, 32);
    for quantize in [false, true] {
        let h = built(&s, quantize);
        for i in 0..qs.len() as u32 {
            let q = qs.vector(i);
            let near: IdSet = exact_top_k(&s, q, 100, Metric::Cosine, None)
                .unwrap()
                .iter()
                .map(|n| n.id)
                .collect();
            let pred = |id: u32| !near.contains(id);
            let filter = Filter::Predicate(&pred);
            let (got, plan) = h.search_with_plan(&s, q, 10, 96, Some(filter)).unwrap();
            assert_eq!(plan, SearchPlan::Graph, "the walk answers, not the scan");
            assert_eq!(
                got,
                exact_top_k(&s, q, 10, Metric::Cosine, Some(filter)).unwrap(),
                "quantize={quantize} query {i}"
            );
        }
    }
}

#[test]
fn half_filters_walk_instead_of_scanning_half_the_rows() {
    // A 50 % filter halves the walk's list, so the walk costs about an unfiltered one. The planner
    // used to cost it at twice that and hand it to an int8 scan of half the rows, which on a 10K
    // set at ef 64-128 ran 1.5-3x slower than the walk it replaced (and still runs about 2x slower
    // with the four-row int8 scan).
    let (s, qs) = data(10_000, 32);
    let h = built(&s, true);
    let set: IdSet = (0..10_000u32).filter(|i| i % 2 == 0).collect();
    for ef in [24, 64] {
        for i in 0..qs.len() as u32 {
            let (got, plan) = h
                .search_with_plan(&s, qs.vector(i), 10, ef, Some(Filter::Ids(&set)))
                .unwrap();
            assert_eq!(plan, SearchPlan::Graph, "ef {ef}, query {i}");
            assert!(got.iter().all(|n| n.id % 2 == 0));
        }
        let r = recall(&h, &s, &qs, ef, Some(Filter::Ids(&set)));
        assert!(r >= 0.9, "ef {ef}: recall {r}");
    }
}

#[test]
fn sign_code_scans_are_exact_for_every_metric_and_row_norm() {
    // Rows of norms between 0.5 and 3 (the L2 and dot estimates use them), scanned through the sign
    // codes' bounds, then int8, then f32: the exact top-10 for every metric.
    let (unit, qs) = data(5000, 384);
    let mut rows = Vec::with_capacity(5000 * 384);
    for i in 0..5000u32 {
        let scale = 0.5 + 2.5 * (crate::rng::mix64(u64::from(i)) % 1000) as f32 / 1000.0;
        rows.extend(unit.vector(i).iter().map(|x| x * scale));
    }
    let s = FlatVectors::from_vec(384, rows).unwrap();
    for metric in [Metric::L2, Metric::Dot, Metric::Cosine] {
        let params = HnswParams {
            m: 4,
            ef_construction: 16,
            metric,
            quantize: true,
            ..Default::default()
        };
        let mut h = Hnsw::build(&s, params).unwrap();
        h.quant.as_mut().unwrap().build_signs();
        assert!(h.int8_sign_pool(5000, 10).is_some());
        for i in 0..10u32 {
            let q = qs.vector(i);
            let got = h.exact_allowed(&s, &metric.prepare_query(q), 10, 32, 5000, None);
            let want = exact_top_k(&s, q, 10, metric, None).unwrap();
            let ids = |v: &[Neighbor]| v.iter().map(|n| n.id).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&want), "{metric:?} query {i}");
        }
    }
}
