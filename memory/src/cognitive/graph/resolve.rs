//! Entity resolution by edit distance: "Carolin" and "Caroline" name the same entity.

/// Levenshtein distance between two strings (by characters), giving up early once it exceeds `limit`
/// (returns `limit + 1` then).
pub fn levenshtein_within(a: &str, b: &str, limit: usize) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            row_min = row_min.min(cur[j + 1]);
        }
        if row_min > limit {
            return limit + 1;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Edits tolerated between two names of `len` characters: none below 5, one up to 8, two beyond.
pub fn tolerance(len: usize) -> usize {
    match len {
        0..=4 => 0,
        5..=8 => 1,
        _ => 2,
    }
}

/// Whether two normalised (lower-case) names are close enough to be the same entity: same first character
/// and an edit distance within [`tolerance`].
pub fn same_entity(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.chars().next() != b.chars().next() {
        return false;
    }
    let tol = tolerance(a.chars().count().min(b.chars().count()));
    tol > 0 && levenshtein_within(a, b, tol) <= tol
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(levenshtein_within("kitten", "sitting", 5), 3);
        assert_eq!(levenshtein_within("", "abc", 5), 3);
        assert_eq!(levenshtein_within("abc", "abc", 0), 0);
        assert_eq!(
            levenshtein_within("kitten", "sitting", 1),
            2,
            "gives up past the limit"
        );
    }

    #[test]
    fn resolution_rules() {
        assert!(same_entity("caroline", "carolin"));
        assert!(same_entity("kubernetes", "kubernets"));
        assert!(!same_entity("sam", "pam"), "short names must match exactly");
        assert!(!same_entity("anna", "hanna"));
        assert!(!same_entity("berlin", "dublin"));
    }
}
