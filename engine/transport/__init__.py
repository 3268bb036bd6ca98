"""The transport decoders of a streamed body, pieces in and events out: SSE by the WHATWG
rules (:mod:`.sse`), the AWS event stream (:mod:`.eventstream`), and the capture reader built
on both (:mod:`.captures`). A live stream (``engine.sse_chunks``), a recorded capture and the
fake provider's recordings read a body through the same decoders."""
