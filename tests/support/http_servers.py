"""The HTTP servers of the test fakes: a client that went away is no error of theirs.

socketserver prints "Exception occurred during processing of request" and a traceback to stderr whenever a
handler thread raises; a fake's handler that outlives its test (a long watch, a TLS client that hung up) then
writes into whatever later test is capturing stderr, and that test's "no traceback" check fails. A closed or reset
connection, or a TLS handshake a client abandoned, is what a client is free to do, so it is dropped quietly;
anything else is still printed.
"""

from __future__ import annotations

import ssl
import sys
from http.server import ThreadingHTTPServer
from typing import Any

__all__ = ["QuietThreadingHTTPServer"]

_CLIENT_GONE = (ConnectionError, ssl.SSLError, TimeoutError)


class QuietThreadingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], _CLIENT_GONE):
            return
        super().handle_error(request, client_address)
