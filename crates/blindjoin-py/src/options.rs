//! The keyword options of `send` and `receive`, named as the CLI's flags with underscores, and
//! the checks the CLI makes before it reads or connects.
//!
//! Python values are turned into the CLI's types here ([`Settings`]); the checks that clap
//! makes on the command line (one of `listen` and `connect`, the TLS options that need or
//! exclude each other) are made by [`Settings::check`], which then runs the CLI's own checks
//! (`check_security`, `NetOpts::link_config`, the country code rule).

use blindjoin_cli::cli::{parse_bytes, parse_count};
use blindjoin_cli::input::Format;
use blindjoin_cli::link::{NetOpts, parse_duration};
use blindjoin_cli::normalize::{Normalize, Normalizer};
use blindjoin_core::channel::tls::Fingerprint;
use blindjoin_core::transport::LinkConfig;
use blindjoin_psi::{Protocol, RunOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use std::path::PathBuf;
use std::time::Duration;

/// The protocol when none is named.
pub const DEFAULT_PROTOCOL: &str = "kkrt16";

/// Every option a run takes (besides `data` and `column`), in the order the docs list them.
pub const OPTIONS: &[&str] = &[
    "protocol",
    "listen",
    "connect",
    "normalize",
    "country_code",
    "threads",
    "format",
    "insecure",
    "kappa",
    "lambda_",
    "allow_weak",
    "expect_peer_size",
    "max_peer_size",
    "memory",
    "tls_cert",
    "tls_key",
    "peer_cert",
    "peer_fingerprint",
    "peer_ca",
    "peer_name",
    "plaintext",
    "deadline",
    "idle_timeout",
];

/// A run's settings, parsed from the keyword options.
pub struct Settings {
    /// The protocol.
    pub protocol: &'static Protocol,
    /// Address, TLS and time limits, as the CLI's flags.
    pub net: NetOpts,
    /// Key normalisation.
    pub normalize: Normalize,
    /// Country calling code for `normalize="phone"`.
    pub country_code: Option<String>,
    /// Worker threads (`None`: all cores).
    pub threads: Option<usize>,
    /// The format of a file input (`None`: by its extension).
    pub format: Option<Format>,
    /// Whether the insecure `naive` protocol was asked for.
    pub insecure: bool,
    /// λ, the weak-parameter permission, the expected peer size and the memory budget.
    pub opts: RunOptions,
    /// The largest peer set accepted (`None`: the CLI's default).
    pub max_peer_size: Option<u64>,
}

/// The normaliser of a name (`none`, `trim`, `nfc`, `lower`, `email`, `phone`).
fn normalize_named(name: &str) -> PyResult<Normalize> {
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "none" => Normalize::None,
        "trim" => Normalize::Trim,
        "nfc" => Normalize::Nfc,
        "lower" => Normalize::Lower,
        "email" => Normalize::Email,
        "phone" => Normalize::Phone,
        _ => {
            return Err(PyValueError::new_err(format!(
                "normalize must be one of none, trim, nfc, lower, email, phone, not `{name}`"
            )));
        }
    })
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

fn want(name: &str, what: &str, v: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!("{name} must be {what}, not {}", type_name(v)))
}

fn boolean(name: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    v.cast::<PyBool>()
        .map(|b| b.is_true())
        .map_err(|_| want(name, "True or False", v))
}

fn string(name: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.cast::<PyString>()
        .map_err(|_| want(name, "a string", v))?
        .to_str()
        .map(str::to_owned)
}

/// An int, or a string the CLI's parser reads (`2^20`, `1e6`).
fn count(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() {
        return Err(want(name, "an int or a string such as \"2^20\"", v));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<u64>().map_err(|_| {
            PyValueError::new_err(format!("{name} must be a count of at least 0, not {v}"))
        });
    }
    let s = v
        .cast::<PyString>()
        .map_err(|_| want(name, "an int or a string such as \"2^20\"", v))?;
    parse_count(s.to_str()?).map_err(|e| PyValueError::new_err(format!("{name}: {e}")))
}

/// Seconds as a number, or a string the CLI's parser reads (`30s`, `10m`, `2h`).
fn duration(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if !v.is_instance_of::<PyBool>()
        && (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>())
    {
        let secs: f64 = v.extract()?;
        return Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PyValueError::new_err(format!("{name} must be a positive duration, not {v}"))
            });
    }
    let s = v
        .cast::<PyString>()
        .map_err(|_| want(name, "seconds or a string such as \"2h\"", v))?;
    parse_duration(s.to_str()?).map_err(|e| PyValueError::new_err(format!("{name}: {e}")))
}

fn path(name: &str, v: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    v.extract::<PathBuf>()
        .map_err(|_| want(name, "a path (str or os.PathLike)", v))
}

/// The CLI's flags in a message, written as the keyword options (`--tls-cert` → `tls_cert`).
pub fn as_keywords(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("--") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
            .unwrap_or(after.len());
        if end == 0 {
            out.push_str("--");
        } else {
            out.push_str(&after[..end].replace('-', "_"));
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

impl Settings {
    /// Parses the options of `function` (`send` or `receive`); `None` values are defaults.
    pub fn from_dict(function: &str, options: &Bound<'_, PyDict>) -> PyResult<Settings> {
        let mut s = Settings {
            protocol: Protocol::named(DEFAULT_PROTOCOL)
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            net: NetOpts {
                listen: None,
                connect: None,
                tls_cert: None,
                tls_key: None,
                peer_cert: None,
                peer_fingerprint: None,
                peer_ca: None,
                peer_name: None,
                plaintext: false,
                deadline: Duration::from_secs(2 * 3600),
                idle_timeout: Duration::from_secs(5 * 60),
            },
            normalize: Normalize::None,
            country_code: None,
            threads: None,
            format: None,
            insecure: false,
            opts: RunOptions::default(),
            max_peer_size: None,
        };
        for (key, v) in options.iter() {
            let key: String = key.extract()?;
            if v.is_none() {
                if OPTIONS.contains(&key.as_str()) || key == "lambda" {
                    continue;
                }
                return Err(unknown(function, &key));
            }
            let v = &v;
            match key.as_str() {
                "protocol" => {
                    s.protocol = Protocol::named(&string("protocol", v)?)
                        .map_err(|e| PyValueError::new_err(e.to_string()))?;
                }
                "listen" => s.net.listen = Some(string("listen", v)?),
                "connect" => s.net.connect = Some(string("connect", v)?),
                "normalize" => s.normalize = normalize_named(&string("normalize", v)?)?,
                "country_code" => {
                    s.country_code = Some(if v.is_instance_of::<PyInt>() {
                        v.extract::<u64>()?.to_string()
                    } else {
                        string("country_code", v)?
                    });
                }
                "threads" => {
                    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
                        return Err(want("threads", "an int", v));
                    }
                    let n: usize = v.extract().unwrap_or(0);
                    if n == 0 {
                        return Err(PyValueError::new_err("threads must be at least 1"));
                    }
                    s.threads = Some(n);
                }
                "format" => {
                    s.format = Some(match string("format", v)?.as_str() {
                        "csv" => Format::Csv,
                        "parquet" => Format::Parquet,
                        "lines" => Format::Lines,
                        other => {
                            return Err(PyValueError::new_err(format!(
                                "format must be csv, parquet or lines, not `{other}`"
                            )));
                        }
                    });
                }
                "insecure" => s.insecure = boolean("insecure", v)?,
                "kappa" => {
                    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
                        return Err(want("kappa", "an int", v));
                    }
                    s.opts.kappa = v.extract().map_err(|_| {
                        PyValueError::new_err(format!("kappa must be 80, 128, 192 or 256, not {v}"))
                    })?;
                }
                "lambda_" | "lambda" => {
                    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
                        return Err(want("lambda_", "an int", v));
                    }
                    s.opts.lambda = v.extract().map_err(|_| {
                        PyValueError::new_err(format!("lambda_ must be between 1 and 80, not {v}"))
                    })?;
                }
                "allow_weak" => s.opts.allow_weak = boolean("allow_weak", v)?,
                "expect_peer_size" => {
                    s.opts.expected_peer_set_size = Some(count("expect_peer_size", v)?);
                }
                "max_peer_size" => s.max_peer_size = Some(count("max_peer_size", v)?),
                "memory" => {
                    s.opts.memory_budget =
                        if v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() {
                            Some(v.extract::<u64>().map_err(|_| {
                                PyValueError::new_err(format!("memory must be at least 0, not {v}"))
                            })?)
                        } else {
                            let text = v.cast::<PyString>().map_err(|_| {
                                want("memory", "bytes or a string such as \"4G\"", v)
                            })?;
                            parse_bytes(text.to_str()?)
                                .map_err(|e| PyValueError::new_err(format!("memory: {e}")))?
                        };
                }
                "tls_cert" => s.net.tls_cert = Some(path("tls_cert", v)?),
                "tls_key" => s.net.tls_key = Some(path("tls_key", v)?),
                "peer_cert" => s.net.peer_cert = Some(path("peer_cert", v)?),
                "peer_ca" => s.net.peer_ca = Some(path("peer_ca", v)?),
                "peer_name" => s.net.peer_name = Some(string("peer_name", v)?),
                "peer_fingerprint" => {
                    let text = string("peer_fingerprint", v)?;
                    s.net.peer_fingerprint =
                        Some(text.parse::<Fingerprint>().map_err(|e| {
                            PyValueError::new_err(format!("peer_fingerprint: {e}"))
                        })?);
                }
                "plaintext" => s.net.plaintext = boolean("plaintext", v)?,
                "deadline" => s.net.deadline = duration("deadline", v)?,
                "idle_timeout" => s.net.idle_timeout = duration("idle_timeout", v)?,
                _ => return Err(unknown(function, &key)),
            }
        }
        Ok(s)
    }

    /// The normaliser both parties must share.
    pub fn normalizer(&self) -> Normalizer {
        Normalizer {
            kind: self.normalize,
            country_code: self.country_code.clone(),
        }
    }

    /// The checks clap and the CLI make before reading or connecting; returns the link
    /// configuration. Messages name the keyword options.
    pub fn check(&self, py: Python<'_>) -> PyResult<LinkConfig> {
        let n = &self.net;
        let value_error = |m: String| PyValueError::new_err(as_keywords(&m));
        if n.listen.is_some() == n.connect.is_some() {
            return Err(PyValueError::new_err(
                "give exactly one of listen (an address such as \"0.0.0.0:7878\" to wait for \
                 the peer) and connect (the peer's address)",
            ));
        }
        if n.tls_cert.is_some() != n.tls_key.is_some() {
            return Err(PyValueError::new_err(
                "tls_cert and tls_key go together: give both (make them with `blindjoin keygen`)",
            ));
        }
        let peers = [
            n.peer_cert.is_some(),
            n.peer_fingerprint.is_some(),
            n.peer_ca.is_some(),
        ];
        if peers.iter().filter(|&&p| p).count() > 1 {
            return Err(PyValueError::new_err(
                "give only one of peer_cert, peer_fingerprint and peer_ca",
            ));
        }
        if n.peer_ca.is_some() != n.peer_name.is_some() {
            return Err(PyValueError::new_err(
                "peer_ca and peer_name go together: the peer's certificate must be issued by the \
                 CA and carry the name (its subjectAltName)",
            ));
        }
        if n.plaintext && (n.tls_cert.is_some() || peers.contains(&true)) {
            return Err(PyValueError::new_err(
                "plaintext=True excludes the TLS options (tls_cert, tls_key, peer_cert, \
                 peer_fingerprint, peer_ca, peer_name)",
            ));
        }
        if self.protocol.is_insecure() && !self.insecure {
            return Err(PyValueError::new_err(format!(
                "protocol `{}` is insecure (the receiver can test guesses against the sender's \
                 hashes); it is meant for benchmarks. Pass insecure=True to run it anyway",
                self.protocol
            )));
        }
        if let Some(cc) = &self.country_code
            && (cc.is_empty() || !cc.bytes().all(|b| b.is_ascii_digit()) || cc.len() > 3)
        {
            return Err(PyValueError::new_err(format!(
                "country_code must be 1 to 3 digits, not `{cc}`"
            )));
        }
        blindjoin_psi::check_security(self.protocol, &self.opts)
            .map_err(|e| value_error(e.to_string()))?;
        let link = n.link_config().map_err(|e| match e {
            blindjoin_cli::error::CliError::Usage(m) => value_error(m),
            other => crate::errors::to_py(py, &other),
        })?;
        if self.opts.allow_weak && self.opts.lambda < blindjoin_psi::MIN_LAMBDA {
            let message = format!(
                "λ = {} is below {}: false matches and failed runs have probability up to 2^-{} \
                 (allow_weak=True)",
                self.opts.lambda,
                blindjoin_psi::MIN_LAMBDA,
                self.opts.lambda
            );
            let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
            let text = std::ffi::CString::new(message)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            PyErr::warn(py, &category, &text, 2)?;
        }
        Ok(link)
    }
}

fn unknown(function: &str, key: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{function}() got an unexpected keyword argument '{key}'; the options are: column, {}",
        OPTIONS.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_keywords() {
        assert_eq!(
            as_keywords("give --tls-cert and --tls-key; or --plaintext to send"),
            "give tls_cert and tls_key; or plaintext to send"
        );
        assert_eq!(as_keywords("(--allow-weak)"), "(allow_weak)");
        assert_eq!(as_keywords("a -- b"), "a -- b");
        assert_eq!(as_keywords("no flags"), "no flags");
    }

    #[test]
    fn normalizers_by_name() {
        assert!(matches!(normalize_named("email"), Ok(Normalize::Email)));
        assert!(matches!(normalize_named(" NFC "), Ok(Normalize::Nfc)));
        assert!(matches!(normalize_named("none"), Ok(Normalize::None)));
    }
}
