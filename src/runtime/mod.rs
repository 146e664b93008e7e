//! Probes in language runtimes: the Erlang VM ([`beam`]) and tokio ([`tokio`]). Their samples
//! go through the same statistics and RunResult as OS threads'.

pub mod beam;
pub mod tokio_probe;
