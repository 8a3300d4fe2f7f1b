//! Rows of the text outputs (TSV, and find-all's `[a, b]` lines): record
//! ids, held as packed text, beside numbers in decimal, made here rather
//! than as a Python string a field (on the consumer's thread that was most
//! of its work once the jobs ran on the core's threads).

use std::fmt;

/// Entries of the texts: packed (entry `i` is `text[offsets[i]..offsets[i +
/// 1]]`), or numbers written in decimal (line numbers as ids).
#[derive(Clone, Copy)]
pub enum Piece<'a> {
    Texts { text: &'a [u8], offsets: &'a [u64] },
    Numbers(&'a [u64]),
}

/// An entry's field: its text, or its number.
enum Field<'a> {
    Text(&'a [u8]),
    Number(u64),
}

impl<'a> Piece<'a> {
    fn len(&self) -> usize {
        match self {
            Piece::Texts { offsets, .. } => offsets.len().saturating_sub(1),
            Piece::Numbers(values) => values.len(),
        }
    }

    fn get(self, i: usize) -> Option<Field<'a>> {
        match self {
            Piece::Texts { text, offsets } => {
                let (lo, hi) = (*offsets.get(i)?, *offsets.get(i + 1)?);
                text.get(usize::try_from(lo).ok()?..usize::try_from(hi).ok()?).map(Field::Text)
            }
            Piece::Numbers(values) => values.get(i).copied().map(Field::Number),
        }
    }
}

/// Entries held in pieces, numbered on from one piece to the next (as the
/// ids of a job's chunks are).
pub struct Pieces<'a> {
    pieces: Vec<Piece<'a>>,
    /// Each piece's first entry, ascending.
    starts: Vec<u64>,
}

impl<'a> Pieces<'a> {
    /// Pieces whose entries number on from one to the next.
    pub fn new(pieces: Vec<Piece<'a>>) -> Self {
        let mut starts = Vec::with_capacity(pieces.len());
        let mut at = 0u64;
        for piece in &pieces {
            starts.push(at);
            at += piece.len() as u64;
        }
        Pieces { pieces, starts }
    }

    /// Pieces with their first entries given (ascending), so that a piece
    /// no row names may be left empty; None when they do not pair up.
    pub fn at(pieces: Vec<Piece<'a>>, starts: Vec<u64>) -> Option<Self> {
        (starts.len() == pieces.len() && starts.windows(2).all(|w| w[0] <= w[1])).then_some(Pieces { pieces, starts })
    }

    /// Entry `i`, None past the last.
    fn get(&self, i: u64) -> Option<Field<'a>> {
        let w = self.starts.partition_point(|&s| s <= i).checked_sub(1)?;
        self.pieces[w].get(usize::try_from(i - self.starts[w]).ok()?)
    }
}

/// A column of the rows: the texts of these entries, or numbers.
pub enum Column<'a> {
    Text(&'a [u64]),
    Number(&'a [u64]),
}

impl Column<'_> {
    fn len(&self) -> usize {
        match self {
            Column::Text(v) | Column::Number(v) => v.len(),
        }
    }
}

/// Why rows could not be made; `row` counts from 0.
#[derive(Debug, PartialEq, Eq)]
pub enum RowsError {
    /// The columns differ in length.
    Lengths,
    /// An entry past the texts' last.
    NoEntry { row: usize, entry: u64 },
    /// A text that is not UTF-8 (an id with a lone surrogate, kept as the
    /// input wrote it): a TSV cannot hold it.
    NotUtf8 { row: usize },
}

impl fmt::Display for RowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowsError::Lengths => write!(f, "the columns differ in length"),
            RowsError::NoEntry { row, entry } => write!(f, "row {row} names entry {entry}, past the last"),
            RowsError::NotUtf8 { row } => write!(f, "row {row} holds a text that is not UTF-8"),
        }
    }
}

/// What goes around the fields of a row.
#[derive(Clone, Copy)]
pub struct Layout<'a> {
    pub begin: &'a [u8],
    pub sep: &'a [u8],
    pub end: &'a [u8],
}

/// A TSV's rows: fields tab-separated, each row ended by `\n`.
pub const TSV: Layout<'static> = Layout { begin: b"", sep: b"\t", end: b"\n" };

/// Rows one task of the threads lays out: each costs a few cache misses
/// (its entries, at random in large pieces), so many rows a task.
#[cfg(not(test))]
const ROWS_A_TASK: usize = 4096;
#[cfg(test)]
const ROWS_A_TASK: usize = 3;

/// The rows, each field of `columns` in turn, laid out by `layout`; blocks
/// of rows on the current rayon pool, joined in order.
///
/// # Errors
/// [`RowsError`]: columns of different lengths, an entry out of range, or a
/// text that is not UTF-8 (the first such row; the caller names the id).
pub fn rows(texts: &Pieces<'_>, columns: &[Column<'_>], layout: Layout<'_>) -> Result<Vec<u8>, RowsError> {
    use rayon::prelude::*;

    let rows = columns.first().map_or(0, Column::len);
    if columns.iter().any(|c| c.len() != rows) {
        return Err(RowsError::Lengths);
    }
    let blocks: Vec<Result<Vec<u8>, RowsError>> =
        (0..rows.div_ceil(ROWS_A_TASK)).into_par_iter().map(|b| block(texts, columns, layout, b * ROWS_A_TASK..rows.min((b + 1) * ROWS_A_TASK))).collect();
    let mut out = Vec::with_capacity(blocks.iter().map(|b| b.as_ref().map_or(0, Vec::len)).sum());
    for b in blocks {
        out.extend_from_slice(&b?);
    }
    Ok(out)
}

/// The rows `range` of [`rows`].
fn block(texts: &Pieces<'_>, columns: &[Column<'_>], layout: Layout<'_>, range: std::ops::Range<usize>) -> Result<Vec<u8>, RowsError> {
    let mut out = Vec::with_capacity(range.len() * (columns.len() * 12 + layout.begin.len() + layout.end.len()));
    let mut digits = itoa::Buffer::new();
    for row in range {
        out.extend_from_slice(layout.begin);
        for (c, column) in columns.iter().enumerate() {
            if c > 0 {
                out.extend_from_slice(layout.sep);
            }
            match column {
                Column::Text(entries) => {
                    let entry = entries[row];
                    match texts.get(entry).ok_or(RowsError::NoEntry { row, entry })? {
                        Field::Text(text) if simdutf8::basic::from_utf8(text).is_ok() => out.extend_from_slice(text),
                        Field::Text(_) => return Err(RowsError::NotUtf8 { row }),
                        Field::Number(v) => out.extend_from_slice(digits.format(v).as_bytes()),
                    }
                }
                Column::Number(values) => out.extend_from_slice(digits.format(values[row]).as_bytes()),
            }
        }
        out.extend_from_slice(layout.end);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn packed(texts: &[String]) -> (Vec<u8>, Vec<u64>) {
        let mut offsets = vec![0u64];
        let mut text = Vec::new();
        for t in texts {
            text.extend_from_slice(t.as_bytes());
            offsets.push(text.len() as u64);
        }
        (text, offsets)
    }

    proptest! {
        /// The rows are what formatting each field in turn gives, whatever
        /// the pieces the texts are cut into.
        #[test]
        fn rows_are_the_fields_in_turn(
            texts in prop::collection::vec("[a-z0-9:é\u{1F600}]{0,6}", 1..40),
            numbers in any::<bool>(),
            cuts in prop::collection::vec(0usize..40, 0..4),
            picks in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u64>()), 0..30),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (texts.len() + 1)).collect();
            cuts.extend([0, texts.len()]);
            cuts.sort_unstable();
            // As numbers, each text is its entry's place, so that the pieces still matter.
            let texts: Vec<String> = if numbers { (0..texts.len()).map(|i| (i * 7919).to_string()).collect() } else { texts };
            let held: Vec<(Vec<u8>, Vec<u64>)> = cuts.windows(2).map(|w| packed(&texts[w[0]..w[1]])).collect();
            let values: Vec<Vec<u64>> = cuts.windows(2).map(|w| (w[0]..w[1]).map(|i| (i * 7919) as u64).collect()).collect();
            let pieces = Pieces::new(if numbers {
                values.iter().map(|v| Piece::Numbers(v)).collect()
            } else {
                held.iter().map(|(text, offsets)| Piece::Texts { text, offsets }).collect()
            });
            let a: Vec<u64> = picks.iter().map(|p| p.0.index(texts.len()) as u64).collect();
            let b: Vec<u64> = picks.iter().map(|p| p.1.index(texts.len()) as u64).collect();
            let n: Vec<u64> = picks.iter().map(|p| p.2).collect();
            let got = rows(&pieces, &[Column::Text(&a), Column::Number(&n), Column::Text(&b)], TSV).unwrap();
            let want: String = (0..picks.len()).map(|i| format!("{}\t{}\t{}\n", texts[a[i] as usize], n[i], texts[b[i] as usize])).collect();
            prop_assert_eq!(String::from_utf8(got).unwrap(), want);
        }
    }

    #[test]
    fn bad_rows_are_named() {
        let (text, offsets) = packed(&["a".into(), "bc".into()]);
        let mut bad = text.clone();
        bad.extend_from_slice(b"\xed\xa0\x80"); // U+D800 as WTF-8
        let mut bad_offsets = offsets.clone();
        bad_offsets.push(bad.len() as u64);
        let pieces = Pieces::new(vec![Piece::Texts { text: &bad, offsets: &bad_offsets }]);
        assert_eq!(rows(&pieces, &[Column::Text(&[1, 2])], TSV), Err(RowsError::NotUtf8 { row: 1 }));
        // The first bad row in order, whichever block a thread finished first.
        assert_eq!(rows(&pieces, &[Column::Text(&[0, 0, 1, 0, 2, 0, 0, 2, 3])], TSV), Err(RowsError::NotUtf8 { row: 4 }));
        assert_eq!(rows(&pieces, &[Column::Text(&[3])], TSV), Err(RowsError::NoEntry { row: 0, entry: 3 }));
        assert_eq!(rows(&pieces, &[Column::Text(&[0]), Column::Number(&[])], TSV), Err(RowsError::Lengths));
        assert_eq!(rows(&pieces, &[Column::Text(&[]), Column::Number(&[])], TSV).unwrap(), b"");
        assert_eq!(rows(&pieces, &[Column::Number(&[0, u64::MAX])], TSV).unwrap(), b"0\n18446744073709551615\n");
        let skipped = Pieces::at(vec![Piece::Numbers(&[]), Piece::Texts { text: &text, offsets: &offsets }, Piece::Numbers(&[9, 12])], vec![0, 5, 7]).unwrap();
        assert_eq!(rows(&skipped, &[Column::Text(&[6, 5, 8])], TSV).unwrap(), b"bc\na\n12\n");
        assert_eq!(rows(&skipped, &[Column::Text(&[4])], TSV), Err(RowsError::NoEntry { row: 0, entry: 4 }));
        assert_eq!(rows(&skipped, &[Column::Text(&[9])], TSV), Err(RowsError::NoEntry { row: 0, entry: 9 }));
        assert!(Pieces::at(vec![Piece::Numbers(&[])], vec![]).is_none());
        assert!(Pieces::at(vec![Piece::Numbers(&[]), Piece::Numbers(&[])], vec![3, 2]).is_none());
        let lines = Layout { begin: b"[", sep: b", ", end: b"]\n" };
        assert_eq!(rows(&pieces, &[Column::Number(&[1, 2]), Column::Number(&[3, 4])], lines).unwrap(), b"[1, 3]\n[2, 4]\n");
        let empty = Pieces::new(vec![]);
        assert_eq!(rows(&empty, &[Column::Text(&[0])], TSV), Err(RowsError::NoEntry { row: 0, entry: 0 }));
    }
}
