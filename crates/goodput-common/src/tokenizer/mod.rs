//! The one fixed client-side tokenizer of a run.
//!
//! Every client-side token count in a run (prompt lengths, output lengths when
//! the server reports no usage, per-event token counts) comes from the single
//! [`Tokenizer`] built here, so numbers from servers that do not report usage
//! stay comparable. It is one of two kinds:
//!
//! - a built-in tiktoken encoding (`tiktoken:o200k_base`, the default, or
//!   `tiktoken:cl100k_base`), compiled into the binary: a fixed client unit
//!   that needs no network and no file, but is not the served model's own;
//! - the served model's own tokenizer, a Hugging Face `tokenizer.json` given
//!   by path, whose counts are evidence of the model's token counts.
//!
//! A run records which one it used as a [`TokenizerIdentity`]: the spec, the
//! kind, the name and the SHA-256 of the bytes the tokens came from.

mod bpe;
mod hugging_face;
// Building a table from a rank file is the build script's (and the tests');
// a run only reads the compiled tables.
#[cfg_attr(not(test), allow(dead_code))]
mod rank_table;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use bpe::Bpe;
use hugging_face::HuggingFace;

/// The split pattern of `o200k_base` (as published with tiktoken).
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+"
);

/// [`O200K_PATTERN`], for the split's own tests.
#[cfg(test)]
pub(crate) const O200K_PATTERN_FOR_TESTS: &str = O200K_PATTERN;

/// The split pattern of `cl100k_base`.
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// The rank files, for the tests (a run uses the tables the build script
/// made from them).
#[cfg(test)]
const O200K_RANKS: &str = include_str!("../../assets/o200k_base.tiktoken");
#[cfg(test)]
const CL100K_RANKS: &str = include_str!("../../assets/cl100k_base.tiktoken");

/// A built-in encoding: its rank table (built from the rank file at compile
/// time, `build.rs`), its split pattern, and the rank file's hash.
struct Builtin {
    name: &'static str,
    arena: &'static [u8],
    offsets: &'static [u8],
    slots: &'static [u8],
    #[cfg(test)]
    ranks: &'static str,
    pattern: &'static str,
    /// `sha256sum` of the rank file, written down rather than computed at
    /// every start (hashing the 3.6 MB asset was a tenth of start-up's
    /// CPU); a test checks it against the asset.
    sha256: &'static str,
}

static O200K: Builtin = Builtin {
    name: "o200k_base",
    arena: include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.arena")),
    offsets: include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.offsets")),
    slots: include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.slots")),
    #[cfg(test)]
    ranks: O200K_RANKS,
    pattern: O200K_PATTERN,
    sha256: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
};

static CL100K: Builtin = Builtin {
    name: "cl100k_base",
    arena: include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.arena")),
    offsets: include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.offsets")),
    slots: include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.slots")),
    #[cfg(test)]
    ranks: CL100K_RANKS,
    pattern: CL100K_PATTERN,
    sha256: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
};

/// Errors building a tokenizer from a `--tokenizer` spec.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The spec (given here) names no built-in encoding, and no file as it
    /// does not look like a path; the message lists the valid values.
    #[error("unknown tokenizer '{0}': valid values are tiktoken:o200k_base, tiktoken:cl100k_base, none, or the path to a Hugging Face tokenizer.json")]
    Unknown(String),
    /// A built-in tiktoken encoding's embedded tables failed to load.
    #[error("could not load the built-in encoding {name}: {message}")]
    Load {
        /// The encoding: `o200k_base` or `cl100k_base`.
        name: String,
        /// Why it failed to load.
        message: String,
    },
    /// The path names no file that could be read.
    #[error("could not read the tokenizer file {}: {reason}", path.display())]
    Unreadable {
        /// The path, as given in the spec.
        path: PathBuf,
        /// Why it could not be read: the I/O error, or that it is a directory.
        reason: String,
    },
    /// The file was read but is not a tokenizer.json `tokenizers` can load.
    #[error("{} is not a valid Hugging Face tokenizer.json: {reason}", path.display())]
    Invalid {
        /// The path, as given in the spec.
        path: PathBuf,
        /// The `tokenizers` crate's error.
        reason: String,
    },
}

/// Which kind of tokenizer a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenizerKind {
    /// A built-in tiktoken encoding: a fixed client-side unit.
    Tiktoken,
    /// A Hugging Face tokenizer.json: the model's own tokenizer.
    HuggingFace,
    /// No client-side counting.
    None,
    /// The served model's own tokenizer, asked through the server (its
    /// `/tokenize` route): counts only, for building prompts before a run.
    Server,
}

/// What a run's token counts were made with, saved in every result so two
/// results can be told apart when their tokenizers differ, even by a file
/// edited in place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenizerIdentity {
    /// The canonical spec: `tiktoken:o200k_base`, `none`, or the path as given.
    pub spec: String,
    /// Which kind of tokenizer it is.
    pub kind: TokenizerKind,
    /// The encoding's name (`o200k_base`), the file's name (`tokenizer.json`)
    /// or `none`.
    pub name: String,
    /// Lowercase hex SHA-256 of the tokenizer's bytes: the tokenizer.json
    /// file, or the embedded `.tiktoken` rank file; `None` for `none`.
    pub sha256: Option<String>,
}

/// What does the tokenizing (each shared: a clone is a reference count).
#[derive(Clone)]
enum Backing {
    None,
    Tiktoken(Arc<Bpe>),
    HuggingFace(Arc<HuggingFace>),
    Counted(Arc<Count>),
}

/// A count of text's tokens made elsewhere (the server's `/tokenize`).
type Count = dyn Fn(&str) -> Option<usize> + Send + Sync;

/// A tokenizer, cheap to clone (shared behind an `Arc`).
#[derive(Clone)]
pub struct Tokenizer {
    backing: Backing,
    identity: Arc<TokenizerIdentity>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("spec", &self.identity.spec)
            .field("kind", &self.identity.kind)
            .finish()
    }
}

/// The default tokenizer spec.
pub const DEFAULT_TOKENIZER: &str = "tiktoken:o200k_base";

/// Lowercase hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Tokenizer {
    /// Build from a spec: `tiktoken:o200k_base`, `tiktoken:cl100k_base`
    /// (the prefix may be left out), `none`, or the path to a Hugging Face
    /// tokenizer.json.
    ///
    /// A spec that names no file and does not look like a path either (no
    /// directory separator, no extension: `gpt2`) is [`TokenizerError::Unknown`],
    /// which lists what is valid, rather than a missing file.
    pub fn from_spec(spec: &str) -> Result<Self, TokenizerError> {
        let builtin = spec.strip_prefix("tiktoken:");
        match builtin.unwrap_or(spec) {
            "none" if builtin.is_none() => Ok(Tokenizer {
                backing: Backing::None,
                identity: Arc::new(TokenizerIdentity {
                    spec: "none".into(),
                    kind: TokenizerKind::None,
                    name: "none".into(),
                    sha256: None,
                }),
            }),
            "o200k_base" => Self::tiktoken(&O200K),
            "cl100k_base" => Self::tiktoken(&CL100K),
            _ if builtin.is_some() => Err(TokenizerError::Unknown(spec.to_string())),
            _ => Self::hugging_face(spec),
        }
    }

    fn tiktoken(builtin: &'static Builtin) -> Result<Self, TokenizerError> {
        let name = builtin.name;
        let bpe = Bpe::from_static(
            (builtin.arena, builtin.offsets, builtin.slots),
            builtin.pattern,
        )
        .map_err(|message| TokenizerError::Load {
            name: name.to_string(),
            message,
        })?;
        Ok(Tokenizer {
            backing: Backing::Tiktoken(Arc::new(bpe)),
            identity: Arc::new(TokenizerIdentity {
                spec: format!("tiktoken:{name}"),
                kind: TokenizerKind::Tiktoken,
                name: name.to_string(),
                sha256: Some(builtin.sha256.to_string()),
            }),
        })
    }

    fn hugging_face(spec: &str) -> Result<Self, TokenizerError> {
        let path = Path::new(spec);
        let unreadable = |reason: String| TokenizerError::Unreadable {
            path: path.to_path_buf(),
            reason,
        };
        if path.is_dir() {
            return Err(unreadable(
                "it is a directory; give the path of the tokenizer.json file in it".into(),
            ));
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && !spec.contains(['/', '\\'])
                    && path.extension().is_none() =>
            {
                return Err(TokenizerError::Unknown(spec.to_string()));
            }
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let backing = HuggingFace::from_bytes(path, &bytes)?;
        let name = path
            .file_name()
            .map_or_else(|| spec.to_string(), |n| n.to_string_lossy().into_owned());
        Ok(Tokenizer {
            backing: Backing::HuggingFace(Arc::new(backing)),
            identity: Arc::new(TokenizerIdentity {
                spec: spec.to_string(),
                kind: TokenizerKind::HuggingFace,
                name,
                sha256: Some(sha256_hex(&bytes)),
            }),
        })
    }

    /// The served model's own tokenizer, counting through `count` (a call
    /// to the server's `/tokenize`): for building prompts of exact lengths
    /// before a run where no local copy of the tokenizer is found. It
    /// neither encodes nor decodes, and is never a run's tokenizer (a run
    /// counts output per request, which must not cost a round trip).
    pub fn counted_by(
        name: &str,
        count: impl Fn(&str) -> Option<usize> + Send + Sync + 'static,
    ) -> Tokenizer {
        Tokenizer {
            backing: Backing::Counted(Arc::new(count)),
            identity: Arc::new(TokenizerIdentity {
                spec: format!("server:{name}"),
                kind: TokenizerKind::Server,
                name: name.to_string(),
                sha256: None,
            }),
        }
    }

    /// The canonical spec string, as recorded in a result's `config`.
    pub fn spec(&self) -> &str {
        &self.identity.spec
    }

    /// What this tokenizer is, to be saved with every result.
    pub fn identity(&self) -> TokenizerIdentity {
        (*self.identity).clone()
    }

    /// Whether this is the model's own tokenizer (a tokenizer.json), whose
    /// counts are evidence of the model's token counts. A tiktoken encoding
    /// is only a fixed client-side unit, whatever model is served.
    pub fn is_model_tokenizer(&self) -> bool {
        matches!(self.backing, Backing::HuggingFace(_) | Backing::Counted(_))
    }

    /// Whether every word of the shipped list ([`crate::words`]) is one
    /// token, with or without a leading space, and a period after one is
    /// one more: true of the built-in encodings (the word list's test
    /// encodes every word under both), so text of those words is counted
    /// without encoding it.
    pub fn counts_list_words_as_single_tokens(&self) -> bool {
        matches!(self.backing, Backing::Tiktoken(_))
    }

    /// Make ready what the first count needs: a built-in encoding compiles
    /// its split pattern on first use (1.5 ms for o200k), and a run calls
    /// this on a thread of its own while it connects. Nothing to do for the
    /// others.
    pub fn prepare(&self) {
        if let Backing::Tiktoken(bpe) = &self.backing {
            bpe.prepare();
        }
    }

    /// Whether this tokenizer counts tokens (`none` does not).
    pub fn is_enabled(&self) -> bool {
        !matches!(self.backing, Backing::None)
    }

    /// Number of tokens in `text` (no special tokens, no BOS). `None` for the
    /// `none` tokenizer, and for text a tokenizer.json cannot encode.
    pub fn count(&self, text: &str) -> Option<usize> {
        match &self.backing {
            Backing::None => None,
            Backing::Tiktoken(bpe) => Some(bpe.count(text)),
            Backing::HuggingFace(hf) => hf.count(text),
            Backing::Counted(count) => count(text),
        }
    }

    /// Token ids of `text` (no special tokens). `None` as for [`Tokenizer::count`].
    pub fn encode(&self, text: &str) -> Option<Vec<u32>> {
        match &self.backing {
            Backing::None | Backing::Counted(_) => None,
            Backing::Tiktoken(bpe) => Some(bpe.encode(text)),
            Backing::HuggingFace(hf) => hf.encode(text),
        }
    }

    /// The text of the tokens `ids`. `None` for `none` and when an id is not
    /// in the vocabulary.
    ///
    /// With a built-in encoding `decode(encode(t)) == t`; ids that cut a
    /// character in two (part of an emoji's byte tokens) give U+FFFD for
    /// the partial character. A tokenizer.json decodes through its own
    /// decoder, which gives back its normalized text (lowercased, say, or
    /// with the spacing its decoder restores), special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Option<String> {
        match &self.backing {
            Backing::None | Backing::Counted(_) => None,
            Backing::Tiktoken(bpe) => bpe
                .decode(ids)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
            Backing::HuggingFace(hf) => hf.decode(ids),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_both_builtin_encodings() {
        for spec in ["tiktoken:o200k_base", "cl100k_base"] {
            let t = Tokenizer::from_spec(spec).unwrap();
            assert_eq!(t.count(" the"), Some(1));
            assert_eq!(t.count("hello world"), Some(2));
        }
    }

    /// The compact encoder against tiktoken-rs, the reference, on text of
    /// every kind the split patterns distinguish.
    #[test]
    fn matches_tiktoken_rs_exactly() {
        use rand::{Rng, SeedableRng};
        let mut texts: Vec<String> = vec![
            "Hello, world! It's 2026; we'll see.\n\n  Indented\tline\r\nand CAPS'LL DON'T".into(),
            "fn main() { let x = vec![1, 2, 3]; println!(\"{x:?}\"); }   \n\n\n".into(),
            "日本語のテキスト、中文文本，한국어 텍스트 — émigré naïve façade 😀👍🏽 ∑∫√".into(),
            "1234567890 3.14159 -42 +7e10 0x1F 100,000.00".into(),
            "   leading and trailing spaces   ".into(),
            " ".repeat(300),
            "a".repeat(1000),
            "https://example.com/path?q=1&r=two#frag /usr/local/bin//".into(),
        ];
        let alphabet: Vec<char> = "abcXYZ019 \n\t.,'!?-_/\\\"éü日本😀ßΩж".chars().collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for _ in 0..300 {
            let len = rng.random_range(0..200);
            texts.push(
                (0..len)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect(),
            );
        }
        let words = crate::words::words();
        texts.push(words.join(" "));
        for (spec, reference) in [
            ("o200k_base", tiktoken_rs::o200k_base().unwrap()),
            ("cl100k_base", tiktoken_rs::cl100k_base().unwrap()),
        ] {
            let ours = Tokenizer::from_spec(spec).unwrap();
            for t in &texts {
                assert_eq!(
                    ours.encode(t).unwrap(),
                    reference.encode_ordinary(t),
                    "{spec}: {t:?}"
                );
                assert_eq!(ours.count(t).unwrap(), reference.encode_ordinary(t).len());
                assert_eq!(ours.decode(&ours.encode(t).unwrap()).as_ref(), Some(t));
            }
        }
    }

    #[test]
    fn none_counts_nothing_and_unknown_is_an_error() {
        let none = Tokenizer::from_spec("none").unwrap();
        assert_eq!(none.count("x"), None);
        assert_eq!(none.decode(&[1]), None);
        assert!(!none.is_enabled() && !none.is_model_tokenizer());
        assert!(!none.counts_list_words_as_single_tokens());
        // A bare word that names no file is an unknown name, not a missing
        // file; so is an unknown tiktoken encoding, even one named `none`.
        for spec in ["gpt2", "tiktoken:gpt2", "tiktoken:none"] {
            let err = Tokenizer::from_spec(spec).unwrap_err();
            assert!(
                matches!(&err, TokenizerError::Unknown(s) if s == spec),
                "{err:?}"
            );
            let message = err.to_string();
            assert!(message.contains("tiktoken:o200k_base"), "{message}");
            assert!(message.contains("tokenizer.json"), "{message}");
        }
    }

    /// Request tasks on every runtime thread share the run's tokenizer,
    /// whichever kind it is: it must stay `Send + Sync` (a compile check).
    #[test]
    fn tokenizer_is_shared_across_threads() {
        fn shared<T: Send + Sync + 'static>() {}
        shared::<Tokenizer>();
    }

    /// The tables the build script made are the ones built at run time
    /// from the same rank files.
    #[test]
    fn the_compiled_tables_are_the_rank_files() {
        for b in [&O200K, &CL100K] {
            let (arena, offsets, slots) = rank_table::build_table(b.ranks).unwrap();
            let same = arena == b.arena && offsets == b.offsets && slots == b.slots;
            assert!(same, "{}", b.name);
        }
    }

    /// Every token of both encodings is found at its rank, its bytes come
    /// back from its rank, and byte strings that are no token (each token
    /// with a byte more) are not found.
    #[test]
    fn every_token_is_found_at_its_rank() {
        for b in [&O200K, &CL100K] {
            let bpe = bpe::Bpe::from_static((b.arena, b.offsets, b.slots), b.pattern).unwrap();
            let mut decoded = Vec::new();
            for line in b.ranks.lines() {
                let (text, rank) = line.split_once(' ').unwrap();
                let rank: u32 = rank.parse().unwrap();
                decoded.clear();
                rank_table::decode_base64(text.as_bytes(), &mut decoded).unwrap();
                assert_eq!(bpe.rank(&decoded), Some(rank), "{} {line}", b.name);
                assert_eq!(bpe.decode(&[rank]).as_deref(), Some(&decoded[..]));
                decoded.push(0xff);
                assert_eq!(bpe.rank(&decoded), None, "{} {line} + 0xff", b.name);
            }
        }
    }

    /// Rank files the table cannot hold are refused, with the reason.
    #[test]
    fn rank_files_the_table_cannot_hold_are_refused() {
        let cases = [
            ("YQ== 0\nYg== 0\n", "two tokens"),
            ("YQ== 0\nYg== 99999\n", "too sparse"),
            ("YQ== 0\n 1\n", "empty token"),
            (
                &format!("{} 0\n", "YWFh".repeat(100)),
                "more than a slot holds",
            ),
        ];
        for (file, why) in cases {
            let err = rank_table::build_table(file).unwrap_err();
            assert!(err.contains(why), "{file:?}: {err}");
        }
        assert!(
            rank_table::build_table("YQ== 0\nYg== 2\n").is_ok(),
            "a gap is fine"
        );
    }

    #[test]
    fn the_written_digests_are_the_assets() {
        for b in [&O200K, &CL100K] {
            assert_eq!(sha256_hex(b.ranks.as_bytes()), b.sha256, "{}", b.name);
        }
    }

    #[test]
    fn sha256_hex_is_lowercase_sha256() {
        // The FIPS 180-2 test vector.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn builtin_identity_names_the_encoding_and_hashes_its_asset() {
        // The digests are `sha256sum assets/*.tiktoken`: a changed asset
        // changes every result's identity, and must fail here first.
        for (spec, name, sha) in [
            (
                "o200k_base",
                "o200k_base",
                "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            ),
            (
                "tiktoken:cl100k_base",
                "cl100k_base",
                "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
            ),
        ] {
            let t = Tokenizer::from_spec(spec).unwrap();
            assert_eq!(
                t.identity(),
                TokenizerIdentity {
                    spec: format!("tiktoken:{name}"),
                    kind: TokenizerKind::Tiktoken,
                    name: name.into(),
                    sha256: Some(sha.into()),
                }
            );
            assert_eq!(t.spec(), format!("tiktoken:{name}"));
            assert!(t.is_enabled() && !t.is_model_tokenizer());
        }
        assert_eq!(
            Tokenizer::from_spec("none").unwrap().identity(),
            TokenizerIdentity {
                spec: "none".into(),
                kind: TokenizerKind::None,
                name: "none".into(),
                sha256: None,
            }
        );
    }

    #[test]
    fn identity_serializes_with_snake_case_kinds() {
        let identity = Tokenizer::from_spec("none").unwrap().identity();
        let json = serde_json::to_value(&identity).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"spec": "none", "kind": "none", "name": "none", "sha256": null})
        );
        assert_eq!(
            serde_json::to_value(TokenizerKind::HuggingFace).unwrap(),
            "hugging_face"
        );
        assert_eq!(
            serde_json::from_value::<TokenizerIdentity>(json).unwrap(),
            identity
        );
    }

    #[test]
    fn builtin_decode_rejects_ids_outside_the_vocabulary() {
        let t = Tokenizer::from_spec("cl100k_base").unwrap();
        let ids = t.encode("hello world").unwrap();
        assert_eq!(t.decode(&ids).as_deref(), Some("hello world"));
        assert_eq!(t.decode(&[]).as_deref(), Some(""));
        assert_eq!(t.decode(&[ids[0], 5_000_000]), None);
    }
}
