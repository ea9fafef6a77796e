//! Dictionary encoding of the record columns that repeat a few values (source, agent, session, origin path,
//! tags): each distinct value is stored once under `/dictionaries/NAME`, each row holds a u32 code. Values are
//! only ever appended, so a checkpoint writes just the values that are new since the last one.

use crate::record::Record;

/// Names of the dictionary-encoded columns, in [`Dictionaries`] order.
pub const DICTIONARY_COLUMNS: [&str; 5] = ["source", "agent", "session", "origin_path", "tags"];

/// The value a record stores in dictionary column `col` (an index into [`DICTIONARY_COLUMNS`]).
pub fn column_value(col: usize, r: &Record) -> String {
    match col {
        0 => r.source.as_str().to_string(),
        1 => r.agent.clone(),
        2 => r.session.clone(),
        3 => r
            .origin
            .as_ref()
            .map(|o| o.path.clone())
            .unwrap_or_default(),
        _ => serde_json::to_string(&r.tags).unwrap_or_else(|_| "[]".into()),
    }
}

#[derive(Clone, Debug, Default)]
struct Dictionary {
    values: Vec<String>,
    index: crate::FastMap<String, u32>,
    /// How many of `values` the file holds.
    persisted: usize,
}

/// The five dictionaries of a store, with how much of each the file already holds.
#[derive(Clone, Debug, Default)]
pub struct Dictionaries {
    dicts: [Dictionary; 5],
}

impl Dictionaries {
    /// Dictionaries as read from a file (every value persisted).
    pub fn from_stored(lists: [Vec<String>; 5]) -> Self {
        let mut out = Dictionaries::default();
        for (d, values) in out.dicts.iter_mut().zip(lists) {
            d.index = values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), i as u32))
                .collect();
            d.persisted = values.len();
            d.values = values;
        }
        out
    }

    /// The code of `value` in column `col`, adding it when new.
    pub fn code(&mut self, col: usize, value: String) -> u32 {
        let d = &mut self.dicts[col];
        if let Some(&c) = d.index.get(&value) {
            return c;
        }
        let c = d.values.len() as u32;
        d.values.push(value.clone());
        d.index.insert(value, c);
        c
    }

    /// Every value of column `col`, by code.
    pub fn values(&self, col: usize) -> &[String] {
        &self.dicts[col].values
    }

    /// Values of column `col` the file does not hold yet.
    pub fn unpersisted(&self, col: usize) -> &[String] {
        let d = &self.dicts[col];
        &d.values[d.persisted..]
    }

    /// Number of values of column `col` the file holds.
    pub fn persisted(&self, col: usize) -> usize {
        self.dicts[col].persisted
    }

    /// Record that the file now holds every value.
    pub fn mark_persisted(&mut self) {
        for d in &mut self.dicts {
            d.persisted = d.values.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_new_values_are_tracked() {
        let mut d = Dictionaries::from_stored([
            vec!["conversation".into()],
            vec![],
            vec![],
            vec![],
            vec![],
        ]);
        assert_eq!(d.code(0, "conversation".into()), 0);
        assert!(d.unpersisted(0).is_empty());
        assert_eq!(d.code(0, "tool".into()), 1);
        assert_eq!(d.code(0, "tool".into()), 1);
        assert_eq!(d.unpersisted(0), ["tool".to_string()]);
        assert_eq!(d.persisted(0), 1);
        d.mark_persisted();
        assert!(d.unpersisted(0).is_empty());
        assert_eq!(d.values(0).len(), 2);
    }
}
