"""``mcs-formats serve`` as a subprocess, and the official SDKs pointed at it.

``server.ServeProcess`` runs the product's fake provider (engine/serve.py, engine/serve_http.py)
on 127.0.0.1, which answers exactly the HTTP endpoint each SDK calls with the provider's
framing (SSE, NDJSON, AWS event stream); ``clients`` runs each SDK against it.
"""
