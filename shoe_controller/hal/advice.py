"""The one-line messages of the transport errors a person can fix, shared by every transport.

Each says what is wrong and what to do about it; docs/devices.md lists them.
"""

from __future__ import annotations

from shoe_controller.hal import usb_ids

#: The udev rules file ``shoe-diag install`` installs.
UDEV_RULES = "70-electronic-shoe.rules"
SERVICE = "shoe-controller"


def permission_denied(what: str) -> str:
    return (
        f"permission denied opening {what}: install the shoe's udev rules ({UDEV_RULES}; "
        f"shoe-diag install does) and add this user to the group '{usb_ids.DEVICE_GROUP}' "
        f"(sudo usermod -aG {usb_ids.DEVICE_GROUP} $USER, then log in again)"
    )


def busy(what: str, node: str | None) -> str:
    who = f"; 'fuser -v {node}' or 'lsof {node}' shows who" if node else ""
    return (
        f"{what} is in use by another process (the {SERVICE} service, if it is running: "
        f"stop it with 'sudo systemctl stop {SERVICE}' or ask it instead){who}"
    )


def not_found(what: str) -> str:
    return (
        f"{what} not found: check that the shoe is plugged in and powered, then run "
        f"'shoe-diag ports' to list the shoes this machine sees"
    )
