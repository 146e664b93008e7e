//! Measuring: the probe loop, its histogram and statistics, the simulation, and the engine
//! that runs threads of probes.

pub mod evt;
pub mod groups;
pub mod hdr;
pub mod histogram;
pub mod noise;
pub mod probe;
pub mod rate;
pub mod relay;
pub mod ring;
pub mod series;
pub mod simulate;
pub mod stats;
pub mod uncertainty;
pub mod work;
