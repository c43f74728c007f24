//! A dataset's rows: as a format's reader parsed them (before any token is
//! counted), and as validated for sending.

use crate::load::workload::files::FileError;
use crate::request::protocol::Message;
use goodput_common::tokenizer::Tokenizer;

/// What a row asks the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowPrompt {
    /// One prompt text (a user message, or a completions prompt).
    Text(String),
    /// A whole conversation to send as chat messages.
    Messages(Vec<Message>),
}

/// One validated row of a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetRow {
    pub prompt: RowPrompt,
    /// The run's tokenizer's count of the prompt text (for messages, the sum
    /// over their contents); `None` under `--tokenizer none`.
    pub input_tokens: Option<u32>,
    /// The expected output length: the row's `output_tokens`, or for
    /// ShareGPT the token count of the reply. `None` when the row has none.
    pub output_tokens: Option<u32>,
    /// The expected answer, for quality figures (ShareGPT: the reply).
    pub reference: Option<String>,
    /// The file line where the row starts (1-based).
    pub line: u64,
    /// Images the row sends with its last user message (JSONL `images`),
    /// read once when the dataset is loaded.
    pub images: Vec<std::sync::Arc<super::images::LocalImage>>,
}

/// Where a row starts, to read it again in the second pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spot {
    pub(super) offset: u64,
    pub(super) line: u64,
}

/// A row as read, before any token is counted.
#[derive(Debug)]
pub(super) struct Parsed {
    pub(super) prompt: RowPrompt,
    pub(super) output: Output,
    pub(super) reference: Option<String>,
    /// The row's `images`, as written (paths relative to the dataset file).
    pub(super) images: Vec<String>,
}

/// Where a row's expected output length comes from.
#[derive(Debug)]
pub(super) enum Output {
    /// The row states it (or states none).
    Stated(Option<u32>),
    /// The token count of the reference (ShareGPT's reply).
    OfReference,
}

/// Called once per row in file order; `None` is a row that was skipped.
pub(super) type OnRow<'a> = dyn FnMut(Spot, Option<Parsed>) -> Result<(), FileError> + 'a;

fn count(tokenizer: &Tokenizer, text: &str) -> Option<u32> {
    tokenizer
        .count(text)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl Parsed {
    pub(super) fn input_tokens(&self, tokenizer: &Tokenizer) -> Option<u32> {
        match &self.prompt {
            RowPrompt::Text(text) => count(tokenizer, text),
            RowPrompt::Messages(messages) => messages.iter().try_fold(0u32, |sum, m| {
                count(tokenizer, &m.content).map(|n| sum.saturating_add(n))
            }),
        }
    }

    pub(super) fn has_output_length(&self, tokenizer: &Tokenizer) -> bool {
        match self.output {
            Output::Stated(n) => n.is_some(),
            Output::OfReference => self.reference.is_some() && tokenizer.is_enabled(),
        }
    }

    pub(super) fn output_tokens(&self, tokenizer: &Tokenizer) -> Option<u32> {
        match self.output {
            Output::Stated(n) => n,
            Output::OfReference => count(tokenizer, self.reference.as_deref()?),
        }
    }

    pub(super) fn into_row(self, line: u64, tokenizer: &Tokenizer) -> DatasetRow {
        DatasetRow {
            input_tokens: self.input_tokens(tokenizer),
            output_tokens: self.output_tokens(tokenizer),
            prompt: self.prompt,
            reference: self.reference,
            line,
            images: Vec::new(),
        }
    }
}
