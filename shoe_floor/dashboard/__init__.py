"""The pit's dashboard: every table live in a browser (``shoe-floor serve``)."""
