"""The audit journal: durable, tamper-evident, crash-safe and confidential.

- :class:`Journal` appends records in durable groups (the service is its only writer) and
  reports rounds left open by a restart (rule F3).
- :func:`verify` checks the MAC chain and the checkpoint and names the first bad record.
- :func:`export` writes events or rounds as JSON lines or CSV, sealed by default (E1, E2).

docs/journal.md describes where the journal lives, how to verify and export it, and how to
keep its key.
"""

from shoe_controller.journal.exporting import export
from shoe_controller.journal.paths import default_journal_path, default_key_path
from shoe_controller.journal.records import Kind, Record
from shoe_controller.journal.recovery import OpenRound
from shoe_controller.journal.sealing import SEALED
from shoe_controller.journal.verification import Problem, VerifyReport, verify
from shoe_controller.journal.writer import Journal

__all__ = [
    "SEALED",
    "Journal",
    "Kind",
    "OpenRound",
    "Problem",
    "Record",
    "VerifyReport",
    "default_journal_path",
    "default_key_path",
    "export",
    "verify",
]
