//! The lockstep loop of [`super::decode_rows`] in x86-64 assembly (BMI1 and
//! BMI2): six lanes, each a bit position in a register, thirteen registers
//! in all. One step of a lane, with `{a}`, `{b}`, `{c}` scratch:
//!
//! ```text
//! bits  = load8(data + pos / 8) >> pos % 8
//! entry = table[bits % 1024 or 4096]        // [len, h, len + h, wide]
//! low   = bextr(bits, entry)                 // h bits from bit len; wide: see `wide!`
//! key   = (prev | below[h]) + 1 + low        // prev: the row's slot before
//! pos  += len + h
//! ```

use super::{Table, LANES, STRIDE, TABLE_SIZE};

const _: () = assert!(TABLE_SIZE == 0x1000 && LANES == 6);

/// One lane's step: the key after the one at `{out} + {oN} - 8`, at bit
/// `{pN}`, stored at `{out} + {oN}`; `mask` cuts the bits to the part of the
/// table read. Wide entries (the sign bit set) branch to `3N` and come back
/// to `4N` with the low bits in `{c}` and the entry's index in `{a}`.
macro_rules! step {
    ($mask:literal $n:literal) => {
        concat!(
            "mov {a}, {p",
            $n,
            "}\n",
            "shr {a}, 3\n",
            "mov {b}, {p",
            $n,
            "}\n",
            "and {b:e}, 7\n",
            "shrx {c}, qword ptr [{d} + {a}], {b}\n",
            "mov {a:e}, {c:e}\n",
            "and {a:e}, ",
            $mask,
            "\n",
            "mov {b:e}, dword ptr [{t} + 4*{a}]\n",
            "test {b:e}, {b:e}\n",
            "js 3",
            $n,
            "f\n",
            // Start (bits 0-7) `len`, length (bits 8-15) `h`.
            "bextr {c}, {c}, {b}\n",
            "4",
            $n,
            ":\n",
            "movzx {b:e}, byte ptr [{t} + 4*{a} + 2]\n",
            "add {p",
            $n,
            "}, {b}\n",
            "movzx {b:e}, byte ptr [{t} + 4*{a} + 1]\n",
            "mov {b}, qword ptr [{t} + 8*{b} + {below}]\n",
            "or {b}, qword ptr [{out} + {o",
            $n,
            "} - 8]\n",
            "lea {b}, [{b} + {c} + 1]\n",
            "mov qword ptr [{out} + {o",
            $n,
            "}], {b}\n",
        )
    };
}

/// The wide path of lane `N`: the low bits reach past the 57 bits of `{c}`
/// into the next 8 bytes. Rare in large tables, so out of the loop's way;
/// it recomputes what it has no register for.
macro_rules! wide {
    ($mask:literal $n:literal) => {
        concat!(
            "3",
            $n,
            ":\n",
            "movzx {b:e}, byte ptr [{t} + 4*{a}]\n",
            "shrx {c}, {c}, {b}\n",
            // The next word, shifted left by 64 - (len + pos % 8).
            "mov {a}, {p",
            $n,
            "}\n",
            "and {a:e}, 7\n",
            "add {a:e}, {b:e}\n",
            "neg {a:e}\n",
            "mov {b}, {p",
            $n,
            "}\n",
            "shr {b}, 3\n",
            "shlx {a}, qword ptr [{d} + {b} + 8], {a}\n",
            "or {c}, {a}\n",
            // The entry's index again, and h.
            "mov {a}, {p",
            $n,
            "}\n",
            "shr {a}, 3\n",
            "mov {b}, {p",
            $n,
            "}\n",
            "and {b:e}, 7\n",
            "shrx {a}, qword ptr [{d} + {a}], {b}\n",
            "and {a:e}, ",
            $mask,
            "\n",
            "movzx {b:e}, byte ptr [{t} + 4*{a} + 1]\n",
            "bzhi {c}, {c}, {b}\n",
            "jmp 4",
            $n,
            "b\n",
        )
    };
}

/// `part` for every lane, one after the other.
macro_rules! each_lane {
    ($part:ident $mask:literal) => {
        concat!($part!($mask "0"), $part!($mask "1"), $part!($mask "2"), $part!($mask "3"), $part!($mask "4"), $part!($mask "5"))
    };
}

macro_rules! lockstep {
    ($(#[$doc:meta])* $name:ident, $mask:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The CPU has BMI1 and BMI2; `steps >= 1`; `table` points to a [`Table`];
        /// every load (16 bytes from the byte of
        /// each position reached) lies in the data `data` points into; lane
        /// `l` stores to `out + l * STRIDE + i` for `i` in `0..steps`, slots
        /// of the rows `out` points into, and reads the slot before.
        #[target_feature(enable = "bmi1,bmi2")]
        pub unsafe fn $name(data: *const u8, table: *const Table, out: *mut u64, steps: usize, pos: &mut [usize; LANES]) {
            debug_assert!(steps >= 1);
            let end = out.add(steps);
            let [mut p0, mut p1, mut p2, mut p3, mut p4, mut p5] = *pos;
            std::arch::asm!(
                "2:",
                each_lane!(step $mask),
                "add {out}, 8",
                "cmp {out}, {end}",
                "jb 2b",
                "jmp 5f",
                each_lane!(wide $mask),
                "5:",
                d = in(reg) data,
                t = in(reg) table,
                out = inout(reg) out => _,
                end = in(reg) end,
                p0 = inout(reg) p0,
                p1 = inout(reg) p1,
                p2 = inout(reg) p2,
                p3 = inout(reg) p3,
                p4 = inout(reg) p4,
                p5 = inout(reg) p5,
                a = out(reg) _,
                b = out(reg) _,
                c = out(reg) _,
                below = const std::mem::offset_of!(Table, below),
                o0 = const 0,
                o1 = const STRIDE * 8,
                o2 = const STRIDE * 16,
                o3 = const STRIDE * 24,
                o4 = const STRIDE * 32,
                o5 = const STRIDE * 40,
                options(nostack),
            );
            *pos = [p0, p1, p2, p3, p4, p5];
        }
    };
}

lockstep!(
    /// `steps` keys of each lane, for tables whose codes take at most 10
    /// bits, as the encoder makes them: the part of the table read is then
    /// 4 KiB, a quarter of it.
    short,
    "0x3ff"
);
lockstep!(
    /// `steps` keys of each lane, for any table.
    any,
    "0xfff"
);
