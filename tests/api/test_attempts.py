"""PIN guessing, in-process: the limits per name and per client, counted atomically under
concurrent attempts, answered alike (and after the same work) for a locked name and an
unknown one; a change of the users file lifts a name's lock and ends its sessions."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest

from shoe_controller.accounts.attempts import CLIENT_LIMIT, NAME_LIMIT, Attempts, Refused, Ticket
from shoe_controller.api.auth import Authenticator, Verdict
from shoe_controller.api.roles import Role
from shoe_controller.api.signins import FailedSignIns, shown
from shoe_controller.api.users import UsersFile, pin_matches
from tests.api.conftest import ManualClock, cheap_hasher, write_users


class Counting:
    """A PIN check that counts the argon2 checks made, a real hash's or the decoy's."""

    def __init__(self) -> None:
        self.checked = 0
        self._lock = threading.Lock()

    def __call__(self, pin_hash: str, pin: str) -> bool:
        with self._lock:
            self.checked += 1
        return pin_matches(pin_hash, pin)


@pytest.fixture
def counting() -> Counting:
    return Counting()


def test_a_locked_name_and_an_unknown_name_get_the_same_answers_after_the_same_work(
    users_file: UsersFile, counting: Counting, clock: ManualClock
) -> None:
    authenticator = Authenticator(users_file, clock=clock, check=counting)
    for name in ("dana", "nobody"):
        seen = []
        for n in range(NAME_LIMIT.failures + 2):
            before = counting.checked
            result = authenticator.sign_in(name, "918273", f"client-{n}")
            seen.append((result.verdict, counting.checked - before, round(result.retry_after)))
        # One PIN check for each wrong PIN, none once locked: the same for both names.
        assert seen == [(Verdict.WRONG, 1, 0)] * (NAME_LIMIT.failures - 1) + [
            (Verdict.LOCKED_NOW, 1, NAME_LIMIT.lockout),
            (Verdict.LOCKED, 0, NAME_LIMIT.lockout),
            (Verdict.LOCKED, 0, NAME_LIMIT.lockout),
        ], name


def test_concurrent_attempts_never_check_more_pins_than_the_limit(
    users_file: UsersFile, counting: Counting, clock: ManualClock
) -> None:
    authenticator = Authenticator(users_file, clock=clock, check=counting)
    start = threading.Barrier(16)
    verdicts: list[Verdict] = []
    lock = threading.Lock()

    def guess(n: int) -> None:
        start.wait()
        result = authenticator.sign_in("sam", f"{918273 + n}", f"client-{n}")
        with lock:
            verdicts.append(result.verdict)

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counting.checked <= NAME_LIMIT.failures
    counts = Counter(verdicts)
    assert counts[Verdict.ACCEPTED] == 0
    assert counts[Verdict.WRONG] + counts[Verdict.LOCKED_NOW] == counting.checked


def test_a_place_is_taken_before_the_pin_is_checked() -> None:
    clock = ManualClock()
    attempts = Attempts(clock=clock)
    tickets = [attempts.begin("sam", f"c{n}") for n in range(NAME_LIMIT.failures)]
    assert all(isinstance(t, Ticket) for t in tickets)
    # Five under way: were they all wrong, the name would be locked; a sixth waits.
    assert attempts.begin("sam", "c9") == Refused(1.0)
    for ticket in tickets[:-1]:
        assert isinstance(ticket, Ticket)
        attempts.finish(ticket, accepted=False)
    last = tickets[-1]
    assert isinstance(last, Ticket)
    assert attempts.finish(last, accepted=True).name_locked is False
    # The right PIN forgets the name's failures; the clients keep theirs.
    assert isinstance(attempts.begin("sam", "c9"), Ticket)


def test_a_client_is_limited_whatever_the_names_and_forgiven_with_time() -> None:
    clock = ManualClock()
    attempts = Attempts(clock=clock)
    outcomes = []
    for n in range(CLIENT_LIMIT.failures):
        ticket = attempts.begin(f"name{n}", "attacker")
        assert isinstance(ticket, Ticket)
        outcomes.append(attempts.finish(ticket, accepted=False))
    assert [o.client_locked for o in outcomes] == [False] * (CLIENT_LIMIT.failures - 1) + [True]
    assert attempts.begin("dana", "attacker") == Refused(CLIENT_LIMIT.lockout)
    assert isinstance(attempts.begin("dana", "console"), Ticket)
    clock.advance(CLIENT_LIMIT.lockout)
    assert isinstance(attempts.begin("dana", "attacker"), Ticket)


def test_what_is_remembered_is_bounded() -> None:
    clock = ManualClock()
    attempts = Attempts(clock=clock)
    for n in range(30_000):
        ticket = attempts.begin(f"spray{n}" + "x" * 1000, f"c{n % 500}")
        if isinstance(ticket, Ticket):
            attempts.finish(ticket, accepted=False)
        clock.advance(0.01)
    assert len(attempts._names._tracks) <= 10_000
    assert all(len(name) <= 64 for _, name in attempts._names._tracks)


def test_a_new_pin_lifts_the_lock_of_its_name(users_file: UsersFile, clock: ManualClock) -> None:
    authenticator = Authenticator(users_file, clock=clock)
    for n in range(NAME_LIMIT.failures):
        authenticator.sign_in("sam", "918273", f"c{n}")
    assert authenticator.sign_in("sam", "735142", "console").verdict is Verdict.LOCKED
    users_file.reset("sam", "604215")
    change = authenticator.refresh()
    assert change is not None and change.ended == {"sam"}
    assert authenticator.sign_in("sam", "604215", "console").verdict is Verdict.ACCEPTED


def test_a_changed_users_file_says_who_changed(users_file: UsersFile, clock: ManualClock) -> None:
    authenticator = Authenticator(users_file, clock=clock)
    assert authenticator.refresh() is None
    users_file.remove("vic")
    users_file.add("ana", Role.DEALER, "4821")
    change = authenticator.refresh()
    # A new user has no session to end.
    assert change is not None and change.ended == {"vic"} and change.refused is None
    users_file.path.chmod(0o646)
    change = authenticator.refresh()
    assert change is not None and change.refused is not None
    assert "may be written by other accounts" in change.refused
    # Said once for that version of the file; the last good one stays in use.
    assert authenticator.refresh() is None
    assert "ana" in authenticator.users()


def test_failed_sign_ins_are_gathered_per_client_and_minute() -> None:
    clock = ManualClock()
    clock.now = 600.0  # the start of a minute
    failed = FailedSignIns(clock)
    failed.failed("a", "10.0.0.5", "sam", "wrong PIN")
    for n in range(50):
        failed.failed("a", "10.0.0.5", f"n{n % 7}", "unknown user")
    failed.locked("a", "10.0.0.5", "sam", "supervisor", retry_after=300, client_locked=False)
    failed.failed("b", "10.0.0.6", "x" * 100, "unknown user")
    clock.advance(59)
    assert failed.due() == []
    clock.advance(1)
    records = failed.due()
    assert [(r.action, r.user, r.role) for r in records] == [
        ("lockout", "sam", "supervisor"),
        ("sign_in_failures", "", ""),
        ("sign_in_failures", "", ""),
    ]
    assert records[0].detail == "name locked for 300 s; the last wrong PIN came from 10.0.0.5"
    assert records[1].detail == (
        "51 failed sign-ins from 10.0.0.5 in a minute (unknown user 50, wrong PIN 1); names: "
        "'sam', 'n0', 'n1', 'n2', 'n3', and 21 tries of other names"
    )
    assert "'" + "x" * 32 + "...[100 characters]'" in records[2].detail
    assert failed.due() == []


def test_what_is_gathered_is_bounded_however_many_the_clients() -> None:
    clock = ManualClock()
    failed = FailedSignIns(clock)
    for n in range(5000):
        failed.failed(f"c{n}", f"10.0.{n // 250}.{n % 250}", "sam", "wrong PIN")
        for _ in range(10):
            failed.locked(f"c{n}", "", "sam", "", retry_after=300, client_locked=True)
    records = failed.due(everything=True)
    gathered = [r for r in records if r.action == "sign_in_failures"]
    assert len(gathered) == 1025  # 1,024 clients apart, the others together
    assert len(records) <= 1025 * 7


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("dana", "dana"),
        ("a\\b", "a\\\\b"),
        ("\x00\n\u202e", "\\x00\\n\\u202e"),
        ("é" * 40, "\\xe9" * 32 + "...[40 characters]"),
    ],
)
def test_a_name_is_cut_and_escaped_before_it_is_journaled(name: str, kept: str) -> None:
    assert shown(name) == kept


def test_wrong_pins_from_elsewhere_lock_a_name_for_elsewhere_only() -> None:
    clock = ManualClock()
    attempts = Attempts(clock=clock)
    for n in range(NAME_LIMIT.failures):
        ticket = attempts.begin("dana", f"attacker{n}")
        assert isinstance(ticket, Ticket)
        outcome = attempts.finish(ticket, accepted=False)
    assert outcome.name_locked
    assert attempts.begin("dana", "attacker9") == Refused(NAME_LIMIT.lockout)
    # The table's console counts the name in a scope of its own: still open there.
    at_table = attempts.begin("dana", "127.0.0.1", scope="table-console")
    assert isinstance(at_table, Ticket)
    attempts.finish(at_table, accepted=True)
    # A right PIN at the table forgets the table's failures, not elsewhere's lock.
    assert attempts.begin("dana", "attacker9") == Refused(NAME_LIMIT.lockout)
    # The table's own wrong PINs lock the name at the table, and there only.
    for _ in range(NAME_LIMIT.failures):
        ticket = attempts.begin("tec", "127.0.0.1", scope="table-console")
        assert isinstance(ticket, Ticket)
        attempts.finish(ticket, accepted=False)
    assert isinstance(attempts.begin("tec", "127.0.0.1", scope="table-console"), Refused)
    assert isinstance(attempts.begin("tec", "elsewhere"), Ticket)


def test_a_reset_lifts_the_name_lock_in_every_scope() -> None:
    clock = ManualClock()
    attempts = Attempts(clock=clock)
    for scope in ("", "table-console"):
        for n in range(NAME_LIMIT.failures):
            ticket = attempts.begin("sam", f"c{n}", scope=scope)
            assert isinstance(ticket, Ticket)
            attempts.finish(ticket, accepted=False)
        assert isinstance(attempts.begin("sam", "c9", scope=scope), Refused)
    attempts.lift("sam")
    assert isinstance(attempts.begin("sam", "c9"), Ticket)
    assert isinstance(attempts.begin("sam", "c9", scope="table-console"), Ticket)


def test_a_scope_cannot_be_forged_by_a_name() -> None:
    clock = ManualClock()
    attempts = Attempts(clock=clock)
    forged = "table-console\0dana"
    for n in range(NAME_LIMIT.failures):
        ticket = attempts.begin(forged, f"c{n}")
        assert isinstance(ticket, Ticket)
        attempts.finish(ticket, accepted=False)
    assert isinstance(attempts.begin("dana", "127.0.0.1", scope="table-console"), Ticket)


def test_a_right_pin_the_policy_refuses_is_refused_and_counted_as_a_failure(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "users.json"
    # Written by hand: shoe-diag users would have refused both PINs.
    write_users(path, {"boss": (Role.SUPERVISOR, "1234"), "ana": (Role.DEALER, "1111")})
    authenticator = Authenticator(UsersFile(path, cheap_hasher()), clock=clock)
    boss = authenticator.sign_in("boss", "1234", "console")
    assert (boss.verdict, boss.weak) == (Verdict.WEAK_PIN, "fewer than 6 digits for a supervisor")
    ana = authenticator.sign_in("ana", "1111", "console")
    assert (ana.verdict, ana.weak) == (Verdict.WEAK_PIN, "too easy to guess: one digit repeated")
    # A wrong PIN is still just wrong: the answer tells nothing of the right one.
    assert authenticator.sign_in("boss", "918273", "elsewhere").verdict is Verdict.WRONG
    # Refused sign-ins count toward the name's lock, as wrong PINs do.
    for _ in range(NAME_LIMIT.failures - 2):
        authenticator.sign_in("boss", "1234", "console")
    assert authenticator.sign_in("boss", "1234", "console").verdict is Verdict.LOCKED
