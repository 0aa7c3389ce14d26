"""Whether the connected shoe may deal: its approval and firmware verification (rule A1).

:class:`Arming` works without I/O, like the link core and in the manner of h11's state
machine: the driver feeds it every event the core produces, and it answers with a
:class:`Step` saying which events to deliver and which commands to send. At each
:class:`Connected` it checks the shoe against the approved list; when the list asks for a
seeded verification it sends ``Verify`` and holds every later event until the answer, so
that the consumer sees the shoe connected only together with its verdict. A verification on
demand (:meth:`Arming.verify`) runs beside the traffic and changes the verdict when it ends.

The shoe is :attr:`Arming.armed` only while it is connected with an approved verdict.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from firmware_protocol import Message, Verify
from shoe_controller.link.approval import ApprovalList, Challenge, SeedSource, Verdict
from shoe_controller.link.events import (
    ApprovalChanged,
    CommandCompleted,
    CommandFailed,
    Connected,
    LinkDown,
    LinkEvent,
    ProtocolMismatch,
    ShoeEvent,
)
from shoe_controller.link.identity import ShoeIdentity

log = logging.getLogger(__name__)


class Step(NamedTuple):
    """What to do after one input: deliver ``deliver`` in order and send each of ``send``
    as a command. ``verified`` is set when the input ended a verification on demand: the
    verdict it reached."""

    deliver: tuple[LinkEvent, ...] = ()
    send: tuple[Message, ...] = ()
    verified: Verdict | None = None


@dataclass(slots=True)
class _Check:
    """One seeded verification in flight. ``connected`` is the Connected it holds back
    (None for a verification on demand), ``held`` the events that came after it."""

    challenge: Challenge
    message: Verify
    identity: ShoeIdentity
    connected: Connected | None = None
    held: list[LinkEvent] = field(default_factory=list)
    superseded: bool = False


class Arming:
    """The approval state of the shoe on the link (see the module documentation)."""

    def __init__(
        self, approval: ApprovalList, seed_source: SeedSource = secrets.token_bytes
    ) -> None:
        self._approval = approval
        self._seed_source = seed_source
        self._in_process = False
        self._verdict: Verdict | None = None
        self._connected: Connected | None = None
        self._checks: list[_Check] = []
        # The check at connection whose Connected is held back, with what came after it.
        self._holding: _Check | None = None

    @property
    def verdict(self) -> Verdict | None:
        """The latest verdict (None before the first, or after an error)."""
        return self._verdict

    @property
    def connected(self) -> Connected | None:
        """The Connected delivered last, while the link it announced is up."""
        return self._connected

    @property
    def armed(self) -> bool:
        """A shoe is connected and approved (and verified, when its entry asks)."""
        return self._connected is not None and self._verdict is not None and self._verdict.approved

    def transport_opened(self, in_process_simulator: bool) -> None:
        """A new transport is open; the in-process simulator is approved for testing."""
        self._in_process = in_process_simulator

    def disarm(self) -> None:
        """Forget the verdict (after an error judging it): not armed until judged again."""
        self._verdict = None

    def receive(self, event: LinkEvent) -> Step:
        """One event from the link core, in its order."""
        if type(event) is ShoeEvent and self._holding is None:
            return Step((event,))  # the usual case, a card: nothing to judge
        if isinstance(event, CommandCompleted | CommandFailed):
            check = self._check_for(event.handle.message)
            if check is not None:
                return self._judged(check, event)
        elif isinstance(event, Connected):
            return self._on_connected(event)
        return self._pass((event,))

    def verify(self, identity: ShoeIdentity) -> Step:
        """Judge the connected shoe ``identity`` again now, with a new seeded verification
        when its entry names an image. The verdict comes in the Step that ends it (this one
        when no verification is needed)."""
        verdict = self._approval.check(identity, self._in_process)
        if not verdict.pending:
            step = self._pass(self._changed(verdict))
            return step._replace(verified=verdict)
        check = self._new_check(verdict, identity)
        return Step(send=(check.message,))

    # -- inside -----------------------------------------------------------------------

    def _on_connected(self, event: Connected) -> Step:
        if self._holding is not None:
            # It connected again before answering: that verification no longer counts.
            self._holding.superseded = True
            released = self._release(self._holding, "the shoe connected again first")
        else:
            released = Step()
        verdict = self._approval.check(event.identity, self._in_process)
        if not verdict.pending:
            step = self._pass((replace(event, verdict=verdict),))
            return Step(deliver=released.deliver + step.deliver)
        check = self._new_check(verdict, event.identity, event)
        return Step(deliver=released.deliver, send=(check.message,))

    def _new_check(
        self, verdict: Verdict, identity: ShoeIdentity, connected: Connected | None = None
    ) -> _Check:
        assert verdict.entry is not None  # a pending verdict names its entry
        challenge = Challenge.new(verdict.entry, self._seed_source)
        check = _Check(challenge, challenge.message, identity, connected)
        self._checks.append(check)
        if connected is not None:
            self._verdict = verdict  # pending: not armed until the answer
            self._connected = None
            self._holding = check
        return check

    def _judged(self, check: _Check, outcome: CommandCompleted | CommandFailed) -> Step:
        self._checks.remove(check)
        if check.superseded:
            return Step()
        if isinstance(outcome, CommandCompleted):
            verdict = check.challenge.judge(outcome.reply)
        else:
            verdict = check.challenge.judge(None, str(outcome))
        if check.connected is not None:
            return self._release(check, verdict=verdict)
        same_shoe = self._connected is not None and self._connected.identity == check.identity
        changed = self._changed(verdict) if same_shoe else ()
        return self._pass(changed)._replace(verified=verdict)

    def _release(self, check: _Check, why: str = "", verdict: Verdict | None = None) -> Step:
        """Deliver the Connected ``check`` held back, with its verdict, then what it held."""
        assert check.connected is not None  # only a check at connection holds events
        if verdict is None:
            verdict = check.challenge.judge(None, why)
        announced = replace(check.connected, verdict=verdict)
        events = (announced, *check.held)
        check.held = []
        check.connected = None
        self._holding = None
        return self._pass(events)

    def _changed(self, verdict: Verdict) -> tuple[LinkEvent, ...]:
        if verdict == self._verdict:
            return ()
        return (ApprovalChanged(verdict),)

    def _pass(self, events: tuple[LinkEvent, ...]) -> Step:
        """Deliver ``events`` now, or hold them behind a Connected awaiting its verdict."""
        holding = self._holding
        if holding is not None:
            holding.held.extend(events)
            return Step()
        for event in events:
            self._note(event)
        return Step(deliver=events)

    def _note(self, event: LinkEvent) -> None:
        """Keep the state in step with what the consumer is told."""
        if isinstance(event, Connected):
            self._verdict = event.verdict
            self._connected = event
            if event.verdict is not None and not event.verdict.approved:
                log.warning(
                    "%s is connected but NOT ARMED: %s", event.identity, event.verdict.reason
                )
        elif isinstance(event, ApprovalChanged):
            self._verdict = event.verdict
        elif isinstance(event, LinkDown | ProtocolMismatch):
            self._connected = None
            if isinstance(event, ProtocolMismatch):
                self._verdict = None

    def _check_for(self, message: Message) -> _Check | None:
        # By identity: the consumer may send a Verify of its own, equal but not ours.
        return next((c for c in self._checks if c.message is message), None)
