//! Promotion (SPEC SL-6): a session file copied, with its extracted text, to agent or
//! workspace scope, as a file operation of the session (its row locked, activity recorded), so
//! a promotion racing a sweep lands before the sweep claims the session or finds its source
//! swept: never lost, never half done.

use sha2::{Digest, Sha256};

use crate::scoped::alternatives::Alternative;
use crate::scoped::error::ScopedError;
use crate::scoped::layout::{Resolved, TurnSpace};
use crate::scoped::permissions::Scope;
use crate::scoped::store::{extract_text, session_key, ScopedStore};
use crate::scoped::{Access, ScopedMutant};

impl ScopedStore {
    /// Copies the session file `from` to `to` (under agent or workspace scope) and answers the
    /// destination. Both paths are resolved by SC-2 first; a source outside session scope, or a
    /// destination in it, is `invalid_policy`; the destination needs `read-write` (SC-3); a
    /// missing source is `not_found`. The text is written before the file (SC-4.1).
    pub async fn promote(
        &self,
        turn: &TurnSpace,
        from: &str,
        to: &str,
    ) -> Result<Resolved, ScopedError> {
        let src = self
            .resolve_checked(
                turn,
                from,
                crate::scoped::layout::Purpose::File,
                Access::Read,
            )
            .await?;
        let dst = self.resolve_for_change(to, turn).await?;
        let wrong_scope = if src.scope != Scope::Session {
            Some(format!("only a session file is promoted, not {from:?}"))
        } else if dst.scope == Scope::Session {
            Some(format!(
                "a file is promoted to agent or workspace scope, not to {to:?}"
            ))
        } else {
            None
        };
        if let Some(why) = wrong_scope {
            // The scope checks are the paths' shape (SL-6.2): under SC-3.5's variant
            // `path_check_order=session_first` the session row comes before them, as before
            // any other shape.
            if self.config().takes(Alternative::SessionBeforeShape)
                && !self.metadata().session_exists(&session_key(turn)).await?
            {
                return Err(ScopedError::UnknownEntity {
                    kind: "session",
                    id: turn.session.to_string(),
                });
            }
            return Err(ScopedError::InvalidPolicy(why));
        }
        if dst.scope == Scope::Skill {
            return Err(ScopedError::ReadOnly {
                path: to.to_string(),
            });
        }
        self.in_session(turn, "commit promotion", async |perms| {
            if !self.is(ScopedMutant::PromotionPastPermissions) {
                self.require(&perms, &dst, Access::ReadWrite)?;
            }
            let bytes = self
                .get(&src.key)
                .await?
                .ok_or_else(|| ScopedError::NotFound {
                    path: from.to_string(),
                })?;
            let sha = hex::encode(Sha256::digest(&bytes));
            let text_key = self.text_key(&dst);
            match extract_text(&bytes) {
                Some(text) if !self.is(ScopedMutant::PromotionWithoutText) => {
                    self.put_tagged(&text_key, text.as_bytes().to_vec(), Some(&sha))
                        .await?
                }
                // A binary file has no text, and an old text under the destination must not
                // be served as this file's.
                _ => self.delete_one(&text_key).await?,
            }
            self.put_tagged(&dst.key, bytes, Some(&sha)).await?;
            if self.is(ScopedMutant::PromotionMoves) {
                self.delete_one(&self.text_key(&src)).await?;
                self.delete_one(&src.key).await?;
            }
            Ok(())
        })
        .await?;
        Ok(dst)
    }
}
