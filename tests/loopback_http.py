"""A loopback HTTP server a test starts itself, for the egress tests of
every suite (python/tests, tests/serve): 127.0.0.1 on a port the kernel
chooses, answering every GET with one known body. Egress tests reach
nothing else."""
import contextlib
import http.server
import threading

BODY = b"hello from the host\n"


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving():
    """The server's port while the block runs; stopped and closed after."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join()
