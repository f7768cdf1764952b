# Tries to reach the network: a TCP connection to a listener on the host's 127.0.0.1, and a DNS lookup.
import os
import socket

PORT = 22  # replaced by the demo

port = int(os.environ.get("AJ_DEMO_PORT", PORT))
results = []

try:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        results.append(f"connected to 127.0.0.1:{port}")
except OSError as e:
    results.append(f"127.0.0.1:{port}: {e.strerror or e}")

try:
    addrs = {a[4][0] for a in socket.getaddrinfo("example.com", 80, proto=socket.IPPROTO_TCP)}
    results.append(f"example.com is {', '.join(sorted(addrs))}")
except OSError as e:
    results.append(f"example.com: {e.strerror or e}")

print("; ".join(results))
