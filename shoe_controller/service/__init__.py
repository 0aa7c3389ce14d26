"""The table controller: one event-loop thread owning the procedure, the link and the journal."""
