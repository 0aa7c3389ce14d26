"""The table-side box itself: installing the controller on it (:mod:`.installation`: the udev
rules, the service unit, the accounts, as a plan of steps) and checking that it is ready
for the shoe (:mod:`.checks`: what ``shoe-diag check`` reports). Both read the box's
accounts through :mod:`.accounts`, from the running system or from an image's files.

Nothing here parses arguments or prints: ``shoe-diag install`` and ``shoe-diag check``
(:mod:`shoe_controller.cli.diag_box`) do.
"""
