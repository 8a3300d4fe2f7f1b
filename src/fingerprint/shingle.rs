//! Feature hashes of shingles, streamed without building shingle strings.
//!
//! A shingle of width `W` is `W` consecutive *units*: tokens in mode `words`
//! (hashed joined by single spaces), code points of the normalized text in
//! mode `chars`. FNV-1a is a sequential chain over bytes, so instead of hashing
//! each shingle on its own, `W` chains ("lanes") run side by side over the token
//! stream: `lanes[0]` holds the oldest open shingle, `lanes[W - 1]` the newest.
//! Every byte is folded into all lanes at once (the `W` multiplications are
//! independent, so they overlap in the CPU). At a unit boundary the oldest lane
//! is complete: it is written out, the others move down one place and the
//! newest restarts from the FNV basis. The moves are selects, not branches: a
//! branch per boundary would mispredict about once per word.
//!
//! Long texts are cut in two halves hashed in one loop (the second half starts
//! `W - 1` units before the cut, so the shingles across it are kept), which
//! doubles the multiplications in flight. Each stream writes its hashes into a
//! 256-slot ring indexed modulo 256 (no bounds checks, no length register) that
//! is drained into the vote every 128 bytes.
//!
//! A stream writes a hash at every unit boundary; the first `W - 1` come from
//! lanes that started before unit 0 and are skipped. When `0 < units < W`, the
//! one shingle of all units is hashed directly.
//!
//! With AVX2 (checked at run time, off under `RSIMHASH_PORTABLE`) and a vote
//! as the sink, a long text is cut in four parts instead, hashed side by
//! side one part per 64-bit element of a vector ([`avx2`]), and what the
//! vectors leave of each part (less than 32 bytes) is finished here. With
//! AVX-512, a text of [`WIDE8_MIN`] bytes or more is cut in eight, one of
//! [`WIDE16_MIN`] or more in sixteen ([`avx512`]); a list as the sink (a
//! shingle set being made) takes that kernel's hashes too, packed into it
//! as they complete.

use crate::fingerprint::fnv::{fnv1a64, step, BASIS};
use crate::fingerprint::vote::Tally;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

/// Where feature hashes go: the vote, or a list in tests. The order in which
/// hashes arrive is unspecified (the two halves of a long text interleave);
/// the vote does not depend on it.
pub(crate) trait Sink {
    fn add(&mut self, hashes: &[u64]);

    /// The vote, when the sink is one that may take the vector kernel's
    /// counts (an AVX2 CPU, no `RSIMHASH_PORTABLE`).
    #[cfg(target_arch = "x86_64")]
    fn wide(&mut self) -> Option<&mut Tally> {
        None
    }

    /// The list, when the sink is one the AVX-512 kernel may append its
    /// hashes to (an AVX-512 CPU, no `RSIMHASH_PORTABLE`).
    #[cfg(target_arch = "x86_64")]
    fn list(&mut self) -> Option<&mut Vec<u64>> {
        None
    }
}

impl Sink for Tally {
    #[inline]
    fn add(&mut self, hashes: &[u64]) {
        Tally::add(self, hashes);
    }

    #[cfg(target_arch = "x86_64")]
    fn wide(&mut self) -> Option<&mut Tally> {
        self.avx2().then_some(self)
    }
}

impl Sink for Vec<u64> {
    fn add(&mut self, hashes: &[u64]) {
        self.extend_from_slice(hashes);
    }

    #[cfg(target_arch = "x86_64")]
    fn list(&mut self) -> Option<&mut Vec<u64>> {
        avx512_kernel().then_some(self)
    }
}

/// Whether the AVX-512 kernel ([`avx512`]) may run: the CPU has AVX-512 F,
/// BW and DQ (and AVX2, which every such CPU has), no `RSIMHASH_PORTABLE`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512_kernel() -> bool {
    crate::cpu::x86_has!("avx2", "avx512f", "avx512bw", "avx512dq")
}

/// Below this many units a text is hashed as one stream: splitting it in two
/// costs more than it saves.
const SPLIT_MIN: usize = 64;
/// Bytes below which a text is not cut in four for the vector kernel.
#[cfg(target_arch = "x86_64")]
const WIDE_MIN: usize = 256;
/// Bytes below which a text is not cut in eight for the AVX-512 kernel.
#[cfg(target_arch = "x86_64")]
const WIDE8_MIN: usize = 512;
/// Bytes below which a text is not cut in sixteen (two AVX-512 registers).
#[cfg(target_arch = "x86_64")]
const WIDE16_MIN: usize = 2048;
/// Slots of a stream's ring of hashes.
const RING: usize = 256;
/// Bytes a stream takes between drains: at most one hash per byte, plus the
/// slot being written, must fit in the ring.
const BLOCK: usize = 128;

type Ring = [u64; RING];

/// Votes every word shingle of `width` tokens into `tally`. `stream` is every
/// token followed by one space; `count` is the token count.
pub(crate) fn words(stream: &[u8], count: usize, width: usize, tally: &mut impl Sink) {
    debug_assert!(width >= 1);
    if count == 0 {
        return;
    }
    if count < width {
        tally.add(&[fnv1a64(&stream[..stream.len() - 1])]);
        return;
    }
    match width {
        1 => run::<WordLanes<1>>(stream, count, tally),
        2 => run::<WordLanes<2>>(stream, count, tally),
        3 => run::<WordLanes<3>>(stream, count, tally),
        4 => run::<WordLanes<4>>(stream, count, tally),
        5 => run::<WordLanes<5>>(stream, count, tally),
        6 => run::<WordLanes<6>>(stream, count, tally),
        7 => run::<WordLanes<7>>(stream, count, tally),
        8 => run::<WordLanes<8>>(stream, count, tally),
        _ => tally.add(&words_wide(stream, width)),
    }
}

/// Votes every window of `width` code points of the normalized `text` into `tally`.
pub(crate) fn chars(text: &[u8], width: usize, tally: &mut impl Sink) {
    debug_assert!(width >= 1);
    let count = text.iter().filter(|&&b| is_lead(b)).count();
    if count == 0 {
        return;
    }
    if count < width {
        tally.add(&[fnv1a64(text)]);
        return;
    }
    match width {
        1 => run::<CharLanes<1>>(text, count, tally),
        2 => run::<CharLanes<2>>(text, count, tally),
        3 => run::<CharLanes<3>>(text, count, tally),
        4 => run::<CharLanes<4>>(text, count, tally),
        5 => run::<CharLanes<5>>(text, count, tally),
        6 => run::<CharLanes<6>>(text, count, tally),
        7 => run::<CharLanes<7>>(text, count, tally),
        8 => run::<CharLanes<8>>(text, count, tally),
        _ => tally.add(&chars_wide(text, width)),
    }
}

/// Every byte that is not a UTF-8 continuation byte starts a code point.
#[inline(always)]
fn is_lead(b: u8) -> bool {
    (b as i8) >= -0x40
}

/// The lanes of one stream of units, `W` shingles open at a time.
trait Lanes: Sized {
    /// Units per shingle.
    const W: usize;
    fn new() -> Self;
    /// Folds one byte in, writing `lanes[0]` to the ring slot of the next hash.
    fn feed(&mut self, b: u8, ring: &mut Ring);
    /// Called after the last byte.
    fn finish(&mut self, ring: &mut Ring);
    /// Hashes written so far, the `W - 1` junk ones included.
    fn written(&self) -> usize;
    /// Splits `units` in two halves to hash side by side: the second starts
    /// `W - 1` units before the cut, so that shingles crossing it are kept.
    fn split(units: &[u8], count: usize) -> Option<(&[u8], &[u8])>;
    /// Splits `units` in `N` parts the same way (each after the first
    /// starts `W - 1` units before its cut), or None when the cuts do not
    /// fall on `N` distinct units with `W - 1` units before each (for the
    /// vector kernels, so x86-64 only).
    #[cfg(target_arch = "x86_64")]
    fn split_n<const N: usize>(units: &[u8]) -> Option<[&[u8]; N]>;
    /// Hashes the first `steps` bytes of each part with the vector kernel
    /// of `N` parts ([`vector_lanes`]), voting the shingles completed there
    /// into `votes`; returns each part's lanes to go on from.
    ///
    /// # Safety
    /// As [`vector_lanes`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn wide<const N: usize>(parts: [&[u8]; N], steps: usize, votes: &mut avx2::Votes) -> [Self; N];
    /// As [`Self::wide`], appending the shingles' hashes to `list`
    /// ([`vector_emit`]).
    ///
    /// # Safety
    /// As [`vector_emit`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn emit<const N: usize>(parts: [&[u8]; N], steps: usize, list: &mut Vec<u64>) -> [Self; N];
}

/// The cuts of [`Lanes::split_n`]: `units` in `N` parts, each part after the
/// first starting `back` units before its cut. `cut(at)` is the first unit
/// boundary at or after byte `at` (where the next part's own units start),
/// `before(c)` the start of the unit that ends at boundary `c`.
#[cfg(target_arch = "x86_64")]
fn split_by<const N: usize>(units: &[u8], back: usize, cut: impl Fn(usize) -> Option<usize>, before: impl Fn(usize) -> Option<usize>) -> Option<[&[u8]; N]> {
    let len = units.len();
    let mut ends = [len; N];
    let mut starts = [0; N];
    let mut last = 0;
    for i in 1..N {
        let c = cut(len * i / N)?;
        if c <= last || c >= len {
            return None;
        }
        (ends[i - 1], last) = (c, c);
        let mut s = c;
        for _ in 0..back {
            s = before(s)?;
        }
        starts[i] = s;
    }
    Some(std::array::from_fn(|i| &units[starts[i]..ends[i]]))
}

/// One stream: its lanes, its ring and how much of the ring is voted.
struct Stream<L> {
    lanes: L,
    ring: Ring,
    drained: usize,
}

impl<L: Lanes> Stream<L> {
    fn new() -> Self {
        Stream { lanes: L::new(), ring: [0; RING], drained: 0 }
    }

    /// Votes the hashes written since the last drain, less the junk ones.
    fn drain(&mut self, tally: &mut impl Sink) {
        let written = self.lanes.written();
        let from = self.drained.max(L::W - 1);
        if from < written {
            let (start, end) = (from % RING, written % RING);
            if start < end {
                tally.add(&self.ring[start..end]);
            } else {
                tally.add(&self.ring[start..]);
                tally.add(&self.ring[..end]);
            }
        }
        self.drained = written;
    }
}

/// Runs the kernel over `units` (`count` of them, at least `L::W`) and votes
/// the `count - W + 1` shingle hashes.
#[inline(always)]
fn run<L: Lanes>(units: &[u8], count: usize, tally: &mut impl Sink) {
    #[cfg(target_arch = "x86_64")]
    if units.len() >= WIDE8_MIN && count >= SPLIT_MIN {
        if let Some(list) = tally.list() {
            if (units.len() >= WIDE16_MIN && emit_wide::<L, 16>(units, list)) || emit_wide::<L, 8>(units, list) {
                return;
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    if units.len() >= WIDE_MIN && count >= SPLIT_MIN {
        if let Some(tally) = tally.wide() {
            if tally.avx512() && units.len() >= WIDE16_MIN && run_wide::<L, 16>(units, tally) {
                return;
            }
            if tally.avx512() && units.len() >= WIDE8_MIN && run_wide::<L, 8>(units, tally) {
                return;
            }
            if run_wide::<L, 4>(units, tally) {
                return;
            }
        }
    }
    match (count >= SPLIT_MIN).then(|| L::split(units, count)).flatten() {
        Some((a, b)) => {
            let (mut sa, mut sb) = (Stream::<L>::new(), Stream::<L>::new());
            let n = a.len().min(b.len());
            for (ca, cb) in a[..n].chunks(BLOCK).zip(b[..n].chunks(BLOCK)) {
                for (&x, &y) in ca.iter().zip(cb) {
                    sa.lanes.feed(x, &mut sa.ring);
                    sb.lanes.feed(y, &mut sb.ring);
                }
                sa.drain(tally);
                sb.drain(tally);
            }
            for (stream, rest) in [(&mut sa, &a[n..]), (&mut sb, &b[n..])] {
                feed_all(stream, rest, tally);
            }
        }
        None => feed_all(&mut Stream::<L>::new(), units, tally),
    }
}

/// Runs a vector kernel of `N` parts over `units` into `sink` (`kernel`
/// gets the parts and the steps it must take, a multiple of the kernels'
/// block, and returns each part's lanes), then the scalar kernel over what
/// it leaves of each part; false (nothing given to `sink`) when `units`
/// cannot be cut so.
#[cfg(target_arch = "x86_64")]
fn run_parts<L: Lanes, S: Sink, const N: usize>(units: &[u8], sink: &mut S, kernel: impl FnOnce([&[u8]; N], usize, &mut S) -> [L; N]) -> bool {
    debug_assert_eq!(avx512::STEPS, avx2::STEPS);
    let Some(parts) = L::split_n::<N>(units) else {
        return false;
    };
    let steps = parts.iter().map(|p| p.len()).min().unwrap_or(0) / avx2::STEPS * avx2::STEPS;
    if steps == 0 {
        return false;
    }
    let lanes = kernel(parts, steps, sink);
    // One ring for the rests, one after another.
    let mut stream = Stream::<L>::new();
    for (lanes, part) in lanes.into_iter().zip(parts) {
        stream.drained = lanes.written();
        stream.lanes = lanes;
        feed_all(&mut stream, &part[steps..], sink);
    }
    true
}

/// [`run_parts`] voting: the vector kernel's counts go to `tally`, which
/// must allow the kernel (`Sink::wide`, and `Tally::avx512` for eight or
/// sixteen parts).
#[cfg(target_arch = "x86_64")]
fn run_wide<L: Lanes, const N: usize>(units: &[u8], tally: &mut Tally) -> bool {
    run_parts::<L, Tally, N>(units, tally, |parts, steps, tally| {
        let mut votes = avx2::Votes::default();
        // SAFETY: the caller checked the CPU for this kernel.
        let lanes = unsafe { L::wide(parts, steps, &mut votes) };
        tally.add_counts(&votes.totals, votes.n);
        lanes
    })
}

/// [`run_parts`] into a list: the AVX-512 kernel of `N` parts appends the
/// hashes of what it steps through to `list`. The CPU must have AVX-512 F,
/// BW and DQ.
#[cfg(target_arch = "x86_64")]
fn emit_wide<L: Lanes, const N: usize>(units: &[u8], list: &mut Vec<u64>) -> bool {
    // SAFETY: the caller checked the CPU for this kernel.
    run_parts::<L, Vec<u64>, N>(units, list, |parts, steps, list| unsafe { L::emit(parts, steps, list) })
}

/// The AVX-512 kernel of `N` parts (sixteen or eight) appending to `list`
/// the hashes of the first `steps` bytes of each part, the junk ones taken
/// out again (one occurrence of each: equal hashes are alike); returns each
/// part's lanes and boundaries seen.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and DQ.
#[cfg(target_arch = "x86_64")]
unsafe fn vector_emit<const W: usize, const CHARS: bool, const N: usize>(parts: [&[u8]; N], steps: usize, list: &mut Vec<u64>) -> ([[u64; W]; N], [u64; N]) {
    let start = list.len();
    let mut lanes = [[0u64; W]; N];
    if let Ok(sixteen) = <[&[u8]; 16]>::try_from(&parts[..]) {
        // SAFETY: the caller checked AVX-512.
        lanes.copy_from_slice(&unsafe { avx512::emit::<W, CHARS, 2, 16>(sixteen, steps, list) });
    } else {
        let eight = <[&[u8]; 8]>::try_from(&parts[..]).expect("sixteen or eight parts");
        // SAFETY: as above.
        lanes.copy_from_slice(&unsafe { avx512::emit::<W, CHARS, 1, 8>(eight, steps, list) });
    }
    // The junk hashes come from each part's first boundaries, so they are
    // found near the start.
    let seen = junk::<W, CHARS, N>(&parts, steps, |h| {
        let at = list[start..].iter().position(|&x| x == h).expect("every junk hash was appended");
        list.swap_remove(start + at);
    });
    (lanes, seen)
}

/// The vector kernel of `N` parts: AVX-512 for sixteen or eight
/// ([`avx512`]), AVX2 for four ([`avx2`]).
///
/// # Safety
/// The CPU must have AVX-512 F, BW and DQ for sixteen or eight parts, AVX2
/// for four.
#[cfg(target_arch = "x86_64")]
unsafe fn vector_lanes<const W: usize, const CHARS: bool, const N: usize>(
    parts: [&[u8]; N],
    steps: usize,
    votes: &mut avx2::Votes,
) -> ([[u64; W]; N], [u64; N]) {
    let (mut lanes, mut seen) = ([[0u64; W]; N], [0u64; N]);
    if let Ok(sixteen) = <[&[u8]; 16]>::try_from(&parts[..]) {
        // SAFETY: the caller checked AVX-512.
        let (l, s) = unsafe { avx512::lanes::<W, CHARS, 2, 16>(sixteen, steps, votes) };
        lanes.copy_from_slice(&l);
        seen.copy_from_slice(&s);
    } else if let Ok(eight) = <[&[u8]; 8]>::try_from(&parts[..]) {
        // SAFETY: as above.
        let (l, s) = unsafe { avx512::lanes::<W, CHARS, 1, 8>(eight, steps, votes) };
        lanes.copy_from_slice(&l);
        seen.copy_from_slice(&s);
    } else {
        let four = <[&[u8]; 4]>::try_from(&parts[..]).expect("four or eight parts");
        // SAFETY: the caller checked AVX2.
        let (l, s) = unsafe { avx2::lanes::<W, CHARS>(four, steps, votes) };
        lanes.copy_from_slice(&l);
        seen.copy_from_slice(&s);
    }
    (lanes, seen)
}

/// What the vector kernels leave of the vote after `steps` bytes of each
/// part: they vote every hash a boundary completes, so the junk ones (see
/// [`junk`]) are taken back from `votes`, and the hashes counted. Returns
/// each part's boundaries seen. Inlined into each kernel, which compiles it
/// for its own instructions.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn take_back_junk<const W: usize, const CHARS: bool, const N: usize>(parts: &[&[u8]; N], steps: usize, votes: &mut avx2::Votes) -> [u64; N] {
    let mut taken = 0;
    let seen = junk::<W, CHARS, N>(parts, steps, |h| {
        for (j, t) in votes.totals.iter_mut().enumerate() {
            *t -= ((h >> j) & 1) as u32;
        }
        taken += 1;
    });
    votes.n += seen.iter().sum::<u64>() - taken;
    seen
}

/// The boundaries in the first `steps` bytes of each part, and the junk
/// hashes there, each given to `take`: the first `W - 1` of a part in mode
/// `words`, `W` in `chars`, which come from lanes that began before its
/// first unit.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn junk<const W: usize, const CHARS: bool, const N: usize>(parts: &[&[u8]; N], steps: usize, mut take: impl FnMut(u64)) -> [u64; N] {
    let boundary = |b: u8| if CHARS { (b as i8) >= -0x40 } else { b == b' ' };
    let mut seen = [0u64; N];
    for (part, seen) in parts.iter().zip(&mut seen) {
        let done = &part[..steps];
        // Counted in bytes a chunk of 255 (a byte counter cannot overflow
        // there), which the compiler turns into byte compares and adds.
        *seen = done.chunks(255).map(|c| u64::from(c.iter().map(|&b| u8::from(boundary(b))).fold(0u8, u8::wrapping_add))).sum();
        // The first hashes of a part come from lanes that began before its
        // first unit: the text before each of its first boundaries (in mode
        // chars, from the first lead byte on, the empty text first).
        let junk = if CHARS { W } else { W - 1 }.min(*seen as usize);
        let mut h = BASIS;
        let mut taken = 0;
        for &b in done {
            if taken == junk {
                break;
            }
            if boundary(b) {
                take(h);
                taken += 1;
            }
            h = step(h, b);
        }
    }
    seen
}

/// Feeds the rest of one stream and finishes it.
fn feed_all<L: Lanes>(stream: &mut Stream<L>, units: &[u8], tally: &mut impl Sink) {
    for chunk in units.chunks(BLOCK) {
        for &x in chunk {
            stream.lanes.feed(x, &mut stream.ring);
        }
        stream.drain(tally);
    }
    stream.lanes.finish(&mut stream.ring);
    stream.drain(tally);
}

/// Lanes of mode `words` over a token stream (each token followed by a space).
/// At the space after a token, `lanes[0]` is the shingle that token completes.
struct WordLanes<const W: usize> {
    lanes: [u64; W],
    written: usize,
}

impl<const W: usize> Lanes for WordLanes<W> {
    const W: usize = W;

    #[inline(always)]
    fn new() -> Self {
        WordLanes { lanes: [BASIS; W], written: 0 }
    }

    #[inline(always)]
    fn feed(&mut self, b: u8, ring: &mut Ring) {
        let boundary = b == b' ';
        // Store unconditionally and advance only at a boundary: until then the
        // slot is overwritten.
        ring[self.written % RING] = self.lanes[0];
        self.written += usize::from(boundary);
        for i in 0..W - 1 {
            let src = if boundary { self.lanes[i + 1] } else { self.lanes[i] };
            self.lanes[i] = step(src, b);
        }
        self.lanes[W - 1] = if boundary { BASIS } else { step(self.lanes[W - 1], b) };
    }

    #[inline(always)]
    fn finish(&mut self, _ring: &mut Ring) {}

    #[inline(always)]
    fn written(&self) -> usize {
        self.written
    }

    fn split(stream: &[u8], count: usize) -> Option<(&[u8], &[u8])> {
        // The first half ends with the space after the token crossing the middle.
        let mid = stream.len() / 2;
        let cut = mid + stream[mid..].iter().position(|&b| b == b' ')?;
        let tokens_a = stream[..=cut].iter().filter(|&&b| b == b' ').count();
        if tokens_a < W || tokens_a >= count {
            return None;
        }
        // The second half starts at token tokens_a - (W - 1), just after the
        // space that ends token tokens_a - W.
        let mut space = cut;
        for _ in 0..W - 1 {
            space = stream[..space].iter().rposition(|&b| b == b' ')?;
        }
        Some((&stream[..=cut], &stream[space + 1..]))
    }

    #[cfg(target_arch = "x86_64")]
    fn split_n<const N: usize>(stream: &[u8]) -> Option<[&[u8]; N]> {
        // A part ends with the space after its last token; the next one
        // starts after the space W tokens before that.
        let cut = |at: usize| memchr::memchr(b' ', &stream[at..]).map(|p| at + p + 1);
        let before = |c: usize| Some(memchr::memrchr(b' ', &stream[..c.checked_sub(1)?]).map_or(0, |p| p + 1));
        split_by(stream, W - 1, cut, before)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn wide<const N: usize>(parts: [&[u8]; N], steps: usize, votes: &mut avx2::Votes) -> [Self; N] {
        // SAFETY: the caller checked the CPU.
        let (lanes, seen) = unsafe { vector_lanes::<W, false, N>(parts, steps, votes) };
        std::array::from_fn(|i| WordLanes { lanes: lanes[i], written: seen[i] as usize })
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn emit<const N: usize>(parts: [&[u8]; N], steps: usize, list: &mut Vec<u64>) -> [Self; N] {
        // SAFETY: the caller checked the CPU.
        let (lanes, seen) = unsafe { vector_emit::<W, false, N>(parts, steps, list) };
        std::array::from_fn(|i| WordLanes { lanes: lanes[i], written: seen[i] as usize })
    }
}

/// Lanes of mode `chars` over the normalized text. At the lead byte of a code
/// point, `lanes[0]` is the window the previous code point completes.
struct CharLanes<const W: usize> {
    lanes: [u64; W],
    /// Hashes written; the first lead byte writes nothing, hence -1 at start.
    written: usize,
}

impl<const W: usize> Lanes for CharLanes<W> {
    const W: usize = W;

    #[inline(always)]
    fn new() -> Self {
        CharLanes { lanes: [BASIS; W], written: usize::MAX }
    }

    #[inline(always)]
    fn feed(&mut self, b: u8, ring: &mut Ring) {
        let lead = is_lead(b);
        ring[self.written % RING] = self.lanes[0];
        self.written = self.written.wrapping_add(usize::from(lead));
        for i in 0..W - 1 {
            let src = if lead { self.lanes[i + 1] } else { self.lanes[i] };
            self.lanes[i] = step(src, b);
        }
        self.lanes[W - 1] = step(if lead { BASIS } else { self.lanes[W - 1] }, b);
    }

    #[inline(always)]
    fn finish(&mut self, ring: &mut Ring) {
        // The last window ends with the text.
        ring[self.written % RING] = self.lanes[0];
        self.written = self.written.wrapping_add(1);
    }

    #[inline(always)]
    fn written(&self) -> usize {
        // Before the first byte nothing is written (not -1).
        self.written.wrapping_add(1).saturating_sub(1)
    }

    fn split(text: &[u8], count: usize) -> Option<(&[u8], &[u8])> {
        // The first half ends before the code point starting at or after the middle.
        let mid = text.len() / 2;
        let cut = mid + text[mid..].iter().position(|&b| is_lead(b))?;
        let chars_a = text[..cut].iter().filter(|&&b| is_lead(b)).count();
        if chars_a < W || chars_a >= count {
            return None;
        }
        // The second half starts W - 1 code points before the cut.
        let mut b_start = cut;
        for _ in 0..W - 1 {
            b_start = text[..b_start].iter().rposition(|&b| is_lead(b))?;
        }
        Some((&text[..cut], &text[b_start..]))
    }

    #[cfg(target_arch = "x86_64")]
    fn split_n<const N: usize>(text: &[u8]) -> Option<[&[u8]; N]> {
        // A part ends before a code point; the next one starts W - 1 code
        // points before that.
        let cut = |at: usize| text[at..].iter().position(|&b| is_lead(b)).map(|p| at + p);
        let before = |c: usize| text[..c].iter().rposition(|&b| is_lead(b));
        split_by(text, W - 1, cut, before)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn wide<const N: usize>(parts: [&[u8]; N], steps: usize, votes: &mut avx2::Votes) -> [Self; N] {
        // SAFETY: the caller checked the CPU.
        let (lanes, seen) = unsafe { vector_lanes::<W, true, N>(parts, steps, votes) };
        // `written` counts lead bytes less one (the first completes nothing).
        std::array::from_fn(|i| CharLanes { lanes: lanes[i], written: (seen[i] as usize).wrapping_sub(1) })
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn emit<const N: usize>(parts: [&[u8]; N], steps: usize, list: &mut Vec<u64>) -> [Self; N] {
        // SAFETY: the caller checked the CPU.
        let (lanes, seen) = unsafe { vector_emit::<W, true, N>(parts, steps, list) };
        std::array::from_fn(|i| CharLanes { lanes: lanes[i], written: (seen[i] as usize).wrapping_sub(1) })
    }
}

/// Word shingles wider than the kernels: rare, hashed one by one.
fn words_wide(stream: &[u8], width: usize) -> Vec<u64> {
    let tokens: Vec<&[u8]> = stream.split(|&b| b == b' ').filter(|t| !t.is_empty()).collect();
    tokens
        .windows(width)
        .map(|window| {
            let mut h = BASIS;
            for (i, token) in window.iter().enumerate() {
                if i > 0 {
                    h = step(h, b' ');
                }
                h = token.iter().fold(h, |h, &b| step(h, b));
            }
            h
        })
        .collect()
}

/// Character windows wider than the kernels, hashed one by one.
fn chars_wide(text: &[u8], width: usize) -> Vec<u64> {
    let starts: Vec<usize> = (0..text.len()).filter(|&i| is_lead(text[i])).chain([text.len()]).collect();
    starts.windows(width + 1).map(|w| fnv1a64(&text[w[0]..w[width]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Shingles built the obvious way: join, then hash (sorted: the kernels
    /// deliver the same multiset in another order).
    fn naive(units: &[&str], width: usize, sep: &str) -> Vec<u64> {
        if units.is_empty() {
            return vec![];
        }
        if units.len() < width {
            return vec![fnv1a64(units.join(sep).as_bytes())];
        }
        let mut hashes: Vec<u64> = units.windows(width).map(|w| fnv1a64(w.join(sep).as_bytes())).collect();
        hashes.sort_unstable();
        hashes
    }

    /// A list the vector kernels never append to: the scalar kernels' list.
    struct Scalar(Vec<u64>);

    impl Sink for Scalar {
        fn add(&mut self, hashes: &[u64]) {
            self.0.extend_from_slice(hashes);
        }
    }

    fn words_of(tokens: &[&str], width: usize) -> Vec<u64> {
        let stream: String = tokens.iter().map(|t| format!("{t} ")).collect();
        let mut out = vec![];
        words(stream.as_bytes(), tokens.len(), width, &mut out);
        out.sort_unstable();
        let mut scalar = Scalar(vec![]);
        words(stream.as_bytes(), tokens.len(), width, &mut scalar);
        scalar.0.sort_unstable();
        assert_eq!(out, scalar.0, "the vector and scalar kernels' lists differ");
        out
    }

    fn chars_of(text: &str, width: usize) -> Vec<u64> {
        let mut out = vec![];
        chars(text.as_bytes(), width, &mut out);
        out.sort_unstable();
        let mut scalar = Scalar(vec![]);
        chars(text.as_bytes(), width, &mut scalar);
        scalar.0.sort_unstable();
        assert_eq!(out, scalar.0, "the vector and scalar kernels' lists differ");
        out
    }

    #[test]
    fn words_small() {
        assert_eq!(words_of(&["a", "b", "c"], 3), vec![fnv1a64(b"a b c")]);
        assert_eq!(words_of(&["a", "b"], 3), vec![fnv1a64(b"a b")]);
        assert_eq!(words_of(&[], 3), Vec::<u64>::new());
        assert_eq!(words_of(&["ab", "c", "de", "f"], 2), naive(&["ab", "c", "de", "f"], 2, " "));
        assert_eq!(chars_of("abcde", 4), naive(&["a", "b", "c", "d", "e"], 4, ""));
    }

    /// The vote of a text's shingles through the kernels into a tally (so
    /// the vector kernel runs where the CPU allows), against the vote of
    /// the naive shingles.
    ///
    /// Every kernel the CPU has is checked: AVX-512 (eight parts) where it
    /// is, and AVX2 (four parts) by a tally that refuses AVX-512's votes;
    /// the first vote is returned when they agree.
    fn voted(units: &[&str], width: usize, sep: &str) -> (u64, u64) {
        #[cfg(target_arch = "x86_64")]
        let tallies = [Tally::default(), Tally::without_avx512()];
        #[cfg(not(target_arch = "x86_64"))]
        let tallies = [Tally::default()];
        let mut got = Vec::new();
        let want = if sep.is_empty() {
            // Mode chars: the units are the code points of the text.
            let text = units.concat();
            for mut tally in tallies {
                chars(text.as_bytes(), width, &mut tally);
                got.push(tally.finish());
            }
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let points: Vec<&str> = owned.iter().map(String::as_str).collect();
            crate::fingerprint::vote::compute(&naive(&points, width, ""))
        } else {
            let stream: String = units.iter().map(|t| format!("{t} ")).collect();
            for mut tally in tallies {
                words(stream.as_bytes(), units.len(), width, &mut tally);
                got.push(tally.finish());
            }
            crate::fingerprint::vote::compute(&naive(units, width, sep))
        };
        assert!(got.windows(2).all(|w| w[0] == w[1]), "the kernels disagree: {got:x?}");
        (got[0], want)
    }

    #[test]
    fn wide_kernel_edges() {
        // Parts whose vector steps end inside a token, on a boundary, and
        // texts just long enough to be cut in four.
        for n in [64, 65, 70, 100, 129, 257, 1000, 3000] {
            for len in [1, 2, 3, 7, 15, 16, 17] {
                let tokens: Vec<String> = (0..n).map(|i| "abcdefghijklmnopq"[..1 + (i * 7 + len) % len].to_owned() + &i.to_string()).collect();
                let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
                for width in 1..=9 {
                    let (got, want) = voted(&refs, width, " ");
                    assert_eq!(got, want, "words n={n} len={len} width={width}");
                    // The lists of the same kernels (shingle sets).
                    assert_eq!(words_of(&refs, width), naive(&refs, width, " "), "listed words n={n} len={len} width={width}");
                    let text = refs.concat();
                    let owned: Vec<String> = text.chars().map(String::from).collect();
                    let points: Vec<&str> = owned.iter().map(String::as_str).collect();
                    assert_eq!(chars_of(&text, width), naive(&points, width, ""), "listed chars n={n} len={len} width={width}");
                    let (got, want) = voted(&refs, width, "");
                    assert_eq!(got, want, "chars n={n} len={len} width={width}");
                    let spaced = refs.join(" ");
                    let (got, want) = voted(&[spaced.as_str()], width, "");
                    assert_eq!(got, want, "spaced chars n={n} len={len} width={width}");
                }
            }
        }
    }

    /// Texts the parts cannot be cut from evenly: one huge token among a
    /// few small ones (cuts fall on the same unit), texts a byte either
    /// side of the sizes where eight and sixteen parts begin, and one code
    /// point repeated.
    #[test]
    fn wide_kernel_odd_texts() {
        let huge = "x".repeat(5000);
        let mut cases: Vec<Vec<String>> = vec![
            [vec![huge.clone()], (0..80).map(|i| i.to_string()).collect()].concat(),
            [(0..80).map(|i| i.to_string()).collect(), vec![huge.clone()]].concat(),
            (0..3).map(|_| huge.clone()).collect(),
            vec!["é".repeat(3000)],
        ];
        for bytes in [WIDE8_MIN - 1, WIDE8_MIN, WIDE8_MIN + 1, WIDE16_MIN - 1, WIDE16_MIN, WIDE16_MIN + 1] {
            // Tokens of four digits and a space, and one more to reach about `bytes`.
            let mut tokens: Vec<String> = (0..bytes / 5).map(|i| format!("{:04}", i % 10_000)).collect();
            let rest = bytes - 5 * tokens.len();
            if rest > 0 {
                tokens.push("y".repeat(rest - 1).chars().chain(['z']).collect());
            }
            cases.push(tokens);
        }
        for tokens in &cases {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            for width in [1, 3, 4, 8] {
                let (got, want) = voted(&refs, width, " ");
                assert_eq!(got, want, "words width={width} tokens={}", refs.len());
                assert_eq!(words_of(&refs, width), naive(&refs, width, " "));
                let text = refs.join(" ");
                let owned: Vec<String> = text.chars().map(String::from).collect();
                let points: Vec<&str> = owned.iter().map(String::as_str).collect();
                let (got, want) = voted(&points, width, "");
                assert_eq!(got, want, "chars width={width} bytes={}", text.len());
                assert_eq!(chars_of(&text, width), naive(&points, width, ""));
            }
        }
    }

    proptest! {
        #[test]
        fn wide_words_vote_as_naive(tokens in prop::collection::vec("[a-zé漢]{1,12}", 40..700), width in 1usize..10) {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            let (got, want) = voted(&refs, width, " ");
            prop_assert_eq!(got, want);
        }

        #[test]
        fn wide_chars_vote_as_naive(text in "[a-z é漢😀]{200,1500}", width in 1usize..10) {
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let units: Vec<&str> = owned.iter().map(String::as_str).collect();
            let (got, want) = voted(&units, width, "");
            prop_assert_eq!(got, want);
        }

        #[test]
        fn words_match_naive(tokens in prop::collection::vec("[a-zé漢]{1,6}", 0..40), width in 1usize..12) {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            prop_assert_eq!(words_of(&refs, width), naive(&refs, width, " "));
        }

        #[test]
        fn long_words_match_naive(tokens in prop::collection::vec("[a-zé]{1,9}", 60..900), width in 1usize..10) {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            prop_assert_eq!(words_of(&refs, width), naive(&refs, width, " "));
        }

        #[test]
        fn long_chars_match_naive(text in "[a-z é漢😀]{60,900}", width in 1usize..10) {
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let units: Vec<&str> = owned.iter().map(String::as_str).collect();
            prop_assert_eq!(chars_of(&text, width), naive(&units, width, ""));
        }

        #[test]
        fn chars_match_naive(text in "[a-z é漢😀]{0,40}", width in 1usize..12) {
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let units: Vec<&str> = owned.iter().map(String::as_str).collect();
            prop_assert_eq!(chars_of(&text, width), naive(&units, width, ""));
        }
    }
}
