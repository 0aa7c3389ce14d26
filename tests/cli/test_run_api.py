"""``shoe-controller run --api``: served only when asked, refused off loopback without TLS
and on a bad or busy address (one line, exit 3), served with TLS when configured, and a
round run end to end from the API with ``--rounds``."""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from shoe_controller.api.roles import Role
from shoe_controller.api.users import UsersFile
from shoe_controller.cli import controller as cli
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.client import WsClient
from tests.api.conftest import cheap_hasher
from tests.api.test_end_to_end import deal_rounds
from tools.real_parts import program


@pytest.fixture(autouse=True)
def no_shoe_left() -> object:
    yield None
    for address in live_addresses():
        switch_off(address)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def base(tmp_path: Path) -> list[str]:
    # The in-process simulator deals under run only on a test bench (--bench).
    return [
        "run",
        "--bench",
        "--device",
        "sim://?pace=0",
        "--journal",
        str(tmp_path / "journal.sqlite3"),
    ]


@pytest.mark.parametrize(
    ("api", "message"),
    [
        ("0.0.0.0:8750", "reachable from the network without TLS"),
        ("127.0.0.1", "give HOST:PORT"),
        ("127.0.0.1:http", "give HOST:PORT"),
        ("192.0.2.1:8750", "without TLS"),
    ],
)
def test_a_bad_or_open_address_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], api: str, message: str
) -> None:
    code, out, err = run(capsys, *base(tmp_path), "--api", api)
    assert code == 3
    assert len(err.splitlines()) == 1
    assert message in err
    assert out == ""


def test_a_busy_port_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = run(capsys, *base(tmp_path), "--api", f"127.0.0.1:{port}")
    assert code == 3
    assert "another program listens there already" in err


def test_an_unknown_api_key_in_the_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[api]\nlisten = "127.0.0.1:1"\nport = 8750\n')
    code, _, err = run(capsys, *base(tmp_path), "--config", str(config))
    assert code == 3
    assert "unknown key api.port" in err


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "api.crt", tmp_path / "api.key"
    subprocess.run(
        [program("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def _serve_a_round(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    url: str,
    ssl_context: ssl.SSLContext | None = None,
) -> tuple[int, list[str]]:
    """Run ``shoe-controller run ... --rounds 1`` on this thread (it handles signals) while
    a dealer deals the round through the API from another."""
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    users.add("dana", Role.DEALER, "1111")
    seen: list[str] = []
    failures: list[BaseException] = []

    async def dealer() -> None:
        for _ in range(200):
            try:
                client = await WsClient.open(url, ssl=ssl_context)
                break
            except OSError:
                await asyncio.sleep(0.05)  # the service is still starting
        else:
            raise AssertionError(f"nothing answers at {url}")
        try:
            await client.login("dana", "1111")
            events = await deal_rounds(client, rounds=1)
            seen.extend(e["event"] for e in events)
        finally:
            await client.close()

    def in_thread() -> None:
        try:
            asyncio.run(dealer())
        except BaseException as exc:
            failures.append(exc)
            signal.raise_signal(signal.SIGTERM)  # the run stops as systemd would stop it

    thread = threading.Thread(target=in_thread)
    thread.start()
    code = cli.main(argv)
    thread.join(30)
    if failures:
        raise failures[0]
    return code, seen


def test_a_round_dealt_through_the_api_of_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    argv = [*base(tmp_path), "--rounds", "1", "--api", f"127.0.0.1:{port}"]
    argv += ["--users", str(tmp_path / "users.json")]
    code, seen = _serve_a_round(tmp_path, monkeypatch, argv, f"http://127.0.0.1:{port}/")
    out = capsys.readouterr().out
    assert code == 0
    assert f"Dealer console and API: http://127.0.0.1:{port}/" in out
    assert seen.count("card") == 49
    assert seen[-1] == "round_closed"


@pytest.mark.needs("openssl")
def test_tls_off_loopback_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cert, key = _certificate(tmp_path)
    port = free_port()
    config = tmp_path / "config.toml"
    # Every address of this machine: reached here through loopback only.
    config.write_text(
        f'[api]\nlisten = "0.0.0.0:{port}"\nusers = "{tmp_path / "users.json"}"\n'
        f'tls_cert = "{cert}"\ntls_key = "{key}"\n'
    )
    client_tls = ssl.create_default_context(cafile=str(cert))
    client_tls.check_hostname = False
    argv = [*base(tmp_path), "--rounds", "1", "--config", str(config)]
    code, seen = _serve_a_round(
        tmp_path, monkeypatch, argv, f"https://127.0.0.1:{port}/", client_tls
    )
    assert code == 0
    assert f"https://0.0.0.0:{port}/" in capsys.readouterr().out
    assert seen[-1] == "round_closed"


def test_a_missing_tls_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[api]\nlisten = "0.0.0.0:1"\ntls_cert = "{tmp_path / "none.crt"}"\n'
        f'tls_key = "{tmp_path / "none.key"}"\n'
    )
    code, _, err = run(capsys, *base(tmp_path), "--config", str(config))
    assert code == 3
    assert "does not exist" in err
