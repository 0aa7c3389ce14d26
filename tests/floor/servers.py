"""The real servers of the floor's tests (benchmarks/_servers.py), children of the test run
that die with it. A test that uses one is marked ``@pytest.mark.needs("mosquitto")`` or
``("postgresql")``: it is skipped where the part is missing (tests/conftest.py); one that is
not marked fails here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks._servers import MissingServer, free_port
from benchmarks._servers import Mosquitto as _Mosquitto
from benchmarks._servers import Postgres as _Postgres

__all__ = ["CasinoMosquitto", "Mosquitto", "Postgres", "free_port", "make_test_ca"]


class Mosquitto(_Mosquitto):
    def __init__(self, directory: Path, *, persistence: bool = False) -> None:
        try:
            super().__init__(directory, persistence=persistence)
        except MissingServer as exc:
            pytest.fail(str(exc))


class Postgres(_Postgres):
    def __init__(self) -> None:
        try:
            super().__init__()
        except MissingServer as exc:
            pytest.fail(str(exc))


class CasinoMosquitto(Mosquitto):
    """A broker as a casino runs it: TLS only (its certificate signed by a test CA made
    here), a password file, and the per-table ACL of docs/floor.md, word for word."""

    PASSWORD = "s3cret-{user}"

    def __init__(self, directory: Path, *, users: list[str], acl: str) -> None:
        super().__init__(directory)
        self.ca_file, cert, key = make_test_ca(directory)
        passwords = directory / "passwd"
        for user in users:
            subprocess.run(
                [
                    "mosquitto_passwd",
                    "-b",
                    *(["-c"] if not passwords.exists() else []),
                    str(passwords),
                    user,
                    self.password(user),
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
        acl_file = directory / "floor.acl"
        acl_file.write_text(acl, encoding="utf-8")
        kept = [
            line
            for line in self.config.read_text(encoding="utf-8").splitlines()
            if not line.startswith(("listener", "allow_anonymous"))
        ]
        lines = [
            f"listener {self.port} 127.0.0.1",
            f"certfile {cert}",
            f"keyfile {key}",
            "allow_anonymous false",
            f"password_file {passwords}",
            f"acl_file {acl_file}",
            *kept,
        ]
        self.config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.url = f"mqtts://127.0.0.1:{self.port}"

    def password(self, user: str) -> str:
        return self.PASSWORD.format(user=user)

    def password_file(self, user: str) -> Path:
        path = self.directory / f"{user}.password"
        path.write_text(self.password(user) + "\n", encoding="utf-8")
        path.chmod(0o600)
        return path


def make_test_ca(directory: Path) -> tuple[Path, Path, Path]:
    """A CA of the test's own and the broker's certificate (for 127.0.0.1) signed by it:
    (CA certificate, broker certificate, broker key), PEM files in ``directory``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "floor test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = (directory / n for n in ("ca.pem", "broker.crt", "broker.key"))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    return ca_file, cert_file, key_file
