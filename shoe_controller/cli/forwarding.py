"""``shoe-controller run --broker``: forward the journal to the floor while the table runs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shoe_controller.cli.output import Output
from shoe_controller.floor.forwarder import Forwarder
from shoe_controller.floor.settings import FloorSettings
from shoe_controller.service.controller import TableController

PROG = "shoe-controller"
log = logging.getLogger(__name__)


@contextmanager
def forwarding(
    settings: FloorSettings | None, journal: Path, controller: TableController, out: Output
) -> Iterator[Forwarder | None]:
    """Forward ``journal`` to the floor for as long as the block runs (nothing without
    ``settings``). The forwarder starts first and waits for the journal; it stops last, so
    that it forwards what the controller journaled while stopping, for at most the drain
    time, then says what is left for the next start."""
    if settings is None:
        yield None
        return
    forwarder = Forwarder(settings, journal)
    unsubscribe = controller.subscribe(forwarder.wake)
    forwarder.start()
    try:
        yield forwarder
    finally:
        unsubscribe()
        waiting = forwarder.stop(settings.drain_seconds)
        if forwarder.failure is not None:
            out.warn(f"{PROG}: forwarding to the floor failed: {forwarder.failure}")
        if waiting:
            message = (
                f"{waiting} public records wait for the floor's broker "
                f"{settings.broker.describe()}; they are forwarded at the next start"
            )
            log.warning("%s", message)
            out.warn(f"{PROG}: {message}")
        else:
            log.info("every public record was forwarded to the floor")
