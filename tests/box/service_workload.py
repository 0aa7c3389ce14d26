"""What the service does to the system, in small: run under strace by test_syscalls.py.

An audit journal in SQLite (WAL, synchronous=FULL), a serial port opened exclusively on a
pseudo-terminal and read by a thread, logging, the operating system's random source, and
libusb starting up when it is installed. Exits 0 when all of it worked.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path

import serial


def journal(directory: Path) -> None:
    db = sqlite3.connect(directory / "journal.sqlite3")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE records (seq INTEGER PRIMARY KEY, body BLOB)")
    for _ in range(20):
        with db:
            db.execute("INSERT INTO records (body) VALUES (?)", (secrets.token_bytes(32),))
    db.close()


def serial_port() -> None:
    controller, shoe = os.openpty()
    port = serial.Serial(os.ttyname(shoe), 115200, timeout=0.05, exclusive=True)
    received = bytearray()
    done = threading.Event()

    def read() -> None:
        while len(received) < 12:
            received.extend(port.read(12))
        done.set()

    thread = threading.Thread(target=read)
    thread.start()
    os.write(controller, b"\x01frame\x00\x02frame\x00")
    port.write(b"\x03ack\x00")
    assert done.wait(10), "the reader thread got nothing"
    thread.join()
    port.close()
    os.close(shoe)
    os.close(controller)


def libusb() -> None:
    try:
        import libusb_package
        import usb.core
    except ImportError:
        return
    backend = libusb_package.get_libusb1_backend()
    if backend is not None:
        list(usb.core.find(find_all=True, backend=backend))


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:
        journal(Path(directory))
    serial_port()
    libusb()
    logging.getLogger("workload").info("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
