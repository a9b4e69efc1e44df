//! Tool-output overflow (SPEC SL-7): a tool result too large to show is written to a session
//! file, so the model can read it rather than lose it, and it goes with the session.

use sha2::{Digest, Sha256};

use crate::scoped::error::ScopedError;
use crate::scoped::layout::TurnSpace;
use crate::scoped::store::ScopedStore;
use crate::scoped::ScopedMutant;

/// SL-7.1's default `tool_output_limit_bytes`.
pub const DEFAULT_TOOL_OUTPUT_LIMIT_BYTES: u64 = 65_536;

/// What a tool result became.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolOutput {
    /// At or under the limit: shown as it is, nothing written.
    Inline(Vec<u8>),
    /// Over the limit: written to this guest path, which the model is told.
    Written(String),
}

impl ScopedStore {
    /// Answers a tool result inline, or writes it under `session/tool-output/` (the path is
    /// this implementation's choice: the content's hash, so a result repeated is one file) as
    /// a write of the session, activity and extracted text included (SL-7.2).
    pub async fn tool_output(
        &self,
        turn: &TurnSpace,
        bytes: Vec<u8>,
    ) -> Result<ToolOutput, ScopedError> {
        let (len, limit) = (bytes.len() as u64, self.config().tool_output_limit_bytes);
        // The mutant compares with `<`: a result exactly at the limit goes to a file.
        let shown = if self.is(ScopedMutant::OverflowAtTheLimit) {
            len < limit
        } else {
            len <= limit
        };
        if shown {
            return Ok(ToolOutput::Inline(bytes));
        }
        let name = &hex::encode(Sha256::digest(&bytes))[..16];
        // The mutant writes it where the agent's files live: it outlives the conversation.
        let scope = if self.is(ScopedMutant::OverflowOutsideSession) {
            "agent"
        } else {
            "session"
        };
        let written = self
            .write(turn, &format!("{scope}/tool-output/{name}.txt"), bytes)
            .await?;
        Ok(ToolOutput::Written(written.guest_path()))
    }
}
