"""The load generator's MQTT 5 packets: what paho (the boxes' client) encodes, decoded here the
same, whole or arriving in pieces."""

from __future__ import annotations

import pytest
from paho.mqtt import _packet as paho_packet
from paho.mqtt.client import MQTTv5

from benchmarks import _mqtt_wire as wire
from shoe_controller.floor.broker import publish_properties

USER = [("journal", "J1"), ("seq", "12"), ("prev", "9"), ("mac", "ab" * 32)]
BODY = b'{"event":"card","ts":"2026-12-01T00:00:00.000Z","index":3}'


def test_a_publish_reads_back_as_paho_reads_it() -> None:
    packet = wire.publish("shoes/s/T1/events", BODY, qos=1, mid=513, user=USER)
    packets, used = wire.decode(bytearray(packet))
    assert used == len(packet)
    assert packets == [wire.Publish("shoes/s/T1/events", BODY, dict(USER), 1, 513)]
    # paho, the boxes' client, reads the same bytes as the same message and properties.
    fixed = 1 + len(wire.varint(len(packet) - 2))
    decoded = paho_packet.decode_publish(packet[0], packet[fixed:], MQTTv5)
    assert decoded.topic == b"shoes/s/T1/events" and decoded.mid == 513
    assert decoded.payload == BODY
    expected = publish_properties(USER)
    assert decoded.properties.UserProperty == expected.UserProperty
    assert decoded.properties.ContentType == "application/json"


def test_packets_arriving_in_pieces_are_read_once_complete() -> None:
    stream = b"".join(
        [
            wire.publish("shoes/s/T1/events", BODY * 40, qos=1, mid=1, user=USER),
            bytes([wire.PINGRESP, 0]),
            wire.publish("shoes/s/T1/status", b"{}", qos=0, mid=0),
        ]
    )
    buffer = bytearray()
    got: list[wire.Packet] = []
    for index in range(0, len(stream), 7):
        buffer += stream[index : index + 7]
        packets, used = wire.decode(buffer)
        del buffer[:used]
        got += packets
    assert not buffer
    assert [type(p).__name__ for p in got] == ["Publish", "Control", "Publish"]
    first, ping, status = got
    assert isinstance(first, wire.Publish) and first.payload == BODY * 40
    assert isinstance(ping, wire.Control) and ping.kind == wire.PINGRESP
    assert isinstance(status, wire.Publish) and (status.qos, status.mid) == (0, 0)


def test_other_properties_are_skipped_and_the_last_value_of_a_key_wins() -> None:
    props = bytes([0x02]) + (60).to_bytes(4, "big")  # message expiry
    props += bytes([0x0B, 0x81, 0x01])  # subscription identifier 129
    props += bytes([0x08]) + wire.string("reply/here")  # response topic
    props += bytes([0x26]) + wire.string("seq") + wire.string("1")
    props += bytes([0x26]) + wire.string("seq") + wire.string("2")
    body = wire.string("t/x") + (7).to_bytes(2, "big") + wire.varint(len(props)) + props + b"p"
    packet = bytes([0x32]) + wire.varint(len(body)) + body
    (message,), _ = wire.decode(bytearray(packet))
    assert message == wire.Publish("t/x", b"p", {"seq": "2"}, 1, 7)


@pytest.mark.parametrize(
    "packet",
    [
        # An unknown property.
        bytes([0x32, 8]) + wire.string("t") + b"\x00\x01" + bytes([2, 0x7F, 0]),
        # Properties longer than the packet.
        bytes([0x32, 7]) + wire.string("t") + b"\x00\x01" + bytes([9, 0x26]),
    ],
)
def test_a_malformed_packet_is_a_protocol_error(packet: bytes) -> None:
    with pytest.raises(wire.ProtocolError):
        wire.decode(bytearray(packet))


def test_acknowledgements_of_a_batch_are_one_buffer() -> None:
    assert wire.pubacks([1, 258]) == b"\x40\x02\x00\x01\x40\x02\x01\x02"
    suback = bytes([0]) + bytes([1, 1, 0x87])
    assert wire.reason_after_properties(suback) == [1, 1, 0x87]
