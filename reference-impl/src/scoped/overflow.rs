//! Tool-output overflow (SPEC SL-7): a tool result too large to show is written to a session
//! file, so the model can read it rather than lose it, and it goes with the session.

use sha2::{Digest, Sha256};

use crate::scoped::error::ScopedError;
use crate::scoped::layout::TurnSpace;
use crate::scoped::store::{session_key, ScopedStore};
use crate::scoped::{Access, ScopedMutant};

/// How many names an overflow tries. A name is passed by only when a file other than this very
/// result holds it (the guest wrote or changed it), so a second is seldom needed and the last
/// is never reached but by a guest filling the names on purpose.
const OVERFLOW_NAMES: usize = 16;

/// What a tool result became.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolOutput {
    /// At or under the limit: shown as it is, nothing written.
    Inline(Vec<u8>),
    /// Over the limit: written to this guest path, which the model is told.
    Written(String),
}

impl ScopedStore {
    /// Answers a tool result inline, or writes it under `session/tool-output/` as a write of
    /// the session, activity and extracted text included (SL-7.2). The path is this
    /// implementation's choice: named by the content's hash, `<hash>.txt`, then `<hash>-2.txt`
    /// and on, the first that holds no file or holds this very result (SL-7.1: an overflow
    /// never replaces another file, and an answer's path never comes to read another result).
    /// The names are tried under the session's lock, so no write of the session lands between
    /// the look and the write.
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
        let sha = hex::encode(Sha256::digest(&bytes));
        // The mutant writes it where the agent's files live: it outlives the conversation.
        let scope = if self.is(ScopedMutant::OverflowOutsideSession) {
            "agent"
        } else {
            "session"
        };
        // The mutant writes at the hash's name whatever holds it.
        let overwrites = self.is(ScopedMutant::OverflowOverwrites);
        let written = self
            .in_session(turn, "commit tool output", async |perms| {
                for n in 1..=OVERFLOW_NAMES {
                    let suffix = if n == 1 { String::new() } else { format!("-{n}") };
                    let path = format!("{scope}/tool-output/{}{suffix}.txt", &sha[..16]);
                    let r = self.resolve_for_change(&path, turn).await?;
                    self.require(&perms, &r, Access::ReadWrite)?;
                    let taken = match self.head_stamp(&r.key).await? {
                        None => false,
                        Some(stamp) => stamp.as_deref() != Some(sha.as_str()),
                    };
                    if taken && !overwrites {
                        continue;
                    }
                    self.store_file(&r, bytes).await?;
                    return Ok(r);
                }
                Err(ScopedError::Storage {
                    operation: "PutObject",
                    message: format!(
                        "the {OVERFLOW_NAMES} names a tool result of sha256 {sha} may take all hold other files"
                    ),
                })
            })
            .await;
        if let Err(ScopedError::Storage { .. }) = &written {
            // As a failed write does (`ScopedStore::write`): the text may have landed before
            // the file failed, and the next sweep must look at the session again.
            if !self.is(ScopedMutant::FailedWriteKeepsTheMark) {
                self.metadata().unmark_swept(&session_key(turn)).await?;
            }
        }
        Ok(ToolOutput::Written(written?.guest_path()))
    }
}
