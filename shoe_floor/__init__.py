"""The floor: every table's public record in one store, its reports and the pit's dashboard.

Each table's box forwards its public record to an MQTT broker (docs/floor.md);
``shoe-floor collect`` stores it (SQLite or PostgreSQL), ``shoe-floor report`` sums it up
per table and per shift, ``shoe-floor serve`` shows every table live, and
``shoe-floor audit`` checks a box's journal against the chain heads the floor received.

The floor shares the public event schema with the box and nothing else: it never imports
the box's service.
"""
