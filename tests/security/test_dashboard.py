"""The pit's dashboard (``shoe-floor serve``) against a hostile client: the real process
on loopback, attacked as a browser on another site, a rebinding name, a guesser, a flood
and malformed input would. Each refusal is the dashboard's own; the collectors and the
store never see the attacker."""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.errors import ExitCode
from shoe_floor.dashboard.users import FloorUsers
from shoe_floor.store import open_store
from tests.api.conftest import cheap_hasher
from tests.floor.helpers import eventually
from tests.floor.servers import Mosquitto, free_port, make_test_ca
from tools import children

pytestmark = pytest.mark.needs("mosquitto")

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
PIN = {"rosa": "482913", "vic": "730518"}


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@dataclass
class Dashboard:
    port: int
    process: subprocess.Popen[str]
    users: Path
    tls: ssl.SSLContext | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        if self.tls is None:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        else:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", self.port, timeout=WAIT, context=self.tls
            )
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def sign_in(self, user: str, pin: str | None = None, **headers: str) -> tuple[int, str]:
        body = json.dumps({"user": user, "pin": pin or PIN[user]}).encode()
        status, got, _ = self.request(
            "POST", "/api/login", body, {"Content-Type": "application/json", **headers}
        )
        cookie = got.get("Set-Cookie", "").split(";")[0]
        return status, cookie

    def upgrade(self, headers: dict[str, str]) -> int:
        key = base64.b64encode(os.urandom(16)).decode()
        status, _, _ = self.request(
            "GET",
            "/ws",
            headers={
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": key,
                **headers,
            },
        )
        return status


def reset_pin(users: Path, name: str, pin: str) -> subprocess.CompletedProcess[str]:
    """``shoe-floor users reset NAME --pin-stdin``, as an administrator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "shoe_floor", "users", "reset", name, "--pin-stdin",
         "--users", str(users)],
        input=f"{pin}\n", env=child_env(), capture_output=True, text=True, timeout=WAIT,
        check=False,
    )  # fmt: skip


def serve_command(db: str, broker: Mosquitto, users: Path, listen: str, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shoe_floor",
        "serve",
        "--db",
        db,
        "--broker",
        broker.url,
        "--insecure-broker",
        "--users",
        str(users),
        "--listen",
        listen,
        *more,
    ]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    directory = tmp_path / "broker"
    directory.mkdir()
    server = Mosquitto(directory)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def floor(tmp_path: Path) -> tuple[str, Path]:
    db = str(tmp_path / "floor.sqlite3")
    open_store(db).close()
    users = tmp_path / "dashboard-users.json"
    file = FloorUsers(users)
    file.add("rosa", "pit", PIN["rosa"])
    file.add("vic", "viewer", PIN["vic"])
    return db, users


def start(
    db: str, broker: Mosquitto, users: Path, *more: str, tls: ssl.SSLContext | None = None
) -> Dashboard:
    port = free_port()
    process = children.spawn(
        serve_command(db, broker, users, f"127.0.0.1:{port}", *more),
        env=child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    assert "dashboard on" in line, line + process.stderr.read()
    return Dashboard(port, process, users, tls)


@pytest.fixture
def dashboard(floor: tuple[str, Path], broker: Mosquitto) -> Iterator[Dashboard]:
    db, users = floor
    served = start(db, broker, users)
    try:
        yield served
    finally:
        served.process.terminate()
        assert served.process.wait(WAIT) == 0


def test_nothing_but_the_page_before_sign_in(dashboard: Dashboard) -> None:
    status, _, page = dashboard.request("GET", "/")
    assert status == 200 and b"Tables live" in page
    assert dashboard.request("GET", "/api/board")[0] == 401
    assert dashboard.request("GET", "/api/quarantine")[0] == 401
    assert dashboard.upgrade({}) == 401
    status, cookie = dashboard.sign_in("rosa")
    assert status == 200 and cookie.startswith("floor_session=")
    status, _, board = dashboard.request("GET", "/api/board", headers={"Cookie": cookie})
    assert status == 200 and "tables" in json.loads(board)
    assert dashboard.upgrade({"Cookie": cookie}) == 101


def test_roles_pit_and_viewer(dashboard: Dashboard) -> None:
    _, pit = dashboard.sign_in("rosa")
    _, viewer = dashboard.sign_in("vic")
    assert dashboard.request("GET", "/api/quarantine", headers={"Cookie": pit})[0] == 200
    assert dashboard.request("GET", "/api/quarantine", headers={"Cookie": viewer})[0] == 403
    assert dashboard.request("GET", "/api/board", headers={"Cookie": viewer})[0] == 200


def test_another_site_and_a_rebinding_name_are_refused(dashboard: Dashboard) -> None:
    # A page on another site posting a known PIN: the browser says where it comes from.
    status, cookie = dashboard.sign_in("rosa", Origin="http://evil.example")
    assert (status, cookie) == (403, "")
    # The same as a form would send it: no JSON, no answer.
    body = b'{"user": "rosa", "pin": "482913"}'
    status, _, _ = dashboard.request("POST", "/api/login", body, {"Content-Type": "text/plain"})
    assert status == 415
    # DNS rebinding: the browser believes it talks to evil.example.
    status, _, _ = dashboard.request("GET", "/api/board", headers={"Host": "evil.example"})
    assert status == 421
    _, cookie = dashboard.sign_in("rosa")
    assert dashboard.upgrade({"Cookie": cookie, "Host": "evil.example:80"}) == 421
    foreign = {"Cookie": cookie, "Origin": "http://evil.example"}
    assert dashboard.upgrade(foreign) == 403


def test_guessing_is_bounded_per_name_and_per_client(dashboard: Dashboard) -> None:
    for guess in range(5):
        assert dashboard.sign_in("rosa", f"11111{guess}")[0] == 401
    # The name is locked now, the right PIN included; an unknown name is answered alike.
    assert dashboard.sign_in("rosa")[0] == 429
    for guess in range(5):
        assert dashboard.sign_in("nobody", f"22222{guess}")[0] == 401
    assert dashboard.sign_in("nobody", "222229")[0] == 429
    # Many names from one client: the client runs out of attempts.
    codes = [dashboard.sign_in(f"n{i}", "333333")[0] for i in range(12)]
    assert codes[-1] == 429 and set(codes) <= {401, 429}


def test_shoe_floor_users_reset_lifts_the_lock_of_a_running_dashboard(
    dashboard: Dashboard,
) -> None:
    for guess in range(5):
        assert dashboard.sign_in("rosa", f"11111{guess}")[0] == 401
    status, _, body = dashboard.request(
        "POST",
        "/api/login",
        json.dumps({"user": "rosa", "pin": PIN["rosa"]}).encode(),
        {"Content-Type": "application/json"},
    )
    assert status == 429 and "try again in 300 s" in json.loads(body)["error"]
    done = reset_pin(dashboard.users, "rosa", "604215")
    assert done.returncode == 0, done.stderr
    assert dashboard.sign_in("rosa", "604215")[0] == 200


def test_malformed_input_is_answered_and_the_dashboard_goes_on(dashboard: Dashboard) -> None:
    json_only = {"Content-Type": "application/json"}
    for body in (
        b"[" * 2000 + b"]" * 2000,  # deeper than Python's JSON parser goes
        b'{"user": "\xff\xfe", "pin": "1"}',
        b"[1, 2, 3]",
        b'{"user": 7, "pin": null}',
        b"{",
    ):
        assert dashboard.request("POST", "/api/login", body, json_only)[0] == 400
    assert dashboard.request("POST", "/api/login", b" " * 100_000, json_only)[0] == 413
    assert dashboard.sign_in("rosa")[0] == 200
    assert dashboard.process.poll() is None


def test_a_flood_of_sockets_refuses_the_newcomers_not_the_pit(dashboard: Dashboard) -> None:
    _, cookie = dashboard.sign_in("rosa")
    idle = []
    try:
        # Idle connections that say nothing, and pages beyond a client's share.
        for _ in range(200):
            idle.append(socket.create_connection(("127.0.0.1", dashboard.port), timeout=WAIT))
        pages = [_open_socket(dashboard, cookie) for _ in range(12)]
        assert [code for code, _ in pages].count(101) == 8
        assert {code for code, _ in pages} == {101, 503}
        assert dashboard.request("GET", "/api/board", headers={"Cookie": cookie})[0] == 200
        for _, held in pages:
            held.close()
    finally:
        for conn in idle:
            conn.close()


def _open_socket(dashboard: Dashboard, cookie: str) -> tuple[int, socket.socket]:
    """A WebSocket upgrade kept open: (status, its connection)."""
    conn = socket.create_connection(("127.0.0.1", dashboard.port), timeout=WAIT)
    key = base64.b64encode(os.urandom(16)).decode()
    conn.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {dashboard.host}\r\nConnection: Upgrade\r\n"
            f"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
            f"Cookie: {cookie}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n" not in head:
        head += conn.recv(1024)
    return int(head.split()[1]), conn


def test_a_removed_user_is_signed_out(dashboard: Dashboard) -> None:
    _, cookie = dashboard.sign_in("vic")
    assert dashboard.request("GET", "/api/board", headers={"Cookie": cookie})[0] == 200
    document = json.loads(dashboard.users.read_text())
    document["users"] = [u for u in document["users"] if u["name"] != "vic"]
    dashboard.users.write_text(json.dumps(document))
    assert dashboard.request("GET", "/api/board", headers={"Cookie": cookie})[0] == 401


def _refused(command: list[str]) -> str:
    done = subprocess.run(
        command, env=child_env(), capture_output=True, text=True, timeout=WAIT, check=False
    )
    assert done.returncode == ExitCode.CONFIG, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def test_other_machines_only_over_tls(floor: tuple[str, Path], broker: Mosquitto) -> None:
    db, users = floor
    said = _refused(serve_command(db, broker, users, f"0.0.0.0:{free_port()}"))
    assert "only over TLS" in said


def test_an_untrustworthy_or_missing_users_file_is_refused(
    floor: tuple[str, Path], broker: Mosquitto, tmp_path: Path
) -> None:
    db, users = floor
    listen = f"127.0.0.1:{free_port()}"
    users.chmod(0o666)
    assert "chmod 600" in _refused(serve_command(db, broker, users, listen))
    users.chmod(0o600)
    document = json.loads(users.read_text())
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps({**document, "users": document["users"] * 2}))
    twice.chmod(0o600)
    assert "twice" in _refused(serve_command(db, broker, twice, listen))
    weak = tmp_path / "weak.json"
    from argon2 import PasswordHasher

    cheap = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash("111111")
    weak.write_text(json.dumps({**document, "users": [{**document["users"][0], "pin": cheap}]}))
    weak.chmod(0o600)
    assert "weaker than" in _refused(serve_command(db, broker, weak, listen))
    # Where any account may replace it, as the box's; and none at all.
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    (shared / "users.json").write_bytes(users.read_bytes())
    (shared / "users.json").chmod(0o600)
    said = _refused(serve_command(db, broker, shared / "users.json", listen))
    assert "in a directory other accounts may write" in said
    said = _refused(serve_command(db, broker, tmp_path / "none.json", listen))
    assert "does not exist: add a user with 'shoe-floor users add" in said


def test_over_tls_the_session_cookie_is_secure(
    floor: tuple[str, Path], broker: Mosquitto, tmp_path: Path
) -> None:
    db, users = floor
    ca, cert, key = make_test_ca(tmp_path)
    trust = ssl.create_default_context(cafile=str(ca))
    served = start(db, broker, users, "--tls-cert", str(cert), "--tls-key", str(key), tls=trust)
    try:
        status, got, _ = served.request(
            "POST",
            "/api/login",
            json.dumps({"user": "rosa", "pin": PIN["rosa"]}).encode(),
            {"Content-Type": "application/json", "Origin": f"https://{served.host}"},
        )
        assert status == 200
        assert "Secure" in got["Set-Cookie"] and "HttpOnly" in got["Set-Cookie"]
    finally:
        served.process.terminate()
        served.process.wait(WAIT)


def test_a_forged_presence_shows_as_an_alarm_not_as_a_table(
    floor: tuple[str, Path], broker: Mosquitto
) -> None:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    import floor_protocol as fp
    from floor_protocol.messages import compact

    db, users = floor
    with open_store(db) as store:
        store.enrol("casino", "PG-07", fp.SigningKey.generate().public, 0.0)
    forger = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    forger.connect("127.0.0.1", broker.port)
    forger.loop_start()
    for table in ("PG-07", "PHANTOM"):
        status = {
            "online": True,
            "site": "casino",
            "table": table,
            "connection": "deadbeef-1",
            "version": "0.1.0",
            "shoe": {"model": "FORGED", "serial": "X", "firmware": "0", "approved": True},
        }
        topic = f"shoes/casino/{table}/status"
        forger.publish(topic, compact(status), qos=1, retain=True).wait_for_publish(WAIT)
    forger.disconnect()
    forger.loop_stop()
    served = start(db, broker, users)
    try:
        _, cookie = served.sign_in("rosa")

        def board() -> dict[str, Any]:
            raw = served.request("GET", "/api/board", headers={"Cookie": cookie})[2]
            value: dict[str, Any] = json.loads(raw)
            return value

        eventually(lambda: board()["refused"]["messages"] >= 2)
        shown = board()
        assert shown["tables"] == []
        assert shown["refused"]["by_reason"] == {"unsigned": 2}
        assert shown["refused"]["by_table"] == {"casino/PG-07": 1, "": 1}
    finally:
        served.process.terminate()
        served.process.wait(WAIT)


def test_a_weak_pin_edited_into_the_file_is_refused_at_sign_in(
    floor: tuple[str, Path], broker: Mosquitto, tmp_path: Path
) -> None:
    # By hand, as on the box: the argon2 hash of "1234" for the pit (six digits at least),
    # at the floor's parameters so that the file itself is trusted.
    db, users = floor
    document = json.loads(users.read_text())
    weak = cheap_hasher().hash("1234")
    document["users"].append({"name": "boss", "role": "pit", "pin": weak})
    users.write_text(json.dumps(document))
    served = start(db, broker, users)
    try:
        status, got, body = served.request(
            "POST",
            "/api/login",
            json.dumps({"user": "boss", "pin": "1234"}).encode(),
            {"Content-Type": "application/json"},
        )
        assert (status, "Set-Cookie" in got) == (403, False)
        assert json.loads(body) == {
            "error": "boss's PIN breaks the PIN policy (fewer than 6 digits for a pit): have "
            "it reset with 'shoe-floor users reset boss'"
        }
        # Reset as the message says: the dashboard reads the file again at the next sign-in.
        reset = reset_pin(users, "boss", "604215")
        assert reset.returncode == 0, reset.stderr
        assert served.sign_in("boss", "604215")[0] == 200
    finally:
        served.process.terminate()
        assert served.process.wait(WAIT) == 0
