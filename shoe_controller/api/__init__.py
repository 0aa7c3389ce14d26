"""The box's API and the dealer console: an aiohttp server on its own asyncio loop thread,
JSON-RPC 2.0 over a WebSocket and HTTP, people signed in with roles, and the console's
static files. It calls the table controller's public inputs and relays its events, as the
CLI does (docs/api.md, docs/console.md)."""
