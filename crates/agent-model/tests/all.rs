//! Integration tests of the model adapters against the scripted server over loopback HTTP.

mod suite;
