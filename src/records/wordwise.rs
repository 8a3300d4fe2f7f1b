//! The usual line of a fingerprint file read eight bytes at a time.
//!
//! A simhash is a uniform u64, so nearly every hash is 19 or 20 digits
//! long, about half and half. Read a byte at a time, the loop's exit falls
//! on one length or the other at random, a branch no CPU can predict, and
//! each digit adds a multiply-add to one chain. Here the length comes from
//! a mask of the bytes that are not digits, and the value from three
//! groups of eight digits, each combined in three multiplies
//! (<https://lemire.me/blog/2022/01/21/swar-explained-parsing-eight-digits/>).
//!
//! Each reader takes only what it reads exactly: anything else (short
//! hashes, lines near either end of the slice, `\r`, spaces, long ids)
//! gives None, and the caller reads the line byte by byte as before.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `at`, the first the lowest.
#[inline]
fn word(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().expect("eight bytes"))
}

/// The high bit of each byte of `w` that is not an ASCII digit. Exact up to
/// the lowest such byte: a carry only leaves a byte that is flagged.
#[inline]
fn non_digits(w: u64) -> u64 {
    let d = w ^ (0x30 * ONES); // a digit is now 0..=9
    (d.wrapping_add(0x76 * ONES) | d) & HIGHS
}

/// The high bit of each byte of `w` equal to `b`, exact up to the lowest
/// (a borrow only leaves a byte that is equal).
#[inline]
fn bytes_equal(w: u64, b: u8) -> u64 {
    let x = w ^ (u64::from(b) * ONES);
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The value of eight ASCII digits, the first the most significant.
#[inline]
fn eight_digits(w: u64) -> u64 {
    const EVEN: u64 = 0x0000_00FF_0000_00FF; // bytes 0 and 4
    let d = w - 0x30 * ONES;
    // Byte 2i is now the pair 10 d(2i) + d(2i + 1), p(i).
    let pairs = d.wrapping_mul(10).wrapping_add(d >> 8);
    // p0 10^6 + p1 10^4 + p2 10^2 + p3 in the high half.
    let sum = (pairs & EVEN).wrapping_mul(100 + (1_000_000 << 32)).wrapping_add(((pairs >> 16) & EVEN).wrapping_mul(1 + (10_000 << 32)));
    sum >> 32
}

/// The hash at `at`, 16 to 23 ASCII digits (leading zeros past 20) then
/// `\n`: `(value, where the `\n` is)`. None for anything else, for a
/// value past `u64::MAX`, and where the 24 bytes from `at`, or the 24
/// before the `\n`, are not all in `data`.
#[inline]
pub(crate) fn hash_at(data: &[u8], at: usize) -> Option<(u64, usize)> {
    if at + 24 > data.len() {
        return None;
    }
    let flags = [non_digits(word(data, at)), non_digits(word(data, at + 8)), non_digits(word(data, at + 16))];
    // Digits fill the first two words: the length is in the third.
    if flags[0] | flags[1] != 0 || flags[2] == 0 {
        return None;
    }
    let n = 16 + (flags[2].trailing_zeros() / 8) as usize;
    let end = at + n;
    if end < 24 || data[end] != b'\n' {
        return None;
    }
    let low = eight_digits(word(data, end - 8));
    let middle = eight_digits(word(data, end - 16));
    // The first n - 16 digits, the bytes before `at` in the word read as '0'.
    let before = 8 * (24 - n) as u32;
    let keep = u64::MAX.checked_shl(before).unwrap_or(0);
    let high = eight_digits((word(data, end - 24) & keep) | ((0x30 * ONES) & !keep));
    high.checked_mul(10_000_000_000_000_000)?.checked_add(middle * 100_000_000 + low).map(|v| (v, end))
}

/// Where the tab after the id at `at` is, when the id is ASCII without a
/// `\n` or `\r` and the tab is within the words that lie whole in `data`.
#[inline]
pub(crate) fn tab_after_id(data: &[u8], at: usize) -> Option<usize> {
    let mut i = at;
    while i + 8 <= data.len() {
        let w = word(data, i);
        let flags = bytes_equal(w, b'\t') | bytes_equal(w, b'\n') | bytes_equal(w, b'\r') | (w & HIGHS);
        if flags != 0 {
            let stop = i + (flags.trailing_zeros() / 8) as usize;
            return (data[stop] == b'\t').then_some(stop);
        }
        i += 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte by byte, as the readers before these did: 1 to 20 digits then
    /// `\n`, no overflow.
    fn bytewise(data: &[u8], at: usize) -> Option<(u64, usize)> {
        let n = data[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || data.get(at + n) != Some(&b'\n') {
            return None;
        }
        std::str::from_utf8(&data[at..at + n]).ok()?.parse::<u64>().ok().map(|v| (v, at + n))
    }

    #[test]
    fn eight_digits_of_each_place() {
        for v in [0u64, 1, 9, 10, 99_999_999, 12_345_678, 10_000_000, 90_000_009] {
            let w = u64::from_le_bytes(format!("{v:08}").as_bytes().try_into().unwrap());
            assert_eq!(eight_digits(w), v);
        }
        for place in 0..8 {
            for d in 0..10u64 {
                let mut text = *b"00000000";
                text[place] = b'0' + d as u8;
                assert_eq!(eight_digits(u64::from_le_bytes(text)), d * 10u64.pow(7 - place as u32));
            }
        }
    }

    /// Every length, with text before and after, around 2^64, and every
    /// byte value at every place: the value the bytewise reader gives, or
    /// None where that gives one too or the line is not 16 to 20 digits.
    #[test]
    fn hashes_as_bytewise() {
        let mut hashes: Vec<String> = Vec::new();
        for n in 1..=23 {
            hashes.push("9".repeat(n));
            hashes.push(format!("1{}", "0".repeat(n - 1)));
            hashes.push("0".repeat(n));
        }
        for v in [u64::MAX, u64::MAX - 1, 10u64.pow(19), 10u64.pow(19) - 1, 10u64.pow(15), 1 << 63] {
            hashes.push(v.to_string());
            hashes.push(format!("0{v}"));
        }
        hashes.extend(["18446744073709551616", "18446744073709551625", "99999999999999999999", "20000000000000000000"].map(String::from));
        let mut next = crate::testing::xorshift(7);
        for _ in 0..2000 {
            let v = next();
            hashes.push((v >> (v % 64)).to_string());
        }
        for hash in &hashes {
            for before in [0, 3, 8, 24, 31] {
                let text = format!("{}{hash}\n{}", "x".repeat(before), "y".repeat(30));
                let data = text.as_bytes();
                let got = hash_at(data, before);
                if (16..=20).contains(&hash.len()) && before + hash.len() >= 24 {
                    assert_eq!(got, bytewise(data, before), "{text:?}");
                } else {
                    assert!(got.is_none() || got == bytewise(data, before), "{text:?}");
                }
                // Cut short: never reads past the slice, never a wrong value.
                for cut in before..data.len() {
                    let got = hash_at(&data[..cut], before);
                    assert!(got.is_none() || got == bytewise(&data[..cut], before), "{text:?} cut at {cut}");
                }
            }
        }
        let base = b"xxxxxxxxxxxxxxxxxxxxxxxx12345678901234567890\nyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy".to_vec();
        for place in 24..46 {
            for b in 0..=255u8 {
                let mut data = base.clone();
                data[place] = b;
                let got = hash_at(&data, 24);
                assert!(got.is_none() || got == bytewise(&data, 24), "{b} at {place}");
                if b.is_ascii_digit() && place < 44 {
                    assert_eq!(got, bytewise(&data, 24), "{b} at {place}");
                }
            }
        }
    }

    #[test]
    fn tabs_after_ids() {
        let line = |id: &[u8]| [id, b"\t1\n", &[b'z'; 16]].concat();
        for n in 0..40 {
            let id = vec![b'a'; n];
            let data = line(&id);
            assert_eq!(tab_after_id(&data, 0), Some(n), "{n}");
            for cut in 0..data.len() {
                let got = tab_after_id(&data[..cut], 0);
                assert!(got.is_none() || (got == Some(n) && n < cut), "{n} cut at {cut}");
            }
            for bad in [b'\n', b'\r', 0x80, 0xc3, 0xff] {
                for place in 0..n {
                    let mut id = id.clone();
                    id[place] = bad;
                    assert_eq!(tab_after_id(&line(&id), 0), None, "{bad} at {place} of {n}");
                }
            }
        }
        for b in (0..=255u8).filter(|b| !matches!(b, b'\t' | b'\n' | b'\r') && b.is_ascii()) {
            let data = line(&[b; 9]);
            assert_eq!(tab_after_id(&data, 0), Some(9), "{b}");
        }
    }
}
