"""A simulated shoe: the firmware's behaviour in Python, with a virtual croupier and faults."""
