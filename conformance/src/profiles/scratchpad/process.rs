//! The scratchpad through the process protocol: a program reached through the engine's
//! [`ProcessSession`] becomes a [`Driver`] of the scratchpad runner. `Request::Start` starts (or
//! restarts) the program with the scenario's root, working directory and every knob; each other
//! request is sent as the body of one protocol request, and its reply read as an [`Outcome`].

use super::contract::{Driver, DriverFactory, Environment};
use super::contract::{Outcome, Request};
use super::script::Profile;
use crate::driver::DriverError;
use crate::process::{init_message, ProcessFactory, ProcessSession};
use async_trait::async_trait;
use tidemark_reference::clock::Timestamp;

/// The program the command line named, as the scratchpad runner's factory: one
/// [`ProcessDriver`] per scenario.
impl DriverFactory for ProcessFactory {
    fn name(&self) -> String {
        ProcessFactory::name(self)
    }

    fn supports(&self, profile: Profile) -> bool {
        self.claims().profiles.iter().any(|p| p == profile.name())
    }

    fn capabilities(&self) -> Vec<String> {
        self.claims().capabilities.clone()
    }

    fn variants(&self) -> crate::variants::Declared {
        self.claims().declared_variants()
    }

    fn create(&self, profile: Profile, env: &Environment) -> Result<Box<dyn Driver>, DriverError> {
        Ok(Box::new(ProcessDriver {
            factory: self.clone(),
            profile,
            env: env.clone(),
            session: None,
        }))
    }
}

/// One scenario's implementation: at most one running process at a time, started by the first
/// `Request::Start` and restarted by each later one.
pub struct ProcessDriver {
    factory: ProcessFactory,
    profile: Profile,
    env: Environment,
    session: Option<ProcessSession>,
}

#[async_trait]
impl Driver for ProcessDriver {
    async fn call(&mut self, now: Timestamp, request: &Request) -> Result<Outcome, DriverError> {
        if let Request::Start = request {
            match self.session.as_mut() {
                Some(session) => session.restart().await?,
                None => {
                    let init = init_message(
                        Some(self.profile.name()),
                        &self.env.root,
                        &self.env.workdir,
                        // Every knob, not only those the scenario sets (SP-5.6).
                        &self.env.knobs.complete(self.profile),
                    )?;
                    self.session =
                        Some(ProcessSession::start(&self.factory, &self.env.workdir, init).await?);
                }
            }
        }
        match self.session.as_mut() {
            Some(session) => {
                session
                    .call(now.as_millis(), request.op_name(), request)
                    .await
            }
            None => Err(DriverError(format!(
                "a {} request arrived while the implementation was not running",
                request.op_name()
            ))),
        }
    }

    async fn stop(&mut self) -> Result<(), DriverError> {
        if let Some(session) = self.session.as_mut() {
            session.stop().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::scratchpad::contract::{Bytes, Caller};
    use crate::protocol::{FromImplementation, Reply, RequestEnvelope, ToImplementation};

    #[test]
    fn a_request_line_carries_the_contract_body_with_bytes_as_hex() {
        let line = serde_json::to_string(&ToImplementation::Request(RequestEnvelope {
            id: 3,
            now_ms: 1_767_225_600_000,
            body: Request::Read {
                caller: Caller {
                    requester: "alice".into(),
                    channel: "general".into(),
                    thread: Some("T1".into()),
                },
                path: Bytes(b"a.md".to_vec()),
            },
        }))
        .unwrap();
        assert_eq!(
            line,
            r#"{"type":"request","id":3,"now_ms":1767225600000,"body":{"op":"read","caller":{"requester":"alice","channel":"general","thread":"T1"},"path":"612e6d64"}}"#
        );
    }

    #[test]
    fn a_reply_line_parses_into_the_contract_outcome() {
        let m: FromImplementation<Outcome> =
            serde_json::from_str(r#"{"type":"reply","in_reply_to":3,"body":{"outcome":"refused","reason":"traversal","message":"no"}}"#)
                .unwrap();
        assert_eq!(
            m,
            FromImplementation::Reply(Reply {
                in_reply_to: 3,
                body: Outcome::Refused {
                    reason: "traversal".into(),
                    message: "no".into()
                }
            })
        );
    }
}
