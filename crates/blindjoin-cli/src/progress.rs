//! Progress bars for long phases: drawn on a terminal, silent otherwise.

use blindjoin_psi::Progress;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;

/// A set of progress bars on stderr (hidden when stderr is not a terminal).
#[derive(Clone)]
pub struct Bars {
    multi: MultiProgress,
    drawn: bool,
}

impl Default for Bars {
    fn default() -> Self {
        Bars::new()
    }
}

impl Bars {
    /// Bars on stderr if it is a terminal, nothing otherwise.
    pub fn new() -> Self {
        let drawn = std::io::stderr().is_terminal();
        let target = if drawn {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            multi: MultiProgress::with_draw_target(target),
            drawn,
        }
    }

    /// No bars at all (`--quiet`); lines are still printed.
    pub fn hidden() -> Self {
        Bars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
            drawn: false,
        }
    }

    /// A callback that shows the bytes of a `total`-byte input read so far.
    pub fn reading(&self, label: &'static str, total: u64) -> Arc<dyn Fn(u64) + Send + Sync> {
        let bar = self.multi.add(ProgressBar::new(total));
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix:>9} {msg:<9} [{bar:30}] {binary_bytes}/{binary_total_bytes} {elapsed}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label);
        bar.set_message("read");
        Arc::new(move |done| {
            bar.set_position(done.min(total));
            if done >= total {
                bar.finish();
            }
        })
    }

    /// A bar for writing the matched rows: given the rows to write, returns what is told the
    /// rows written so far.
    pub fn writing(&self, label: &'static str) -> crate::party::WriteProgress {
        let multi = self.multi.clone();
        Arc::new(move |total| {
            let bar = multi.add(ProgressBar::new(total));
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:>9} {msg:<9} [{bar:30}] {human_pos}/{human_len} rows {elapsed}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label);
            bar.set_message("write");
            Arc::new(move |done| {
                bar.set_position(done.min(total));
                if done >= total {
                    bar.finish();
                }
            })
        })
    }

    /// Prints a line on stderr above the bars.
    pub fn println(&self, line: &str) {
        if !self.drawn || self.multi.println(line).is_err() {
            eprintln!("{line}");
        }
    }

    /// A progress callback that drives one bar labelled `label`.
    pub fn party(&self, label: &'static str) -> Progress {
        let bar = self.multi.add(ProgressBar::new(0));
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix:>9} {msg:<9} [{bar:30}] {human_pos}/{human_len} {elapsed}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label);
        Arc::new(move |phase, done, total| {
            if bar.length() != Some(total) {
                bar.set_length(total);
            }
            bar.set_message(phase);
            bar.set_position(done);
        })
    }

    /// Removes the bars from the screen.
    pub fn clear(&self) {
        let _ = self.multi.clear();
    }
}
