//! Verified near-duplicates: the pairs of documents whose shingle sets are
//! at least a threshold alike, among the candidates whose fingerprints are
//! within `k` bits.
//!
//! Simhash at a small `k` finds only very close copies; at a wider `k` (and
//! on finer features, which one edited word moves less) it proposes nearly
//! every pair above a Jaccard threshold, with many that are not. Each
//! candidate is then confirmed by the exact similarity of the two
//! documents' shingle sets: sorted arrays of their distinct SPEC v1 feature
//! hashes ([`Fingerprinter::shingle_set`](crate::Fingerprinter::shingle_set)).
//! Precision is 1 by construction; recall is the candidates' recall.
//!
//! Similarity of sets `A` and `B`, from `|A ∩ B|` counted by a merge:
//! - Jaccard: `|A ∩ B| / |A ∪ B|`;
//! - containment: `|A ∩ B| / min(|A|, |B|)`, how much of the smaller
//!   document the larger one holds.
//!
//! Two empty sets are alike (1); an empty set and a non-empty one share
//! nothing (0). A pair is kept when its similarity, in double precision, is
//! at least the threshold; it is reported rounded to `f32`.
//!
//! - [`exact`]: every pair at least the threshold alike by the prefix-filter
//!   join (AllPairs, PPJoin), no candidates and no misses.
//! - [`overlap`]: the similarity of two sets, and cheap ways to rule a pair out.
//! - [`Verifier`]: candidate pairs checked against sets held in memory.
//! - [`Corpus`]: documents gathered a chunk at a time, then all their pairs.
//! - [`OnlineDedup`]: the dedup of a stream in one pass, holding the kept
//!   documents' sets.
//! - [`StreamVerifier`]: the second pass of a corpus too large to hold, with
//!   a document's set kept only from its first candidate pair to its last.
//! - [`SimilarIndex`]: texts held by id, added, queried and removed at any
//!   time, saved as an index file.

pub mod copies;
mod corpus;
pub mod exact;
mod index;
mod online;
pub mod overlap;
mod stream;
mod sweep;
mod verify;

use std::fmt;
use std::str::FromStr;

pub use corpus::{dedup_of, expand_copies, similar_pairs_utf8, Corpus};
pub use index::{SimilarIndex, SimilarMatches};
pub use online::{ChunkDedup, OnlineDedup};
pub use overlap::{alike, similarity};
pub use stream::StreamVerifier;
pub use sweep::PairSweep;
pub use verify::Verifier;

use rayon::prelude::*;

use crate::fingerprint::{Fingerprinter, Mode, Shingling};
use crate::job::Control;
use crate::{Error, Result};

/// How two shingle sets are compared.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Measure {
    /// `|A ∩ B| / |A ∪ B|`.
    #[default]
    Jaccard,
    /// `|A ∩ B| / min(|A|, |B|)`.
    Containment,
}

impl Measure {
    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Jaccard => "jaccard",
            Measure::Containment => "containment",
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Measure {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "jaccard" => Ok(Measure::Jaccard),
            "containment" => Ok(Measure::Containment),
            other => Err(Error::invalid("measure", "\"jaccard\" or \"containment\"", format!("{other:?}"))),
        }
    }
}

/// Where candidates come from: the fingerprints of `shingling` within `k`
/// bits of each other.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Candidates {
    pub shingling: Shingling,
    pub k: u32,
}

/// The candidates `"auto"` takes: word fingerprints (width 1, single
/// words) within `k` bits, the least `k` that found at least 97 % of the
/// pairs at or above each Jaccard threshold of word 3-shingle sets, on the
/// real-text corpus of `benches/bench_quality.py` (24,877 manual pages and
/// package documents in 25 languages). Single words beat characters
/// (4-grams) there: as many pairs found for fewer candidates at 0.8 and
/// below, and half the fingerprinting time. Rows: `(threshold, k)`.
const AUTO: [(f64, u32); 11] = [(0.98, 1), (0.95, 4), (0.90, 7), (0.85, 8), (0.80, 10), (0.75, 11), (0.70, 12), (0.65, 13), (0.60, 14), (0.55, 15), (0.0, 16)];

impl Candidates {
    /// The candidates `"auto"` picks for pairs at least `threshold` alike:
    /// the row of [`AUTO`] at or below the threshold. Below 0.55 even
    /// `k = 16` (the most an index answers) found fewer than 97 % (96.7 %
    /// at 0.5), and candidates grow towards all pairs. The table was
    /// measured for Jaccard similarity of word 3-shingle sets; containment
    /// is at least the Jaccard similarity, so the same candidates find
    /// those pairs and more, but not pairs of very different sizes.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a threshold outside `(0, 1]`.
    pub fn auto(threshold: f64) -> Result<Candidates> {
        check_threshold(threshold)?;
        let k = AUTO.iter().find(|&&(t, _)| threshold >= t).map_or(crate::tables::plan::MAX_K, |&(_, k)| k);
        Ok(Candidates { shingling: Shingling::new(Mode::Words, Some(1))?, k })
    }
}

impl fmt::Display for Candidates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} width {} within {} bits", self.shingling.mode(), self.shingling.width(), self.k)
    }
}

fn check_threshold(threshold: f64) -> Result<()> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(Error::invalid("threshold", "in (0, 1]: the least similarity of a pair reported", threshold))
    }
}

/// What verified near-duplicates look for.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Similar {
    /// The least similarity of a pair reported, in `(0, 1]`.
    pub threshold: f64,
    pub measure: Measure,
    /// The shingles whose sets are compared.
    pub sets: Shingling,
    pub candidates: Candidates,
    /// Every pair by the exact set-similarity join ([`exact`]) instead of
    /// the candidates' pairs: recall 1. Jobs that hold every set in memory
    /// ([`Corpus`]) honour it; the others use the candidates.
    pub exact: bool,
}

impl Similar {
    /// # Errors
    /// [`Error::InvalidParameter`] for a threshold outside `(0, 1]` or a
    /// candidate `k` above 16.
    pub fn new(threshold: f64, measure: Measure, sets: Shingling, candidates: Candidates) -> Result<Similar> {
        check_threshold(threshold)?;
        if candidates.k > crate::tables::plan::MAX_K {
            return Err(Error::invalid("k", "at most 16 for candidates", candidates.k));
        }
        Ok(Similar { threshold, measure, sets, candidates, exact: false })
    }

    /// The same settings, finding pairs by the exact join when `exact`.
    pub fn with_exact(self, exact: bool) -> Similar {
        Similar { exact, ..self }
    }
}

/// Pairs `[a, b]` (`a < b`, ascending) and their similarity.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Verified {
    pub pairs: Vec<[u64; 2]>,
    pub similarity: Vec<f32>,
}

/// Each text's candidate fingerprint and shingle set (tokenized once), on
/// all cores, in order.
///
/// # Errors
/// [`Error::InvalidUtf8`] naming a text by its place in `texts`;
/// [`Error::Interrupted`] when `control` is cancelled.
fn fingerprints_and_sets<T: AsRef<[u8]> + Sync>(texts: &[T], opts: &Similar, control: &Control) -> Result<Vec<(u64, Vec<u64>)>> {
    texts
        .par_iter()
        .enumerate()
        .with_min_len(16)
        .map_init(
            || Fingerprinter::new(opts.candidates.shingling),
            |f, (index, bytes)| {
                let text = std::str::from_utf8(bytes.as_ref()).map_err(|e| Error::InvalidUtf8 { index, valid_up_to: e.valid_up_to() })?;
                // The exact join needs no fingerprint: the set alone, from
                // the same one tokenization.
                let (fp, set) = if opts.exact { (0, f.shingle_set(text, opts.sets)) } else { f.fingerprint_and_set(text, opts.sets) };
                if index % 1024 == 0 {
                    control.check()?;
                }
                control.advance(1);
                Ok((fp, set.to_vec()))
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_by_name() {
        assert!("cosine".parse::<Measure>().is_err());
        assert_eq!("containment".parse::<Measure>().unwrap(), Measure::Containment);
        assert_eq!(Measure::Jaccard.to_string(), "jaccard");
    }

    #[test]
    fn bad_thresholds_are_refused() {
        let c = Candidates { shingling: Shingling::default(), k: 3 };
        for t in [0.0, -0.1, 1.01, f64::NAN, f64::INFINITY] {
            assert!(Similar::new(t, Measure::Jaccard, Shingling::default(), c).is_err(), "{t}");
            assert!(Candidates::auto(t).is_err(), "{t}");
        }
        assert!(Similar::new(1.0, Measure::Jaccard, Shingling::default(), c).is_ok());
        assert!(Similar::new(0.5, Measure::Jaccard, Shingling::default(), Candidates { k: 17, ..c }).is_err());
    }

    #[test]
    fn auto_widens_as_the_threshold_falls() {
        let ks: Vec<u32> = (1..=100).rev().map(|t| Candidates::auto(f64::from(t) / 100.0).unwrap().k).collect();
        assert!(ks.windows(2).all(|w| w[0] <= w[1]), "{ks:?}");
        assert_eq!(Candidates::auto(0.9).unwrap().k, 7);
        assert_eq!(Candidates::auto(0.89).unwrap().k, 8);
        assert_eq!(Candidates::auto(0.01).unwrap().k, crate::tables::plan::MAX_K);
        assert_eq!(Candidates::auto(1.0).unwrap().shingling, Shingling::new(Mode::Words, Some(1)).unwrap());
    }
}
