//! TLS as real deployments use it: an internal CA (`--ca-cert`) and mutual
//! TLS at a gateway (`--client-cert`, `--client-key`), against a scripted
//! server whose certificates the test makes with its own CA; streaming
//! over HTTPS is measured like plain HTTP.

mod common;

use std::sync::Arc;

use common::*;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

struct Pki {
    ca_pem: std::path::PathBuf,
    client_cert: std::path::PathBuf,
    client_key: std::path::PathBuf,
    ca_der: rustls::pki_types::CertificateDer<'static>,
    server_der: rustls::pki_types::CertificateDer<'static>,
    server_key: Vec<u8>,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "goodput test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut sp = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    sp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = sp.signed_by(&server_key, &issuer).unwrap();
    let client_key = KeyPair::generate().unwrap();
    let mut cp = CertificateParams::new(vec!["benchmark-client".to_string()]).unwrap();
    cp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_cert = cp.signed_by(&client_key, &issuer).unwrap();
    let write = |name: &str, text: String| {
        let p = tmp(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    Pki {
        ca_pem: write("ca.pem", ca_cert.pem()),
        client_cert: write("client.pem", client_cert.pem()),
        client_key: write("client.key", client_key.serialize_pem()),
        ca_der: ca_cert.der().clone(),
        server_der: server_cert.der().clone(),
        server_key: server_key.serialize_der(),
    }
}

/// The scripted server with the test CA's certificate, requiring a client
/// certificate from that CA when `mutual`.
async fn server(p: &Pki, mutual: bool) -> ScriptedServer {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if mutual {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(p.ca_der.clone()).unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let key = rustls::pki_types::PrivateKeyDer::try_from(p.server_key.clone()).unwrap();
    let config = builder
        .with_single_cert(vec![p.server_der.clone()], key)
        .unwrap();
    start_with(
        Script::quick(),
        Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
    )
    .await
}

async fn run(url: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let out = tmp("r.json");
    let mut args = vec![
        "run",
        "--url",
        url,
        "--model",
        "m",
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = goodput_async(argv(&args)).await;
    let v = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    (code, v, err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_ca_is_trusted_with_ca_cert_and_only_then() {
    let p = pki();
    let s = server(&p, false).await;
    let (code, v, err) = run(&s.tls_url(), &["--ca-cert", p.ca_pem.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["completed"], 6);
    assert!(
        v["ttft"]["count"].as_u64() == Some(6),
        "streamed over HTTPS"
    );
    let (code, v, err) = run(&s.tls_url(), &[]).await;
    assert_eq!(code, 3, "an unknown CA fails every request: {err}");
    assert_eq!(v["errors"]["by_kind"]["connect"], 6, "{err}");
    assert!(err.contains("certificate"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_presents_the_client_certificate() {
    let p = pki();
    let s = server(&p, true).await;
    let ca = p.ca_pem.to_str().unwrap();
    let (code, v, err) = run(
        &s.tls_url(),
        &[
            "--ca-cert",
            ca,
            "--client-cert",
            p.client_cert.to_str().unwrap(),
            "--client-key",
            p.client_key.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["completed"], 6);
    let (code, _, err) = run(&s.tls_url(), &["--ca-cert", ca]).await;
    assert_eq!(
        code, 3,
        "without a client certificate the gateway refuses: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_warns_and_bad_pem_files_exit_2() {
    let p = pki();
    let s = server(&p, false).await;
    let (code, _, err) = run(&s.tls_url(), &["--insecure"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: --insecure"), "{err}");
    let junk = tmp("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    for flags in [
        vec!["--ca-cert", junk.to_str().unwrap()],
        vec![
            "--client-cert",
            p.client_cert.to_str().unwrap(),
            "--client-key",
            junk.to_str().unwrap(),
        ],
        vec!["--client-cert", p.client_cert.to_str().unwrap()],
    ] {
        let (code, _, err) = run(&s.tls_url(), &flags).await;
        assert_eq!(code, 2, "{flags:?}: {err}");
    }
}
