# Benign: prints a greeting, a small computation, and which uid and directory it runs in.
import os

print(f"hello from uid {os.getuid()} in {os.getcwd()}")
print("sum of the squares of 1..1000:", sum(i * i for i in range(1, 1001)))
print("2 ** 100 =", 2 ** 100)
