//! The files a command's documents go to (`--out`, `--csv`, `--html`),
//! opened at its start and written as its results come: the exporters
//! give the bytes, this puts them where they were asked for.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// A file that could not be opened or written: what was tried, and the
/// operating system's answer.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct FileError {
    /// `opening results file out.json`, `writing stdout`.
    pub what: String,
    /// Whether it failed at the start (a usage error, before any load) or
    /// at a write (after the load ran).
    pub opening: bool,
    /// The operating system's answer.
    #[source]
    pub source: std::io::Error,
}

/// `--out` (and `--csv`, `--html`), kept open from the start: writing it at
/// the end then needs no new file descriptor, even when the run used every
/// one it may have.
///
/// A regular file is rewritten whole at every write (a sweep saves itself
/// after each point). `-` is stdout, and a path that is not a regular file
/// (a pipe, `/dev/stdout`, a device) cannot be rewritten: those get the
/// last document once, when the command ends ([`OutFile::write_final`]).
pub struct OutFile(Option<Dest>);

enum Dest {
    File(File, std::path::PathBuf),
    Stream {
        to: Box<dyn Write + Send>,
        name: String,
        stdout: bool,
    },
}

impl OutFile {
    /// Open (create) the file now, if one was asked for; `-` is stdout.
    pub fn open(path: Option<&std::path::Path>, what: &str) -> Result<OutFile, FileError> {
        let Some(path) = path else {
            return Ok(OutFile(None));
        };
        if path.as_os_str() == "-" {
            return Ok(OutFile(Some(Dest::Stream {
                to: Box::new(std::io::stdout()),
                name: "stdout".into(),
                stdout: true,
            })));
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(|source| FileError {
                what: format!("opening {what} file {}", path.display()),
                opening: true,
                source,
            })?;
        let regular = f.metadata().map(|m| m.is_file()).unwrap_or(false);
        if !regular {
            return Ok(OutFile(Some(Dest::Stream {
                to: Box::new(f),
                name: path.display().to_string(),
                stdout: false,
            })));
        }
        Ok(OutFile(Some(Dest::File(f, path.to_path_buf()))))
    }

    /// `-`: the document goes to stdout, so the human summary goes to stderr.
    pub fn is_stdout(&self) -> bool {
        matches!(&self.0, Some(Dest::Stream { stdout: true, .. }))
    }

    /// The file name, as a label for reports (none for stdout).
    pub fn label(&self) -> Option<String> {
        match self.0.as_ref()? {
            Dest::File(_, p) => Some(p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )),
            Dest::Stream { .. } => None,
        }
    }

    /// Save the document so far: a regular file is rewritten (as often as
    /// a sweep finishes a point); a stream waits for the final write.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        match self.0.as_mut() {
            Some(Dest::File(file, path)) => rewrite(file, path, bytes),
            None | Some(Dest::Stream { .. }) => Ok(()),
        }
    }

    /// The command's last document: a regular file is rewritten, a stream
    /// written once. A failure comes after the load has run.
    pub fn write_final(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        match self.0.as_mut() {
            None => Ok(()),
            Some(Dest::File(file, path)) => rewrite(file, path, bytes),
            Some(Dest::Stream { to, name, .. }) => to
                .write_all(bytes)
                .and_then(|()| to.flush())
                .map_err(|source| FileError {
                    what: format!("writing {name}"),
                    opening: false,
                    source,
                }),
        }
    }
}

/// Replace a regular file's contents.
fn rewrite(file: &mut File, path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    use std::io::Seek;
    (|| -> std::io::Result<()> {
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(bytes)?;
        file.flush()
    })()
    .map_err(|source| FileError {
        what: format!("writing {}", path.display()),
        opening: false,
        source,
    })
}
