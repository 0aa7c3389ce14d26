"""The collector's MQTT 5 connection: a persistent session subscribed to the floor's
topics, whose records are acknowledged only when the collector says so.

A paho client (manual acknowledgements) with its own network thread: it connects (again
and again while the broker is away), subscribes, and hands every message over as it
comes. A delivery is acknowledged on the connection it came on, or not at all: after a
reconnection the broker sends again what was not acknowledged, and that copy is the one
acknowledged (paho numbers messages per connection, so an old number could name another
message).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from floor_protocol.properties import UserProperties
from shoe_controller.floor.broker import (
    BrokerSettings,
    make_client,
    publish_properties,
    user_properties,
)


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message from the broker, with what its acknowledgement needs."""

    topic: str
    payload: bytes
    properties: UserProperties
    qos: int
    mid: int
    connection: int


#: Called on the connection's thread with the messages that arrived, in order.
OnMessages = Callable[[list[Delivery]], None]
#: Called on the connection's thread with what happened and why: "subscribed", "refused"
#: (the broker said no to the connection or a subscription) or "lost".
OnState = Callable[[str, str], None]


class Subscription:
    """``start()``; ``ack()`` and ``publish()`` from any thread; ``leave()``, ``close()``."""

    def __init__(
        self,
        broker: BrokerSettings,
        client_id: str,
        filters: Sequence[str],
        *,
        on_messages: OnMessages,
        on_state: OnState,
        session_expiry: int,
        receive_maximum: int,
        keepalive: int = 30,
        reconnect_delay: tuple[int, int] = (1, 10),
    ) -> None:
        self.broker = broker
        self.client_id = client_id
        self.filters = list(filters)
        self._on_messages = on_messages
        self._on_state = on_state
        self._session_expiry = session_expiry
        self._receive_maximum = receive_maximum
        self._keepalive = keepalive
        self._lock = threading.Lock()
        #: Which connection is up (0: none yet); a delivery carries the one it came on.
        self._connection = 0
        self._live = False
        self._left = threading.Event()
        self._gone = threading.Event()
        client = make_client(broker, client_id, manual_ack=True)
        client.on_connect = self._connected
        client.on_disconnect = self._disconnected
        client.on_message = self._message
        client.on_subscribe = self._subscribed
        client.on_unsubscribe = lambda *_: self._left.set()
        client.reconnect_delay_set(*reconnect_delay)
        self._client = client

    # -- from any thread --------------------------------------------------------------------

    def start(self) -> None:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = self._session_expiry
        props.ReceiveMaximum = self._receive_maximum
        self._client.connect_async(
            self.broker.host,
            self.broker.port,
            keepalive=self._keepalive,
            clean_start=False,
            properties=props,
        )
        self._client.loop_start()

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Acknowledge the deliveries of the current connection (QoS 1)."""
        with self._lock:
            if not self._live:
                return
            current = self._connection
        for delivery in deliveries:
            if delivery.qos and delivery.connection == current:
                self._client.ack(delivery.mid, delivery.qos)

    def publish(
        self,
        topic: str,
        payload: bytes,
        properties: UserProperties = (),
        *,
        retain: bool = False,
    ) -> bool:
        """Send a message at QoS 1; False when not connected (it is not kept)."""
        if not self._live:
            return False
        info = self._client.publish(
            topic, payload, qos=1, retain=retain, properties=publish_properties(properties)
        )
        return info.rc == mqtt.MQTT_ERR_SUCCESS

    def leave(self, timeout: float) -> bool:
        """Unsubscribe from every filter: the broker delivers nothing more (what it already
        sent still arrives). False when not connected or not confirmed in ``timeout``."""
        if not self._live:
            return False
        self._left.clear()
        result, _ = self._client.unsubscribe(self.filters)
        return result == mqtt.MQTT_ERR_SUCCESS and self._left.wait(timeout)

    def close(self, session_expiry: int | None, timeout: float) -> None:
        """Disconnect (with the session's new expiry, when given) and stop reconnecting."""
        props = None
        if session_expiry is not None:
            props = Properties(PacketTypes.DISCONNECT)  # type: ignore[no-untyped-call]
            props.SessionExpiryInterval = session_expiry
        self._gone.clear()
        if self._client.disconnect(properties=props) == mqtt.MQTT_ERR_SUCCESS:
            # loop_stop() may end the network thread before DISCONNECT is on the wire.
            self._gone.wait(timeout)
        self._client.loop_stop()

    # -- paho's callbacks (its network thread) ----------------------------------------------

    def _connected(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason.is_failure:
            self._on_state("refused", str(reason))
            return
        with self._lock:
            self._connection += 1
            self._live = True
        sock = client.socket()
        if isinstance(sock, socket.socket):
            _ack_at_once(sock)
        options = SubscribeOptions(qos=1)
        client.subscribe([(name, options) for name in self.filters])

    def _subscribed(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reasons: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        refused = [str(r) for r in reasons if r.is_failure]
        if refused:
            self._on_state("refused", ", ".join(refused))
        else:
            self._on_state("subscribed", "")

    def _disconnected(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        with self._lock:
            self._live = False
        self._gone.set()
        self._on_state("lost", str(reason))

    def _message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        delivery = Delivery(
            message.topic,
            bytes(message.payload),
            user_properties(getattr(message, "properties", None)),
            message.qos,
            message.mid,
            self._connection,
        )
        self._on_messages([delivery])


def _ack_at_once(sock: socket.socket) -> None:
    """Have the kernel acknowledge what arrives at once (Linux's TCP_QUICKACK). Our PUBACKs
    leave only after the batch's commit, so the TCP acknowledgement would otherwise wait for
    the delayed-ACK timer (up to 40 ms), and a broker that batches small writes (Nagle's
    algorithm, Mosquitto's default) holds the next records back until then. The kernel
    drops the mode again after a while; set at each connection, it covers the start."""
    if _QUICKACK is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


_QUICKACK: Final = getattr(socket, "TCP_QUICKACK", None)
