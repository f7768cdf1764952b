# Tries to burn the CPU forever: a busy loop that never ends on its own.
while True:
    pass
