//! The grammar of every value a manifest takes (names, quantities, secret
//! references), checked against the rule the API server would apply: a
//! manifest goodput prints is one `kubectl apply` accepts, or goodput
//! exits 2 and says why. `goodput k8s`'s flags parse with these.

/// `--secret-env VAR=SECRET:KEY`: an environment variable read from a Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretEnv {
    /// The variable's name in the pod.
    pub var: String,
    /// The Secret's name.
    pub secret: String,
    /// The key in the Secret.
    pub key: String,
}

/// `--image`: any reference without whitespace (the registry is the judge of the rest).
pub fn image(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().any(char::is_whitespace) {
        return Err(format!(
            "invalid image '{s}': expected a reference such as ghcr.io/OWNER/goodput:TAG"
        ));
    }
    Ok(s.to_string())
}

/// A DNS-1035 label (`--name`, `--namespace`): what a Service name must be.
/// Lower-case letters, digits and '-', starting with a letter, ending with a
/// letter or digit, at most 63 characters.
pub fn dns_label(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("invalid name '{s}': expected at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit"))
    }
}

/// A DNS-1123 subdomain (`--results-claim`, `--cluster-domain`, a Secret's
/// name): dot-separated labels of lower-case letters, digits and '-', each
/// starting and ending with a letter or digit, at most 253 characters.
pub fn dns_subdomain(s: &str) -> Result<String, String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !s.is_empty() && s.len() <= 253 && s.split('.').all(label_ok) {
        Ok(s.to_string())
    } else {
        Err(format!("invalid name '{s}': expected lower-case letters, digits, '-' and '.', each dot-separated part starting and ending with a letter or digit"))
    }
}

/// A Kubernetes quantity (`--cpu`, `--memory`): a decimal number, then a
/// binary suffix (Ki Mi Gi Ti Pi Ei), a decimal one (m k M G T P E), an
/// exponent (e3, E-2) or nothing. The number must be above zero.
pub fn quantity(s: &str) -> Result<String, String> {
    let bad = || {
        format!("invalid quantity '{s}': expected a number above 0 with an optional suffix, e.g. 2, 500m, 1.5, 1Gi, 512Mi")
    };
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let digits_ok = number.chars().filter(|&c| c == '.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    let suffix_ok = match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            true
        }
        e => e
            .strip_prefix(['e', 'E'])
            .map(|x| x.strip_prefix(['+', '-']).unwrap_or(x))
            .is_some_and(|x| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit())),
    };
    let positive = number.parse::<f64>().is_ok_and(|v| v > 0.0);
    if digits_ok && suffix_ok && positive {
        Ok(s.to_string())
    } else {
        Err(bad())
    }
}

/// `--secret-env VAR=SECRET:KEY`.
pub fn secret_env(s: &str) -> Result<SecretEnv, String> {
    let bad = |why: &str| {
        format!("invalid --secret-env '{s}': {why}; expected VAR=SECRET:KEY, e.g. OPENAI_API_KEY=llm-api:key")
    };
    let (var, reference) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let (secret, key) = reference.split_once(':').ok_or_else(|| bad("no ':'"))?;
    let var_ok = var.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !var_ok {
        return Err(bad("the variable's name is letters, digits and '_'"));
    }
    dns_subdomain(secret).map_err(|_| bad("the Secret's name is not a valid name"))?;
    let key_ok = !key.is_empty()
        && key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !key_ok {
        return Err(bad("a Secret's key is letters, digits, '-', '_' and '.'"));
    }
    Ok(SecretEnv {
        var: var.to_string(),
        secret: secret.to_string(),
        key: key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_the_api_servers_grammar() {
        for ok in [
            "2", "500m", "1.5", "1Gi", "512Mi", "1e3", "2E-1", "0.5", ".5", "4k",
        ] {
            assert_eq!(quantity(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "", "0", "-1", "1GB", "1.2.3", "Gi", "1 Gi", "1e", "two", "1gi",
        ] {
            assert!(quantity(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn names_are_dns_labels() {
        assert!(dns_label("goodput-run-2").is_ok());
        for bad in ["", "Goodput", "2run", "run-", "a_b", "a.b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad} accepted");
        }
        assert!(dns_subdomain("cluster.local").is_ok());
        assert!(dns_subdomain("results-1").is_ok());
        for bad in ["", "a..b", "-a.b", "A.b", "a_b"] {
            assert!(dns_subdomain(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn secret_env_names_a_variable_a_secret_and_a_key() {
        assert_eq!(
            secret_env("OPENAI_API_KEY=llm-api:key"),
            Ok(SecretEnv {
                var: "OPENAI_API_KEY".into(),
                secret: "llm-api".into(),
                key: "key".into()
            })
        );
        for bad in [
            "OPENAI_API_KEY",
            "K=secret",
            "1K=s:k",
            "K=Bad:k",
            "K=s:",
            "K=s:a/b",
        ] {
            let e = secret_env(bad).unwrap_err();
            assert!(e.contains("VAR=SECRET:KEY"), "{bad}: {e}");
        }
    }
}
