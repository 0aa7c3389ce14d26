"""Who may sign in, and how: the users file and its rules, the PIN policy, the limits on
sign-in attempts, signing in and sessions.

The box's API and console (``shoe-diag users``) and the floor's dashboard (``shoe-floor
users``) use this one package, each with its own set of roles (a :class:`~.users.Realm`):
a users file is trusted, a PIN accepted and a guesser stopped by the same code on both.
"""
