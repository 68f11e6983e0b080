"""Wait for a server a test started to accept connections on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def wait_until_serving(port: int, server: subprocess.Popen, log_path: Path,
                       timeout_s: float, what: str) -> None:
    """Return once 127.0.0.1:`port` accepts a connection; raise with the tail of the
    server's log when the process exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{what} did not serve on port {port}: "
                                     + log_path.read_text()[-3000:]) from None
            time.sleep(0.5)
