"""The box's side of the floor link: the forwarder (the journal's public records to the
floor's broker, signed), its settings, cursor and keys, and the broker connection that
``shoe-floor`` uses too.

Above the service, beside the API: it reads the journal and projects records with the
service's public projection; the service never imports it. The wire format is
:mod:`floor_protocol`'s.
"""
