"""The audit journal: durable, tamper-evident, crash-safe and confidential."""
