"""Acting from another site against the real service: a page elsewhere cannot post to the
box or open its WebSocket through the dealer's browser, and a name rebound to the box's
address (DNS rebinding) is not answered."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from tests.security.attacker import post, probe, upgrade_request
from tests.security.conftest import StartService
from tests.security.service import PEOPLE, Service

EVIL = "http://evil.example"


def batch(pin: str) -> str:
    """What the page on another site posted: sign in with a known PIN, then act."""
    return json.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "session.login",
             "params": {"user": "dana", "pin": pin}},
            {"jsonrpc": "2.0", "id": 2, "method": "table.confirm_shuffle"},
        ]
    )  # fmt: skip


def inputs(service: Service) -> list[str]:
    from tests.api.records import inputs as journaled

    return [name for name, _ in journaled(service.journal)]


def test_a_page_of_another_site_cannot_post_to_the_box(start_service: StartService) -> None:
    service = start_service()
    pin = PEOPLE["dana"][1]
    rpc = service.url + "api/v1/rpc"

    async def scenario() -> None:
        # A "simple" request: the browser sends it to any site without asking.
        for content_type in ("text/plain", "application/x-www-form-urlencoded"):
            status, body = await post(rpc, batch(pin), Content_Type=content_type, Origin=EVIL)
            assert status in (403, 415), body
            status, body = await post(rpc, batch(pin), Content_Type=content_type)
            assert status == 415
            assert body["error"]["message"] == (
                "send the body as JSON, with Content-Type: application/json"
            )
        # JSON from another origin (a browser would have asked first, and been refused).
        status, body = await post(rpc, batch(pin), Origin=EVIL)
        assert status == 403
        status, _ = await post(rpc, batch(pin), Origin="null")
        assert status == 403
        status, _ = await post(rpc, batch(pin), Sec_Fetch_Site="cross-site")
        assert status == 403
        # The box's own page, and a tool that sends no Origin, are served.
        status, body = await post(rpc, batch(pin), Origin=service.url.rstrip("/"))
        assert status == 200
        assert body[0]["result"]["user"] == "dana"

    asyncio.run(scenario())
    # Only the box's own page acted: one sign-in, one confirmation.
    assert inputs(service) == ["confirm_shuffle"]
    assert [(a, u) for a, u, _ in service.access()] == [("sign_in", "dana")]


def test_a_websocket_from_another_site_is_refused(start_service: StartService) -> None:
    service = start_service()

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            for origin in (EVIL, f"http://127.0.0.1:{service.port + 1}", "null"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(service.url + "api/v1/ws", headers={"Origin": origin})
                assert refused.value.status == 403
            ws = await http.ws_connect(
                service.url + "api/v1/ws", headers={"Origin": service.url.rstrip("/")}
            )
            await ws.close()

    asyncio.run(scenario())


def test_a_rebound_name_is_not_answered(start_service: StartService) -> None:
    service = start_service()
    port = service.port

    async def scenario() -> None:
        # The attacker's page at evil.example:PORT, its name now resolving to the box.
        rebound = f"evil.example:{port}"
        answer = await probe(port, "127.0.0.1", upgrade_request(port, rebound, f"http://{rebound}"))
        assert answer.answer.startswith(b"HTTP/1.1 421"), answer.answer
        await answer.close()
        async with aiohttp.ClientSession() as http:
            for path in ("", "api/v1/schema", "console/console.js"):
                async with http.get(service.url + path, headers={"Host": rebound}) as response:
                    assert response.status == 421
            status, _ = await post(
                service.url + "api/v1/login",
                {"user": "dana", "pin": PEOPLE["dana"][1]},
                Host=rebound,
                Origin=f"http://{rebound}",
            )
            assert status == 421
            # The box's own names are answered.
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                async with http.get(service.url, headers={"Host": host}) as response:
                    assert response.status == 200

    asyncio.run(scenario())


def test_the_names_the_box_answers_to_are_configured(start_service: StartService) -> None:
    service = start_service(api='host_names = ["box-7.casino.lan"]')

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            named = {"Host": f"box-7.casino.lan:{service.port}"}
            async with http.get(service.url + "api/v1/schema", headers=named) as response:
                assert response.status == 200
            wrong_port = {"Host": f"box-7.casino.lan:{service.port + 1}"}
            async with http.get(service.url + "api/v1/schema", headers=wrong_port) as response:
                assert response.status == 421
            other = {"Host": f"box-8.casino.lan:{service.port}"}
            async with http.get(service.url + "api/v1/schema", headers=other) as response:
                assert response.status == 421
                body = await response.json()
                assert "box-7.casino.lan" in body["error"]["message"]

    asyncio.run(scenario())
