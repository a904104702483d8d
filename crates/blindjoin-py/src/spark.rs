//! The native half of `blindjoin.spark`: a bucketed run ([`blindjoin_cli::bucketed`]) taken
//! apart so that a Spark driver holds the run's first connection and Spark's barrier tasks run
//! the lanes.
//!
//! - [`SparkDriver`] (on each party's Spark driver): opens the connection, runs the run
//!   handshake (`bucketed::start`, with the parameter `lanes = spark` so that a Spark party and
//!   a command-line party refuse each other) and, once the lanes are done, ends the run with
//!   the confirmation of a single session. In between it can tell whether the peer closed the
//!   connection (its run failed), without reading.
//! - [`spark_keys`] (in the tasks that read the rows): each row's item, hashed from its key
//!   columns with the CLI's normaliser and hasher, and its bucket under the run's partition
//!   key.
//! - [`SparkLane`] (in barrier task w, on the rows Spark placed in partition w): the distinct
//!   items of each of the lane's buckets (w, w + K, …), lane w's connection (the receiver
//!   listens, the sender connects), on lane 0 the exchange of the distinct counts
//!   (`bucketed::agree`, given the counts of all lanes, which the tasks gather), then the
//!   lane's buckets, returning the receiver's matched rows.
//!
//! The sizes travel on lane 0 rather than on the driver's connection so that one Spark stage
//! does everything after the keys: the tasks count their own buckets' items, gather the counts
//! and agree, with no pass over the rows before the lanes. Lane 0's confirmation covers them.
//!
//! Every blocking step runs on a thread of its own while the calling thread waits without the
//! GIL (see the crate doc on Ctrl-C): an interrupt sets the cancel flag, which ends a wait for
//! the peer, and shuts the connection's socket down, which ends the protocol.

use crate::errors;
use crate::keys;
use crate::options::Settings;
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, BinaryArray, Int32Array, Int64Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::DataType;
use blindjoin_cli::bucket::Partition;
use blindjoin_cli::bucketed::{self, Buckets, Plan};
use blindjoin_cli::error::{CliError, CliResult};
use blindjoin_core::channel::FrameSender;
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::channel::transcript::Transcript;
use blindjoin_core::finish;
use blindjoin_core::handshake::{Role, Session};
use blindjoin_core::item::{ITEM_LEN, Item};
use blindjoin_core::transport::{self, Link, LinkConfig};
use blindjoin_psi::{Protocol, RunOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashMap;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// What the tasks name the data by in errors.
const LABEL: &str = "<Spark DataFrame>";

/// Whether `role` (`"receive"` or `"send"`) is the receiver's.
fn receiver_role(role: &str) -> PyResult<bool> {
    match role {
        "receive" => Ok(true),
        "send" => Ok(false),
        other => Err(PyValueError::new_err(format!("unknown role `{other}`"))),
    }
}

/// The protocol options of a run on `key_fields` key columns, with the key parameters both
/// parties must share, as `run_party` sets them.
fn run_options(settings: &Settings, key_fields: usize) -> RunOptions {
    let mut opts = settings.opts.clone();
    opts.key_params = settings.normalizer().handshake_params();
    opts.key_params
        .push(blindjoin_cli::party::key_source_param(false));
    if key_fields > 1 {
        opts.key_params
            .push(("key_fields".to_owned(), key_fields.to_string()));
    }
    opts
}

/// Stops a detached step: sets the cancel flag (ends a wait for the peer) and shuts the
/// connection's socket down (ends a blocked read or write).
#[derive(Clone, Default)]
struct Stopper {
    cancel: Arc<AtomicBool>,
    socket: Arc<Mutex<Option<TcpStream>>>,
}

impl Stopper {
    fn stop(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let Ok(guard) = self.socket.lock()
            && let Some(s) = guard.as_ref()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Shuts the second handle down and lets it go, so that the connection is closed once the
    /// channel is dropped too.
    fn release(&self) {
        if let Ok(mut guard) = self.socket.lock()
            && let Some(s) = guard.take()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn watch(&self, link: &Link) {
        if let (Ok(s), Ok(mut slot)) = (link.socket(), self.socket.lock()) {
            *slot = Some(s);
        }
    }
}

/// Runs `f` on a thread of its own and waits for it without the GIL (see the module doc).
fn detached<T: Send + 'static>(
    py: Python<'_>,
    stopper: &Stopper,
    f: impl FnOnce() -> CliResult<T> + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("blindjoin-spark".to_owned())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the run's thread: {e}")))?;
    let stop = stopper.clone();
    crate::wait(py, rx, &move || stop.stop())?.map_err(|e| errors::to_py(py, &e))
}

/// A rayon pool of `threads` workers, made once per size in this process (a Spark worker
/// calls the task functions many times).
fn pool(threads: usize) -> CliResult<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let threads = threads.max(1);
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| CliError::Usage("the worker pools are poisoned".into()))?;
    if let Some(p) = pools.get(&threads) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("blindjoin-{i}"))
            .build()
            .map_err(|e| CliError::Usage(format!("cannot start the worker threads: {e}")))?,
    );
    pools.insert(threads, p.clone());
    Ok(p)
}

/// The driver's connection and what it learned.
struct DriverState {
    /// The run's first connection (`None` once ended or failed).
    ch: Option<Transcript<Metered<Link>>>,
    /// Traffic of the connection once it is ended.
    traffic: Traffic,
}

/// One party's driver of a bucketed run whose lanes are Spark barrier tasks (see the module
/// doc). Made by `SparkDriver(role, options, buckets, lanes, key_fields, extra)`, which opens
/// the connection and runs the run handshake.
#[pyclass(module = "blindjoin._blindjoin", name = "SparkDriver")]
pub struct SparkDriver {
    receiver: bool,
    limits: Limits,
    run_id: String,
    key: [u8; 16],
    stopper: Stopper,
    state: Mutex<DriverState>,
}

impl SparkDriver {
    /// Takes the connection out for a detached step.
    fn take(&self) -> PyResult<Transcript<Metered<Link>>> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| PyValueError::new_err("the run's state is poisoned"))?;
        st.ch.take().ok_or_else(|| {
            PyValueError::new_err("the run's connection is already closed (the run ended)")
        })
    }
}

/// The bucket split of `buckets` and `lanes`, checked as the CLI checks `--buckets` and
/// `--parallel` (messages naming the keyword options).
fn checked_buckets(buckets: u32, lanes: usize, opts: &RunOptions) -> PyResult<Buckets> {
    let b = Buckets {
        count: buckets,
        parallel: lanes,
    };
    if buckets < 2 {
        return Err(PyValueError::new_err(format!(
            "buckets must be at least 2, not {buckets}"
        )));
    }
    if lanes == 0 {
        return Err(PyValueError::new_err("lanes must be at least 1"));
    }
    if lanes as u64 > u64::from(buckets) {
        return Err(PyValueError::new_err(format!(
            "lanes={lanes} is more than buckets={buckets}"
        )));
    }
    b.check(opts)
        .map_err(|e| PyValueError::new_err(crate::options::as_keywords(&e.to_string())))?;
    Ok(b)
}

#[pymethods]
impl SparkDriver {
    /// Opens the connection (`listen` or `connect` of `options`) and runs the run handshake with
    /// `buckets` and `lanes`, `key_fields` key columns and the further handshake parameters
    /// `extra` (name, value).
    #[new]
    #[pyo3(signature = (role, options, buckets, lanes, key_fields, extra))]
    fn new(
        py: Python<'_>,
        role: &str,
        options: &Bound<'_, PyDict>,
        buckets: u32,
        lanes: usize,
        key_fields: usize,
        extra: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let receiver = receiver_role(role)?;
        let settings = Settings::from_dict(role, options)?;
        let mut link = settings.check(py)?;
        let opts = run_options(&settings, key_fields);
        let b = checked_buckets(buckets, lanes, &opts)?;
        blindjoin_psi::check_security(settings.protocol, &opts)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let endpoint = settings.net.endpoint().map_err(|e| errors::to_py(py, &e))?;
        let stopper = Stopper::default();
        link.cancel = Some(stopper.cancel.clone());
        let limits = link.limits;
        let protocol = settings.protocol;
        let max_peer = settings.max_peer_size;
        let party_opts = opts.clone();
        let watch = stopper.clone();
        let (ch, session, key) = detached(py, &stopper, move || {
            let link = endpoint.open(&link)?;
            watch.watch(&link);
            let mut ch = Transcript::new(Metered::new(link));
            let party = bucketed::Party {
                protocol,
                receiver,
                opts: &party_opts,
                buckets: b,
                max_peer,
            };
            let (session, partition) = bucketed::start(&mut ch, &party, &extra)?;
            Ok((ch, session, partition.key()))
        })?;
        Ok(SparkDriver {
            receiver,
            limits,
            run_id: bucketed::run_id(&session),
            key,
            stopper,
            state: Mutex::new(DriverState {
                traffic: ch.get_ref().traffic(),
                ch: Some(ch),
            }),
        })
    }

    /// The run id (hex): the run handshake's session id.
    #[getter]
    fn run_id(&self) -> String {
        self.run_id.clone()
    }

    /// The 16-byte key of the run's partition into buckets.
    #[getter]
    fn partition_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.key)
    }

    /// The idle timeout in seconds (a lane's longest wait for the peer's lane).
    #[getter]
    fn idle_seconds(&self) -> f64 {
        self.limits.idle.as_secs_f64()
    }

    /// Seconds left of the run's deadline (`None`: no deadline), for the lanes' limits.
    #[getter]
    fn deadline_left(&self) -> Option<f64> {
        self.limits.remaining().map(|r| r.as_secs_f64().max(0.001))
    }

    /// Whether the peer closed the run's connection (its run failed, or its process ended):
    /// waits up to `timeout` seconds for it. Nothing is read: a message the peer sent before it
    /// closed (its reason) stays for `finish`, and a message without a close (its
    /// confirmation) is not a close.
    fn peer_closed(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let socket = match self.stopper.socket.lock() {
            Ok(s) => s.as_ref().and_then(|s| s.try_clone().ok()),
            Err(_) => None,
        };
        let Some(socket) = socket else {
            return Ok(true);
        };
        let wait = Duration::try_from_secs_f64(timeout)
            .unwrap_or(Duration::from_millis(200))
            .max(Duration::from_millis(1));
        Ok(py.detach(move || closed_within(&socket, wait)))
    }

    /// Ends the run on the first connection as a single session ends (the receiver's
    /// confirmation and final verdict, after its output is complete; the sender's check of
    /// both). Returns the connection's traffic (`bytes_sent`, `bytes_received`).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut ch = self.take()?;
        let receiver = self.receiver;
        let finished = detached(py, &self.stopper, move || {
            if receiver {
                if let Err(e) = finish::receiver_confirm(&mut ch, None) {
                    // The sender waits for our verdict: tell it why we stop (best effort).
                    let _ = finish::receiver_final(&mut ch, Some(&e.to_string()));
                    return Err(e.into());
                }
                finish::receiver_final(&mut ch, None)?;
            } else {
                finish::sender_confirm(&mut ch)?;
            }
            Ok(ch.get_ref().traffic())
        });
        self.stopper.release();
        let traffic = finished?;
        if let Ok(mut st) = self.state.lock() {
            st.traffic = traffic;
        }
        traffic_dict(py, traffic)
    }

    /// Ends the run with our failure `reason`: the peer learns it in place of our
    /// confirmation (best effort; after the handshake the peer's next read on this connection
    /// is the confirmation), and the connection is closed.
    fn fail(&self, py: Python<'_>, reason: String) -> PyResult<()> {
        let Ok(mut ch) = self.take() else {
            return Ok(());
        };
        let receiver = self.receiver;
        py.detach(move || send_failure(&mut ch, receiver, &reason));
        self.stopper.release();
        Ok(())
    }

    /// Whether the run's first connection is still open (not yet ended or failed).
    #[getter]
    fn open(&self) -> bool {
        self.state.lock().is_ok_and(|st| st.ch.is_some())
    }

    /// The first connection's traffic so far (`bytes_sent`, `bytes_received`).
    fn traffic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = match self.state.lock() {
            Ok(st) => st.ch.as_ref().map_or(st.traffic, |c| c.get_ref().traffic()),
            Err(_) => Traffic::default(),
        };
        traffic_dict(py, t)
    }
}

/// Whether the peer shuts its side of `socket` down within `wait`, pending data or not (Linux:
/// `poll` for `POLLRDHUP`).
#[cfg(target_os = "linux")]
fn closed_within(socket: &TcpStream, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd, and the descriptor stays open for the call (`socket` owns it).
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    n > 0 && fd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Whether the peer closed `socket` within `wait`: a read of nothing at its end (elsewhere than
/// Linux, a close behind a message the peer sent first is seen only once that message is read).
#[cfg(not(target_os = "linux"))]
fn closed_within(socket: &TcpStream, wait: Duration) -> bool {
    if socket.set_read_timeout(Some(wait)).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    match socket.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => {
            std::thread::sleep(wait);
            false
        }
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock
                | std::io::ErrorKind::TimedOut
                | std::io::ErrorKind::Interrupted
        ),
    }
}

/// Sends our failure `reason` in place of our confirmation (best effort) and closes the
/// connection.
fn send_failure(ch: &mut Transcript<Metered<Link>>, receiver: bool, reason: &str) {
    if receiver {
        let _ = finish::receiver_confirm(ch, Some(reason));
    } else {
        let _ = finish::confirmation_frame(ch.digests(), Some(reason))
            .and_then(|f| ch.send(finish::MSG_CONFIRMATION, &f));
    }
    ch.close();
}

impl Drop for SparkDriver {
    fn drop(&mut self) {
        // A run dropped unended closes its connection: the peer sees the run fail.
        self.stopper.release();
    }
}

fn traffic_dict<'py>(py: Python<'py>, t: Traffic) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bytes_sent", t.bytes_sent)?;
    d.set_item("bytes_received", t.bytes_received)?;
    Ok(d)
}

/// The 16-byte partition key from Python bytes.
fn partition_key(key: &[u8]) -> PyResult<[u8; 16]> {
    key.try_into().map_err(|_| {
        PyValueError::new_err(format!(
            "the partition key must be 16 bytes, not {}",
            key.len()
        ))
    })
}

/// Each row's item and bucket: `(items, buckets)` as pyarrow arrays of the rows of `batch`
/// (whose columns are the key columns, in key order): the 16-byte items (binary) and their
/// buckets (int32) under the run's partition `key` into `buckets`, both null where the row has
/// no key (missing, or empty after normalisation). `options` gives the normalisation and
/// `threads`.
#[pyfunction]
#[pyo3(signature = (batch, options, key, buckets))]
pub fn spark_keys<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    options: &Bound<'py, PyDict>,
    key: &[u8],
    buckets: u32,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let settings = Settings::from_dict("receive", options)?;
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    if batch.num_columns() == 0 {
        return Err(PyValueError::new_err(format!("{LABEL}: no key column")));
    }
    if buckets == 0 {
        return Err(PyValueError::new_err("buckets must be at least 1"));
    }
    let partition = Partition::new(partition_key(key)?, buckets);
    let normalizer = settings.normalizer();
    let threads = settings.threads.unwrap_or(1);
    let (items, bucket) = py
        .detach(|| -> CliResult<_> {
            let hashed = pool(threads)?.install(|| keys::hash_batch(&batch, &normalizer, LABEL))?;
            let present: Vec<Item> = hashed.iter().flatten().copied().collect();
            let mut assigned = vec![0u32; present.len()];
            partition.assign(&present, &mut assigned);
            let mut it = assigned.iter();
            let bucket: Int32Array = hashed
                .iter()
                .map(|h| h.as_ref().map(|_| it.next().copied().unwrap_or(0) as i32))
                .collect();
            let items = BinaryArray::from_iter(hashed.iter().map(|h| h.as_ref().map(|i| i.0)));
            Ok((items, bucket))
        })
        .map_err(|e| errors::to_py(py, &e))?;
    Ok((
        items.into_data().to_pyarrow(py)?,
        bucket.into_data().to_pyarrow(py)?,
    ))
}

/// The rows of a batch of `item` (16-byte binary) and `bucket` (int32) columns as
/// `(bucket, item, row)`, sorted, rows without an item left out; every bucket must be below
/// `buckets` and, with `lane`, one of lane `w`'s of `lanes` (w, w + K, …).
fn grouped<'a>(
    batch: &'a RecordBatch,
    buckets: u32,
    lane: Option<(usize, usize)>,
) -> CliResult<Vec<(u32, Item, u32)>> {
    let bad = |m: String| CliError::Usage(format!("{LABEL}: {m}"));
    if batch.num_columns() != 2 {
        return Err(bad(
            "the lane's rows must have an item and a bucket column".into()
        ));
    }
    let items = batch.column(0);
    let bucket = batch.column(1);
    let bucket: &Int32Array = match bucket.data_type() {
        DataType::Int32 => bucket.as_primitive::<Int32Type>(),
        other => return Err(bad(format!("the bucket column is {other}, not int32"))),
    };
    let item_at: Box<dyn Fn(usize) -> Option<&'a [u8]> + 'a> = match items.data_type() {
        DataType::Binary => {
            let a = items.as_binary::<i32>();
            Box::new(move |i| a.is_valid(i).then(|| a.value(i)))
        }
        DataType::LargeBinary => {
            let a = items.as_binary::<i64>();
            Box::new(move |i| a.is_valid(i).then(|| a.value(i)))
        }
        DataType::FixedSizeBinary(_) => {
            let a = items.as_fixed_size_binary();
            Box::new(move |i| a.is_valid(i).then(|| a.value(i)))
        }
        other => return Err(bad(format!("the item column is {other}, not binary"))),
    };
    if batch.num_rows() >= u32::MAX as usize {
        return Err(bad(format!("{} rows in one lane", batch.num_rows())));
    }
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let Some(item) = item_at(i) else { continue };
        let item: [u8; ITEM_LEN] = item
            .try_into()
            .map_err(|_| bad(format!("row {i}: an item of {} bytes", item.len())))?;
        if !bucket.is_valid(i) {
            return Err(bad(format!("row {i}: an item without a bucket")));
        }
        let b = bucket.value(i);
        if b < 0 || b as u32 >= buckets {
            return Err(bad(format!("row {i}: bucket {b} of {buckets}")));
        }
        if let Some((w, k)) = lane
            && b as usize % k != w
        {
            return Err(bad(format!(
                "row {i}: bucket {b} is not one of lane {w}'s (Spark placed the rows in \
                 other partitions than the lanes')"
            )));
        }
        rows.push((b as u32, Item(item), i as u32));
    }
    rows.sort_unstable();
    Ok(rows)
}

/// One lane's buckets: the distinct items of each, with the rows carrying each item.
struct LaneBuckets {
    /// Per bucket of the lane (in the lane's order): its number, its distinct items, and
    /// `bounds`: item k's rows are `rows[bounds[k]..bounds[k + 1]]`.
    buckets: Vec<(usize, Vec<Item>, Vec<usize>)>,
    /// The rows, grouped by bucket and item.
    rows: Vec<u32>,
}

/// Lane `w`'s buckets of a run split `b` (w, w + K, …) from the lane's rows sorted by bucket
/// and item.
fn lane_buckets(b: Buckets, w: usize, sorted: &[(u32, Item, u32)]) -> LaneBuckets {
    let mut out = LaneBuckets {
        buckets: Vec::new(),
        rows: Vec::with_capacity(sorted.len()),
    };
    let mut i = 0;
    for p in (w..b.count as usize).step_by(b.parallel.max(1)) {
        let mut items = Vec::new();
        let mut bounds = Vec::new();
        while i < sorted.len() && sorted[i].0 as usize == p {
            let (_, item, row) = sorted[i];
            if items.last() != Some(&item) {
                bounds.push(out.rows.len());
                items.push(item);
            }
            out.rows.push(row);
            i += 1;
        }
        bounds.push(out.rows.len());
        out.buckets.push((p, items, bounds));
    }
    out
}

/// A plan dict's entry.
fn plan_get<'py>(plan: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    plan.get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("the plan has no `{key}`")))
}

fn plan_type(key: &str) -> PyErr {
    PyTypeError::new_err(format!("the plan's `{key}` has the wrong type"))
}

/// Opens lane `w`'s connection: the receiver listens at `listen` of the link, the sender
/// connects; the wait for the peer's lane is bounded by the idle timeout. The connection runs
/// under `limits` once open.
fn lane_link(receiver: bool, address: &str, cfg: &LinkConfig, limits: Limits) -> CliResult<Link> {
    let mut wait_cfg = cfg.clone();
    wait_cfg.limits = limits.capped(limits.idle);
    let waited = |e: blindjoin_core::Error| -> CliError {
        match e {
            blindjoin_core::Error::Deadline { during } if !limits.expired() => {
                blindjoin_core::Error::Timeout {
                    during,
                    secs: limits.idle.as_secs_f64(),
                }
                .into()
            }
            other => other.into(),
        }
    };
    let mut link = if receiver {
        let listener = TcpListener::bind(address)
            .map_err(|e| blindjoin_core::Error::io(format!("cannot listen on {address}"), e))?;
        transport::accept(&listener, &wait_cfg, &mut |_| ()).map_err(waited)?
    } else {
        transport::connect(address, &wait_cfg, &mut |_| ()).map_err(waited)?
    };
    match &mut link {
        Link::Tcp(c) => c.set_limits(limits),
        Link::Tls(c) => c.set_limits(limits),
    }
    Ok(link)
}

/// What a lane does while its task runs: its rows' buckets, then its connection.
struct LaneState {
    /// The lane's buckets (taken by `run`).
    buckets: Option<LaneBuckets>,
    /// Lane w's connection, once open.
    ch: Option<Transcript<Metered<Link>>>,
}

/// One lane of a run, in its Spark barrier task (see the module doc). Made by
/// `SparkLane(role, options, run, lane, batch)`: `options` as the driver's with `listen` (the
/// receiver's lane address) or `connect` (the sender's), `run` a dict of `run_id`, `buckets`,
/// `lanes`, `key_fields` and `deadline_left`, and `batch` the lane's rows (columns `item`,
/// binary, and `bucket`, int32; rows without an item are left out), every bucket one of lane
/// `lane`'s.
#[pyclass(module = "blindjoin._blindjoin", name = "SparkLane")]
pub struct SparkLane {
    receiver: bool,
    protocol: &'static Protocol,
    opts: RunOptions,
    max_peer: Option<u64>,
    run_id: String,
    buckets: Buckets,
    lane: usize,
    cfg: LinkConfig,
    limits: Limits,
    address: String,
    threads: usize,
    started: Instant,
    stopper: Stopper,
    state: Arc<Mutex<LaneState>>,
}

fn lane_state(state: &Mutex<LaneState>) -> CliResult<std::sync::MutexGuard<'_, LaneState>> {
    state
        .lock()
        .map_err(|_| CliError::Usage("the lane's state is poisoned".into()))
}

#[pymethods]
impl SparkLane {
    #[new]
    #[pyo3(signature = (role, options, run, lane, batch))]
    fn new(
        py: Python<'_>,
        role: &str,
        options: &Bound<'_, PyDict>,
        run: &Bound<'_, PyDict>,
        lane: usize,
        batch: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let started = Instant::now();
        let receiver = receiver_role(role)?;
        let settings = Settings::from_dict(role, options)?;
        let mut cfg = settings.check(py)?;
        let run_id: String = plan_get(run, "run_id")?
            .extract()
            .map_err(|_| plan_type("run_id"))?;
        let count: u32 = plan_get(run, "buckets")?
            .extract()
            .map_err(|_| plan_type("buckets"))?;
        let lanes: usize = plan_get(run, "lanes")?
            .extract()
            .map_err(|_| plan_type("lanes"))?;
        let key_fields: usize = plan_get(run, "key_fields")?
            .extract()
            .map_err(|_| plan_type("key_fields"))?;
        let deadline_left: Option<f64> = plan_get(run, "deadline_left")?
            .extract()
            .map_err(|_| plan_type("deadline_left"))?;
        if lanes == 0 || lane >= lanes || lanes as u64 > u64::from(count) {
            return Err(PyValueError::new_err(format!(
                "lane {lane} of a run with lanes={lanes} and buckets={count}"
            )));
        }
        let buckets = Buckets {
            count,
            parallel: lanes,
        };
        let address = match (&settings.net.listen, &settings.net.connect) {
            (Some(a), None) if receiver => a.clone(),
            (None, Some(a)) if !receiver => a.clone(),
            _ => {
                return Err(PyValueError::new_err(
                    "a receiver's lane listens (listen=) and a sender's connects (connect=)",
                ));
            }
        };
        let idle = cfg.limits.idle;
        let limits = match deadline_left {
            Some(left) => Limits::new(
                Duration::try_from_secs_f64(left).unwrap_or(Duration::from_millis(1)),
                idle,
            ),
            None => Limits::idle_only(idle),
        };
        let stopper = Stopper::default();
        cfg.cancel = Some(stopper.cancel.clone());
        let batch = RecordBatch::from_pyarrow_bound(batch)?;
        let rows = py
            .detach(|| -> CliResult<_> {
                let sorted = grouped(&batch, count, Some((lane, lanes)))?;
                Ok(lane_buckets(buckets, lane, &sorted))
            })
            .map_err(|e| errors::to_py(py, &e))?;
        Ok(SparkLane {
            receiver,
            protocol: settings.protocol,
            opts: run_options(&settings, key_fields),
            max_peer: settings.max_peer_size,
            run_id,
            buckets,
            lane,
            cfg,
            limits,
            address,
            threads: settings.threads.unwrap_or(1),
            started,
            stopper,
            state: Arc::new(Mutex::new(LaneState {
                buckets: Some(rows),
                ch: None,
            })),
        })
    }

    /// The distinct items of each of the lane's buckets, as `(bucket, count)` pairs.
    fn counts(&self) -> PyResult<Vec<(usize, u64)>> {
        let st = self
            .state
            .lock()
            .map_err(|_| PyValueError::new_err("the lane's state is poisoned"))?;
        Ok(st.buckets.as_ref().map_or_else(Vec::new, |b| {
            b.buckets
                .iter()
                .map(|(p, items, _)| (*p, items.len() as u64))
                .collect()
        }))
    }

    /// Opens the lane's connection and runs its handshake (the receiver accepts on its
    /// address, the sender connects, each waiting at most the idle timeout for the peer's
    /// lane).
    fn open(&self, py: Python<'_>) -> PyResult<()> {
        let (receiver, lane) = (self.receiver, self.lane);
        let (address, cfg, limits) = (self.address.clone(), self.cfg.clone(), self.limits);
        let run_id = self.run_id.clone();
        let watch = self.stopper.clone();
        let state = self.state.clone();
        detached(py, &self.stopper, move || {
            let link = lane_link(receiver, &address, &cfg, limits)?;
            watch.watch(&link);
            let role = if receiver {
                Role::Receiver
            } else {
                Role::Sender
            };
            let ch = bucketed::open_lane(link, role, &run_id, lane)?;
            lane_state(&state)?.ch = Some(ch);
            Ok(())
        })
    }

    /// On lane 0: sends our distinct count `n` and receives the peer's (`bucketed::agree`),
    /// checking `counts` (the distinct items of every bucket, from all lanes) against our
    /// public maximum. Returns the plan: `own_size`, `peer_size`, `own_max`, `peer_max`,
    /// `dummies`.
    fn agree<'py>(
        &self,
        py: Python<'py>,
        n: u64,
        counts: Vec<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        if counts.len() != self.buckets.count as usize {
            return Err(PyValueError::new_err(format!(
                "counts has {} entries for buckets={}",
                counts.len(),
                self.buckets.count
            )));
        }
        if counts.iter().sum::<u64>() != n {
            return Err(PyValueError::new_err(format!(
                "the bucket counts do not add up to the distinct count {n}"
            )));
        }
        let mut id = [0u8; 32];
        for (k, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(self.run_id.get(2 * k..2 * k + 2).unwrap_or("zz"), 16)
                .map_err(|_| PyValueError::new_err("the run id is not 64 hex digits"))?;
        }
        let mut session = Session {
            id,
            role: if self.receiver {
                Role::Receiver
            } else {
                Role::Sender
            },
            receiver_size: 0,
            sender_size: 0,
            kappa: self.opts.kappa,
            lambda: self.opts.lambda,
        };
        let (protocol, receiver, b, max_peer) =
            (self.protocol, self.receiver, self.buckets, self.max_peer);
        let opts = self.opts.clone();
        let state = self.state.clone();
        let plan = detached(py, &self.stopper, move || {
            let party = bucketed::Party {
                protocol,
                receiver,
                opts: &opts,
                buckets: b,
                max_peer,
            };
            let mut st = lane_state(&state)?;
            let ch = st
                .ch
                .as_mut()
                .ok_or_else(|| CliError::Usage("the lane is not open".into()))?;
            let plan = bucketed::agree(ch, &party, &mut session, n, &|p| counts[p])?;
            Ok((plan.own_max, plan.peer_max, session.peer_size()))
        })?;
        let (own_max, peer_max, peer_size) = plan;
        let d = PyDict::new(py);
        d.set_item("own_size", n)?;
        d.set_item("peer_size", peer_size)?;
        d.set_item("own_max", own_max)?;
        d.set_item("peer_max", peer_max)?;
        d.set_item("dummies", own_max * u64::from(self.buckets.count) - n)?;
        Ok(d)
    }

    /// Runs the lane's buckets under `plan` (the dict of lane 0's `agree`) and ends the lane.
    ///
    /// Returns `(rows, stats)`: the receiver's matched rows of the lane's batch (a pyarrow
    /// `Int64Array`, ascending; every row carrying a matched item), empty for the sender;
    /// `stats` has `distinct` (items of the lane), `matched` (matched distinct items),
    /// `bytes_sent`, `bytes_received` and `seconds`.
    fn run<'py>(
        &self,
        py: Python<'py>,
        plan: &Bound<'py, PyDict>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        let own_max: u64 = plan_get(plan, "own_max")?
            .extract()
            .map_err(|_| plan_type("own_max"))?;
        let peer_max: u64 = plan_get(plan, "peer_max")?
            .extract()
            .map_err(|_| plan_type("peer_max"))?;
        let plan = Plan::new(&self.opts, &self.run_id, self.buckets, own_max, peer_max);
        let (protocol, receiver, threads) = (self.protocol, self.receiver, self.threads);
        let state = self.state.clone();
        let started = self.started;
        let (found, stats) = detached(py, &self.stopper, move || {
            let (mut lane_rows, mut ch) = {
                let mut st = lane_state(&state)?;
                match (st.buckets.take(), st.ch.take()) {
                    (Some(b), Some(ch)) => (b, ch),
                    _ => return Err(CliError::Usage("the lane is not open".into())),
                }
            };
            let pool = pool(threads)?;
            let mut found: Vec<i64> = Vec::new();
            let mut matched = 0u64;
            let mut distinct = 0u64;
            for (p, items, bounds) in &mut lane_rows.buckets {
                distinct += items.len() as u64;
                let positions = pool.install(|| {
                    bucketed::bucket_session(&mut ch, protocol, receiver, &plan, *p, items)
                })?;
                matched += positions.len() as u64;
                for k in positions {
                    let rows = &lane_rows.rows[bounds[k]..bounds[k + 1]];
                    found.extend(rows.iter().map(|&r| i64::from(r)));
                }
            }
            bucketed::end_lane(&mut ch, receiver)?;
            let traffic = ch.get_ref().traffic();
            found.sort_unstable();
            Ok((
                found,
                (distinct, matched, traffic, started.elapsed().as_secs_f64()),
            ))
        })?;
        let (distinct, matched, traffic, seconds) = stats;
        let d = traffic_dict(py, traffic)?;
        d.set_item("distinct", distinct)?;
        d.set_item("matched", matched)?;
        d.set_item("seconds", seconds)?;
        let rows = Int64Array::from(found).into_data().to_pyarrow(py)?;
        Ok((rows, d))
    }
}
