//! TLS for `https://` targets: rustls with the system's root certificates
//! plus an internal CA (`--ca-cert`), a client certificate for mutual TLS
//! at a gateway (`--client-cert`, `--client-key`), or — only when the user
//! says `--insecure` — no verification at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::error::ClientError;

/// How the client does TLS.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsOptions {
    /// Accept any server certificate (explicit only).
    pub insecure: bool,
    /// PEM file of CA certificates trusted beside the system's.
    pub ca_cert: Option<PathBuf>,
    /// PEM certificate chain and private key presented to the server.
    pub client_auth: Option<(PathBuf, PathBuf)>,
}

/// The certificates of a PEM file (at least one), or why not.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: no PEM certificate (-----BEGIN CERTIFICATE-----) found",
            path.display()
        ));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1), or why not.
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        format!(
            "{}: no PEM private key found ({e}); expected -----BEGIN PRIVATE KEY----- (or RSA/EC)",
            path.display()
        )
    })
}

/// Build the rustls client configuration. ALPN offers HTTP/1.1 only for now.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Tls(e.to_string()))?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = &opts.ca_cert {
            for cert in read_certs(path).map_err(ClientError::Tls)? {
                roots
                    .add(cert)
                    .map_err(|e| ClientError::Tls(format!("{}: {e}", path.display())))?;
            }
        }
        if roots.is_empty() {
            return Err(ClientError::Tls(
                "no system root certificates found (install ca-certificates, pass --ca-cert FILE, or --insecure to skip verification)".into(),
            ));
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &opts.client_auth {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                read_certs(cert).map_err(ClientError::Tls)?,
                read_key(key).map_err(ClientError::Tls)?,
            )
            .map_err(|e| ClientError::Tls(format!("client certificate: {e}")))?,
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
