"""Hardware abstraction: transports that move bytes to and from a shoe, and discovery."""
