"""A loopback server that replays recorded provider streams, and the official SDKs pointed at it.

``server.LoopbackServer`` answers on 127.0.0.1 exactly the HTTP endpoint each SDK calls, with the
provider's framing (SSE, NDJSON, AWS event stream); ``clients`` runs each SDK against it.
"""
