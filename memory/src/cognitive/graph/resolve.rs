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

/// Every normalised name (and alias) of the graph by its first character and its length in characters, so that
/// resolving a name compares it only with the names [`same_entity`] could accept: those share its first
/// character and are at most its [`tolerance`] characters longer or shorter (an edit distance is at least the
/// difference in length). Without it each new name was compared with every name in the graph.
#[derive(Debug, Default)]
pub struct NameBuckets {
    buckets: crate::FastMap<(char, usize), Vec<NameEntry>>,
}

/// A normalised name and the entity it resolves to.
type NameEntry = (Box<str>, u32);

impl NameBuckets {
    /// Record that the normalised name `key` resolves to `id` (replacing what it resolved to before).
    pub fn insert(&mut self, key: &str, id: u32) {
        let first = key.chars().next().unwrap_or('\0');
        let bucket = self
            .buckets
            .entry((first, key.chars().count()))
            .or_default();
        match bucket.iter_mut().find(|(n, _)| &**n == key) {
            Some(entry) => entry.1 = id,
            None => bucket.push((key.into(), id)),
        }
    }

    /// The names (with their ids) that could be the same entity as the normalised name `key`, whose length in
    /// bytes is within `tol` of the key's: those [`same_entity`] accepts.
    pub fn candidates<'a>(&'a self, key: &'a str, tol: usize) -> impl Iterator<Item = u32> + 'a {
        let first = key.chars().next().unwrap_or('\0');
        let chars = key.chars().count();
        (chars.saturating_sub(tol)..=chars + tol)
            .filter_map(move |len| self.buckets.get(&(first, len)))
            .flatten()
            .filter(move |(n, _)| n.len().abs_diff(key.len()) <= tol && same_entity(n, key))
            .map(|&(_, id)| id)
    }
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

    #[test]
    fn buckets_find_what_a_scan_of_every_name_finds() {
        let names = [
            "caroline",
            "carolin",
            "carolyn",
            "karoline",
            "kubernetes",
            "kubernets",
            "kubernetes x",
            "berlin",
            "dublin",
            "anna",
            "hanna",
            "josé",
            "jose",
            "joseph",
            "josephine",
            "dresden",
            "dresdner",
            "é",
            "",
        ];
        let mut b = NameBuckets::default();
        for (i, n) in names.iter().enumerate() {
            b.insert(n, i as u32);
        }
        // Re-inserting a name moves it to the new id, as a map would.
        b.insert("berlin", 100);
        for key in names
            .iter()
            .chain(&["carolinee", "kuberntes", "josephin", "xyz", "dresdan"])
        {
            let tol = tolerance(key.chars().count());
            let scan: Vec<u32> = names
                .iter()
                .enumerate()
                .map(|(i, n)| (*n, if *n == "berlin" { 100 } else { i as u32 }))
                .filter(|(n, _)| n.len().abs_diff(key.len()) <= tol && same_entity(n, key))
                .map(|(_, id)| id)
                .collect();
            let mut got: Vec<u32> = b.candidates(key, tol).collect();
            got.sort_unstable();
            let mut want = scan;
            want.sort_unstable();
            assert_eq!(got, want, "{key:?}");
        }
    }
}
