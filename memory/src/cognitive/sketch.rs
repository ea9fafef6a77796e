//! Hashed bag-of-words vectors: a fixed-width, L2-normalised term sketch of a text, used where the layer
//! needs a similarity without an embedding model (semantic-shift detection, novelty scoring).

/// Width of a sketch.
pub const SKETCH_DIM: usize = 256;

/// Short English function words that say nothing about a text's subject.
const STOP: &[&str] = &[
    "the", "a", "an", "and", "or", "but", "to", "of", "in", "on", "at", "for", "is", "are", "was",
    "were", "be", "it", "that", "this", "with", "as", "by", "so", "do", "did", "i", "you", "me",
    "my", "your", "we", "he", "she", "they", "them", "his", "her", "its", "our", "have", "has",
    "had", "not", "what", "just", "can",
];

fn fnv(word: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in word {
        h ^= b.to_ascii_lowercase() as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Sketch of `text`: each content word adds ±1 to a hashed dimension; the result has unit length (or is all
/// zeros when the text has no content word).
pub fn sketch(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; SKETCH_DIM];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let lower = word.to_lowercase();
        if lower.len() < 2 || STOP.contains(&lower.as_str()) {
            continue;
        }
        let h = fnv(lower.as_bytes());
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[(h % SKETCH_DIM as u64) as usize] += sign;
    }
    let n = norm(&v);
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// Dot product, written over 8-wide chunks so the compiler vectorises it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Highest dot product of `q` against the rows of a row-major `matrix` of `dim`-wide rows (0 when empty).
pub fn max_similarity(q: &[f32], matrix: &[f32], dim: usize) -> f32 {
    if dim == 0 {
        return 0.0;
    }
    matrix
        .chunks_exact(dim)
        .map(|row| dot(q, row))
        .fold(0.0f32, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_texts_have_similar_sketches() {
        let a = sketch("I adopted a greyhound named Pixel");
        let b = sketch("Pixel the greyhound was adopted");
        let c = sketch("Quarterly revenue grew in Asia");
        assert!(dot(&a, &b) > 0.6);
        assert!(dot(&a, &c) < 0.3);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn empty_text_is_zero() {
        assert!(sketch("the a of").iter().all(|&x| x == 0.0));
        assert_eq!(max_similarity(&sketch("x"), &[], SKETCH_DIM), 0.0);
    }
}
