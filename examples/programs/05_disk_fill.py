# Tries to fill the disk: writes 1 MiB chunks to a file in its directory until a write fails.
import os

CHUNK = b"\0" * (1 << 20)
MAX_CHUNKS = 4096
NAME = "fill.bin"

written = 0
try:
    with open(NAME, "wb", buffering=0) as f:
        for _ in range(MAX_CHUNKS):
            f.write(CHUNK)
            written += 1
    print(f"wrote {written} MiB, no write failed")
except OSError as e:
    print(f"stopped after {written} MiB: {e.strerror} (errno {e.errno})")
finally:
    try:
        os.remove(NAME)
    except OSError:
        pass
