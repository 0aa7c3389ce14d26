"""A simulated shoe: the firmware's behaviour in Python, with a virtual croupier and faults.

The core, :class:`SimulatedShoe`, is sans-I/O; the front ends run it in-process
(``sim://`` addresses, :mod:`.transport`), behind a pseudo-terminal (:mod:`.pty_frontend`),
on a TCP port (:mod:`.tcp_frontend`) and behind a pyusb backend (:mod:`.usb_backend`).
docs/simulator.md describes the options and the fault plan.
"""

from shoe_controller.simulator.faults import CardFault, FaultPlan, LineFaultRates, ScheduledFault
from shoe_controller.simulator.options import DeckVariant, ScriptedPress, SimOptions
from shoe_controller.simulator.shoe import DrawKind, DrawRecord, SimulatedShoe

__all__ = [
    "CardFault",
    "DeckVariant",
    "DrawKind",
    "DrawRecord",
    "FaultPlan",
    "LineFaultRates",
    "ScheduledFault",
    "ScriptedPress",
    "SimOptions",
    "SimulatedShoe",
]
