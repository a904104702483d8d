//! The native module `blindjoin._blindjoin` of the Python package `blindjoin`.
//!
//! The package's Python part (`python/blindjoin/__init__.py`) turns the caller's data into a
//! file path, or into an Arrow table holding exactly the key columns in key order, and calls
//! [`run`] with the keyword options. This crate knows nothing of cryptography: it checks the
//! options as the CLI does ([`options`]), hashes the keys with the CLI's hasher ([`keys`]) or
//! reads a file with the CLI's reader, runs one party with `blindjoin_cli::party::run_party`,
//! and hands back the JSON report and, for the receiver, the matched row indices.
//!
//! # How Arrow data crosses
//!
//! The table is imported through the Arrow PyCapsule stream interface
//! (`__arrow_c_stream__`, with `arrow-pyarrow`): the record batches received point at the
//! buffers pyarrow (or pandas) already holds, so no key is copied on the way in. The batches
//! are collected while the GIL is held, then moved to the thread that runs the party; the GIL is
//! released while it runs. The matched row indices go back as a pyarrow `Int64Array` built on
//! the Rust vector's buffer.
//!
//! # Ctrl-C
//!
//! The party runs on a thread of its own (on a rayon pool of `threads` workers) while the
//! calling thread waits without the GIL in steps of 100 ms, taking the GIL between steps to run
//! Python's signal handlers. On `KeyboardInterrupt` the run's cancel flag is set, which ends a
//! wait for the peer at once (the listening port is closed); during the protocol `run_party`
//! sees the same flag and shuts the connection's socket down, which ends the run with an error
//! (a receiver at the final confirmation refuses its result, and the sender fails with the
//! receiver's reason). The interrupt is raised after a short grace period, without waiting for
//! the run's thread to finish.

mod errors;
mod keys;
mod options;
mod spark;

use arrow_array::{Array, Int64Array, RecordBatch, RecordBatchReader};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow, ToPyArrow};
use blindjoin_cli::error::{CliError, CliResult};
use blindjoin_cli::input::{Input, InputSpec, parquet_builder, parquet_error, read_input};
use blindjoin_cli::output::{OutputColumns, OutputSpec, prepare_output};
use blindjoin_cli::party::{KeysRead, Party, PartyResult, run_party};
use blindjoin_cli::report::Phase;
use errors::Kind;
use options::Settings;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the waiting thread takes the GIL to run Python's signal handlers.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// How long a cancelled run is given to end its wait for the peer before `KeyboardInterrupt`
/// is raised (a connection wait ends within about 200 ms).
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// The data of one party.
enum Data {
    /// A file, read by the CLI's reader.
    File {
        /// The file.
        path: PathBuf,
        /// Key columns (empty: lines, or a one-column Parquet file).
        columns: Vec<String>,
    },
    /// Record batches whose columns are the key columns, in key order.
    Arrow {
        /// The batches.
        batches: Vec<RecordBatch>,
        /// What the data was, for the report and errors (`<DataFrame>`, …).
        label: String,
        /// The number of key columns.
        fields: usize,
        /// Whether the keys are the values of a list or a Series (whole records) rather than
        /// a table's columns.
        values: bool,
    },
}

/// What a finished run hands back.
struct Outcome {
    /// The party's result (report and matched rows).
    result: PartyResult,
    /// A file receiver's matched rows, read back from the input.
    matched: Option<(Vec<RecordBatch>, arrow_schema::SchemaRef)>,
    /// The format of a file input.
    format: Option<&'static str>,
}

/// The registry as JSON: the same text as `blindjoin protocols --json`.
#[pyfunction]
fn protocols_json() -> PyResult<String> {
    serde_json::to_string(blindjoin_psi::protocols::ALL)
        .map_err(|e| PyValueError::new_err(format!("cannot encode the registry: {e}")))
}

/// Runs one party and returns `(report_json, rows, matched, format)`.
///
/// `role` is `"receive"` or `"send"`; `kind` is `"path"` (then `data` is the file's path as a
/// string and `columns` the key columns, empty for a lines file or a one-column Parquet file) or
/// `"arrow"` (then `data` is an object with `__arrow_c_stream__` whose columns are the key
/// columns in key order, and `columns` is ignored); `label` names the data in the report and in
/// errors; `options` holds the keyword options (`None` for a default).
///
/// `rows` is the receiver's matched row indices (a pyarrow `Int64Array`, ascending) and `None`
/// for the sender; `matched` is a file receiver's matched rows as a pyarrow Table (`None`
/// otherwise); `format` is a file input's format (`"csv"`, `"parquet"` or `"lines"`).
#[pyfunction]
#[pyo3(signature = (role, kind, data, columns, label, options))]
fn run<'py>(
    py: Python<'py>,
    role: &str,
    kind: &str,
    data: &Bound<'py, PyAny>,
    columns: Vec<String>,
    label: String,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyTuple>> {
    let receiver = match role {
        "receive" => true,
        "send" => false,
        other => return Err(PyValueError::new_err(format!("unknown role `{other}`"))),
    };
    let settings = Settings::from_dict(role, options)?;
    if let Some(dup) = columns
        .iter()
        .enumerate()
        .find(|(i, c)| columns[..*i].iter().any(|d| d.trim() == c.trim()))
        .map(|(_, c)| c)
    {
        return Err(PyValueError::new_err(format!(
            "column names `{}` twice",
            dup.trim()
        )));
    }
    let mut link = settings.check(py)?;
    let data = match kind {
        "path" => Data::File {
            path: data
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("a path must be passed as a string"))?
                .to_str()?
                .into(),
            columns,
        },
        "arrow" | "values" => {
            let reader =
                arrow_array::ffi_stream::RecordBatchStreamReader::from_pyarrow_bound(data)?;
            let schema = reader.schema();
            if schema.fields().is_empty() {
                return Err(PyValueError::new_err(format!("{label}: no key column")));
            }
            let batches = reader
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| errors::raise(py, Kind::Input, format!("{label}: {e}")))?;
            Data::Arrow {
                batches,
                label,
                fields: schema.fields().len(),
                values: kind == "values",
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown data kind `{other}`"
            )));
        }
    };
    let key_fields = match &data {
        Data::File { columns, .. } => columns.len(),
        Data::Arrow { fields, .. } => *fields,
    };
    // Keys of a list or a Series, or the lines of a text file, are whole records; a table's
    // columns (named or its only one) are columns.
    let whole_records = match &data {
        Data::File { path, columns } => {
            blindjoin_cli::input::Format::of_input(settings.format, path, !columns.is_empty())
                == blindjoin_cli::input::Format::Lines
        }
        Data::Arrow { values, .. } => *values,
    };
    let cancel = Arc::new(AtomicBool::new(false));
    link.cancel = Some(cancel.clone());
    let party = Party {
        receiver,
        endpoint: settings.net.endpoint().map_err(|e| errors::to_py(py, &e))?,
        link,
        normalizer: settings.normalizer(),
        key_fields,
        whole_records,
        protocol: settings.protocol,
        opts: settings.opts.clone(),
        max_peer_size: settings.max_peer_size,
        alone_in_process: false,
        buckets: Default::default(),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.threads.unwrap_or(0))
        .thread_name(|i| format!("blindjoin-{i}"))
        .build()
        .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))?;
    let format = settings.format;
    let (tx, rx) = mpsc::channel();
    let flag = cancel.clone();
    std::thread::Builder::new()
        .name("blindjoin-party".to_owned())
        .spawn(move || {
            let outcome = pool.install(|| execute(party, data, format, &flag));
            let _ = tx.send(outcome);
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the run's thread: {e}")))?;

    let outcome = wait(py, rx, &|| cancel.store(true, Ordering::Relaxed))?
        .map_err(|e| errors::to_py(py, &e))?;
    let report = serde_json::to_string(&outcome.result.report)
        .map_err(|e| PyValueError::new_err(format!("cannot encode the report: {e}")))?;
    let rows = match outcome.result.rows {
        Some(rows) => {
            let rows: Vec<i64> = rows.into_iter().map(|r| r as i64).collect();
            Int64Array::from(rows).into_data().to_pyarrow(py)?
        }
        None => py.None().into_bound(py),
    };
    let matched = match outcome.matched {
        Some((batches, schema)) => arrow_pyarrow::Table::try_new(batches, schema)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyarrow(py)?,
        None => py.None().into_bound(py),
    };
    (report, rows, matched, outcome.format).into_pyobject(py)
}

/// Waits for the run's outcome without the GIL, running Python's signal handlers every
/// [`SIGNAL_CHECK`] (see the crate doc on Ctrl-C); on an interrupt `on_cancel` stops the run
/// (sets its cancel flag).
fn wait<T: Send>(
    py: Python<'_>,
    mut rx: mpsc::Receiver<CliResult<T>>,
    on_cancel: &dyn Fn(),
) -> PyResult<CliResult<T>> {
    loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_CHECK), rx));
        rx = back;
        match got {
            Ok(outcome) => return Ok(outcome),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    on_cancel();
                    // A wait for the peer, or a protocol whose socket the flag shuts down,
                    // ends within the grace period.
                    py.detach(move || {
                        let _ = rx.recv_timeout(CANCEL_GRACE);
                    });
                    return Err(interrupt);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(errors::raise(
                    py,
                    Kind::Other,
                    "the run's thread ended without a result".to_owned(),
                ));
            }
        }
    }
}

/// Runs the party on the current (pool) thread.
fn execute(
    party: Party,
    data: Data,
    format: Option<blindjoin_cli::input::Format>,
    cancel: &AtomicBool,
) -> CliResult<Outcome> {
    let refuse_if_cancelled = || {
        if cancel.load(Ordering::Relaxed) {
            Err(keys::cancelled())
        } else {
            Ok(())
        }
    };
    match data {
        Data::Arrow { batches, label, .. } => {
            let normalizer = party.normalizer.clone();
            let result = run_party(
                party,
                || {
                    let t = Instant::now();
                    let keyed = keys::hash_batches(&batches, &normalizer, &label, cancel)?;
                    Ok(KeysRead {
                        keyed,
                        path: label.clone(),
                        phases: vec![Phase {
                            name: "hash keys".to_owned(),
                            seconds: t.elapsed().as_secs_f64(),
                        }],
                        values: None,
                        stream: None,
                    })
                },
                |_rows| refuse_if_cancelled().map(|()| None),
            )?;
            Ok(Outcome {
                result,
                matched: None,
                format: None,
            })
        }
        Data::File { path, columns } => {
            let normalizer = party.normalizer.clone();
            let receiver = party.receiver;
            let spec = InputSpec {
                path: &path,
                format,
                columns: &columns,
                normalizer: &normalizer,
            };
            let source = std::cell::OnceCell::new();
            let dir = if receiver {
                Some(tempfile::tempdir().map_err(|e| CliError::File {
                    path: std::env::temp_dir(),
                    source: e,
                })?)
            } else {
                None
            };
            let out = dir.as_ref().map(|d| d.path().join("matched.parquet"));
            let mut result = run_party(
                party,
                || {
                    let t = Instant::now();
                    let Input {
                        keyed,
                        source: rows,
                        ..
                    } = read_input(&spec, &|_| {})?;
                    let _ = source.set(rows);
                    Ok(KeysRead {
                        keyed,
                        path: path.display().to_string(),
                        phases: vec![Phase {
                            name: "read input".to_owned(),
                            seconds: t.elapsed().as_secs_f64(),
                        }],
                        values: None,
                        stream: None,
                    })
                },
                |rows| {
                    refuse_if_cancelled()?;
                    match (&out, source.get()) {
                        (Some(out), Some(source)) => {
                            let spec = OutputSpec {
                                format: Some(blindjoin_cli::input::Format::Parquet),
                                columns: OutputColumns::All,
                            };
                            prepare_output(out, source, rows, &spec, &|_| {}).map(Some)
                        }
                        _ => Ok(None),
                    }
                },
            )?;
            let matched = match &out {
                Some(out) => Some(read_parquet(out)?),
                None => None,
            };
            if let Some(i) = result.report.intersection.as_mut() {
                // The rows were written to a temporary file, removed with `dir`.
                i.output = None;
            }
            drop(dir);
            Ok(Outcome {
                result,
                matched,
                format: Some(spec.format().name()),
            })
        }
    }
}

/// The batches of a Parquet file and its schema.
fn read_parquet(path: &std::path::Path) -> CliResult<(Vec<RecordBatch>, arrow_schema::SchemaRef)> {
    let builder = parquet_builder(path)?;
    let schema = builder.schema().clone();
    let reader = builder.build().map_err(|e| parquet_error(path, &e))?;
    // The batches come without the file's schema metadata (pandas keeps its dtypes there).
    let batches = reader
        .map(|b| {
            b.and_then(|b| b.with_schema(schema.clone()))
                .map_err(|e| parquet_error(path, &e))
        })
        .collect::<CliResult<Vec<_>>>()?;
    Ok((batches, schema))
}

/// The native module: [`run`], [`protocols_json`], the Spark run's parts ([`spark`]) and
/// `__version__`.
#[pymodule]
fn _blindjoin(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(protocols_json, m)?)?;
    m.add_class::<spark::SparkDriver>()?;
    m.add_function(wrap_pyfunction!(spark::spark_keys, m)?)?;
    m.add_class::<spark::SparkLane>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_PROTOCOL", options::DEFAULT_PROTOCOL)?;
    m.add("OPTIONS", options::OPTIONS.to_vec())?;
    Ok(())
}
