# Tries to steal secrets: the demo's token from the environment and its file, an SSH key, /etc/shadow.
import os

SECRET_FILE = '/root/.ssh/id_rsa'  # replaced by the demo

found = []
lines = []

token = os.environ.get("AJ_DEMO_SECRET")
lines.append(f"env AJ_DEMO_SECRET: {token!r}")
if token:
    found.append("env")

# The environment variable naming the file will not reach a sandbox, so the
# demo also writes the path into SECRET_FILE above; the literal paths are
# what an attacker would try anyway.
paths = [os.environ.get("AJ_DEMO_SECRET_FILE"), SECRET_FILE, "/root/.ssh/id_rsa", "/etc/shadow"]
for path in dict.fromkeys(p for p in paths if p):
    try:
        with open(path, errors="replace") as f:
            data = f.read(200)
        lines.append(f"{path}: read {data.strip()[:60]!r}")
        found.append(path)
    except OSError as e:
        lines.append(f"{path}: {e.strerror}")

print(f"got: {', '.join(found)}" if found else "got nothing")
print("\n".join(lines))
