"""The regulated dealing procedure as a pure state machine (no I/O, no threads, no clock)."""
