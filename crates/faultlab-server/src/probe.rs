//! lab_probe
