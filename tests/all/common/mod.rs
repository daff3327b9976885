//! Fixtures shared by the test modules.
#![allow(dead_code)] // not every fixture is used by every configuration

pub mod check_report;
pub mod counted;
pub mod parallel;
pub mod robots;
