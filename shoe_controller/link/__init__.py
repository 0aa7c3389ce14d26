"""The conversation with the shoe: acknowledged delivery, heartbeat, reconnect, approval."""
