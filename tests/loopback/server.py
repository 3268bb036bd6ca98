"""``mcs-formats serve`` run as a subprocess, the way a user runs it, for one test module.

``ServeProcess(streams)`` starts ``python -m engine serve STREAM... --port 0 --log FILE`` with
this checkout's engine, reads the port from the first line on stdout (``serving on
http://HOST:PORT``) and each stream's key from the lines after it, and stops the process when
the module is done. Every stream a module needs is given at start (one process per module,
not per test); ``base_url(fixture)`` is ``<url>/s/<key>``, where the product serves that stream
whatever the turn, so that tests need not depend on the cycling order. ``requests`` reads back
the server's ``--log``: what each SDK sent (method, path, query, headers, body as bytes).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FIRST_LINE = re.compile(r"^serving on (?P<url>http://127\.0\.0\.1:(?P<port>\d+))$")
START_TIMEOUT = 60.0  # seconds; reading and assembling every golden takes about one


class ServeProcess:
    def __init__(self, streams: Iterable[str | Path]) -> None:
        self.streams = [Path(s).resolve() for s in streams]
        self._keys: dict[Path, str] = {}
        self._proc: subprocess.Popen | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="mcs-serve-")
        self.log = Path(self._dir.name) / "requests.jsonl"
        self.url = ""

    def start(self) -> ServeProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        stderr = open(Path(self._dir.name) / "stderr.txt", "w+", encoding="utf-8")  # noqa: SIM115
        cmd = [sys.executable, "-m", "engine", "serve", *map(str, self.streams)]
        cmd += ["--port", "0", "--log", str(self.log)]
        self._proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        self._stderr = stderr
        lines = self._read_start(1 + len(self.streams))
        first = _FIRST_LINE.match(lines[0])
        if first is None:
            self.stop()
            raise RuntimeError(f"serve's first line is not `serving on URL`: {lines[0]!r}")
        self.url = first["url"]
        for line in lines[1:]:
            key, _wire, path = line.strip().split("\t", 2)
            self._keys[Path(path).resolve()] = key
        # Nothing more is printed; drain stdout anyway, so that the process can never block.
        threading.Thread(target=self._proc.stdout.read, daemon=True).start()
        return self

    def _read_start(self, count: int) -> list[str]:
        lines: list[str] = []
        done = threading.Event()

        def read() -> None:
            while len(lines) < count:
                line = self._proc.stdout.readline()
                if not line:
                    break
                lines.append(line.rstrip("\n"))
            done.set()

        threading.Thread(target=read, daemon=True).start()
        if not done.wait(START_TIMEOUT) or len(lines) < count:
            self._stderr.seek(0)
            why = self._stderr.read()[-2000:]
            self.stop()
            raise RuntimeError(f"mcs-formats serve did not start: {why}")
        return lines

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None
            self._stderr.close()
        self._dir.cleanup()

    def stderr_text(self) -> str:
        """What the server wrote on stderr so far."""
        self._stderr.flush()
        return (Path(self._dir.name) / "stderr.txt").read_text(encoding="utf-8")

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def register(self, fixture: str | Path) -> str:
        """The key the server lists for this stream (given at start; others are an error)."""
        path = Path(fixture).resolve()
        try:
            return self._keys[path]
        except KeyError:
            raise KeyError(f"{fixture} was not given to mcs-formats serve at start") from None

    def base_url(self, fixture: str | Path) -> str:
        """``http://127.0.0.1:<port>/s/<key>``: point an SDK here (plus ``/v1`` for openai)."""
        return f"{self.url}/s/{self.register(fixture)}"

    @property
    def requests(self) -> list[dict]:
        """Every request the server logged so far, in order (body as bytes)."""
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            entry["body"] = entry["body"].encode("utf-8")
            out.append(entry)
        return out
