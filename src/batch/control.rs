//! What a caller sees of a running batch job and how it stops one: a cancel
//! flag that the job checks between chunks, and progress counters that the
//! caller reads from another thread (the Python layer draws them as
//! progress bars on its own thread, which also catches Ctrl-C).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::{Error, Result};

/// Shared between a job and its caller.
#[derive(Debug, Default)]
pub struct Control {
    cancelled: AtomicBool,
    done: AtomicU64,
    total: AtomicU64,
    step_done: AtomicU64,
    step_total: AtomicU64,
    step: Mutex<String>,
    notices: Mutex<Vec<String>>,
    /// Tests: cancel as a step whose name starts with this begins (a
    /// thread watching the progress may see the step only after the job
    /// has finished, on a loaded machine).
    #[cfg(test)]
    pub(crate) cancel_at_step: std::sync::OnceLock<String>,
}

/// A reading of the progress counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Work done and to do over the whole job, in item passes.
    pub done: u64,
    pub total: u64,
    /// The step under way ("table 3 of 10") and its work.
    pub step: String,
    pub step_done: u64,
    pub step_total: u64,
}

impl Control {
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
        Progress {
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            step: self.step.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            step_done: self.step_done.load(Ordering::Relaxed),
            step_total: self.step_total.load(Ordering::Relaxed),
        }
    }

    /// Starts a job of `total` units from nothing: a phase of a larger job
    /// that runs others (a batch job inside verified near-duplicates).
    pub(crate) fn restart(&self, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// Sets the work of the whole job.
    pub(crate) fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }

    /// Starts a step of `total` units.
    pub(crate) fn step(&self, name: String, total: u64) {
        #[cfg(test)]
        if self.cancel_at_step.get().is_some_and(|at| name.starts_with(at.as_str())) {
            self.cancel();
        }
        *self.step.lock().unwrap_or_else(|e| e.into_inner()) = name;
        self.step_done.store(0, Ordering::Relaxed);
        self.step_total.store(total, Ordering::Relaxed);
    }

    /// Counts `n` units done, in the step and in the job.
    pub(crate) fn advance(&self, n: u64) {
        self.step_done.fetch_add(n, Ordering::Relaxed);
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` units done in the step only (a step outside the job's total).
    pub(crate) fn advance_step(&self, n: u64) {
        self.step_done.fetch_add(n, Ordering::Relaxed);
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

    /// Counts `n` units of the job as done without work (a table finished
    /// by an earlier run).
    pub(crate) fn skip(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
}
