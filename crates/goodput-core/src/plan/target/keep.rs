//! A shard's records as they finish: kept for the merge, appended to its
//! part files, and — on a shard other than 0 — sent on to the coordinator
//! in batches, so the coordinator has every request a shard finished even
//! when the shard dies before its run ends.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::load::executor::Msg;
use crate::plan::shard::part::{PartEnd, PartHeader, PartLine, PartWriter};
use crate::plan::shard::Follower;
use crate::request::record::RequestRecord;

/// What a shard kept of its run.
pub(super) struct Kept {
    pub records: Vec<RequestRecord>,
    pub measure_start_ns: Option<u64>,
    pub files: Vec<PartWriter>,
    pub upload: Option<Upload>,
}

/// Where a shard's records go besides its memory: its part files and,
/// on a shard other than 0, the coordinator.
pub(super) struct Outlets {
    pub files: Vec<PartWriter>,
    pub upload: Option<Upload>,
}

/// Keep the records `rx` brings (marked with `shard`) until the run's
/// sender is dropped, and pass them on to `out` as they come.
pub(super) fn spawn(
    mut rx: mpsc::UnboundedReceiver<Msg>,
    shard: u32,
    out: Outlets,
) -> JoinHandle<Kept> {
    let Outlets {
        mut files,
        mut upload,
    } = out;
    tokio::spawn(async move {
        let (mut records, mut measure_start_ns) = (Vec::new(), None::<u64>);
        let mut batch = Vec::new();
        while let Some(first) = rx.recv().await {
            let mut next = Some(first);
            while let Some(msg) = next.take() {
                let line = match msg {
                    Msg::MeasureStart(t) => {
                        measure_start_ns = Some(measure_start_ns.map_or(t, |m| m.min(t)));
                        PartLine::MeasureStart(t)
                    }
                    Msg::Record(mut r) => {
                        r.shard = shard;
                        records.push((*r).clone());
                        PartLine::Record(r)
                    }
                };
                for f in files.iter_mut() {
                    f.line(&line);
                }
                if upload.is_some() {
                    batch.push(line);
                }
                next = rx.try_recv().ok();
            }
            for f in files.iter_mut() {
                f.flush();
            }
            if let Some(u) = upload.as_mut() {
                u.send(std::mem::take(&mut batch)).await;
            }
        }
        Kept {
            records,
            measure_start_ns,
            files,
            upload,
        }
    })
}

/// A shard's part on its way to the coordinator: the header before the
/// first line, the lines as they come, the end line last.
pub struct Upload {
    follower: Arc<tokio::sync::Mutex<Follower>>,
    /// Not sent yet.
    header: Option<PartHeader>,
    /// Why the upload stopped (the coordinator's connection failed).
    failed: Option<String>,
}

impl Upload {
    pub(super) fn new(follower: Arc<tokio::sync::Mutex<Follower>>, header: PartHeader) -> Upload {
        Upload {
            follower,
            header: Some(header),
            failed: None,
        }
    }

    /// Send `lines` (after the header, the first time).
    async fn send(&mut self, lines: Vec<PartLine>) {
        if self.failed.is_some() {
            return;
        }
        let header = self.header.take().map(|h| PartLine::Part(Box::new(h)));
        let sent = self
            .follower
            .lock()
            .await
            .send_part(header.into_iter().chain(lines))
            .await;
        if let Err(e) = sent {
            self.failed = Some(e.to_string());
        }
    }

    /// Send the end line: the part is whole. An error when the coordinator
    /// could not be reached at some point of the run.
    pub(super) async fn finish(mut self, end: PartEnd) -> Result<(), String> {
        self.send(vec![PartLine::End(Box::new(end))]).await;
        match self.failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
