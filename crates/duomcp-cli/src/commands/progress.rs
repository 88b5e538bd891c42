//! How a call goes, on stderr: on a terminal a spinner with the elapsed time while a task is
//! `working` and a bar for progress notifications (indicatif); elsewhere one line per change
//! and per progress notification, so logs and tests see every one.

use duomcp::client::TaskInfo;
use duomcp::schema::notifications::ProgressNotificationParams;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The spinner (or bar) of one call; cheap to clone into the client's callbacks.
#[derive(Clone)]
pub(crate) struct Status {
    /// `None` when stderr is not a terminal: lines instead of a spinner.
    bar: Option<ProgressBar>,
    /// The task the call runs as, once the server said (for cancelling it on timeout).
    task: Arc<Mutex<Option<String>>>,
}

impl Status {
    /// A spinner on stderr when `terminal`, plain lines otherwise.
    pub(crate) fn new(terminal: bool) -> Self {
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(spinner_style());
            bar
        });
        Status {
            bar,
            task: Arc::new(Mutex::new(None)),
        }
    }

    /// The id of the task the call runs as, if it does.
    pub(crate) fn task_id(&self) -> Option<String> {
        self.task.lock().ok().and_then(|t| t.clone())
    }

    /// A task's status changed.
    pub(crate) fn task(&self, t: &TaskInfo) {
        if let Ok(mut id) = self.task.lock() {
            *id = Some(t.task_id.clone());
        }
        let line = match &t.status_message {
            Some(m) => format!(
                "task {}: {} ({})",
                super::output::safe(&t.task_id),
                t.status.as_str(),
                super::output::safe(m)
            ),
            None => format!(
                "task {}: {}",
                super::output::safe(&t.task_id),
                t.status.as_str()
            ),
        };
        let Some(bar) = &self.bar else {
            eprintln!("{line}");
            return;
        };
        if t.status.is_terminal() {
            bar.finish_and_clear();
            eprintln!("{line} after {}", super::errors::human(bar.elapsed()));
        } else {
            bar.set_message(line);
            bar.enable_steady_tick(Duration::from_millis(120));
        }
    }

    /// A progress notification arrived: the bar moves on a terminal, a line elsewhere.
    pub(crate) fn progress(&self, p: &ProgressNotificationParams) {
        let Some(bar) = &self.bar else {
            eprintln!("{}", progress_line(p));
            return;
        };
        let message = p.message.clone().unwrap_or_default();
        match p.total {
            Some(total) if total > 0.0 => {
                bar.set_style(bar_style());
                // The bar counts in thousandths of the total: progress values are floats.
                bar.set_length(1000);
                bar.set_position(((p.progress / total).clamp(0.0, 1.0) * 1000.0) as u64);
            }
            _ => {
                bar.set_style(spinner_style());
                bar.enable_steady_tick(Duration::from_millis(120));
            }
        }
        bar.set_message(message);
    }

    /// The call is over: the spinner goes away (results follow on stdout).
    pub(crate) fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `progress 2/5 (message)`, as printed off a terminal.
fn progress_line(p: &ProgressNotificationParams) -> String {
    let mut line = match p.total {
        Some(total) => format!("progress {}/{total}", p.progress),
        None => format!("progress {}", p.progress),
    };
    if let Some(m) = &p.message {
        line.push_str(&format!(" ({})", super::output::safe(m)));
    }
    line
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{bar:30} {percent:>3}% {msg} [{elapsed}]")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}
