//! Filtered searches on an index large enough to keep sign codes (32,768 rows and more): a filter that
//! allows a few thousand rows is answered by a scan that bounds their distances by sign code first, on an int8
//! index (codes derived from its int8 copy) and on an f32 one (codes built from the store by the first
//! such search); either way the result is the exact filtered top-10.

use clawhdf5_ann::synth::Clustered;
use clawhdf5_ann::{exact_top_k, Filter, Hnsw, HnswParams, IdSet, Metric, SearchPlan, VectorStore};

#[test]
fn large_filtered_scans_through_sign_codes_return_the_exact_top_10() {
    let (n, dim) = (33_000usize, 384);
    let g = Clustered::new(dim, 64, 1.0, 21);
    let (base, queries) = (g.sample(n, 1), g.sample(12, 2));
    // A small, quickly built graph: the scans under test do not walk it.
    let params = HnswParams {
        m: 4,
        ef_construction: 16,
        quantize: true,
        ..HnswParams::default()
    };
    let mut index = Hnsw::build(&base, params).unwrap();
    let codes = |h: &Hnsw| h.quantized().and_then(|q| q.signs()).map(|s| s.len());
    assert_eq!(
        codes(&index),
        None,
        "derived when a scan first asks for them"
    );
    let allowed: IdSet = (0..n as u32).filter(|i| i % 10 == 3).collect();
    let filter = Filter::Ids(&allowed);
    for quantized in [true, false] {
        index.set_quantized(&base, quantized).unwrap();
        let before = index.memory_bytes();
        for i in 0..queries.len() as u32 {
            let q = queries.vector(i);
            let (got, plan) = index
                .search_with_plan(&base, q, 10, 128, Some(filter))
                .unwrap();
            assert_eq!(plan, SearchPlan::ExactScan, "int8 {quantized}, query {i}");
            if quantized {
                assert_eq!(
                    codes(&index),
                    Some(n),
                    "an int8 copy of 33,000 rows keeps sign codes"
                );
            }
            let truth = exact_top_k(&base, q, 10, Metric::Cosine, Some(filter)).unwrap();
            assert_eq!(got, truth, "int8 {quantized}, query {i}");
        }
        if !quantized {
            // The f32 index built its codes for the first scan: 64 bytes a row at d = 384.
            assert!(index.memory_bytes() >= before + 64 * n, "f32 codes built");
        }
    }
}
