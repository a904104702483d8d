//! The native half of `blindjoin.spark`: a bucketed run ([`blindjoin_cli::bucketed`]) taken
//! apart so that a Spark driver holds the run's first connection and Spark's barrier tasks run
//! the lanes.
//!
//! - [`SparkDriver`] (on each party's Spark driver): opens the connection, runs the run
//!   handshake (`bucketed::start`, with the parameter `lanes = spark` so that a Spark party and
//!   a command-line party refuse each other), exchanges the distinct counts (`bucketed::agree`)
//!   and ends the run with the confirmation of a single session. Between the counts and the
//!   end it can tell whether the peer closed the connection (a failed peer), without reading.
//! - [`spark_keys`] (in the tasks that read the rows): each row's item, hashed from its key
//!   columns with the CLI's normaliser and hasher, its bucket under the run's partition key,
//!   and the Spark partition (lane) it must go to.
//! - [`spark_counts`] (in the tasks over the rows partitioned by lane): the distinct items of
//!   each bucket.
//! - [`spark_lane`] (in barrier task w): opens lane w (the receiver listens, the sender
//!   connects), runs buckets w, w + K, … on the rows of the task and returns the receiver's
//!   matched rows.
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
    /// The run handshake's session (sizes filled in by `agree`).
    session: Session,
    /// Traffic of the connection once it is ended.
    traffic: Traffic,
    /// Whether both parties are past the exchange of sizes (the peer's next read on this
    /// connection is the confirmation, which can carry our failure).
    agreed: bool,
}

/// One party's driver of a bucketed run whose lanes are Spark barrier tasks (see the module
/// doc). Made by `SparkDriver(role, options, buckets, lanes, key_fields, extra)`, which opens
/// the connection and runs the run handshake.
#[pyclass(module = "blindjoin._blindjoin", name = "SparkDriver")]
pub struct SparkDriver {
    receiver: bool,
    protocol: &'static Protocol,
    opts: RunOptions,
    buckets: Buckets,
    max_peer: Option<u64>,
    limits: Limits,
    run_id: String,
    key: [u8; 16],
    stopper: Stopper,
    state: Mutex<DriverState>,
}

impl SparkDriver {
    /// Takes the connection out for a detached step.
    fn take(&self) -> PyResult<(Transcript<Metered<Link>>, Session)> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| PyValueError::new_err("the run's state is poisoned"))?;
        let ch = st.ch.take().ok_or_else(|| {
            PyValueError::new_err("the run's connection is already closed (the run ended)")
        })?;
        Ok((ch, st.session.clone()))
    }

    fn put(&self, ch: Option<Transcript<Metered<Link>>>, session: Option<Session>) {
        if let Ok(mut st) = self.state.lock() {
            if let Some(ch) = &ch {
                st.traffic = ch.get_ref().traffic();
            }
            st.ch = ch;
            if let Some(s) = session {
                st.session = s;
            }
        }
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
            protocol,
            opts,
            buckets: b,
            max_peer,
            limits,
            run_id: bucketed::run_id(&session),
            key,
            stopper,
            state: Mutex::new(DriverState {
                traffic: ch.get_ref().traffic(),
                ch: Some(ch),
                session,
                agreed: false,
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

    /// Sends our distinct count `n` and receives the peer's, checks `counts` (distinct items per
    /// bucket, B of them) against our public maximum, and returns the run's plan as a dict:
    /// `run_id`, `buckets`, `lanes`, `own_size`, `peer_size`, `own_max`, `peer_max`, `dummies`,
    /// `deadline_left` (seconds left of the run's deadline).
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
        let total: u64 = counts.iter().sum();
        if total != n {
            return Err(PyValueError::new_err(format!(
                "the bucket counts add up to {total}, not to the distinct count {n}"
            )));
        }
        let (mut ch, mut session) = self.take()?;
        // The step runs detached: it gets owned copies of what it needs.
        let opts = self.opts.clone();
        let (protocol, receiver, b, max_peer) =
            (self.protocol, self.receiver, self.buckets, self.max_peer);
        let agreed = detached(py, &self.stopper, move || {
            let party = bucketed::Party {
                protocol,
                receiver,
                opts: &opts,
                buckets: b,
                max_peer,
            };
            match bucketed::agree(&mut ch, &party, &mut session, n, &|p| counts[p]) {
                Ok(plan) => Ok((ch, session, plan)),
                Err(e) => {
                    // A check after the exchange failed: the peer is past it, and reads our
                    // reason in place of our confirmation.
                    if matches!(
                        e,
                        CliError::Protocol(
                            blindjoin_core::Error::ParamMismatch { .. }
                                | blindjoin_core::Error::InvalidParam { .. }
                        )
                    ) {
                        send_failure(&mut ch, receiver, &e.to_string());
                    }
                    Err(e)
                }
            }
        });
        let (ch, session, plan) = agreed.inspect_err(|_| self.stopper.release())?;
        let peer_size = session.peer_size();
        self.put(Some(ch), Some(session));
        if let Ok(mut st) = self.state.lock() {
            st.agreed = true;
        }
        let d = PyDict::new(py);
        d.set_item("run_id", &self.run_id)?;
        d.set_item("buckets", self.buckets.count)?;
        d.set_item("lanes", self.buckets.parallel)?;
        d.set_item("own_size", n)?;
        d.set_item("peer_size", peer_size)?;
        d.set_item("own_max", plan.own_max)?;
        d.set_item("peer_max", plan.peer_max)?;
        d.set_item("dummies", plan.own_max * u64::from(self.buckets.count) - n)?;
        d.set_item(
            "deadline_left",
            self.limits.remaining().map(|r| r.as_secs_f64().max(0.001)),
        )?;
        Ok(d)
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
        let (mut ch, _) = self.take()?;
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
    /// confirmation (best effort), and the connection is closed.
    fn fail(&self, py: Python<'_>, reason: String) -> PyResult<()> {
        let agreed = self.state.lock().is_ok_and(|st| st.agreed);
        let Ok((mut ch, _)) = self.take() else {
            return Ok(());
        };
        let receiver = self.receiver;
        py.detach(move || {
            if agreed {
                send_failure(&mut ch, receiver, &reason);
            } else {
                // Before the sizes the peer reads a size next: it sees the connection close.
                ch.close();
            }
        });
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

/// Each row's item, bucket and lane designator: `(items, buckets, parts)` as pyarrow arrays of
/// the rows of `batch` (whose columns are the key columns, in key order): the 16-byte items
/// (binary), their buckets (int32) under the run's partition `key` into `buckets`, and
/// `designators[bucket % len(designators)]` (int64, the value Spark's hash partitioning sends
/// to the lane's partition). All three are null where the row has no key (missing, or empty
/// after normalisation). `options` gives the normalisation and `threads`.
#[pyfunction]
#[pyo3(signature = (batch, options, key, buckets, designators))]
pub fn spark_keys<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    options: &Bound<'py, PyDict>,
    key: &[u8],
    buckets: u32,
    designators: Vec<i64>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let settings = Settings::from_dict("receive", options)?;
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    if batch.num_columns() == 0 {
        return Err(PyValueError::new_err(format!("{LABEL}: no key column")));
    }
    if designators.is_empty() || buckets == 0 {
        return Err(PyValueError::new_err(
            "buckets and lanes must be at least 1",
        ));
    }
    let partition = Partition::new(partition_key(key)?, buckets);
    let normalizer = settings.normalizer();
    let threads = settings.threads.unwrap_or(1);
    let (items, bucket, part) = py
        .detach(|| -> CliResult<_> {
            let hashed = pool(threads)?.install(|| keys::hash_batch(&batch, &normalizer, LABEL))?;
            let present: Vec<Item> = hashed.iter().flatten().copied().collect();
            let mut assigned = vec![0u32; present.len()];
            partition.assign(&present, &mut assigned);
            let mut it = assigned.iter();
            let mut bucket = Vec::with_capacity(hashed.len());
            let mut part = Vec::with_capacity(hashed.len());
            for h in &hashed {
                match h {
                    Some(_) => {
                        let b = it.next().copied().unwrap_or(0);
                        bucket.push(Some(b as i32));
                        part.push(Some(designators[b as usize % designators.len()]));
                    }
                    None => {
                        bucket.push(None);
                        part.push(None);
                    }
                }
            }
            let items = BinaryArray::from_iter(hashed.iter().map(|h| h.as_ref().map(|i| i.0)));
            Ok((items, Int32Array::from(bucket), Int64Array::from(part)))
        })
        .map_err(|e| errors::to_py(py, &e))?;
    Ok((
        items.into_data().to_pyarrow(py)?,
        bucket.into_data().to_pyarrow(py)?,
        part.into_data().to_pyarrow(py)?,
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

/// The distinct items per bucket among the rows of `batch` (columns `item`, binary, and
/// `bucket`, int32; rows without an item are left out), as `(bucket, count)` pairs in bucket
/// order.
/// Every bucket must be one of lane `lane`'s of `lanes` (see [`spark_lane`]).
#[pyfunction]
#[pyo3(signature = (batch, buckets, lane, lanes))]
pub fn spark_counts(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    buckets: u32,
    lane: usize,
    lanes: usize,
) -> PyResult<Vec<(u32, u64)>> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    py.detach(|| -> CliResult<_> {
        let rows = grouped(&batch, buckets, Some((lane, lanes.max(1))))?;
        let mut out: Vec<(u32, u64)> = Vec::new();
        let mut last: Option<(u32, Item)> = None;
        for &(b, item, _) in &rows {
            if last == Some((b, item)) {
                continue;
            }
            last = Some((b, item));
            match out.last_mut() {
                Some((pb, c)) if *pb == b => *c += 1,
                _ => out.push((b, 1)),
            }
        }
        Ok(out)
    })
    .map_err(|e| errors::to_py(py, &e))
}

/// One lane's buckets: the distinct items of each, with the rows carrying each item.
struct LaneBuckets {
    /// Per bucket of the lane (in the lane's order): its number, its distinct items, and
    /// `bounds`: item k's rows are `rows[bounds[k]..bounds[k + 1]]`.
    buckets: Vec<(usize, Vec<Item>, Vec<usize>)>,
    /// The rows, grouped by bucket and item.
    rows: Vec<u32>,
}

fn lane_buckets(plan: &Plan, w: usize, sorted: &[(u32, Item, u32)]) -> LaneBuckets {
    let mut out = LaneBuckets {
        buckets: Vec::new(),
        rows: Vec::with_capacity(sorted.len()),
    };
    let mut i = 0;
    for p in plan.lane_buckets(w) {
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

/// Runs lane `lane` of a run (in its barrier task): opens the lane's connection (the receiver
/// listens on `listen` of `options`, the sender connects to `connect`), runs the lane's buckets
/// (`lane`, `lane` + K, …) on the rows of `batch` (columns `item`, binary, and `bucket`, int32)
/// and ends the lane. `plan` is the dict of `SparkDriver.agree` with `key_fields` added.
///
/// Returns `(rows, stats)`: the receiver's matched rows of `batch` (a pyarrow `Int64Array`,
/// ascending; every row carrying a matched item), empty for the sender; `stats` has
/// `distinct` (items of the lane), `matched` (matched distinct items), `bytes_sent`,
/// `bytes_received` and `seconds`.
#[pyfunction]
#[pyo3(signature = (role, options, plan, lane, batch))]
pub fn spark_lane<'py>(
    py: Python<'py>,
    role: &str,
    options: &Bound<'py, PyDict>,
    plan: &Bound<'py, PyDict>,
    lane: usize,
    batch: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let receiver = receiver_role(role)?;
    let settings = Settings::from_dict(role, options)?;
    let mut cfg = settings.check(py)?;
    let run_id: String = plan_get(plan, "run_id")?
        .extract()
        .map_err(|_| plan_type("run_id"))?;
    let count: u32 = plan_get(plan, "buckets")?
        .extract()
        .map_err(|_| plan_type("buckets"))?;
    let lanes: usize = plan_get(plan, "lanes")?
        .extract()
        .map_err(|_| plan_type("lanes"))?;
    let own_max: u64 = plan_get(plan, "own_max")?
        .extract()
        .map_err(|_| plan_type("own_max"))?;
    let peer_max: u64 = plan_get(plan, "peer_max")?
        .extract()
        .map_err(|_| plan_type("peer_max"))?;
    let key_fields: usize = plan_get(plan, "key_fields")?
        .extract()
        .map_err(|_| plan_type("key_fields"))?;
    let deadline_left: Option<f64> = plan_get(plan, "deadline_left")?
        .extract()
        .map_err(|_| plan_type("deadline_left"))?;
    if lane >= lanes {
        return Err(PyValueError::new_err(format!(
            "lane {lane} of a run with lanes={lanes}"
        )));
    }
    let opts = run_options(&settings, key_fields);
    let b = Buckets {
        count,
        parallel: lanes,
    };
    let plan = Plan::new(&opts, &run_id, b, own_max, peer_max);
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
    let address = match (&settings.net.listen, &settings.net.connect) {
        (Some(a), None) if receiver => a.clone(),
        (None, Some(a)) if !receiver => a.clone(),
        _ => {
            return Err(PyValueError::new_err(
                "a receiver's lane listens (listen=) and a sender's connects (connect=)",
            ));
        }
    };
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let protocol = settings.protocol;
    let threads = settings.threads.unwrap_or(1);
    let watch = stopper.clone();
    let (found, stats) = detached(py, &stopper, move || {
        let start = Instant::now();
        let sorted = grouped(&batch, count, Some((lane, lanes)))?;
        let mut lane_rows = lane_buckets(&plan, lane, &sorted);
        drop(sorted);
        let link = lane_link(receiver, &address, &cfg, limits)?;
        watch.watch(&link);
        let role = if receiver {
            Role::Receiver
        } else {
            Role::Sender
        };
        let mut ch = bucketed::open_lane(link, role, &run_id, lane)?;
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
            (distinct, matched, traffic, start.elapsed().as_secs_f64()),
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
