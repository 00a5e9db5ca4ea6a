"""Scripted stand-ins for the daemon's peers, speaking the real wire protocol."""
