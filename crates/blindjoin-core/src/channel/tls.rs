//! TLS 1.3 channel between two parties that know each other's certificate (rustls, ring).
//!
//! Each party has a self-signed certificate ([`Identity::generate`]) and accepts exactly one
//! peer: the certificate whose SHA-256 fingerprint it was given ([`PeerCheck::Pinned`]), or a
//! certificate issued by an organisation's CA that names the peer ([`PeerCheck::Ca`]: on both
//! sides, the certificate must carry the expected DNS name in its subjectAltName, so that a
//! CA that issues certificates to many parties does not let any of them pose as the peer).
//! There is no revocation check: a certificate the CA issued is accepted until it expires.
//! Both sides authenticate (mutual TLS); only TLS 1.3 is offered, and the server sends no
//! session tickets.
//!
//! What TLS adds: the peer is the one you named, and nobody on the path reads or changes the
//! bytes. It does not make the peer honest: what a deviating party can learn is the protocol's
//! security model (docs/SECURITY.md).
//!
//! [`Channel::binding`] is 32 bytes of exporter keying material (RFC 8446 §7.5, label
//! `EXPORTER-blindjoin-session`), the same on both ends of one TLS connection and unrelated
//! between two; the handshake mixes it into the session id, so a relay that joins two TLS
//! connections (each with a party it holds a certificate for) is detected before any protocol
//! message.
//!
//! Both directions share the rustls connection state behind a mutex: the receiving half reads
//! ciphertext from its own socket handle without holding the lock and decrypts under it; the
//! sending half encrypts under the lock and writes to the socket without it. The receiving half
//! never writes, so neither half waits on the other's socket.

use super::clock::{Clocked, Limits, as_send_error, map_io};
use super::{Channel, FRAME_HEADER_LEN, FrameReceiver, FrameSender, check_frame_len, read_payload};
use crate::{Error, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The exporter label of the channel binding.
const EXPORTER_LABEL: &[u8] = b"EXPORTER-blindjoin-session";

/// The SHA-256 fingerprint of a certificate (of its DER encoding), written `sha256:HEX`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(cert: &[u8]) -> Self {
        Fingerprint(Sha256::digest(cert).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Fingerprint {
    type Err = String;

    /// Parses `sha256:HEX` (64 hex digits, either case; `:` between bytes allowed, as
    /// `openssl x509 -fingerprint` prints them).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || {
            format!(
                "`{}` is not a certificate fingerprint (expected sha256: and 64 hex digits)",
                crate::error::peer_text(s)
            )
        };
        let hexpart = s
            .trim()
            .strip_prefix("sha256:")
            .or_else(|| s.trim().strip_prefix("SHA256:"))
            .ok_or_else(bad)?;
        let digits: String = hexpart.chars().filter(|&c| c != ':').collect();
        let mut out = [0u8; 32];
        hex::decode_to_slice(&digits, &mut out).map_err(|_| bad())?;
        Ok(Fingerprint(out))
    }
}

/// A party's certificate and private key.
pub struct Identity {
    /// The certificate (DER).
    pub cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.fingerprint())
    }
}

/// The PEM files of a generated identity.
pub struct IdentityPem {
    /// The certificate, PEM.
    pub cert: String,
    /// The private key (PKCS#8), PEM. Secret.
    pub key: String,
}

impl Identity {
    /// A new ECDSA P-256 key and a self-signed certificate naming `name`.
    pub fn generate(name: &str) -> Result<(Identity, IdentityPem)> {
        let fail = |e: rcgen::Error| Error::Tls(format!("cannot generate a certificate: {e}"));
        let key = rcgen::KeyPair::generate().map_err(fail)?;
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(fail)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).map_err(fail)?;
        let pem = IdentityPem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        };
        let id = Identity {
            cert: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()),
        };
        Ok((id, pem))
    }

    /// Reads a certificate and its private key from PEM files.
    pub fn load(cert: &Path, key: &Path) -> Result<Identity> {
        let cert = load_cert(cert)?;
        let key = PrivatePkcs8KeyDer::from_pem_file(key).map_err(|e| {
            Error::Tls(format!(
                "{}: no PKCS#8 private key in PEM form ({e})",
                key.display()
            ))
        })?;
        Ok(Identity { cert, key })
    }

    /// The certificate's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.cert)
    }
}

/// Reads the first certificate of a PEM file.
pub fn load_cert(path: &Path) -> Result<CertificateDer<'static>> {
    CertificateDer::from_pem_file(path).map_err(|e| {
        Error::Tls(format!(
            "{}: no certificate in PEM form ({e})",
            path.display()
        ))
    })
}

/// Reads every certificate of a PEM file (a CA bundle).
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs: std::result::Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| Error::Tls(format!("{}: {e}", path.display())))?
        .collect();
    let certs = certs.map_err(|e| Error::Tls(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::Tls(format!(
            "{}: no certificate in PEM form",
            path.display()
        )));
    }
    Ok(certs)
}

/// Which peer certificate a party accepts.
#[derive(Clone, Debug)]
pub enum PeerCheck {
    /// Exactly the certificate with this fingerprint.
    Pinned(Fingerprint),
    /// Any of the certificates with these fingerprints (a server-aided run's server and first
    /// client, each accepting several known parties).
    AnyOf(Vec<Fingerprint>),
    /// A certificate issued by one of `roots` that names one of `names` (DNS names in its
    /// subjectAltName), whichever side listens.
    Ca {
        /// The CA certificates.
        roots: Vec<CertificateDer<'static>>,
        /// The names the peer's certificate may carry (at least one).
        names: Vec<String>,
    },
}

/// TLS settings of one party: its identity and the peer it accepts.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    client: Arc<rustls::ClientConfig>,
    server: Arc<rustls::ServerConfig>,
    /// Our certificate's fingerprint.
    pub ours: Fingerprint,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_err(e: rustls::Error) -> Error {
    Error::Tls(describe(&e))
}

/// One line for a rustls error, in the user's terms.
fn describe(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::Other(o)) => o.to_string(),
        E::InvalidCertificate(c) => format!("the peer's certificate is not acceptable: {c:?}"),
        E::NoCertificatesPresented => "the peer presented no certificate".into(),
        E::AlertReceived(A::BadCertificate | A::CertificateUnknown | A::UnknownCA) => {
            "the peer refused our certificate (is it the one the peer pinned?)".into()
        }
        E::AlertReceived(A::CertificateRequired) => {
            "the peer requires a client certificate (give --tls-cert and --tls-key)".into()
        }
        E::AlertReceived(a) => format!("the peer ended the TLS connection ({a:?})"),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            "the peer does not speak TLS 1.3 (is it running with --plaintext?)".into()
        }
        other => other.to_string(),
    }
}

#[derive(Debug)]
struct PinMismatch {
    got: Fingerprint,
    want: Vec<Fingerprint>,
}

impl fmt::Display for PinMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let want: Vec<String> = self.want.iter().map(ToString::to_string).collect();
        write!(
            f,
            "the peer's certificate is {}, not the pinned {}",
            self.got,
            want.join(" or ")
        )
    }
}

impl std::error::Error for PinMismatch {}

/// Accepts exactly one certificate, by fingerprint; signatures are checked with its key.
#[derive(Debug)]
struct Pinned {
    want: Vec<Fingerprint>,
    algs: WebPkiSupportedAlgorithms,
}

impl Pinned {
    fn check(&self, cert: &CertificateDer<'_>) -> std::result::Result<(), rustls::Error> {
        let got = Fingerprint::of(cert);
        if self.want.contains(&got) {
            Ok(())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(PinMismatch {
                    got,
                    want: self.want.clone(),
                }))),
            ))
        }
    }
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

impl ClientCertVerifier for Pinned {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> std::result::Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// A CA-issued certificate that must also name the peer (see [`PeerCheck::Ca`]): the CA's
/// chain and usage checks (rustls's WebPKI verifiers), then the name.
#[derive(Debug)]
struct Named {
    server: Arc<rustls::client::WebPkiServerVerifier>,
    client: Arc<dyn ClientCertVerifier>,
    names: Vec<ServerName<'static>>,
}

impl Named {
    fn unnamed(&self) -> rustls::Error {
        let want: Vec<String> = self.names.iter().map(|n| n.to_str().into_owned()).collect();
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
            Arc::new(NameMismatch(want.join(" or "))),
        )))
    }
}

#[derive(Debug)]
struct NameMismatch(String);

impl fmt::Display for NameMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the peer's certificate is issued by the CA but does not name {}",
            self.0
        )
    }
}

impl std::error::Error for NameMismatch {}

impl ServerCertVerifier for Named {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let mut last = self.unnamed();
        for name in &self.names {
            match self
                .server
                .verify_server_cert(end_entity, intermediates, name, ocsp, now)
            {
                Ok(v) => return Ok(v),
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::NotValidForName,
                ))
                | Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::NotValidForNameContext { .. },
                )) => last = self.unnamed(),
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.server.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.server.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.server.supported_verify_schemes()
    }
}

impl ClientCertVerifier for Named {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.client.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> std::result::Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .client
            .verify_client_cert(end_entity, intermediates, now)?;
        if self.names.iter().any(|n| names_peer(end_entity, n)) {
            Ok(verified)
        } else {
            Err(self.unnamed())
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.client.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.client.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.client.supported_verify_schemes()
    }
}

/// Whether the certificate `cert` (DER) names `name` in its subjectAltName.
fn names_peer(cert: &CertificateDer<'_>, name: &ServerName<'_>) -> bool {
    webpki::EndEntityCert::try_from(cert)
        .is_ok_and(|ee| ee.verify_is_valid_for_subject_name(name).is_ok())
}

/// Whether the certificate `cert` (DER) carries the DNS name `name` in its subjectAltName.
pub fn cert_names(cert: &CertificateDer<'_>, name: &str) -> bool {
    ServerName::try_from(name).is_ok_and(|n| names_peer(cert, &n))
}

impl TlsConfig {
    /// The client and server configurations of a party with `identity` that accepts `peer`.
    pub fn new(identity: &Identity, peer: &PeerCheck) -> Result<Self> {
        let p = provider();
        let algs = p.signature_verification_algorithms;
        let versions: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];
        let key = || PrivateKeyDer::Pkcs8(identity.key.clone_key());
        let chain = vec![identity.cert.clone()];

        let (server_v, client_v): (Arc<dyn ServerCertVerifier>, Arc<dyn ClientCertVerifier>) =
            match peer {
                PeerCheck::Pinned(want) => {
                    let v = Arc::new(Pinned {
                        want: vec![*want],
                        algs,
                    });
                    (v.clone(), v)
                }
                PeerCheck::AnyOf(want) => {
                    if want.is_empty() {
                        return Err(Error::Tls("no pinned certificate to accept".into()));
                    }
                    let v = Arc::new(Pinned {
                        want: want.clone(),
                        algs,
                    });
                    (v.clone(), v)
                }
                PeerCheck::Ca {
                    roots: certs,
                    names,
                } => {
                    let names = names
                        .iter()
                        .map(|n| {
                            ServerName::try_from(n.clone()).map_err(|_| {
                                Error::Tls(format!(
                                    "`{}` is not a DNS name a certificate can carry",
                                    crate::error::peer_text(n)
                                ))
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    if names.is_empty() {
                        return Err(Error::Tls(
                            "a CA-issued peer certificate is accepted only with the peer's name"
                                .into(),
                        ));
                    }
                    let mut roots = rustls::RootCertStore::empty();
                    for c in certs {
                        roots
                            .add(c.clone())
                            .map_err(|e| Error::Tls(format!("unusable CA certificate: {e}")))?;
                    }
                    let roots = Arc::new(roots);
                    let sv = rustls::client::WebPkiServerVerifier::builder_with_provider(
                        roots.clone(),
                        p.clone(),
                    )
                    .build()
                    .map_err(|e| Error::Tls(format!("unusable CA certificate: {e}")))?;
                    let cv = rustls::server::WebPkiClientVerifier::builder_with_provider(
                        roots,
                        p.clone(),
                    )
                    .build()
                    .map_err(|e| Error::Tls(format!("unusable CA certificate: {e}")))?;
                    let named = Arc::new(Named {
                        server: sv,
                        client: cv,
                        names,
                    });
                    (named.clone(), named)
                }
            };

        let client = rustls::ClientConfig::builder_with_provider(p.clone())
            .with_protocol_versions(versions)
            .map_err(tls_err)?
            .dangerous()
            .with_custom_certificate_verifier(server_v)
            .with_client_auth_cert(chain.clone(), key())
            .map_err(tls_err)?;
        let mut server = rustls::ServerConfig::builder_with_provider(p)
            .with_protocol_versions(versions)
            .map_err(tls_err)?
            .with_client_cert_verifier(client_v)
            .with_single_cert(chain, key())
            .map_err(tls_err)?;
        server.send_tls13_tickets = 0;
        Ok(TlsConfig {
            client: Arc::new(client),
            server: Arc::new(server),
            ours: identity.fingerprint(),
        })
    }
}

struct Shared {
    conn: Mutex<rustls::Connection>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, rustls::Connection> {
        // A panic elsewhere cannot leave the TLS state half-updated in a way we rely on: every
        // critical section is one rustls call.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The receiving half of a [`TlsChannel`].
pub struct TlsReceiver {
    shared: Arc<Shared>,
    sock: Clocked,
    raw: Vec<u8>,
    pos: usize,
    end: usize,
}

/// The sending half of a [`TlsChannel`].
pub struct TlsSender {
    shared: Arc<Shared>,
    sock: Clocked,
    out: Vec<u8>,
}

/// A framed channel over one TLS 1.3 connection (see the module doc).
pub struct TlsChannel {
    rx: TlsReceiver,
    tx: TlsSender,
    binding: [u8; 32],
    peer: Fingerprint,
    peer_cert: CertificateDer<'static>,
}

impl fmt::Debug for TlsChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TlsChannel(peer {})", self.peer)
    }
}

/// Unwraps the rustls error inside an `io::Error` from a rustls call.
fn io_to_error(e: io::Error, during: &'static str, limits: &Limits) -> Error {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return tls_err(inner.clone());
    }
    map_io(e, during, limits)
}

impl TlsChannel {
    /// A second handle to the socket, to shut it down from another thread (which ends a
    /// blocked read or write of this channel with an error).
    pub fn socket(&self) -> std::io::Result<std::net::TcpStream> {
        self.rx.sock.get_ref().try_clone()
    }
}

impl TlsChannel {
    /// Runs the TLS handshake as the client on `stream`, under `limits`. `server_name` is
    /// checked against the server's certificate only with [`PeerCheck::Ca`].
    pub fn client(
        stream: TcpStream,
        cfg: &TlsConfig,
        server_name: &str,
        limits: Limits,
    ) -> Result<Self> {
        let name = ServerName::try_from(server_name.to_owned()).unwrap_or_else(|_| {
            ServerName::try_from("blindjoin.peer")
                .unwrap_or(ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()))
        });
        let conn = rustls::ClientConnection::new(cfg.client.clone(), name).map_err(tls_err)?;
        Self::establish(stream, rustls::Connection::Client(conn), limits)
    }

    /// Runs the TLS handshake as the server on `stream`, under `limits`.
    pub fn server(stream: TcpStream, cfg: &TlsConfig, limits: Limits) -> Result<Self> {
        let conn = rustls::ServerConnection::new(cfg.server.clone()).map_err(tls_err)?;
        Self::establish(stream, rustls::Connection::Server(conn), limits)
    }

    fn establish(stream: TcpStream, mut conn: rustls::Connection, limits: Limits) -> Result<Self> {
        const DURING: &str = "the TLS handshake";
        let setup = |e| Error::io("cannot configure the TCP connection", e);
        stream.set_nodelay(true).map_err(setup)?;
        let write_half = stream.try_clone().map_err(setup)?;
        let mut sock = Clocked::new(stream, limits);
        while conn.is_handshaking() {
            conn.complete_io(&mut sock)
                .map_err(|e| io_to_error(e, DURING, &limits))?;
        }
        // Flush what the handshake left (the client's Finished).
        while conn.wants_write() {
            conn.write_tls(&mut sock)
                .map_err(|e| io_to_error(e, DURING, &limits))?;
        }
        conn.set_buffer_limit(None);
        let peer_cert = conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.clone().into_owned())
            .ok_or_else(|| Error::Tls("the peer presented no certificate".into()))?;
        let peer = Fingerprint::of(&peer_cert);
        let binding = conn
            .export_keying_material([0u8; 32], EXPORTER_LABEL, None)
            .map_err(tls_err)?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(conn),
        });
        Ok(TlsChannel {
            rx: TlsReceiver {
                shared: shared.clone(),
                sock,
                raw: vec![0u8; 1 << 16],
                pos: 0,
                end: 0,
            },
            tx: TlsSender {
                shared,
                sock: Clocked::new(write_half, limits),
                out: Vec::new(),
            },
            binding,
            peer,
            peer_cert,
        })
    }

    /// The peer's certificate fingerprint.
    pub fn peer_fingerprint(&self) -> Fingerprint {
        self.peer
    }

    /// Whether the peer's certificate carries the DNS name `name` (see [`PeerCheck::Ca`]).
    pub fn peer_is_named(&self, name: &str) -> bool {
        cert_names(&self.peer_cert, name)
    }

    /// Replaces the time limits (after the listener's checks of a candidate peer).
    pub fn set_limits(&mut self, limits: Limits) {
        self.rx.sock.set_limits(limits);
        self.tx.sock.set_limits(limits);
    }
}

impl Read for TlsReceiver {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            {
                let mut conn = self.shared.lock();
                match conn.reader().read(out) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if self.pos < self.end {
                    let mut pending = &self.raw[self.pos..self.end];
                    let before = pending.len();
                    conn.read_tls(&mut pending)?;
                    self.pos += before - pending.len();
                    conn.process_new_packets()
                        .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                    continue;
                }
            }
            let n = self.sock.read(&mut self.raw)?;
            if n == 0 {
                let mut conn = self.shared.lock();
                conn.read_tls(&mut &[][..])?;
                conn.process_new_packets()
                    .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                return match conn.reader().read(out) {
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        Err(io::Error::from(ErrorKind::UnexpectedEof))
                    }
                    Err(e) => Err(e),
                };
            }
            self.pos = 0;
            self.end = n;
        }
    }
}

impl FrameReceiver for TlsReceiver {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let mut frame = Vec::new();
        self.recv_into(what, max_len, &mut frame)?;
        Ok(frame)
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        let limits = *self.sock.limits();
        let mut header = [0u8; FRAME_HEADER_LEN];
        self.read_exact(&mut header)
            .map_err(|e| io_to_error(e, what, &limits))?;
        let len = check_frame_len(what, u32::from_le_bytes(header).into(), max_len)?;
        buf.clear();
        read_payload(self, buf, len).map_err(|e| io_to_error(e, what, &limits))
    }
}

impl TlsSender {
    fn write_records(&mut self, plain: &[u8]) -> io::Result<()> {
        /// Plaintext encrypted per lock: long enough to amortise the lock, short enough that the
        /// receiving half is not held off for long.
        const PIECE: usize = 1 << 17;
        for piece in plain.chunks(PIECE) {
            {
                let mut conn = self.shared.lock();
                conn.writer().write_all(piece)?;
                while conn.wants_write() {
                    conn.write_tls(&mut self.out)?;
                }
            }
            self.sock.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }
}

impl FrameSender for TlsSender {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        let len = u32::try_from(frame.len()).map_err(|_| Error::InvalidParam {
            field: "frame",
            reason: format!("{} bytes do not fit one frame", frame.len()),
        })?;
        let limits = *self.sock.limits();
        let map = |e: io::Error| as_send_error(io_to_error(e, msg, &limits));
        if frame.len() < (1 << 14) {
            let mut small = Vec::with_capacity(FRAME_HEADER_LEN + frame.len());
            small.extend_from_slice(&len.to_le_bytes());
            small.extend_from_slice(frame);
            return self.write_records(&small).map_err(map);
        }
        self.write_records(&len.to_le_bytes()).map_err(map)?;
        self.write_records(frame).map_err(map)
    }

    fn close(&mut self) {
        // Best effort: tell the peer we are done (close_notify), then end our direction.
        {
            let mut conn = self.shared.lock();
            conn.send_close_notify();
            while conn.wants_write() {
                if conn.write_tls(&mut self.out).is_err() {
                    break;
                }
            }
        }
        let _ = self.sock.write_all(&self.out);
        self.out.clear();
        let _ = self.sock.get_ref().shutdown(std::net::Shutdown::Write);
    }
}

impl FrameSender for TlsChannel {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.tx.send(msg, frame)
    }

    fn close(&mut self) {
        self.tx.close();
    }
}

impl FrameReceiver for TlsChannel {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.rx.recv(what, max_len)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.rx.recv_into(what, max_len, buf)
    }
}

impl Channel for TlsChannel {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        (Box::new(&mut self.rx), Box::new(&mut self.tx))
    }

    fn binding(&self) -> Option<[u8; 32]> {
        Some(self.binding)
    }

    fn peer_identity(&self) -> Option<[u8; 32]> {
        Some(self.peer.0)
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        let idle = self.rx.sock.limits().idle;
        self.set_limits(Limits { deadline, idle });
    }
}
