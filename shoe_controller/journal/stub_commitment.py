"""The stub kept as keyed commitments: rule E1's "no se enseñarán a persona alguna" taken
to the journal itself (the rules profile's ``stub = "commitment"``).

With ``stub = "sealed"`` (the default) the journal keeps the shoe's reading of every stub
card, sealed in exports. With ``stub = "commitment"`` it keeps, for each card that left the
shoe after the deal (a ``stub_card`` record, or an ``unassigned_card`` or ``security``
record of a draw after the last card of the deal), no identity at all but

    commitment = HMAC-SHA256(S, "shoe-controller stub card v1\\n" || round_id || "\\n" ||
                             index || "\\n" || card)

in hex, where ``S`` is the **stub key** (32 random bytes, 64 hex digits in a 0600 file
beside the journal's key: ``journal.key`` -> ``journal.stub.key``), ``index`` the card's
draw number in decimal and ``card`` its text form (``AS``, ``TD``, ``JK``, ``??``). The
record carries ``commitment`` and ``key_id`` (the first 16 hex digits of
``HMAC(S, "shoe-controller stub key check v1")``) in place of ``card``.

Each card is committed in its own record, so that it is journaled before the shoe's event
is acknowledged (rule E3). Whoever holds the stub key confirms a claimed stub (in any order)
by computing the commitments of the claimed cards (:func:`confirm_stub`); without the key
the records show nothing of the stub. The key is the whole of that protection: whoever
holds it can test any claim, so keep it as the journal's key is kept, and apart from it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from shoe_controller.errors import JournalError
from shoe_controller.files import FileTooLarge, NotRegularFile, open_regular
from shoe_controller.journal.paths import unusable_location, write_new_file
from shoe_controller.journal.records import Kind, Record

log = logging.getLogger(__name__)

STUB_KEY_SIZE: Final = 32
_CARD_LABEL: Final = b"shoe-controller stub card v1\n"
_KEY_CHECK_LABEL: Final = b"shoe-controller stub key check v1"
_MAX_KEY_FILE: Final = 4096
#: The records that may carry a card that left the shoe after the deal.
STUB_KINDS: Final = (Kind.STUB_CARD, Kind.UNASSIGNED_CARD, Kind.SECURITY)
#: Shown in an audit export where a committed stub card's identity is not in the journal.
COMMITTED: Final = "committed"


def default_stub_key_path(journal_key: Path) -> Path:
    """The stub key beside the journal's key: ``journal.key`` -> ``journal.stub.key``."""
    if journal_key.suffix:
        return journal_key.with_name(f"{journal_key.stem}.stub{journal_key.suffix}")
    return journal_key.with_name(f"{journal_key.name}.stub")


class StubCommitter:
    """Commitments under one stub key, for a table whose deal is ``deal_size`` cards (what
    :meth:`commit` needs; confirming a claim does not)."""

    __slots__ = ("_prepared", "deal_size", "key_id")

    def __init__(self, key: bytes, deal_size: int = 0) -> None:
        self._prepared = hmac.new(key, digestmod=hashlib.sha256)
        self.deal_size = deal_size
        check = hmac.new(key, _KEY_CHECK_LABEL, hashlib.sha256).hexdigest()
        #: Names the key in every commitment, and in the messages: says nothing of it.
        self.key_id = check[:16]

    def commitment(self, round_id: str, index: int, card: str) -> str:
        h = self._prepared.copy()
        h.update(_CARD_LABEL + f"{round_id}\n{index}\n{card}".encode("ascii"))
        return h.hexdigest()

    def commit(self, kind: str, payload: dict[str, Any], round_id: str | None) -> dict[str, Any]:
        """``payload`` as the journal keeps it: a card that left the shoe after the deal
        replaced by its commitment; any other record as it is."""
        index = payload.get("index")
        if (
            kind not in STUB_KINDS
            or round_id is None
            or "card" not in payload
            or type(index) is not int
            or (kind != Kind.STUB_CARD and index <= self.deal_size)
        ):
            return payload
        kept = {key: value for key, value in payload.items() if key != "card"}
        kept["commitment"] = self.commitment(round_id, index, str(payload["card"]))
        kept["key_id"] = self.key_id
        return kept


def stub_committer(commit: bool, journal_key: Path, deal_size: int) -> StubCommitter | None:
    """The service's committer when the profile keeps the stub as commitments (``commit``),
    with the stub key beside ``journal_key`` (created the first time); None otherwise."""
    if not commit:
        return None
    return StubCommitter(load_or_create_stub_key(default_stub_key_path(journal_key)), deal_size)


# --- the key ---------------------------------------------------------------------------------


def load_stub_key(path: Path) -> bytes:
    """The stub key at ``path``; a missing, unreadable or malformed key is a JournalError."""
    try:
        with open_regular(path, _MAX_KEY_FILE) as handle:
            raw = handle.read(_MAX_KEY_FILE)
    except FileNotFoundError:
        raise JournalError(
            f"stub key {path} not found: restore it from its backup or name it with --stub-key"
        ) from None
    except (NotRegularFile, FileTooLarge, IsADirectoryError) as exc:
        raise JournalError(
            f"{path} is not a stub key: {exc.strerror}; name the key file with --stub-key"
        ) from None
    except OSError as exc:
        raise JournalError(
            f"cannot read stub key {path}: {exc.strerror or exc}; run as the user that owns "
            "the journal (the service user) or name a readable copy with --stub-key"
        ) from None
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) != STUB_KEY_SIZE:
        raise JournalError(
            f"{path} is not a stub key (expected {2 * STUB_KEY_SIZE} hex digits): name the "
            "right file with --stub-key"
        )
    return key


def load_or_create_stub_key(path: Path) -> bytes:
    if os.path.lexists(path):
        return load_stub_key(path)
    key = secrets.token_bytes(STUB_KEY_SIZE)
    try:
        write_new_file(path, key.hex().encode("ascii") + b"\n")
    except FileExistsError:
        raise JournalError(f"stub key {path} appeared while being created; try again") from None
    except OSError as exc:
        raise unusable_location(path, exc) from None
    log.info("created stub key %s", path)
    return key


# --- a claimed stub --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StubConfirmation:
    """Whether a claimed stub is the round's: ``matches`` when every claimed card is one of
    the stub's (each stub card matching one claimed card at most), ``complete`` when the
    claim is the whole stub."""

    round_id: str
    #: "sealed" (the journal holds the stub's identities) or "commitment".
    kept_as: str
    stub_cards: int
    #: Stub cards the shoe could not read: no claim can match them.
    unread: int
    claimed: int
    matches: bool
    key_id: str | None = None

    @property
    def complete(self) -> bool:
        return self.matches and self.claimed == self.stub_cards


def stub_entries(records: Iterable[Record]) -> list[dict[str, Any]]:
    """The round's stub, one entry per draw (``index`` with ``card`` or ``commitment``):
    its ``stub_card`` records and the committed cards of its other records. A ``security``
    record repeats its ``unassigned_card``'s draw and is read once."""
    entries: dict[int, dict[str, Any]] = {}
    for record in records:
        payload = record.payload_object()
        index = payload.get("index")
        if type(index) is not int:
            continue
        if record.kind == Kind.STUB_CARD or "commitment" in payload:
            entries.setdefault(index, payload)
    return [entries[index] for index in sorted(entries)]


def confirm_stub(
    round_id: str,
    records: Iterable[Record],
    claimed: Iterable[str],
    committer: StubCommitter | None,
) -> StubConfirmation:
    """Compare the ``claimed`` cards (text forms, any order) with the stub ``records`` of
    ``round_id`` hold: their identities, or (with the stub key's ``committer``) their
    commitments. Nothing of the stub is returned but the verdict and the counts."""
    entries = stub_entries(records)
    claims = Counter(claimed)
    committed = [entry for entry in entries if "commitment" in entry]
    if committed:
        if committer is None:
            raise JournalError(
                f"round {round_id} keeps its stub as commitments: the stub key is needed "
                "(--stub-key)"
            )
        foreign = {str(entry.get("key_id")) for entry in committed} - {committer.key_id}
        if foreign:
            raise JournalError(
                f"round {round_id} was committed under stub key id {sorted(foreign)[0]}, not "
                f"under the key given (key id {committer.key_id}): name that round's stub key "
                "with --stub-key"
            )

    def reading(entry: dict[str, Any], card: str) -> bool:
        if "commitment" in entry:
            assert committer is not None
            expected = committer.commitment(round_id, int(entry["index"]), card)
            return hmac.compare_digest(expected, str(entry["commitment"]))
        return entry.get("card") == card

    unread = sum(1 for entry in entries if reading(entry, "??"))
    found: Counter[str] = Counter()
    for card in claims:
        found[card] = sum(1 for entry in entries if reading(entry, card))
    matches = bool(claims) and all(found[card] >= count for card, count in claims.items())
    return StubConfirmation(
        round_id=round_id,
        kept_as="commitment" if committed else "sealed",
        stub_cards=len(entries),
        unread=unread,
        claimed=sum(claims.values()),
        matches=matches,
        key_id=committer.key_id if committed and committer is not None else None,
    )
