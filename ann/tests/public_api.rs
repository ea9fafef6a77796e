//! End-to-end use of the public API the memory store relies on: a caller-owned store, HNSW build /
//! insert / delete / compact / filtered search / persistence, exact search, IVF and IVF-PQ.

use clawhdf5_ann::synth::Clustered;
use clawhdf5_ann::{
    exact_top_k, AnnError, Filter, FlatVectors, HalfVectors, Hnsw, HnswParams, IdSet, Ivf,
    IvfParams, IvfPq, IvfPqParams, Metric, Row, VectorStore,
};

/// A store that is not `FlatVectors`: rows kept as separate vectors, as a caller might.
struct RowStore {
    dim: usize,
    rows: Vec<Vec<f32>>,
}

impl VectorStore for RowStore {
    fn dim(&self) -> usize {
        self.dim
    }
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn row(&self, id: u32) -> Row<'_> {
        Row::F32(&self.rows[id as usize])
    }
}

fn ids(v: &[clawhdf5_ann::Neighbor]) -> Vec<u32> {
    v.iter().map(|n| n.id).collect()
}

#[test]
fn store_grows_index_follows_and_survives_reload() {
    let g = Clustered::new(32, 8, 1.0, 1);
    let flat = g.sample(1200, 1);
    let mut store = RowStore {
        dim: 32,
        rows: Vec::new(),
    };
    let mut index = Hnsw::new(
        32,
        HnswParams {
            quantize: true,
            ..Default::default()
        },
    )
    .unwrap();
    // Rows arrive in two bursts; each burst is inserted as it lands.
    for burst in [0..700u32, 700..1200] {
        for id in burst.clone() {
            store.rows.push(flat.vector(id).to_vec());
        }
        let new: Vec<u32> = burst.collect();
        index.insert_many(&new, &store).unwrap();
    }
    assert_eq!(index.len(), 1200);
    let q = g.sample(1, 99);
    let q = q.vector(0);
    let truth = exact_top_k(&store, q, 10, Metric::Cosine, None).unwrap();
    let got = index.search(&store, q, 10, 80, None).unwrap();
    let hits = truth
        .iter()
        .filter(|t| got.iter().any(|g| g.id == t.id))
        .count();
    assert!(hits >= 9, "hits {hits}");

    // Forget some memories; they disappear from results at once, and after compaction.
    for id in ids(&got[..3]) {
        assert!(index.delete(id));
    }
    let after = index.search(&store, q, 10, 80, None).unwrap();
    assert!(after.iter().all(|n| !got[..3].iter().any(|g| g.id == n.id)));
    index.compact(&store).unwrap();

    // Persist with the store's generation; a newer store generation rejects the stale graph.
    let bytes = index.to_bytes(5);
    // Graph (count + 32 links per row), levels, int8 codes + scale + norm; no f32 copy (+10% for upper levels).
    let per_row = 1 + 4 * 33 + 32 + 8;
    assert!(
        bytes.len() < 1200 * per_row * 11 / 10,
        "persisted graph must not carry the f32 vectors"
    );
    let loaded = Hnsw::from_bytes(&bytes, 5).unwrap();
    assert_eq!(
        loaded.search(&store, q, 10, 80, None).unwrap(),
        index.search(&store, q, 10, 80, None).unwrap()
    );
    assert!(matches!(
        Hnsw::from_bytes(&bytes, 6),
        Err(AnnError::StaleIndex {
            expected: 6,
            found: 5
        })
    ));
    assert!(matches!(
        Hnsw::from_bytes(b"not an index at all, sorry", 5),
        Err(AnnError::Corrupt(_))
    ));
    assert!(matches!(
        Hnsw::from_bytes(&[], 5),
        Err(AnnError::Corrupt(_))
    ));
}

#[test]
fn filters_give_the_exact_filtered_answer() {
    let g = Clustered::new(24, 12, 1.0, 2);
    let store = g.sample(5000, 1);
    let queries = g.sample(20, 2);
    let index = Hnsw::build(&store, HnswParams::default()).unwrap();
    for pct in [50u32, 10, 1] {
        let allowed: IdSet = (0..5000u32).filter(|i| i % 100 < pct).collect();
        let mut hits = 0;
        for i in 0..20 {
            let q = queries.vector(i);
            let truth =
                exact_top_k(&store, q, 10, Metric::Cosine, Some(Filter::Ids(&allowed))).unwrap();
            let got = index
                .search(&store, q, 10, 64, Some(Filter::Ids(&allowed)))
                .unwrap();
            assert!(got.iter().all(|n| allowed.contains(n.id)));
            hits += truth
                .iter()
                .filter(|t| got.iter().any(|g| g.id == t.id))
                .count();
        }
        assert!(hits >= 196, "{pct}%: {hits}/200");
    }
}

#[test]
fn ivf_family_and_exact_search_agree_when_probing_everything() {
    let g = Clustered::new(32, 6, 1.0, 3);
    let store = g.sample(1500, 1);
    let q = g.sample(1, 7);
    let q = q.vector(0);
    let truth = ids(&exact_top_k(&store, q, 10, Metric::Cosine, None).unwrap());
    let ivf = Ivf::build(
        &store,
        IvfParams {
            nlist: 12,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ids(&ivf.search(&store, q, 10, 12, None).unwrap()), truth);
    let pq = IvfPq::build(
        &store,
        IvfPqParams {
            nlist: 12,
            m: 8,
            rerank: 200,
            ..Default::default()
        },
    )
    .unwrap();
    let got = ids(&pq.search(&store, q, 10, 12, None).unwrap());
    assert!(truth.iter().filter(|t| got.contains(t)).count() >= 9);
    assert!(
        pq.memory_bytes() < ivf.memory_bytes() + 1500 * 16 + 4 * 8 * 256 * 4 + 12 * 32 * 4 + 4096
    );
    let wrong = FlatVectors::new(7);
    assert!(matches!(
        Hnsw::build(&store, HnswParams::default())
            .unwrap()
            .search(&wrong, q, 5, 10, None),
        Err(AnnError::DimensionMismatch { .. })
    ));
}

#[test]
fn half_precision_store_searches_like_its_f32_source() {
    let g = Clustered::new(48, 8, 1.0, 7);
    let flat = g.sample(3000, 2);
    let queries = g.sample(40, 99);
    let mut half = HalfVectors::new(48);
    for i in 0..flat.len() as u32 {
        half.push(flat.vector(i)).unwrap();
    }
    let h = Hnsw::build(&half, HnswParams::default()).unwrap();
    let mut hits = 0;
    for i in 0..queries.len() as u32 {
        let q = queries.vector(i);
        let truth = exact_top_k(&half, q, 10, Metric::Cosine, None).unwrap();
        let f32_truth = exact_top_k(&flat, q, 10, Metric::Cosine, None).unwrap();
        // f16 rounding moves distances by far less than the gaps between neighbours.
        assert!((truth[0].distance - f32_truth[0].distance).abs() < 1e-2);
        let got = h.search(&half, q, 10, 64, None).unwrap();
        hits += ids(&got)
            .iter()
            .filter(|id| ids(&truth).contains(id))
            .count();
    }
    assert!(
        hits as f64 / 400.0 >= 0.95,
        "recall {}",
        hits as f64 / 400.0
    );
}

#[test]
fn a_huge_k_or_ef_returns_every_row_instead_of_reserving_memory_for_them() {
    let g = Clustered::new(16, 4, 1.0, 11);
    let store = g.sample(300, 1);
    let q = g.sample(1, 5);
    let q = q.vector(0);
    let all = exact_top_k(&store, q, usize::MAX, Metric::Cosine, None).unwrap();
    assert_eq!(all.len(), 300);
    let half: IdSet = (0..300u32).filter(|i| i % 2 == 0).collect();
    let allowed = exact_top_k(
        &store,
        q,
        usize::MAX,
        Metric::Cosine,
        Some(Filter::Ids(&half)),
    );
    assert_eq!(allowed.unwrap().len(), 150);
    for quantize in [false, true] {
        let index = Hnsw::build(
            &store,
            HnswParams {
                quantize,
                ..Default::default()
            },
        )
        .unwrap();
        let got = index
            .search(&store, q, usize::MAX, usize::MAX, None)
            .unwrap();
        assert_eq!(ids(&got), ids(&all), "quantize {quantize}");
        let got = index
            .search(&store, q, usize::MAX, 10, Some(Filter::Ids(&half)))
            .unwrap();
        assert_eq!(got.len(), 150, "quantize {quantize}");
    }
    let ivf = Ivf::build(
        &store,
        IvfParams {
            nlist: 4,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        ivf.search(&store, q, usize::MAX, 4, None).unwrap().len(),
        300
    );
    let pq = IvfPq::build(
        &store,
        IvfPqParams {
            nlist: 4,
            m: 4,
            rerank: 50,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        pq.search(&store, q, usize::MAX, 4, None).unwrap().len(),
        300
    );
}
