"""Closing: a context manager whose exit is close(), shared by the local
classes and the remote ones (pure Python: no native library)."""


class Closing:
    """A context manager whose exit is close()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
