pub mod counted;
