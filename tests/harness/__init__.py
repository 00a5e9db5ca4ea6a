"""Test harness: real OpenSSH nodes on loopback and the fixtures around them."""
