//! The prompts a plan builds through the server's `/tokenize`, where no
//! local copy of the model's tokenizer was found.

use goodput_core::request::ClientOptions;

/// The prompts `plan` builds with the server's own tokenizer, its
/// `/tokenize` asked through `options` (the run's connection settings);
/// `None` where there are none to build, or where the server counts
/// nothing and the plan may do without (said through `note`, and the
/// result file's tokenizer_id set to goodput's own). An error where
/// `--tokenizer` named the tokenizer and the server cannot count.
pub fn build_by_server(
    plan: &mut crate::Plan,
    options: ClientOptions,
    note: &mut dyn FnMut(String),
) -> Result<Option<Vec<crate::Row>>, String> {
    let Some(by) = plan.by_server.take() else {
        return Ok(None);
    };
    let default = goodput_core::tokenizer::DEFAULT_TOKENIZER;
    let name = plan.meta.tokenizer_id.clone().unwrap_or_default();
    let tokenizer = match crate::server_tokens::connect(options, &by.model) {
        Ok(t) => t,
        Err(why) if by.required => {
            return Err(format!(
                "--tokenizer {name}: no local copy (a tokenizer.json, a directory holding one, or the model in the Hugging Face cache), and {why}; goodput downloads nothing"
            ))
        }
        Err(why) => {
            note(format!("{} ({why})", crate::no_local_tokenizer(&name)));
            if by.is_sonnet() {
                note(crate::counted_note(default));
            }
            plan.meta.tokenizer_id = Some(default.into());
            return Ok(None);
        }
    };
    let rows = by.rows(&tokenizer)?;
    let counted = format!("{name}'s tokenizer, through the server's /tokenize");
    note(format!(
        "no local tokenizer for {name}: {} prompts built to lengths counted by {counted}; the run counts with goodput's {default} and the server's usage",
        rows.len(),
    ));
    if by.is_sonnet() {
        note(crate::counted_note(&counted));
    }
    Ok(Some(rows))
}
