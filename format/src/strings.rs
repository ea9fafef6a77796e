//! [`StringColumn`]: many strings in one buffer, the allocation-free form of a string dataset.

/// Many strings packed into one buffer (string `i` spans `ends[i - 1]..ends[i]`), so that reading or
/// writing a dataset of a hundred thousand strings costs two allocations, not one per string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StringColumn {
    text: String,
    ends: Vec<usize>,
}

impl StringColumn {
    /// An empty column.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `strings` strings of `bytes` bytes in all.
    pub fn with_capacity(strings: usize, bytes: usize) -> Self {
        StringColumn {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(strings),
        }
    }

    /// Appends one string.
    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the column holds no string.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..end)
    }

    /// The strings in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.ends.len()).map(move |i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.text[start..self.ends[i]]
        })
    }

    /// The strings' bytes in order (no character-boundary checks: each string's ends were the text's
    /// length when it was pushed, or checked when a reader set them).
    pub(crate) fn iter_bytes(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        let text = self.text.as_bytes();
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = text.get(start..end).unwrap_or_default();
            start = end;
            s
        })
    }

    /// Bytes of all the strings together.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// One `String` per element (an allocation each).
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }

    /// Empties the column, keeping its buffers for the next strings.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// The column's buffers, emptied, for a reader to fill (see [`set_parts`](Self::set_parts)); the
    /// column is empty meanwhile.
    pub(crate) fn take_parts(&mut self) -> (Vec<u8>, Vec<usize>) {
        let mut text = std::mem::take(&mut self.text).into_bytes();
        let mut ends = std::mem::take(&mut self.ends);
        text.clear();
        ends.clear();
        (text, ends)
    }

    /// Makes the column hold bytes gathered by a reader: `text` (every string's bytes in order) and each
    /// string's end in it. Bytes that are not UTF-8 are replaced string by string (U+FFFD), as
    /// [`String::from_utf8_lossy`] does.
    pub(crate) fn set_parts(&mut self, text: Vec<u8>, ends: Vec<usize>) {
        // Valid as a whole and cut only between characters: each string is valid on its own.
        let bytes = match String::from_utf8(text) {
            Ok(text) if ends.iter().all(|&e| text.is_char_boundary(e)) => {
                self.text = text;
                self.ends = ends;
                return;
            }
            Ok(text) => text.into_bytes(),
            Err(e) => e.into_bytes(),
        };
        let mut col = StringColumn::with_capacity(ends.len(), bytes.len());
        let mut start = 0;
        for &end in &ends {
            col.push(&String::from_utf8_lossy(
                bytes.get(start..end).unwrap_or(&[]),
            ));
            start = end;
        }
        *self = col;
    }
}

impl<S: AsRef<str>> FromIterator<S> for StringColumn {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut col = StringColumn::with_capacity(iter.size_hint().0, 0);
        for s in iter {
            col.push(s.as_ref());
        }
        col
    }
}

impl<S: AsRef<str>> Extend<S> for StringColumn {
    fn extend<I: IntoIterator<Item = S>>(&mut self, iter: I) {
        for s in iter {
            self.push(s.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_come_back_in_order() {
        let col: StringColumn = ["a", "", "héllo", "世界"].iter().collect();
        assert_eq!(col.len(), 4);
        assert_eq!(col.get(0), Some("a"));
        assert_eq!(col.get(1), Some(""));
        assert_eq!(col.get(3), Some("世界"));
        assert_eq!(col.get(4), None);
        assert_eq!(col.iter().len(), 4);
        assert_eq!(col.to_vec(), vec!["a", "", "héllo", "世界"]);
        assert_eq!(col.text_len(), 1 + 6 + 6);
        assert!(StringColumn::new().is_empty());
        let mut reused = col.clone();
        reused.clear();
        assert!(reused.is_empty() && reused.get(0).is_none());
        reused.push("again");
        assert_eq!(reused.to_vec(), vec!["again"]);
        let (text, ends) = reused.take_parts();
        assert!(text.is_empty() && ends.is_empty() && reused.is_empty());
        assert_eq!(StringColumn::new().iter().count(), 0);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_replaced_in_their_own_string() {
        let mut col = StringColumn::new();
        col.set_parts(b"ok\xffx\xc3\xa9".to_vec(), vec![2, 4, 6]);
        assert_eq!(col.to_vec(), vec!["ok", "\u{fffd}x", "é"]);
        // Each half of a character is invalid alone, though the two together are valid.
        col.set_parts("é".as_bytes().to_vec(), vec![1, 2]);
        assert_eq!(col.to_vec(), vec!["\u{fffd}", "\u{fffd}"]);
    }
}
