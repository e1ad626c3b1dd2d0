//! Path confinement.
