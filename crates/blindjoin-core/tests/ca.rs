//! CA mode: a peer's certificate must be issued by the CA *and* carry the expected name, on
//! whichever side listens. A certificate the same CA issued to another party is refused both
//! ways, with a line naming the name that was expected.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::Error;
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::tls::{Identity, PeerCheck, TlsConfig, cert_names};
use blindjoin_core::channel::{FrameReceiver, FrameSender};
use blindjoin_core::transport::{self, LinkConfig};
use rustls::pki_types::CertificateDer;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

/// An organisation's CA and a function issuing a certificate for a DNS name (written as PEM
/// into `dir`, loaded as an identity).
struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    cert: CertificateDer<'static>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        Ca {
            cert: cert.der().clone(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    fn issue(&self, dir: &Path, name: &str) -> Identity {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (c, k) = (
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        Identity::load(&c, &k).unwrap()
    }

    fn expecting(&self, me: &Identity, names: &[&str]) -> LinkConfig {
        let check = PeerCheck::Ca {
            roots: vec![self.cert.clone()],
            names: names.iter().map(|n| (*n).to_owned()).collect(),
        };
        let mut c = LinkConfig::tls(
            TlsConfig::new(me, &check).unwrap(),
            Limits::new(Duration::from_secs(3), Duration::from_secs(3)),
        );
        c.candidate_wait = Duration::from_millis(800);
        c.contact_wait = Duration::from_millis(500);
        c
    }
}

/// Listens with `listener_cfg`, connects with `connector_cfg`; the listener's result (an error
/// once its deadline passes with only refusals) and the connector's.
fn attempt(
    listener_cfg: LinkConfig,
    connector_cfg: LinkConfig,
) -> (Result<Vec<u8>, Error>, Result<(), Error>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::scope(|s| {
        let listening = s.spawn(move || {
            let mut link = transport::accept(&l, &listener_cfg, &mut |_| {})?;
            link.recv("a test frame", 16)
        });
        let connected = transport::connect(&addr, &connector_cfg, &mut |_| {})
            .and_then(|mut link| link.send("a test frame", b"hello"));
        (listening.join().unwrap(), connected)
    })
}

#[test]
fn a_ca_certificate_must_name_the_peer_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Example CA");
    let a = ca.issue(dir.path(), "a.example");
    let b = ca.issue(dir.path(), "b.example");
    let c = ca.issue(dir.path(), "c.example");
    assert!(cert_names(&b.cert, "b.example"));
    assert!(!cert_names(&b.cert, "c.example"));

    // The right names both ways: the frame arrives.
    let (heard, sent) = attempt(
        ca.expecting(&a, &["b.example"]),
        ca.expecting(&b, &["a.example"]),
    );
    sent.unwrap();
    assert_eq!(heard.unwrap(), b"hello");

    // The listener expects b; c (issued by the same CA) connects: the listener refuses it.
    let (heard, sent) = attempt(
        ca.expecting(&a, &["b.example"]),
        ca.expecting(&c, &["a.example"]),
    );
    assert!(sent.is_err());
    match heard {
        Err(Error::NoAcceptablePeer { last, .. }) => assert!(
            last.contains("the peer's certificate is issued by the CA but does not name b.example"),
            "{last}"
        ),
        other => panic!("{other:?}"),
    }

    // The connector expects b; the listener is c: the connector refuses it.
    let (_, sent) = attempt(
        ca.expecting(&c, &["a.example"]),
        ca.expecting(&a, &["b.example"]),
    );
    let e = sent.unwrap_err().to_string();
    assert!(
        e.contains("the peer's certificate is issued by the CA but does not name b.example"),
        "{e}"
    );

    // A certificate from another CA with the right name: refused.
    let other = Ca::new("Other CA");
    let b2 = other.issue(dir.path(), "b2.example");
    let (heard, _) = attempt(
        ca.expecting(&a, &["b2.example"]),
        other.expecting(&b2, &["a.example"]),
    );
    assert!(heard.is_err());
}

#[test]
fn ca_mode_needs_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Example CA");
    let a = ca.issue(dir.path(), "a.example");
    let check = PeerCheck::Ca {
        roots: vec![ca.cert.clone()],
        names: Vec::new(),
    };
    let e = TlsConfig::new(&a, &check).unwrap_err().to_string();
    assert!(e.contains("only with the peer's name"), "{e}");
}
