"""The box's JSON-RPC methods: who may call each, its parameters, and the controller input
it becomes (docs/api.md; shoe_controller/api/schema.json describes each one).

Every table method is journaled by the controller with the signed-in user and role as its
actor; signing in and out, lockouts and refusals by role through ``record_access``. An
answer is sent only once the controller journaled what it answers (rule E3).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.accounts.attempts import ANYWHERE
from shoe_controller.api import rpc
from shoe_controller.api.auth import Authenticator, Session, Sessions, SignIn, Verdict
from shoe_controller.api.peers import ConsoleAddresses, client_key
from shoe_controller.api.pinchecks import PinCheckPacing
from shoe_controller.api.roles import USERS, Capability, Role, may, roles_with
from shoe_controller.api.service import TableService
from shoe_controller.api.signins import AccessRecord, FailedSignIns
from shoe_controller.errors import ProcedureError, ShoeControllerError
from shoe_controller.procedure.declarations import DECLARATIONS, InputDeclaration, InvalidParameter
from shoe_controller.service import Actor, TableMovedOn

log = logging.getLogger(__name__)

#: Longest wait for the controller to journal an input (seconds).
CALL_TIMEOUT_S = 10.0
#: Sign-ins waiting for their PIN check at most; past that, "try again in a moment".
MAX_SIGN_INS_WAITING = 32
#: Of those, the places only the table's console may take (``[api] console_addresses``):
#: other clients together keep at most MAX_SIGN_INS_WAITING - TABLE_CONSOLE_SIGN_INS waiting.
TABLE_CONSOLE_SIGN_INS = 4
#: The scope in which the table's console's wrong PINs lock a name (:mod:`..accounts.attempts`):
#: other clients' wrong PINs lock it for other clients only.
TABLE_CONSOLE_SCOPE = "table-console"
#: A sign-in refused for a lock is answered after this long (seconds): a locked guesser
#: then asks a few times a second, not hundreds, whatever name it tries.
LOCKED_ANSWER_S = 1.0
#: The largest prompt number taken: a journal's sequence numbers, as far as a JSON number
#: stays exact in any client (2**53 - 1).
MAX_PROMPT = 2**53 - 1


def refusal_data(exc: ProcedureError) -> dict[str, Any] | None:
    """The error's ``data`` for a refusal the procedure names: its code and values, for a
    client to word in its own language."""
    if exc.code is None:
        return None
    return {"refusal": exc.code, "values": dict(exc.values)}


@dataclass
class Caller:
    """One client: a WebSocket connection, or one HTTP request with its bearer token."""

    peer: str
    session: Session | None = None
    #: Told when this caller signs in or out (the WebSocket starts or stops its events).
    on_session: Callable[[Session | None], None] = field(default=lambda s: None)


Handler = Callable[["Api", Caller, rpc.Params], Awaitable[Any]]


@dataclass(frozen=True)
class Method:
    name: str
    #: None: anyone may call it, signed in or not.
    capability: Capability | None
    handler: Handler
    #: Parameter names it takes; anything else is invalid.
    params: frozenset[str] = frozenset()


class Api:
    """Runs methods for callers against the controller, the users and the sessions."""

    def __init__(
        self,
        controller: TableService,
        authenticator: Authenticator,
        sessions: Sessions,
        *,
        call_timeout: float = CALL_TIMEOUT_S,
        locked_answer: float = LOCKED_ANSWER_S,
        console_addresses: ConsoleAddresses | None = None,
    ) -> None:
        self.controller = controller
        self.console_addresses = console_addresses or ConsoleAddresses()
        self.locked_answer = locked_answer
        self.authenticator = authenticator
        self.sessions = sessions
        self.call_timeout = call_timeout
        self.failed_sign_ins = FailedSignIns(authenticator.clock)
        #: Told of the sessions a change of the users file ended (the WebSockets are).
        self.on_sessions_ended: Callable[[list[Session]], None] = lambda ended: None
        #: When PIN checks run (argon2 is slow and memory-hard on purpose): never while
        #: cards leave the shoe, and not so often that a flood of sign-ins takes the cores
        #: the table needs. The server tells it the table's phase.
        self.pin_checks = PinCheckPacing()
        self._waiting = 0
        self._waiting_elsewhere = 0
        self._journaling: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        self.pin_checks.close()
        self.authenticator.close()

    def reconcile(self) -> None:
        """Take in a change of the users file, if any: end the sessions of the users it
        removed or changed, journal that, and journal a new version that is refused (the
        last good one stays in use). Called before any session is used, and every half
        second by the server, so a change takes effect within a second."""
        change = self.authenticator.refresh()
        if change is None:
            return
        if change.refused is not None:
            log.error("%s; the users file read before stays in use", change.refused)
            self.journal_later(AccessRecord("users_file", "", "", False, change.refused))
        ended: list[Session] = []
        for name in sorted(change.ended):
            ended += self.sessions.end_user(name)
        for session in ended:
            self.journal_later(
                AccessRecord(
                    "session_ended",
                    session.user,
                    session.role.value,
                    True,
                    "the user was removed or changed in the users file",
                )
            )
        if ended:
            self.on_sessions_ended(ended)

    def journal_later(self, record: AccessRecord) -> None:
        """Journal ``record`` without waiting for it (on the server's loop)."""
        task = asyncio.get_running_loop().create_task(self._journal_record(record))
        self._journaling.add(task)
        task.add_done_callback(self._journaling.discard)

    async def _journal_record(self, record: AccessRecord) -> None:
        try:
            await self.journal_access_by(
                record.action,
                record.user,
                record.role,
                accepted=record.accepted,
                detail=record.detail,
            )
        except rpc.RpcError as exc:
            log.error("cannot journal %s: %s", record.action, exc.message)

    async def flush_sign_ins(self, *, everything: bool = False) -> None:
        """Journal the failed sign-ins gathered over a minute that is over, every client's
        at once (the controller then commits them together)."""
        records = self.failed_sign_ins.due(everything=everything)
        await asyncio.gather(*(self._journal_record(record) for record in records))

    async def call(self, caller: Caller, name: str, params: rpc.Params) -> Any:
        method = METHODS.get(name)
        if method is None:
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"no method {name!r}: see docs/api.md")
        unknown = sorted(set(params) - method.params)
        if unknown:
            raise rpc.RpcError(rpc.INVALID_PARAMS, f"{name} takes no parameter {unknown[0]!r}")
        if method.capability is not None:
            session = self.live_session(caller)
            if not may(session.role, method.capability):
                await self.journal_access(
                    "refused", session, accepted=False, detail=f"{name}: not for a {session.role}"
                )
                raise rpc.RpcError(
                    rpc.ROLE_NOT_ALLOWED,
                    f"a {session.role} may not call {name}: sign in with a role that may",
                    {"role": session.role.value},
                )
        return await method.handler(self, caller, params)

    def live_session(self, caller: Caller) -> Session:
        """The caller's session, still valid, counted as used now."""
        session = caller.session
        if session is None:
            raise rpc.RpcError(rpc.NOT_SIGNED_IN, "sign in first (session.login)")
        self.reconcile()
        if self.sessions.get(session.token) is None:
            if caller.session is not None:
                self.set_session(caller, None)
            raise rpc.RpcError(rpc.NOT_SIGNED_IN, "the session has ended: sign in again")
        return session

    async def wait(self, future: Future[None]) -> None:
        """Wait until the controller journaled an input; its refusal is ``NOT_NOW``, or
        ``MOVED_ON`` when the prompt it answered was no longer the table's."""
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), self.call_timeout)
        except TableMovedOn as exc:
            raise rpc.RpcError(rpc.MOVED_ON, str(exc)) from None
        except ProcedureError as exc:
            raise rpc.RpcError(rpc.NOT_NOW, str(exc), refusal_data(exc)) from None
        except ShoeControllerError as exc:
            raise rpc.RpcError(rpc.UNAVAILABLE, str(exc)) from None
        except TimeoutError:
            raise rpc.RpcError(
                rpc.UNAVAILABLE, "the table controller did not answer in time: try again"
            ) from None

    async def journal_access(
        self, action: str, session: Session, *, accepted: bool, detail: str = ""
    ) -> None:
        await self.journal_access_by(
            action, session.user, session.role.value, accepted=accepted, detail=detail
        )

    async def journal_access_by(
        self, action: str, user: str, role: str, *, accepted: bool, detail: str = ""
    ) -> None:
        future = self.controller.record_access(
            action, user=user, role=role, accepted=accepted, detail=detail
        )
        await self.wait(future)

    async def sign_in(self, caller: Caller, user: str, pin: str) -> Session:
        """Check ``user``'s PIN (when :attr:`pin_checks` lets it: argon2 is slow on
        purpose), journal the outcome (failures within bounds, see :mod:`.signins`), and
        give the caller a session."""
        self.reconcile()
        at_table = caller.peer in self.console_addresses
        # The table's console keeps places of its own (TABLE_CONSOLE_SIGN_INS).
        if self._waiting >= MAX_SIGN_INS_WAITING or (
            not at_table
            and self._waiting_elsewhere >= MAX_SIGN_INS_WAITING - TABLE_CONSOLE_SIGN_INS
        ):
            raise rpc.RpcError(rpc.UNAVAILABLE, "too many sign-ins at once: try again in a moment")
        client = client_key(caller.peer)
        scope = TABLE_CONSOLE_SCOPE if at_table else ANYWHERE

        def check(before_check: Callable[[], None]) -> SignIn:
            return self.authenticator.sign_in(
                user, pin, client, scope=scope, before_check=before_check
            )

        self._waiting += 1
        self._waiting_elsewhere += not at_table
        try:
            result = await asyncio.wrap_future(self.pin_checks.submit(check, at_table=at_table))
        except RuntimeError:  # the service is stopping: no more checks
            raise rpc.RpcError(
                rpc.UNAVAILABLE, "the service is stopping: sign in once it is back"
            ) from None
        finally:
            self._waiting -= 1
            self._waiting_elsewhere -= not at_table
        if result.verdict is Verdict.ACCEPTED:
            assert result.user is not None
            session = self.sessions.open(result.user.name, result.user.role)
            try:
                await self.journal_access("sign_in", session, accepted=True, detail=caller.peer)
            except rpc.RpcError:
                self.sessions.close(session.token)
                raise
            self.set_session(caller, session)
            return session
        if result.verdict is Verdict.WEAK_PIN and result.user is not None:
            # A right PIN (its owner's, or one who knows it): journaled at once, with why.
            refusal = USERS.weak_pin_refusal(result.user.name, result.weak)
            await self.journal_access_by(
                "sign_in",
                result.user.name,
                result.user.role.value,
                accepted=False,
                detail=f"{caller.peer}: {refusal}",
            )
            raise rpc.RpcError(rpc.SIGN_IN_REFUSED, refusal, {"pin_policy": result.weak})
        if result.verdict is Verdict.LOCKED:
            why = "refused while locked"
        else:
            why = "wrong PIN" if result.user is not None else "unknown user"
        # Journaled once the minute is over, with the client's other failures: bounded,
        # and no commit of their own on the table's thread (see signins.py).
        self.failed_sign_ins.failed(client, caller.peer, user, why)
        if result.verdict is Verdict.LOCKED_NOW:
            role = result.user.role.value if result.user is not None else ""
            self.failed_sign_ins.locked(
                client,
                caller.peer,
                user,
                role,
                retry_after=result.retry_after,
                client_locked=result.client_locked,
            )
        if result.verdict is Verdict.WRONG:
            raise rpc.RpcError(rpc.SIGN_IN_REFUSED, "wrong user name or PIN")
        if result.verdict is Verdict.LOCKED:
            await asyncio.sleep(self.locked_answer)
        minutes = max(1, round(result.retry_after / 60))
        raise rpc.RpcError(
            rpc.LOCKED_OUT,
            f"too many wrong PINs: sign-in is locked; try again in {minutes} min or ask a "
            "supervisor",
            {"retry_after": round(result.retry_after)},
        )

    def set_session(self, caller: Caller, session: Session | None) -> None:
        caller.session = session
        caller.on_session(session)

    async def sign_out(self, caller: Caller) -> None:
        session = caller.session
        if session is None:
            return
        self.sessions.close(session.token)
        self.set_session(caller, None)
        await self.journal_access("sign_out", session, accepted=True, detail=caller.peer)

    async def input(self, caller: Caller, make: Callable[[Actor], Future[None]]) -> None:
        session = self.live_session(caller)
        await self.wait(make(Actor(session.user, session.role.value)))


# --- parameters ------------------------------------------------------------------------------


def _invalid(message: str) -> rpc.RpcError:
    return rpc.RpcError(rpc.INVALID_PARAMS, message)


def _string(params: rpc.Params, key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise _invalid(f"{key!r} is a non-empty string")
    return value


def _int(params: rpc.Params, key: str, low: int, high: int) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _invalid(f"{key!r} is a whole number from {low} to {high}")
    return value


def _prompt(params: rpc.Params) -> int | None:
    """The prompt an input answers (its ``id``), or None when the caller names none."""
    if "prompt" not in params:
        return None
    return _int(params, "prompt", 1, MAX_PROMPT)


# --- methods ---------------------------------------------------------------------------------


async def _login(api: Api, caller: Caller, params: rpc.Params) -> dict[str, Any]:
    user, pin = _string(params, "user"), _string(params, "pin")
    session = await api.sign_in(caller, user, pin)
    return _session_json(api, session)


def _session_json(api: Api, session: Session) -> dict[str, Any]:
    return {
        "user": session.user,
        "role": session.role.value,
        "token": session.token,
        "expires_in": round(api.sessions.expires_in(session)),
    }


async def _resume(api: Api, caller: Caller, params: rpc.Params) -> dict[str, Any]:
    api.reconcile()
    session = api.sessions.get(_string(params, "token"))
    if session is None:
        raise rpc.RpcError(rpc.NOT_SIGNED_IN, "the session has ended: sign in again")
    api.set_session(caller, session)
    return _session_json(api, session)


async def _logout(api: Api, caller: Caller, params: rpc.Params) -> None:
    await api.sign_out(caller)


#: Who appears on the console's sign-in screen: the people who run this table.
ROSTER_ROLES = (Role.DEALER, Role.SUPERVISOR)


async def _roster(api: Api, caller: Caller, params: rpc.Params) -> dict[str, Any]:
    """The names and roles of the users who may deal or supervise at this table, for a
    sign-in by touch. Names are not secret (dealers wear them); nothing of a PIN is sent.
    The users file as the service holds it: a change on disk is taken in first, and a
    version that is refused leaves the last good one, as for signing in."""
    api.reconcile()
    users = api.authenticator.users()
    return {
        "users": [
            {"name": user.name, "role": user.role.value}
            for user in sorted(users.values(), key=lambda u: u.name)
            if user.role in ROSTER_ROLES
        ]
    }


async def _state(api: Api, caller: Caller, params: rpc.Params) -> dict[str, Any]:
    return api.controller.snapshot()


def _method(
    name: str,
    capability: Capability | None,
    handler: Handler,
    params: tuple[str, ...] = (),
) -> Method:
    return Method(name, capability, handler, frozenset(params))


def _input(decl: InputDeclaration) -> Method:
    """A table input, as its declaration says: its parameters are checked into the values
    the controller takes (or refused as invalid params), so nothing half-checked reaches
    it. Every input takes ``prompt`` too: the prompt it answers, which the controller
    checks when it takes the input, in order with the table's other inputs and events."""
    on_api = decl.api_params()
    names = {p.name for p in on_api}

    async def handler(api: Api, caller: Caller, p: rpc.Params) -> None:
        try:
            values = decl.check({k: v for k, v in p.items() if k in names}, api.controller.rules)
        except InvalidParameter as exc:
            raise _invalid(str(exc)) from None
        prompt = _prompt(p)
        await api.input(
            caller, lambda actor: api.controller.give(decl.name, values, actor=actor, prompt=prompt)
        )

    return Method(decl.method, capability_of(decl), handler, frozenset((*names, "prompt")))


DEAL, SUPERVISE, READ = Capability.DEAL, Capability.SUPERVISE, Capability.READ_STATE


def capability_of(decl: InputDeclaration) -> Capability:
    """The capability an input needs, from its declaration (E4). A misdeal determination
    against a conclusive record is a supervisor's too: the procedure refuses a dealer's,
    whatever the channel."""
    return SUPERVISE if decl.supervisor_only is not None else DEAL


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _method("session.login", None, _login, ("user", "pin")),
        _method("session.resume", None, _resume, ("token",)),
        _method("session.logout", None, _logout),
        _method("session.roster", None, _roster),
        _method("table.state", READ, _state),
        *(_input(decl) for decl in DECLARATIONS.values()),
    )
}


def roles_for(method: Method) -> tuple[Role, ...]:
    """Who may call ``method`` (everyone, signed in or not, when it needs nothing)."""
    if method.capability is None:
        return tuple(Role)
    return roles_with(method.capability)
