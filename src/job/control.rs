//! What a caller sees of a running batch job and how it stops one: a cancel
//! flag that the job checks between chunks, and progress counters that the
//! caller reads from another thread (the Python layer draws them as
//! progress bars on its own thread, which also catches Ctrl-C).
//!
//! Invariant: a job's total, once the job has begun, never changes, and
//! its done count only grows. A job states its work in its own units
//! ([`Control::begin`]); its steps each take a share of it, each counted in
//! units of its own (a table worked in parts counts the reads of its parts,
//! shown to the caller as the table's fingerprints); a job run inside a
//! step of another ([`Control::nest`]) fills that step's share, whatever
//! its own units.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::{Error, Result};

/// Shared between a job and its caller.
#[derive(Debug, Default)]
pub struct Control {
    cancelled: AtomicBool,
    /// Units done in the step under way (its own units).
    done: AtomicU64,
    state: Mutex<State>,
    notices: Mutex<Vec<String>>,
    /// Tests: cancel as a step whose name starts with this begins (a
    /// thread watching the progress may see the step only after the job
    /// has finished, on a loaded machine).
    #[cfg(test)]
    pub(crate) cancel_at_step: std::sync::OnceLock<String>,
}

#[derive(Debug, Default)]
struct State {
    /// The outermost job's total, as the caller sees it.
    total: u64,
    /// The jobs under way, outermost first.
    frames: Vec<Frame>,
    step: String,
}

/// A job under way: where it sits in the outermost job, and its step.
#[derive(Debug, Clone, Copy, Default)]
struct Frame {
    /// Where the job starts, and how much of it it covers, in the
    /// outermost job's units.
    base: f64,
    span: f64,
    /// The job's own total (0 until it has begun).
    units: u64,
    /// Units of the job in the steps before this one; the step's share of
    /// the job; the step's own units; the step's size as shown.
    before: u64,
    share: u64,
    step_units: u64,
    shown: u64,
    /// Whether the job has begun (a nested job's frame waits for it).
    begun: bool,
}

impl Frame {
    /// The step's part done, 0 to 1.
    fn fraction(&self, done: u64) -> f64 {
        if self.step_units == 0 {
            0.0
        } else {
            done.min(self.step_units) as f64 / self.step_units as f64
        }
    }

    /// Where the step under way ends, in the outermost job's units.
    fn end(&self) -> f64 {
        self.own_at(self.before as f64 + self.share as f64)
    }

    fn own_at(&self, own: f64) -> f64 {
        if self.units == 0 {
            return self.base;
        }
        self.base + own.min(self.units as f64) * self.span / self.units as f64
    }

    /// The outermost job's units done, with `done` units of the step.
    fn at(&self, done: u64) -> f64 {
        self.own_at(self.before as f64 + self.fraction(done) * self.share as f64)
    }
}

/// A reading of the progress counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Work done and to do over the whole job; the total is set when the
    /// job begins and does not change (a batch job's is its fingerprints
    /// times its passes: one to read them, one per table).
    pub done: u64,
    pub total: u64,
    /// The step under way ("table 3 of 10") and its size in items
    /// (fingerprints, texts, pairs: the step's name says which).
    pub step: String,
    pub step_done: u64,
    pub step_total: u64,
}

/// Ends a job nested in a step of another ([`Control::nest`]) when dropped:
/// the step is then done.
pub(crate) struct Nested<'a> {
    control: &'a Control,
    pushed: bool,
    /// The enclosing step's name, shown again once the nested job ends.
    step: String,
}

impl Drop for Nested<'_> {
    fn drop(&mut self) {
        if !self.pushed {
            return;
        }
        let mut s = self.control.state();
        s.frames.pop();
        s.step = std::mem::take(&mut self.step);
        let step_units = s.frames.last().map_or(0, |f| f.step_units);
        self.control.done.store(step_units, Ordering::Relaxed);
    }
}

impl Control {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the job to stop at its next check; it then returns
    /// [`Error::Interrupted`].
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// [`Error::Interrupted`] once cancelled.
    pub fn check(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }

    pub fn progress(&self) -> Progress {
        let s = self.state();
        let done = self.done.load(Ordering::Relaxed);
        match s.frames.last() {
            None => Progress { done: 0, total: s.total, step: s.step.clone(), step_done: 0, step_total: 0 },
            Some(f) => Progress {
                done: (f.at(done).round() as u64).min(s.total),
                total: s.total,
                step: s.step.clone(),
                step_done: (f.fraction(done) * f.shown as f64).round() as u64,
                step_total: f.shown,
            },
        }
    }

    /// Begins a job of `units` of its own: the whole job the caller sees,
    /// or, nested in a step of another ([`Control::nest`]), that step's
    /// share. A job begun again where one has begun starts over (a caller
    /// running two jobs on one control).
    pub(crate) fn begin(&self, units: u64) {
        let mut s = self.state();
        match s.frames.last_mut() {
            Some(f) if !f.begun => {
                f.begun = true;
                f.units = units;
            }
            _ => {
                s.frames = vec![Frame { span: units as f64, units, begun: true, ..Frame::default() }];
                s.total = units;
            }
        }
        self.done.store(0, Ordering::Relaxed);
    }

    /// Runs a job nested in the step under way: the job's [`Control::begin`]
    /// maps its own units onto the step's share. Outside any job, the
    /// nested job is the job.
    pub(crate) fn nest(&self) -> Nested<'_> {
        let mut s = self.state();
        let Some(f) = s.frames.last().copied() else {
            return Nested { control: self, pushed: false, step: String::new() };
        };
        let start = f.at(self.done.load(Ordering::Relaxed));
        let end = f.end();
        s.frames.push(Frame { base: start, span: (end - start).max(0.0), begun: false, ..Frame::default() });
        self.done.store(0, Ordering::Relaxed);
        Nested { control: self, pushed: true, step: s.step.clone() }
    }

    /// Starts a step of the job that takes `share` of its units, worked
    /// in `units` of its own and shown to the caller as `shown` items.
    /// The step before it is then done.
    pub(crate) fn step_of(&self, name: String, share: u64, units: u64, shown: u64) {
        #[cfg(test)]
        if self.cancel_at_step.get().is_some_and(|at| name.starts_with(at.as_str())) {
            self.cancel();
        }
        let mut s = self.state();
        if let Some(f) = s.frames.last_mut() {
            f.before = f.before.saturating_add(f.share);
            f.share = share;
            f.step_units = units;
            f.shown = shown;
        }
        s.step = name;
        self.done.store(0, Ordering::Relaxed);
    }

    /// Starts a step of `n` units of the job, one a unit of its work.
    pub(crate) fn step(&self, name: String, n: u64) {
        self.step_of(name, n, n, n);
    }

    /// Starts a step outside the job's total (writing its answer out),
    /// shown as `n` items.
    pub(crate) fn side_step(&self, name: String, n: u64) {
        self.step_of(name, 0, n, n);
    }

    /// A step of `share` units finished by an earlier run (a resumed job).
    pub(crate) fn skip(&self, name: String, share: u64) {
        self.step_of(name, share, 1, share);
        self.done.store(1, Ordering::Relaxed);
    }

    /// Marks the whole job done (it has returned): the caller's last
    /// reading then has `done == total`.
    pub fn finish(&self) {
        let mut s = self.state();
        s.frames.truncate(1);
        if let Some(f) = s.frames.last_mut() {
            f.before = f.units;
            f.share = 0;
        }
    }

    /// Counts `n` units of the step done.
    pub(crate) fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Leaves a message for the caller (Python shows it as a warning as the
    /// job runs): something the caller did not ask for and may not want.
    pub(crate) fn notice(&self, message: String) {
        self.notices.lock().unwrap_or_else(|e| e.into_inner()).push(message);
    }

    /// The notices left since the last call.
    pub fn notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every reading of a job: the total never changes once begun, done
    /// only grows and stays within it.
    pub(crate) fn check(readings: &[Progress]) {
        for w in readings.windows(2) {
            assert_eq!(w[0].total, w[1].total, "{readings:?}");
            assert!(w[0].done <= w[1].done, "{readings:?}");
        }
        assert!(readings.iter().all(|p| p.done <= p.total && p.step_done <= p.step_total));
    }

    #[test]
    fn steps_share_one_total() {
        let c = Control::default();
        let mut seen = Vec::new();
        c.begin(30);
        c.step("reading".into(), 10);
        seen.push(c.progress());
        c.advance(4);
        seen.push(c.progress());
        assert_eq!((seen[1].done, seen[1].step_done, seen[1].step_total), (4, 4, 10));
        c.advance(6);
        // A step worked in 40 units of its own, worth 10 of the job, shown as 5 items.
        c.step_of("table 1 of 2, part 1 of 2".into(), 10, 40, 5);
        c.advance(20);
        seen.push(c.progress());
        assert_eq!((seen[2].done, seen[2].step_done, seen[2].step_total), (15, 3, 5));
        c.advance(1000); // more than the step's units: the step is full, no more
        seen.push(c.progress());
        assert_eq!(seen[3].done, 20);
        c.skip("table 2 of 2 (done before)".into(), 10);
        seen.push(c.progress());
        assert_eq!(seen[4].done, 30);
        c.side_step("writing the pairs".into(), 7);
        c.advance(3);
        seen.push(c.progress());
        assert_eq!((seen[5].done, seen[5].step_done, seen[5].step_total), (30, 3, 7));
        check(&seen);
    }

    #[test]
    fn a_nested_job_fills_its_step() {
        let c = Control::default();
        let mut seen = Vec::new();
        c.begin(200);
        c.step("fingerprints".into(), 100);
        c.advance(100);
        c.step("candidates".into(), 100);
        seen.push(c.progress());
        {
            let _nested = c.nest();
            c.begin(1_000_000); // the inner job's own units
            c.step("reading".into(), 500_000);
            c.advance(250_000);
            seen.push(c.progress());
            assert_eq!((seen[1].done, seen[1].step.as_str(), seen[1].step_total), (125, "reading", 500_000));
            c.advance(250_000);
            c.step("table 1 of 1".into(), 500_000);
            c.advance(500_000);
            seen.push(c.progress());
        }
        seen.push(c.progress());
        assert_eq!((seen[3].done, seen[3].step.as_str()), (200, "candidates"));
        c.finish();
        seen.push(c.progress());
        check(&seen);
        assert_eq!(seen.last().unwrap().done, 200);
    }

    #[test]
    fn nesting_outside_a_job_is_the_job() {
        let c = Control::default();
        {
            let _nested = c.nest();
            c.begin(10);
            c.step("a".into(), 10);
            c.advance(5);
            assert_eq!((c.progress().done, c.progress().total), (5, 10));
        }
        c.finish();
        assert_eq!((c.progress().done, c.progress().total), (10, 10));
    }
}
