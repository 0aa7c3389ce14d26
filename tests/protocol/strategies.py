"""Hypothesis strategies for messages and frames, built from each message's field kinds."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from firmware_protocol import (
    DECK_53,
    MAX_PAYLOAD,
    REGISTRY,
    UNREADABLE,
    Button,
    Flags,
    GateMode,
    Message,
    NakReason,
    Unknown,
    encode_frame,
)

FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "u8": st.integers(0, 0xFF),
    "u16": st.integers(0, 0xFFFF),
    "u32": st.integers(0, 0xFFFFFFFF),
    "bool": st.booleans(),
    "str": st.text(max_size=24),
    "bytes": st.binary(max_size=64),
    "digest": st.binary(min_size=32, max_size=32),
    "card": st.sampled_from((*DECK_53, UNREADABLE)),
    "u8list": st.lists(st.integers(0, 0xFF), max_size=8).map(tuple),
    "gate": st.sampled_from(GateMode),
    "button": st.sampled_from(Button),
    "nak": st.sampled_from(NakReason),
}

MESSAGE_CLASSES = tuple(REGISTRY[code] for code in sorted(REGISTRY))


def messages_of(cls: type[Message]) -> st.SearchStrategy[Message]:
    """Instances of ``cls`` whose payload fits a frame."""
    return st.builds(cls, *(FIELD_VALUES[kind] for kind in cls.FIELDS)).filter(
        lambda m: len(m.encode_payload()) <= MAX_PAYLOAD
    )


#: Messages of every known type.
known_messages: st.SearchStrategy[Message] = st.sampled_from(MESSAGE_CLASSES).flatmap(messages_of)
#: Messages of every known type, and unknown ones of the types no class claims.
messages: st.SearchStrategy[Message] = st.one_of(
    known_messages,
    st.builds(
        Unknown,
        st.integers(0, 0xFF).filter(lambda code: code not in REGISTRY),
        st.binary(max_size=MAX_PAYLOAD),
    ),
)

seqs = st.integers(0, 0xFFFFFFFF)


@st.composite
def frames(draw: st.DrawFn, known_only: bool = False) -> tuple[Message, int, Flags, bytes]:
    """(message, seq, flags as decoded, encoded frame)."""
    message = draw(known_messages if known_only else messages)
    seq = draw(seqs)
    flags = Flags.RETRANSMIT if draw(st.booleans()) else Flags.NONE
    if message.EVENT:
        flags |= Flags.EVENT
    elif draw(st.booleans()):
        flags |= Flags.RESPONSE
    return message, seq, flags, encode_frame(message, seq, flags)
