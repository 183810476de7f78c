//! Where the run's `tracing` events go: human lines on stderr when
//! `SWAMP_LOG` holds a filter (`debug`, `swamp::store=trace,info`), and
//! JSON lines into `--trace FILE` (one per provider request, lock step and
//! action start or end). Neither set: no subscriber, nothing written.
//!
//! Every line passes through [`crate::telemetry::redact`] on its way out:
//! the SDKs' own events at `trace` level can carry a session token or a
//! signature.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::telemetry::redact::redact;

/// Why logging could not start (a bad filter or an unwritable trace file):
/// reported before the command runs, as bad input.
#[derive(Debug, thiserror::Error)]
pub(super) enum LoggingError {
    #[error("SWAMP_LOG={filter:?} is not a log filter: {source}")]
    Filter {
        filter: String,
        source: tracing_subscriber::filter::ParseError,
    },
    #[error("cannot write the trace file {path}: {source}")]
    TraceFile {
        path: String,
        source: std::io::Error,
    },
}

/// Installs the subscriber `SWAMP_LOG` and `trace` ask for, if any.
pub(super) fn init(trace: Option<&Path>) -> Result<(), LoggingError> {
    let filter = std::env::var("SWAMP_LOG")
        .ok()
        .filter(|f| !f.trim().is_empty());
    if filter.is_none() && trace.is_none() {
        return Ok(());
    }
    let stderr = match filter {
        Some(filter) => {
            let parsed = EnvFilter::try_new(&filter).map_err(|source| LoggingError::Filter {
                filter: filter.clone(),
                source,
            })?;
            Some(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(Redacting)
                    .with_filter(parsed),
            )
        }
        None => None,
    };
    let trace = match trace {
        Some(path) => {
            let file = File::create(path).map_err(|source| LoggingError::TraceFile {
                path: path.display().to_string(),
                source,
            })?;
            // Only swamp's own events: the SDKs' are for `SWAMP_LOG`.
            Some(
                TraceLayer {
                    file: Mutex::new(file),
                }
                .with_filter(tracing_subscriber::filter::filter_fn(|m| {
                    m.target().starts_with("swamp")
                })),
            )
        }
        None => None,
    };
    // A second install (tests that run `main` twice in one process) keeps
    // the first: nothing to report.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(trace)
        .try_init();
    Ok(())
}

/// stderr, each event's text redacted (the fmt layer writes one event
/// per `write_all`).
struct Redacting;

struct RedactingWriter;

impl Write for RedactingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr()
            .lock()
            .write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = RedactingWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter
    }
}

/// JSON lines of swamp's own events (filtered to `swamp` targets where it
/// is installed; those with an `event` field), each written whole as it
/// happens: a run killed part-way keeps its trace.
struct TraceLayer {
    file: Mutex<File>,
}

impl<S: Subscriber> Layer<S> for TraceLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields(Map::new());
        fields.0.insert(
            "ts".into(),
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
                .to_string()
                .into(),
        );
        event.record(&mut fields);
        if !fields.0.contains_key("event") {
            return;
        }
        let mut line = Value::Object(fields.0).to_string();
        line = redact(&line).into_owned();
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = file.write_all(line.as_bytes());
    }
}

struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        // Milliseconds to the microsecond are precision enough.
        let rounded = (value * 1000.0).round() / 1000.0;
        self.0.insert(field.name().into(), rounded.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}
