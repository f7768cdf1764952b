# Tries to take 512 MiB of memory and touch every page of it, so it is really resident.
SIZE = 512 * 1024 * 1024

buf = bytearray(SIZE)
for i in range(0, SIZE, 4096):
    buf[i] = 1
print(f"allocated and touched {SIZE >> 20} MiB")
