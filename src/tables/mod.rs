//! The permuted tables of Manku, Jain and Das Sarma and everything that
//! makes, stores and searches them: the design of the tables ([`plan`]),
//! a table in memory ([`table`]) or packed ([`packed`], coded by
//! `codec`), the radix sort that builds them (`radix`) and a segment of
//! an index holding one of each per table (`run`).
//!
//! A pair is reported by the first table whose prefix it shares
//! ([`plan::Design::reported`]); [`plan::Design::group_pairs`] gives the
//! pairs of a group of keys that a table reports. The index, the batch
//! kernel and the distributed keys all ask these two, so that each pair is
//! found once, by the same table, whichever path finds it.
//!
//! This layer imports none of the jobs above it (index, batch, similar,
//! distributed): only the bottom layer's memory and CPU helpers.

pub(crate) mod codec;
pub(crate) mod packed;
pub mod plan;
pub(crate) mod radix;
pub(crate) mod run;
pub(crate) mod table;
