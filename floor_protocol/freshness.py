"""A replay request is usable once, and only while fresh.

The floor's key signs every replay request, and a box answers one per interval at most;
but a signature alone does not stop a request read on the broker from being published
again and again, each copy as genuine as the first. So every request carries the time it
was made (``ts``) and a nonce (:data:`NONCE_HEX` hex digits the floor draws at random),
both under the signature, and a box answers one only when, by its own clock,

- it was made at most :data:`MAX_AGE` seconds ago (``stale`` otherwise),
- and at most :data:`MAX_SKEW` seconds ahead (``future`` otherwise),
- and its nonce is not one the box has seen (``replayed``).

The box remembers the nonces of the requests it saw until they are stale, no longer: a
request older than that is refused for its age, whatever its nonce. The memory holds
:data:`MEMORY` nonces at most; when it is full the newcomer is refused (``full``), never
a nonce forgotten early. Only requests the floor's key signed reach it, so only the floor
fills it, at a few requests a minute.

Why these figures:

- **The floor keeps its requests young.** A collector asks again every few seconds for
  records it still misses, and makes a retained request anew at least every
  :data:`RENEW` seconds, so a request reaching a box (retained ones at the box's
  connection included) is at most some :data:`RENEW` seconds old by the floor's clock.
- **The clocks differ by little.** The box and the floor keep time by NTP (the journal's
  times and the floor's shifts rely on it already): synchronised, they agree within
  milliseconds. :data:`MAX_SKEW`, 30 s, also allows for a box that could not reach its
  time server for weeks (a quartz clock drifts some 20 ppm, under 2 s a day).
- **The window is what those add up to, with room to spare:** :data:`RENEW` (30 s) plus
  :data:`MAX_SKEW` (30 s) plus 30 s for a busy collector or broker: :data:`MAX_AGE`,
  90 s. A shorter window would refuse the genuine requests of a box whose clock has
  drifted; a longer one would only keep a captured request usable for longer after a
  box restarts (below), and need more memory.

The memory is the running box's own. A box that has just started has seen no nonce, so a
request captured in the last :data:`MAX_AGE` seconds could be answered once more by it:
one read of the journal the floor asked for within that minute and a half anyway. A
retained request the box already answered comes again at every reconnection and is
refused as ``replayed``.

A box's clock that steps back (an NTP correction) cannot make a forgotten request fresh
again: a request made no later than one forgotten is refused as ``stale``.

Sans-I/O: times are passed in (seconds since the epoch); ``vectors.json`` holds a sequence
of requests with the verdict each gets.
"""

from __future__ import annotations

import heapq
import math
from typing import Final

from floor_protocol.errors import REASONS

#: How old a request may be when a box receives it (seconds, by the box's clock).
MAX_AGE: Final = 90.0
#: How far ahead of the box's clock a request may have been made (seconds).
MAX_SKEW: Final = 30.0
#: The floor makes a request it still wants anew at least this often (seconds).
RENEW: Final = 30.0
#: Nonces a box remembers at most.
MEMORY: Final = 1024
#: A nonce: 16 random bytes, in lowercase hex.
NONCE_BYTES: Final = 16
NONCE_HEX: Final = 2 * NONCE_BYTES

FRESH: Final = "fresh"
#: Made more than MAX_AGE ago, or no later than a request the box has forgotten.
STALE: Final = "stale"
#: Made more than MAX_SKEW ahead of the box's clock.
FUTURE: Final = "future"
#: Its nonce was seen already: a copy of a request.
REPLAYED: Final = "replayed"
#: MEMORY fresh nonces remembered already: the newcomer is refused.
FULL: Final = "full"

REFUSALS: Final = (STALE, FUTURE, REPLAYED, FULL)
#: Fresh, but too soon after the last request the box answered (its ``replay_interval``).
TOO_SOON: Final = "too_soon"
#: Every reason a box refuses a replay request for, as its status counts them: the
#: message's own (not signed by the floor's key, not a replay request), its freshness,
#: and the box's interval.
REPLAY_REFUSALS: Final = (*REASONS, *REFUSALS, TOO_SOON)


class ReplayGuard:
    """The nonces of the fresh requests a box has seen, and the verdict on a new one."""

    def __init__(
        self, *, max_age: float = MAX_AGE, max_skew: float = MAX_SKEW, memory: int = MEMORY
    ) -> None:
        self.max_age = max_age
        self.max_skew = max_skew
        self.memory = memory
        self._seen: set[str] = set()
        #: (made at, nonce) of every nonce in ``_seen``, oldest first.
        self._by_age: list[tuple[float, str]] = []
        #: The latest time a forgotten request was made: none made by then is answered.
        self._forgotten = -math.inf

    def __len__(self) -> int:
        return len(self._seen)

    def check(self, made_at: float, nonce: str, now: float) -> str:
        """The verdict on a request made at ``made_at`` with ``nonce``, received ``now``:
        FRESH (its nonce is remembered from now on) or the reason it is refused."""
        self._forget(now)
        if made_at <= self._forgotten or now - made_at > self.max_age:
            return STALE
        if made_at - now > self.max_skew:
            return FUTURE
        if nonce in self._seen:
            return REPLAYED
        if len(self._seen) >= self.memory:
            return FULL
        self._seen.add(nonce)
        heapq.heappush(self._by_age, (made_at, nonce))
        return FRESH

    def _forget(self, now: float) -> None:
        """Forget the nonces of requests that are stale by now: their age refuses them."""
        while self._by_age and now - self._by_age[0][0] > self.max_age:
            made_at, nonce = heapq.heappop(self._by_age)
            self._seen.discard(nonce)
            self._forgotten = max(self._forgotten, made_at)
