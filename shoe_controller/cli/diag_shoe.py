"""The commands that ask the shoe something: ports, info, verify, selftest, counters."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmware_protocol import (
    Capability,
    Counters,
    GetCounters,
    Message,
    RunSelfTest,
    SelfTestReport,
)
from firmware_protocol import VerifyResult as VerifyReply
from shoe_controller.cli.diag_common import (
    Context,
    identity_fields,
    key_values,
    show_value,
)
from shoe_controller.cli.diag_session import ShoeSession
from shoe_controller.cli.output import Output, Styled
from shoe_controller.errors import ConfigError, ExitCode, LinkError, NotApproved
from shoe_controller.files import open_regular
from shoe_controller.link.approval import (
    ApprovalList,
    ApprovedShoe,
    Challenge,
    Verdict,
    keyed_digest,
)
from shoe_controller.link.events import CommandCompleted, ShoeReport
from shoe_controller.link.identity import ShoeIdentity

_GOOD = ("green",)
_BAD = ("red", "bold")


# -- ports -------------------------------------------------------------------------------


def ports(ctx: Context) -> int:
    from shoe_controller.hal import discovery

    every = bool(ctx.option("all"))
    candidates = discovery.list_candidates()
    shown = [c for c in candidates if every or c.is_shoe]
    out = ctx.out
    if ctx.json:
        for c in shown:
            out.json(
                {
                    "address": c.address,
                    "kind": c.kind,
                    "vid": _hex4(c.vid),
                    "pid": _hex4(c.pid),
                    "serial_number": c.serial_number,
                    "location": c.location,
                    "description": c.description,
                    "symlinks": list(c.symlinks),
                    "shoe": c.is_shoe,
                }
            )
        return int(ExitCode.OK)
    if shown:
        out.table(
            ("ADDRESS", "KIND", "USB ID", "SERIAL", "SHOE", "LINKS", "DESCRIPTION"),
            [
                (
                    c.address,
                    c.kind,
                    f"{c.vid:04x}:{c.pid:04x}" if c.vid is not None and c.pid is not None else "-",
                    c.serial_number or "-",
                    "yes" if c.is_shoe else "no",
                    ", ".join(c.symlinks) or "-",
                    c.description or "-",
                )
                for c in shown
            ],
        )
    others = len(candidates) - len(shown)
    if not any(c.is_shoe for c in shown):
        hint = f" ({others} other serial port(s); --all lists them)" if others else ""
        out.line(
            f"no shoe found{hint}: check that it is plugged in and powered, and that "
            "'shoe-diag check' passes"
        )
    return int(ExitCode.OK)


def _hex4(value: int | None) -> str | None:
    return None if value is None else f"{value:04x}"


# -- info --------------------------------------------------------------------------------


def info(ctx: Context) -> int:
    approved = ctx.approved
    with ShoeSession.open(ctx.device) as session:
        connected = session.connected
        assert connected is not None
        verdict = _verdict(session, approved)
    identity = connected.identity
    out = ctx.out
    if ctx.json:
        out.json(
            {
                "device": session.address,
                **identity_fields(identity),
                "protocol_version": connected.version,
                "approved": verdict.approved,
                "verified": verdict.verified,
                "reason": verdict.reason,
            }
        )
    else:
        fields = identity_fields(identity)
        speaks = show_value(fields["protocol_versions"])
        key_values(
            out,
            [
                ("device", session.address),
                ("model", identity.model),
                ("serial number", identity.serial_number),
                ("hardware revision", identity.hardware_revision),
                ("firmware version", identity.firmware_version),
                ("firmware digest", identity.firmware_digest),
                ("protocol", f"{connected.version} (the shoe speaks {speaks})"),
                ("capabilities", show_value(fields["capabilities"])),
                ("boot id", fields["boot_id"]),
                ("approval", str(verdict)),
            ],
            {"approval": _GOOD if verdict.approved else _BAD},
        )
    if not verdict.approved:
        raise NotApproved(_not_approved(identity, verdict))
    return int(ExitCode.OK)


def _verdict(session: ShoeSession, approved: ApprovalList) -> Verdict:
    """The approval verdict as the controller reaches it, seeded verification included."""
    verdict = approved.check(session.identity, session.in_process_simulator)
    if not verdict.pending:
        return verdict
    assert verdict.entry is not None
    challenge = Challenge.new(verdict.entry)
    outcome = session.outcome(session.send(challenge.message))
    if isinstance(outcome, CommandCompleted):
        return challenge.judge(outcome.reply)
    return challenge.judge(None, str(outcome))


def _not_approved(identity: ShoeIdentity, verdict: Verdict) -> str:
    if verdict.field in ("capabilities", "verification"):
        advice = "deal with it only once 'shoe-diag verify' passes"
    else:
        advice = (
            "if the regulator approved it, list it under [[approved_shoes]] in the "
            "configuration; otherwise replace the shoe"
        )
    return f"{identity} is not approved ({verdict.reason}): {advice}"


# -- verify ------------------------------------------------------------------------------


def verify(ctx: Context) -> int:
    image: Path | None = ctx.option("image")
    # Without --image the approved list is read before the device is opened: a bad
    # configuration ends the command without touching the shoe.
    approved = None if image is not None else ctx.approved
    with ShoeSession.open(ctx.device) as session:
        identity = session.identity
        entry = _verify_entry(session, image, approved)
        challenge = Challenge.new(entry)
        outcome = session.outcome(session.send(challenge.message))
    reply = outcome.reply if isinstance(outcome, CommandCompleted) else None
    verdict = challenge.judge(reply, "" if reply is not None else str(outcome))
    verified, reason = _verify_result(identity, entry, image, verdict)
    shown = _VerifyShown(session.address, identity, entry, challenge, reply, verified, reason)
    if ctx.json:
        ctx.out.json(shown.fields())
    else:
        shown.show(ctx.out)
    if not verified:
        raise NotApproved(
            f"seeded verification of {identity} failed ({reason}): do not deal with this "
            "shoe; have its firmware inspected"
        )
    return int(ExitCode.OK)


def _verify_entry(
    session: ShoeSession, image: Path | None, approved: ApprovalList | None
) -> ApprovedShoe:
    """What to verify the shoe against: the image given, else its approved-list entry's."""
    identity = session.identity
    if image is not None:
        return _image_entry(identity, image)
    assert approved is not None
    entry = approved.check(identity, session.in_process_simulator).entry
    if entry is None or entry.image_path is None:
        raise ConfigError(
            f"no approved image to verify {identity} against: pass --image FILE, or "
            "give its [[approved_shoes]] entry an image = PATH"
        )
    return entry


def _verify_result(
    identity: ShoeIdentity, entry: ApprovedShoe, image: Path | None, verdict: Verdict
) -> tuple[bool, str]:
    """Whether the shoe passed, and why, in the words the report and the error use."""
    if not verdict.approved:
        return False, verdict.reason
    if identity.firmware_digest != entry.firmware_digest:
        # The keyed digest alone is not enough: the shoe must also report the image's
        # firmware digest, or it runs something other than what it proved it holds.
        return False, (
            f"verification: the keyed digest matches {entry.image_path}, but the shoe reports "
            f"firmware digest {identity.firmware_digest[:16]}..., not the image's"
        )
    if image is not None:
        # The entry was made from the image given, not taken from the approved list.
        return True, f"the shoe's keyed digest matches {image}"
    return True, verdict.reason


@dataclass(frozen=True)
class _VerifyShown:
    """What ``verify`` reports, as JSON or as key-value lines."""

    device: str
    identity: ShoeIdentity
    entry: ApprovedShoe
    challenge: Challenge
    reply: Message | None
    verified: bool
    reason: str

    @property
    def image_path(self) -> Path:
        # Both ways of choosing the entry (--image, or the approved list) give it an image.
        assert self.entry.image_path is not None
        return self.entry.image_path

    @property
    def shoe_digest(self) -> str | None:
        """The keyed digest the shoe answered with; None when it gave none."""
        return self.reply.digest.hex() if isinstance(self.reply, VerifyReply) else None

    @property
    def expected(self) -> str | None:
        """The keyed digest of the image for this seed; None when the image is unreadable."""
        try:
            return keyed_digest(self.image_path, self.challenge.seed).hex()
        except OSError:
            return None  # the verdict already says why

    def fields(self) -> dict[str, Any]:
        return {
            "device": self.device,
            **identity_fields(self.identity),
            "image": str(self.image_path),
            "image_sha256": self.entry.firmware_digest,
            "seed": self.challenge.seed.hex(),
            "digest": self.shoe_digest,
            "expected": self.expected,
            "verified": self.verified,
            "reason": self.reason,
        }

    def show(self, out: Output) -> None:
        verdict = ("verified: " if self.verified else "NOT VERIFIED: ") + self.reason
        key_values(
            out,
            [
                ("device", self.device),
                ("shoe", str(self.identity)),
                ("image", str(self.image_path)),
                ("image SHA-256", self.entry.firmware_digest),
                ("shoe's digest", self.identity.firmware_digest),
                ("seed", self.challenge.seed.hex()),
                ("keyed digest", self.shoe_digest or "-"),
                ("expected", self.expected or "-"),
                ("result", verdict),
            ],
            {"result": _GOOD if self.verified else _BAD},
        )


def _image_entry(identity: ShoeIdentity, image: Path) -> ApprovedShoe:
    """An approved-list entry for the shoe as it says it is, with ``image`` to check."""
    digest = hashlib.sha256()
    try:
        with open_regular(image) as handle:
            while chunk := handle.read(1 << 16):
                digest.update(chunk)
    except OSError as exc:
        raise ConfigError(
            f"cannot read firmware image {image}: {exc.strerror or exc}; give the approved "
            "image file"
        ) from None
    return ApprovedShoe(
        identity.model, identity.firmware_version, digest.hexdigest(), image_path=image
    )


# -- selftest ----------------------------------------------------------------------------


def selftest(ctx: Context) -> int:
    timeout: float = ctx.option("timeout")
    out = ctx.out
    steps: dict[int, SelfTestReport] = {}
    try:
        with ShoeSession.open(ctx.device) as session:
            identity = session.identity
            if not identity.supports(Capability.SELF_TEST):
                raise LinkError(f"{identity} has no self-test (it does not offer SELF_TEST)")
            first = session.command(RunSelfTest(), timeout)
            if not isinstance(first, SelfTestReport):
                raise LinkError(f"the shoe answered RunSelfTest with {type(first).__name__}")
            report: SelfTestReport = first
            while True:
                steps[report.step] = report
                out.progress(len(steps), report.total, report.name)
                if report.step >= report.total or len(steps) >= report.total:
                    break
                event = session.take(
                    lambda e: isinstance(e, ShoeReport) and isinstance(e.message, SelfTestReport),
                    timeout,
                )
                if event is None:
                    raise LinkError(
                        f"the self-test stopped after {len(steps)} of {report.total} steps: no "
                        f"report for {timeout:g} s; run it again, or have the shoe inspected"
                    )
                assert isinstance(event, ShoeReport) and isinstance(event.message, SelfTestReport)
                report = event.message
    finally:
        out.progress_done()
    ordered = [steps[n] for n in sorted(steps)]
    failed = [step for step in ordered if not step.passed]
    if ctx.json:
        for step in ordered:
            out.json(_step_fields(step))
    else:
        out.table(
            ("STEP", "TEST", "RESULT", "DETAIL"),
            [
                (
                    f"{s.step}/{s.total}",
                    s.name,
                    Styled("pass", _GOOD) if s.passed else Styled("FAIL", _BAD),
                    s.detail,
                )
                for s in ordered
            ],
        )
    if failed:
        names = ", ".join(step.name for step in failed)
        out.warn(
            f"shoe-diag: error: the self-test of {identity} failed at {names}: have the shoe "
            "repaired before dealing with it"
        )
        return int(ExitCode.CHECK_FAILED)
    if not ctx.json:
        out.line(f"self-test passed: {len(ordered)} of {len(ordered)} steps", *_GOOD)
    return int(ExitCode.OK)


def _step_fields(step: SelfTestReport) -> dict[str, Any]:
    return {
        "step": step.step,
        "total": step.total,
        "name": step.name,
        "passed": step.passed,
        "detail": step.detail,
    }


# -- counters ----------------------------------------------------------------------------

_COUNTER_NAMES = (
    ("cards_read", "cards read"),
    ("misreads", "misreads"),
    ("jams", "jams"),
    ("door_openings", "door openings"),
    ("power_cycles", "power cycles"),
)


def counters(ctx: Context) -> int:
    with ShoeSession.open(ctx.device) as session:
        identity = session.identity
        reply = session.command(GetCounters())
    if not isinstance(reply, Counters):
        raise LinkError(f"the shoe answered GetCounters with {type(reply).__name__}")
    values = {name: getattr(reply, name) for name, _ in _COUNTER_NAMES}
    out = ctx.out
    if ctx.json:
        out.json(
            {
                "device": session.address,
                "model": identity.model,
                "serial_number": identity.serial_number,
                **values,
            }
        )
    else:
        key_values(
            out,
            [("shoe", str(identity))]
            + [(label, str(values[name])) for name, label in _COUNTER_NAMES],
        )
    return int(ExitCode.OK)
